"""The README's Python example runs as written (in float32, and in float64 under x64).

The docs pages' examples run in ``tests/test_docs.py``; the 0.3 README's numbers are kept by
``tests/test_readme_v03.py``.
"""

import re
from pathlib import Path

import jax
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.integration
def test_readme_python_blocks_run(capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) >= 1
    namespace: dict = {}
    exec(compile("\n".join(blocks), str(README), "exec"), namespace)  # noqa: S102
    out = namespace["out"]
    assert out.private_transitions.dtype == jax.numpy.zeros(()).dtype
    assert "MDPGuarantee(" in capsys.readouterr().out

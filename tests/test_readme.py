"""The README's Python snippets run as written (in float32, and in float64 under x64)."""

import re
from pathlib import Path

import jax

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_blocks_run(capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) >= 2
    namespace: dict = {}
    exec(compile("\n".join(blocks), str(README), "exec"), namespace)  # noqa: S102
    out = namespace["out"]
    assert out.private_transitions.dtype == jax.numpy.zeros(()).dtype
    assert "MDPGuarantee(" in capsys.readouterr().out

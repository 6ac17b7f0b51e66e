"""The labels of :func:`jaxprivmdp.check`: validated, and the states a state formula holds in.

:func:`check_labels` turns the user's ``{name: bool[S]}`` into NumPy (for the host
precomputation) or jax.numpy (for a traced, step-bounded property) arrays; :func:`satisfying`
evaluates a parsed :class:`~jaxprivmdp.properties._parse.Formula` on them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..models.core import Model
from ._parse import Formula, property_error


def check_labels(mdp: Model, labels, concrete: bool) -> dict:
    """``{name: bool[S]}`` (NumPy when ``concrete``), with ``"init"`` from the model if absent."""
    S = mdp.num_states
    out = {}
    for name, value in (labels or {}).items():
        if not isinstance(name, str):
            raise ValueError(f"labels must be keyed by name (str), got {name!r}")
        if isinstance(value, jax.core.Tracer):
            if concrete:
                raise ValueError(
                    f"label {name!r} is traced; unbounded properties need concrete labels"
                )
            if value.shape != (S,):
                raise ValueError(f"label {name!r} must have shape [S] = ({S},), got {value.shape}")
            out[name] = value.astype(bool)
            continue
        arr = np.asarray(value)
        if arr.shape != (S,):
            raise ValueError(f"label {name!r} must have shape [S] = ({S},), got {arr.shape}")
        if arr.dtype != np.bool_:
            if not np.all(np.isin(arr, (0, 1))):
                raise ValueError(f"label {name!r} must be boolean")
            arr = arr.astype(bool)
        out[name] = arr
    if "init" not in out:
        out["init"] = np.arange(S) == mdp.initial_state
    if not concrete:
        out = {k: jnp.asarray(v) for k, v in out.items()}
    return out


def satisfying(text: str, f: Formula, labels: dict, xp):
    """`[S]` bool: the states where ``f`` holds (NumPy or jax.numpy, by ``xp``)."""
    if f.op == "label":
        if f.name not in labels:
            known = ", ".join(repr(k) for k in labels) or "none"
            hint = (
                " (jp.load_labels gives 'init' and 'deadlock')"
                if f.name in ("deadlock", "init")
                else ""
            )
            raise property_error(text, f.pos, f"no label {f.name!r} (labels: {known}){hint}")
        return labels[f.name]
    S = next(iter(labels.values())).shape[0]
    if f.op in ("true", "false"):
        return xp.full(S, f.op == "true")
    parts = [satisfying(text, g, labels, xp) for g in f.args]
    if f.op == "not":
        return ~parts[0]
    a, b = parts
    return {"and": a & b, "or": a | b, "implies": ~a | b, "iff": a == b}[f.op]

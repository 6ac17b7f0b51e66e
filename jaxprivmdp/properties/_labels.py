"""The labels and state variables of :func:`jaxprivmdp.check`: validated, and the states a
state formula holds in.

:func:`check_labels` turns the user's ``{name: bool[S]}`` labels and ``{name: int[S]}``
state variables into NumPy (for the host precomputation) or jax.numpy (for a traced,
step-bounded property) arrays, in one dict: a variable's key is ``("var", name)``, which no
label (a str) can be. :func:`satisfying` evaluates a parsed
:class:`~jaxprivmdp.properties._parse.Formula` on them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..models.core import Model
from ._parse import Formula, property_error


def check_labels(mdp: Model, labels, concrete: bool, variables=None) -> dict:
    """``{name: bool[S]}`` (NumPy when ``concrete``), with ``"init"`` from the model if absent,
    and ``{("var", name): int[S]}`` for the state variables."""
    S = mdp.num_states
    out = {("var", k): v for k, v in _check_variables(S, variables, concrete).items()}
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


def _check_variables(S: int, variables, concrete: bool) -> dict:
    """``{name: int[S]}``: :func:`jaxprivmdp.load_variables`'s, or the user's own."""
    if variables is None:
        return {}
    if not isinstance(variables, dict):
        raise TypeError(
            f"variables must be a dict {{name: int[S]}} (jp.load_variables), got "
            f"{type(variables).__name__}"
        )
    out = {}
    for name, value in variables.items():
        if not isinstance(name, str):
            raise ValueError(f"variables must be keyed by name (str), got {name!r}")
        traced = isinstance(value, jax.core.Tracer)
        if traced and concrete:
            raise ValueError(f"variable {name!r} is traced; unbounded properties need it concrete")
        arr = value if traced else np.asarray(value)
        if arr.shape != (S,):
            raise ValueError(f"variable {name!r} must have shape [S] = ({S},), got {arr.shape}")
        if not traced and not (np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_):
            raise ValueError(f"variable {name!r} must hold integers, got dtype {arr.dtype}")
        out[name] = arr.astype(np.int64 if concrete else jnp.int32)
    return out


def _term(text: str, term, labels: dict):
    """A comparison's side: an int `[S]` array or a Python int."""
    if term[0] == "int":
        return term[1]
    if term[0] == "var":
        if ("var", term[1]) not in labels:
            known = ", ".join(k[1] for k in labels if isinstance(k, tuple)) or "none"
            hint = " (jp.load_variables reads PRISM's .sta)" if known == "none" else ""
            if term[1] in labels:
                hint += f'; the label is written in quotes: "{term[1]}"'
            raise property_error(
                text, term[2], f"no state variable {term[1]!r} (variables: {known}){hint}"
            )
        return labels[("var", term[1])]
    a, b = _term(text, term[1], labels), _term(text, term[2], labels)
    return a + b if term[0] == "+" else a - b


_CMP = {
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def satisfying(text: str, f: Formula, labels: dict, xp):
    """`[S]` bool: the states where ``f`` holds (NumPy or jax.numpy, by ``xp``)."""
    S = next(iter(labels.values())).shape[0]
    if f.op == "cmp":
        a, b = (_term(text, t, labels) for t in f.args)
        return xp.broadcast_to(xp.asarray(_CMP[f.name](a, b)), (S,))
    if f.op == "label":
        if f.name not in labels:
            known = ", ".join(repr(k) for k in labels if isinstance(k, str)) or "none"
            hint = (
                " (jp.load_labels gives 'init' and 'deadlock')"
                if f.name in ("deadlock", "init")
                else ""
            )
            raise property_error(text, f.pos, f"no label {f.name!r} (labels: {known}){hint}")
        return labels[f.name]
    if f.op in ("true", "false"):
        return xp.full(S, f.op == "true")
    parts = [satisfying(text, g, labels, xp) for g in f.args]
    if f.op == "not":
        return ~parts[0]
    a, b = parts
    return {"and": a & b, "or": a | b, "implies": ~a | b, "iff": a == b}[f.op]

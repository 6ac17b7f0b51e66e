"""What ``check`` prints and records for each property: its line on the terminal and its entry
in ``check.json`` (numerical, boolean and filter answers; see ``docs/cli.md``).
"""

from __future__ import annotations

import numpy as np

from ..io.core import json_number


def numbers(name: str, x) -> dict:
    """``name`` and ``name_infinite`` for ``check.json``: JSON has no infinity, so an infinite
    entry (only +inf: a value or error bound is never -inf or NaN) is ``null`` in ``name``
    (:func:`~jaxprivmdp.io.core.json_number`) and ``true`` in ``name_infinite``; a scalar
    stays a scalar, an array a list."""
    x = np.asarray(x, np.float64)
    out = [json_number(v) for v in x.ravel()] if x.ndim else json_number(x)
    return {name: out, f"{name}_infinite": np.isinf(x).tolist()}


def _numerical(res, s0: int) -> dict:
    """A :class:`~jaxprivmdp.CheckResult`'s fields."""
    values = np.asarray(res.values, np.float64)
    error = np.asarray(res.error_bound, np.float64)
    return {
        **numbers("value_at_initial_state", values[s0]),
        **numbers("error_bound_at_initial_state", error[s0]),
        "converged": bool(res.converged),
        "iterations": int(res.iterations),
        **numbers("values", values),
        **numbers("error_bound", error),
        "policy": np.asarray(res.policy).tolist(),
        **numbers("lower", res.lower),
        **numbers("upper", res.upper),
        **numbers("precision", res.precision),
    }


def record(query, res, s0: int) -> dict:
    """The ``check.json`` entry of one property (``query``: its parse, ``res``: its answer)."""
    kind = type(res).__name__
    head = {"property": query.text, "name": query.name}
    if kind == "CheckResult":
        return {**head, "kind": "numerical", **_numerical(res, s0)}
    if kind == "QueryResult":
        return {
            **head,
            "kind": "boolean",
            "result_at_initial_state": bool(res.verdict_at_initial),
            "decided_at_initial_state": bool(np.asarray(res.decided)[s0]),
            "satisfied": np.asarray(res.satisfied).tolist(),
            "decided": np.asarray(res.decided).tolist(),
            **_numerical(res.result, s0),
        }
    value = np.asarray(res.value)
    value_fields = (
        {"value": value.tolist()}
        if value.dtype == np.bool_ or np.issubdtype(value.dtype, np.integer)
        else numbers("value", value)
    )
    return {
        **head,
        "kind": "filter",
        "filter": query.body.op,
        **value_fields,
        **numbers("filter_error_bound", res.error_bound),
        "decided": bool(res.decided),
        "states": np.flatnonzero(np.asarray(res.states)).tolist(),
    }


def _interval(res, s0: int) -> str:
    lo, hi = float(np.asarray(res.lower)[s0]), float(np.asarray(res.upper)[s0])
    if lo == hi:  # decided exactly: nothing to add to "± 0"
        return ""
    precision = float(np.asarray(res.precision))
    return f"; interval [{lo:.10g}, {hi:.10g}], relative precision {precision:.3g}"


def _show(x) -> str:
    x = np.asarray(x)
    if x.dtype == np.bool_:
        return "true" if x else "false"
    return f"{x:.10g}" if np.issubdtype(x.dtype, np.floating) else str(x)


def line(query, res, s0: int) -> str:
    """The terminal line of one property, in PRISM's words (``true``, ``inf``)."""
    if query.name is not None:
        query = query._replace(text=f'"{query.name}": {query.text}')
    kind = type(res).__name__
    if kind == "CheckResult":
        v, e = float(np.asarray(res.values)[s0]), float(np.asarray(res.error_bound)[s0])
        return f"{query.text} at s0 = {s0}: {v:.10g} (± {e:.3g}{_interval(res, s0)})"
    if kind == "QueryResult":
        num = res.result
        v, e = float(np.asarray(num.values)[s0]), float(np.asarray(num.error_bound)[s0])
        sat, dec = np.asarray(res.satisfied), np.asarray(res.decided)
        note = "" if dec[s0] else "undecided: the threshold lies within the numerical error; "
        rest = f"; {int((~dec).sum())} states undecided" if not dec.all() else ""
        return (
            f"{query.text} at s0 = {s0}: {_show(res.verdict_at_initial)} ({note}value "
            f"{v:.10g} ± {e:.3g}; true in {int(sat.sum())} of {sat.size} states{rest})"
        )
    op, value, states = query.body.op, np.asarray(res.value), np.asarray(res.states)
    if op == "print":
        shown = ", ".join(f"{s}: {_show(value[s])}" for s in np.flatnonzero(states))
        return f"{query.text}: {shown}"
    if op in ("argmin", "argmax"):
        return f"{query.text}: states {np.flatnonzero(value).tolist()}"
    text = ", ".join(_show(v) for v in value) if value.ndim else _show(value)
    text = f"[{text}]" if value.ndim else text
    err = np.asarray(res.error_bound)
    if np.issubdtype(value.dtype, np.floating):
        text += f" (± {float(err.max()):.3g})"
    if not bool(res.decided):
        text += " (undecided: a state it depends on is within the numerical error)"
    return f"{query.text}: {text}"

"""PRISM properties on the command line: ``check`` (a property's value per state, as PRISM
and Storm answer it) and ``--property``/``--labels`` of ``sweep``, ``frontier`` and
``synthesize`` (privacy with a step-bounded property as the objective,
:func:`jaxprivmdp.property_model`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..io.core import atomic_outputs
from ._interrupts import guarded, writing
from ._mdp_files import load_user_mdp, model_fields


def read_labels(args, num_states: int) -> dict | None:
    """``--labels``, else a ``.drn`` ``--mdp``'s own labels or the ``.lab`` beside a ``.tra``
    (``init`` and ``deadlock`` without one), else None (only ``init``, the initial state)."""
    from ..io import load_labels

    path = args.labels
    if path is None and args.mdp is not None and args.mdp.suffix in (".tra", ".drn"):
        path = args.mdp  # its own labels or .lab, else init and deadlock
    if path is None:
        return None
    try:
        return load_labels(path, num_states=num_states)
    except ValueError as e:
        raise ValueError(f"--labels {str(path)!r}: {e}") from None


def _horizon_for(args, prop: str, horizon: int | None) -> int | None:
    """The value of ``T``: ``--horizon`` or the file's; a property using T needs one."""
    from ..properties.core import parse_property

    try:
        bound = parse_property(prop).bound
    except ValueError as e:
        raise ValueError(f"--property: {e}") from None
    if horizon is None and bound == "T":
        raise ValueError(f"--property {prop!r} uses T: give --horizon T")
    return horizon


def _reward_name(args) -> str | None:
    """``--reward-structure`` given by name: ``R{"name"}`` must then name it (an index or no
    choice accepts any name, as :func:`jaxprivmdp.check` does without ``reward_name``)."""
    value = getattr(args, "reward_structure", None)
    return None if value is None or value.isdigit() else value


def property_problem(args, mdp, horizon: int | None):
    """``mdp`` as the problem of ``--property`` (:func:`jaxprivmdp.property_model`), or
    ``mdp`` itself without one. ``horizon``: the declared horizon (the value of ``T``)."""
    from ..properties import property_model

    if args.property is None:
        return mdp
    labels = read_labels(args, mdp.num_states)
    horizon = _horizon_for(args, args.property, horizon)
    try:
        return property_model(
            mdp, args.property, labels=labels, horizon=horizon, reward_name=_reward_name(args)
        )
    except ValueError as e:
        raise ValueError(f"--property: {e}") from None


def load_problem(args):
    """``--mdp`` and ``--property``: ``(problem, model)``, the model the problem is about.

    With a property the horizon is its step bound: ``--horizon`` only gives ``T``.
    """
    if getattr(args, "property", None) is None:
        mdp = load_user_mdp(args).mdp
        return mdp, mdp
    user = load_user_mdp(args, validation_only=True)
    return property_problem(args, user.mdp, user.horizon), user.mdp


def cmd_check(args) -> list[Path]:
    """A PRISM property's value in every state, its policy and error bound (``check.json``)."""
    import numpy as np

    from ..properties import check

    user = load_user_mdp(args, validation_only=True)
    mdp = user.mdp
    labels = read_labels(args, mdp.num_states)
    horizon = _horizon_for(args, args.property, user.horizon)
    try:
        name = _reward_name(args)
        res = guarded(check, mdp, args.property, labels=labels, horizon=horizon, reward_name=name)
    except ValueError as e:
        raise ValueError(f"--property: {e}") from None
    values = np.asarray(res.values, np.float64)
    error = np.asarray(res.error_bound, np.float64)
    s0 = mdp.initial_state
    model = model_fields(mdp)
    del model["horizon"], model["discount"]  # not used: properties are undiscounted
    meta = {
        "command": " ".join(["jaxprivmdp"] + sys.argv[1:]),
        "mdp": str(args.mdp),
        "property": args.property,
        "horizon": horizon,
        "model": model,
        **_numbers("value_at_initial_state", values[s0]),
        **_numbers("error_bound_at_initial_state", error[s0]),
        "converged": bool(res.converged),
        "iterations": int(res.iterations),
        **_numbers("values", values),
        **_numbers("error_bound", error),
        "policy": np.asarray(res.policy).tolist(),
    }
    path = args.out / "check.json"
    with atomic_outputs() as stage, writing():
        stage(path).write_text(json.dumps(meta, indent=2, allow_nan=False) + "\n")
    # PRISM's own rendering: an infinite expected reward prints as "inf"
    print(f"{args.property} at s0 = {s0}: {values[s0]:.10g} (± {error[s0]:.3g})")
    return [path]


def _numbers(name: str, x) -> dict:
    """``name`` and ``name_infinite`` for ``check.json``: JSON has no infinity, so an infinite
    entry (only +inf: a value or error bound is never -inf or NaN) is ``null`` in ``name``
    and ``true`` in ``name_infinite``; a scalar stays a scalar, an array a list."""
    import numpy as np

    x = np.asarray(x, np.float64)
    inf = np.isinf(x)
    if x.ndim:
        numbers = [None if i else float(v) for v, i in zip(x, inf, strict=True)]
    else:
        numbers = None if inf else float(x)
    return {name: numbers, f"{name}_infinite": inf.tolist()}

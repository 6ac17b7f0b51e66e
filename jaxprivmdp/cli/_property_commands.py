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
from ._check_options import constants
from ._check_output import line, record
from ._interrupts import guarded, writing
from ._mdp_files import load_user_mdp, model_fields
from ._objective import structure_choice


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
    choice = structure_choice(args)
    return choice if isinstance(choice, str) else None


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


def read_variables(args, num_states: int) -> dict | None:
    """``--variables``, else the ``.sta`` beside a ``.tra`` ``--mdp`` if there is one."""
    from ..io import load_variables

    path = args.variables
    if path is None and args.mdp is not None and args.mdp.suffix == ".tra":
        path = args.mdp.with_suffix(".sta") if args.mdp.with_suffix(".sta").exists() else None
    if path is None:
        return None
    try:
        return load_variables(path, num_states=num_states)
    except ValueError as e:
        raise ValueError(f"--variables {str(path)!r}: {e}") from None


def _check_properties(args) -> list[tuple[str, str]]:
    """``(flag, property)`` of ``--props`` (in order), then of ``--property``."""
    from ..io import load_properties
    from ..properties.core import split_properties

    out = []
    given = constants(args.const)
    if given is not None and args.props is None:
        raise ValueError("--const gives values to the constants of a --props file: give --props")
    if args.props is not None:
        try:
            props = load_properties(args.props, constants=given)
        except ValueError as e:
            raise ValueError(f"--props: {e}") from None
        out += [(f"--props {str(args.props)!r}", p) for p in props]
    if args.property is not None:
        try:
            out += [("--property", p) for p in split_properties(args.property)]
        except ValueError as e:
            raise ValueError(f"--property: {e}") from None
    if not out:
        raise ValueError("check needs a property: give --property or --props")
    return out


def _uses_t(query) -> bool:
    body = query.body
    inner = getattr(body, "inner", body)
    return getattr(inner, "bound", None) == "T"


def cmd_check(args) -> list[Path]:
    """PRISM properties in every state: values, verdicts, filters (``check.json``)."""
    from ..properties import check_all
    from ..properties.core import parse_query

    texts = _check_properties(args)
    user = load_user_mdp(args, validation_only=True)
    mdp, s0 = user.mdp, user.mdp.initial_state
    labels = read_labels(args, mdp.num_states)
    variables = read_variables(args, mdp.num_states)
    options = {"labels": labels, "variables": variables, "reward_name": _reward_name(args)}
    options["step_policy"] = args.step_policy
    answers = []
    for flag, text in texts:
        try:
            query = parse_query(text)
            if user.horizon is None and _uses_t(query):
                raise ValueError(f"{text!r} uses T: give --horizon T")
            res = guarded(check_all, mdp, [text], horizon=user.horizon, **options)[0]
        except ValueError as e:
            raise ValueError(f"{flag}: {e}") from None
        answers.append((query, res))
    entries = [record(q, r, s0) for q, r in answers]
    model = model_fields(mdp)
    del model["horizon"], model["discount"]  # not used: properties are undiscounted
    meta = {
        "command": " ".join(["jaxprivmdp"] + sys.argv[1:]),
        "mdp": str(args.mdp),
        "horizon": user.horizon,
        "model": model,
    }
    if len(entries) == 1:  # one property: a copy of its entry at the top, for a quick read
        meta.update(entries[0])
    meta["properties"] = entries  # always: a reader needs one code path for 1 or n
    path = args.out / "check.json"
    with atomic_outputs() as stage, writing():
        stage(path).write_text(json.dumps(meta, indent=2, allow_nan=False) + "\n")
    for q, r in answers:  # PRISM's words: "inf", "true"
        print(line(q, r, s0))
    return [path]

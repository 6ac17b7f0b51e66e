"""The objective's direction on the command line: ``--minimize`` / ``--maximize`` and what the
planning commands (``synthesize``, ``sweep``, ``frontier``) say and record about it.

Every such command prints and records what it optimized, in which direction and, for a
model read from a PRISM/Storm file, the reward structure it used: a Storm model's rewards
are usually a cost (``"steps"``), which maximized would reward wandering for the whole
horizon. In JSON: ``"objective": {"direction": "minimize", "of": "reward \\"steps\\""}`` and
``"reward_structure": "steps"`` (null when unnamed); on the terminal: ``minimizing reward
"steps"`` and ``reward structure: "steps"``.
"""

from __future__ import annotations


def structure_choice(args) -> int | str | None:
    """``--reward-structure`` as :func:`jaxprivmdp.load_mdp`'s ``reward_structure``: an index
    when it is a number (``1``), else a name (``steps``); None when not given (or the command
    has no such flag). The one reading of the flag: every command that loads, names or
    records the structure uses it."""
    value = getattr(args, "reward_structure", None)
    if value is not None and value.strip().isdigit():
        return int(value)
    return value


def reward_structure(args) -> str | None:
    """The name of the ``--mdp`` file's reward structure the command used (None: unnamed,
    an ``.npz``, or ``--example``)."""
    from ..io.core import reward_structure_name

    path = getattr(args, "mdp", None)
    if path is None:
        return None
    return reward_structure_name(path, structure_choice(args))


def directed(args, problem):
    """``problem`` as ``--minimize``/``--maximize`` ask: with ``--minimize`` the model's
    rewards minimized as a cost (:func:`jaxprivmdp.minimizing`); else unchanged.

    Raises:
      ValueError: either flag with ``--property``, which states its own direction.
    """
    choice = getattr(args, "minimize", None)
    if choice is None:
        return problem
    if getattr(args, "property", None) is not None:
        flag = "--minimize" if choice else "--maximize"
        raise ValueError(
            f"{flag} is for the model's rewards: --property {args.property!r} states its own "
            "direction (Rmin/Rmax, Pmin/Pmax)"
        )
    if not choice:
        return problem
    from ..properties import minimizing

    return minimizing(problem, reward_name=reward_structure(args))


def _uses_rewards(args) -> bool:
    prop = getattr(args, "property", None)
    return prop is None or prop.lstrip().startswith("R")


def objective_record(args, problem) -> dict:
    """``{"objective": {"direction", "of"}, "reward_structure": name}`` for the JSON."""
    from ..properties import PropertyModel

    minimize = isinstance(problem, PropertyModel) and problem.minimize
    name = reward_structure(args) if _uses_rewards(args) else None
    if getattr(args, "property", None) is not None:
        what = args.property
    else:
        what = "reward" if name is None else f'reward "{name}"'
    record = {"objective": {"direction": "minimize" if minimize else "maximize", "of": what}}
    if _uses_rewards(args):
        record["reward_structure"] = name
    return record


def objective_lines(record: dict) -> list[str]:
    """``minimizing reward "steps"`` and, for a named structure, ``reward structure:
    "steps"``: what the terminal shows of :func:`objective_record`."""
    objective = record["objective"]
    verb = "minimizing" if objective["direction"] == "minimize" else "maximizing"
    lines = [f"objective: {verb} {objective['of']}"]
    if record.get("reward_structure") is not None:
        lines.append(f'reward structure: "{record["reward_structure"]}"')
    return lines


def worst_end(record: dict) -> str:
    """The worst end of the bounds (``"upper"`` for a minimization, ``"lower"`` for a
    maximization) of :func:`objective_record`'s objective."""
    from ..properties.core import worst_end_name

    return worst_end_name(record["objective"]["direction"] == "minimize")


def direction_options(p) -> None:
    """``--minimize`` / ``--maximize`` (the parser of a command that plans on the model's
    rewards): the direction of the rewards; a ``--property`` states its own."""
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--minimize",
        dest="minimize",
        action="store_true",
        default=None,
        help="minimize the model's rewards as a cost (e.g. a Storm reward structure "
        '"steps"): the bounds\' worst case is then the upper one (default: maximize)',
    )
    which.add_argument(
        "--maximize",
        dest="minimize",
        action="store_false",
        default=None,
        help="maximize the model's rewards (the default)",
    )

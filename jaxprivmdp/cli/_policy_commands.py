"""The commands on a release's policies: ``synthesize`` (the private and, with ``--robust``,
the robust policy of a released model, as tables and PRISM chains) and ``evaluate`` (a
policy table's value on any model, e.g. the true one).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from ..io.core import atomic_outputs
from ..properties.core import worst_end_name
from ._interrupts import guarded, writing
from ._mdp_files import load_user_mdp, model_fields
from ._objective import directed, objective_lines, objective_record, worst_end
from ._policy_files import read_policy, write_chain, write_policy
from ._property_commands import property_problem
from ._terminal import note


def _release_record(args, arrays: dict | None = None) -> dict:
    """The record of the release ``--mdp`` (empty if it is none: the one reader of release
    records, :func:`jaxprivmdp.io.core.release_record`)."""
    from ..io.core import release_record

    return release_record(args.mdp, arrays)


def _release_mechanism(args, record: dict):
    """The mechanism that released ``--mdp`` (``--robust`` needs its noise)."""
    from ..mechanisms.core import mechanism_class

    name = record.get("mechanism")
    if name is None:
        raise ValueError(
            f"--robust needs the mechanism that released --mdp {str(args.mdp)!r}, which it does "
            "not record (a release of jaxprivmdp privatize does)"
        )
    cls = mechanism_class(name)
    return cls(record[cls.parameter_name()])


def _robust_part(args, problem, record, policy) -> tuple[dict, object]:
    """The robust policy and both policies' bounds at ``s0`` over the ``--bound`` set: each
    ``lower``, ``upper`` and, relative to the direction, ``worst_case`` and ``best_case``
    (``worst_case_is``: ``"upper"`` for a minimization, ``"lower"`` for a maximization)."""
    from ..planning import cost_of_privacy, robust_solve
    from ..sets.core import set_named

    mech = _release_mechanism(args, record)
    bound = set_named(args.bound, args.beta, args.support_aware)
    robust = guarded(robust_solve, problem, mech, bound)
    mdp = getattr(problem, "model", problem)
    s0 = mdp.initial_state

    def at_s0(values):
        return float(values[0, s0] if mdp.is_finite_horizon else values[s0])

    def ends(policy) -> dict:
        b = guarded(cost_of_privacy, problem, policy, mech, bound)
        names = ("lower", "upper", "worst_case", "best_case")
        return {name: at_s0(getattr(b, name)) for name in names}

    minimize = getattr(problem, "minimize", False)
    return {
        "bound": args.bound,
        "beta": args.beta,
        "support_aware": args.support_aware,
        "worst_case_is": worst_end_name(minimize),
        "private_policy": ends(policy),
        "robust_policy": ends(robust.policy),
        "robust_converged": bool(robust.converged),
    }, robust.policy


def _chain_model(problem):
    """The model whose chain a policy induces, with rewards in the problem's own scale (a
    minimization's rewards negated back: the chain's ``R=?`` is the cost)."""
    import dataclasses

    mdp = getattr(problem, "model", problem)
    if not getattr(problem, "minimize", False):
        return mdp
    return dataclasses.replace(mdp, rewards=-mdp.rewards, terminal_reward=-mdp.terminal_reward)


def _long_run_progress(finite: bool, every: float = 5.0):
    """``solve``'s ``progress`` callback for the command: quiet for a run shorter than
    ``every`` seconds, then its stage (or value-iteration sweep) on stderr about every 5 s."""
    start = time.monotonic()

    def report(done: int, total: int) -> None:
        elapsed = time.monotonic() - start
        if elapsed >= every:
            what = (
                f"stage {done:,}/{total:,}" if finite else f"sweep {done:,} (of at most {total:,})"
            )
            note(f"  [solve] {what}  {elapsed:.0f} s")

    return report


def cmd_synthesize(args) -> list[Path]:
    """The private policy of a released model (post-processing: no privacy cost), as a
    table and as the PRISM chain it induces; with ``--robust`` the robust policy too."""
    import numpy as np

    from ..planning import solve

    user = load_user_mdp(args, metadata=True, validation_only=args.property is not None)
    record = _release_record(args, user.arrays)
    problem = directed(args, property_problem(args, user.mdp, user.horizon))
    mdp = getattr(problem, "model", problem)  # with --property: the property's model
    solution = guarded(solve, mdp, progress=_long_run_progress(mdp.is_finite_horizon))
    s0 = mdp.initial_state
    values = np.asarray(solution.values)
    if problem is not mdp:
        values = np.asarray(problem.values(values))
    meta = {
        "command": " ".join(["jaxprivmdp"] + sys.argv[1:]),
        "mdp": str(args.mdp),
        "property": args.property,
        **objective_record(args, problem),
        "model": model_fields(mdp),
        "release": record,
        "private_value": float(values[0, s0] if mdp.is_finite_horizon else values[s0]),
        "converged": bool(solution.converged),
        "chain": 'PRISM DTMC; finite horizon: unrolled by stage, R=? [F "done"] is the value',
    }
    policies = {"policy": np.asarray(solution.policy)}
    if args.robust:
        meta["robust"], robust_policy = _robust_part(args, problem, record, solution.policy)
        policies["robust_policy"] = np.asarray(robust_policy)
    files = []
    with atomic_outputs() as stage, writing():
        for name, policy in policies.items():
            path = args.out / f"{name}.csv"
            write_policy(stage(path), policy)
            files += [path, *write_chain(args.out / name, _chain_model(problem), policy, stage)]
        json_path = args.out / "synthesize.json"
        stage(json_path).write_text(json.dumps(meta, indent=2, allow_nan=False) + "\n")
    for line in objective_lines(meta):
        print(line)
    print(f"value of the private policy on --mdp at s0 = {s0}: {meta['private_value']:.6g}")
    if args.robust:
        r = meta["robust"]
        print(
            f"worst case at s0 (the {worst_end(meta)} bound; {args.bound} set, β = {args.beta}): "
            f"private policy {r['private_policy']['worst_case']:.6g}, robust policy "
            f"{r['robust_policy']['worst_case']:.6g}"
        )
        for name in ("private_policy", "robust_policy"):
            lo, hi = r[name]["lower"], r[name]["upper"]
            print(f"  {name.replace('_', ' ')}: lower {lo:.6g}, upper {hi:.6g}")
    return files + [json_path]


def cmd_evaluate(args) -> list[Path]:
    """A policy table's value on ``--mdp`` (the true model, for a policy made privately)."""
    import numpy as np

    from ..planning import evaluate

    policy = read_policy(args.policy)
    if policy.ndim == 2:  # the table's stages are the horizon
        if args.horizon is not None and args.horizon != policy.shape[0]:
            raise ValueError(
                f"--horizon {args.horizon} disagrees with --policy {str(args.policy)!r}, which "
                f"has {policy.shape[0]} stages"
            )
        args.horizon = policy.shape[0]
    user = load_user_mdp(args)
    mdp = user.mdp
    if (policy.ndim == 2) != mdp.is_finite_horizon or policy.shape[-1] != mdp.num_states:
        raise ValueError(
            f"--policy {str(args.policy)!r} has shape {policy.shape} (stages, states), but "
            f"--mdp has S = {mdp.num_states} and horizon {mdp.horizon}"
        )
    try:
        values = np.asarray(guarded(evaluate, mdp, policy))
    except ValueError as e:
        raise ValueError(f"--policy {str(args.policy)!r}: {e}") from None
    first = values[0] if mdp.is_finite_horizon else values
    s0 = mdp.initial_state
    meta = {
        "command": " ".join(["jaxprivmdp"] + sys.argv[1:]),
        "mdp": str(args.mdp),
        "policy": str(args.policy),
        "model": model_fields(mdp),
        "value_at_initial_state": float(first[s0]),
        "values": [float(v) for v in first],
    }
    path = args.out / "evaluate.json"
    with atomic_outputs() as stage, writing():
        stage(path).write_text(json.dumps(meta, indent=2, allow_nan=False) + "\n")
    print(f"value of --policy on --mdp at s0 = {s0}: {meta['value_at_initial_state']:.6g}")
    return [path]

"""``check --release``: a property's value on the true model, certified from its release
(:func:`jaxprivmdp.certify_property` over the release's interval model).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..io.core import atomic_outputs
from ._check_output import numbers
from ._interrupts import guarded, writing
from ._mdp_files import load_user_mdp, model_fields
from ._terminal import note


def _refused_flags(args) -> None:
    """Flags of ``check`` that a certified check does not take."""
    if args.props is not None or args.const is not None:
        raise ValueError("--release certifies one --property: --props and --const do not apply")
    if args.property is None:
        raise ValueError("--release needs --property, e.g. 'Pmax=? [F \"goal\"]'")
    if args.step_policy:
        raise ValueError("--step-policy does not apply with --release")


def _mechanism(path: Path, record: dict):
    """The mechanism the release records (its name and parameter)."""
    from ..mechanisms.core import mechanism_class

    name = record.get("mechanism")
    if name is None:
        raise ValueError(
            f"--release {str(path)!r} does not record the mechanism that released it (a "
            "release of 'jaxprivmdp privatize' does): its interval model needs the noise"
        )
    cls = mechanism_class(name)
    return cls(float(record[cls.parameter_name()]))


def _where(cert, mech) -> str:
    """Where the interval holds: the probability, over what, and the set."""
    param = f"{mech.parameter_name()} = {float(mech.parameter):.6g}"
    return (
        f"with probability >= {float(cert.confidence):.6g} over the mechanism's noise "
        f"({mech.name}, {param}; {cert.uncertainty_set.name} set, "
        f"beta = {float(cert.uncertainty_set.beta):.6g})"
    )


def cmd_certify(args) -> list[Path]:
    """``check --release R --set certified --beta β --property P``: the certified interval of
    the true model's value of ``P`` at the initial state, printed and in ``check.json``."""
    import numpy as np

    from ..experiments import certify_property
    from ..io.core import release_record
    from ..properties.core import parse_property
    from ..sets.core import set_named
    from ._property_commands import _reward_name, read_labels, read_variables

    _refused_flags(args)
    margs = argparse.Namespace(**vars(args))
    margs.mdp = args.release  # the model read, its labels and .sta beside it
    user = load_user_mdp(margs, validation_only=True, metadata=True)
    if user.horizon is None and parse_property(args.property).bound == "T":
        raise ValueError(f"--property {args.property!r} uses T: give --horizon T")
    record = release_record(args.release, user.arrays)
    mech = _mechanism(args.release, record)
    name = "certified" if args.set is None else args.set
    beta = 0.1 if args.beta is None else args.beta
    uset = set_named(name, beta, args.support_aware)
    private = user.mdp
    labels = read_labels(margs, private.num_states)
    variables = read_variables(margs, private.num_states)
    options = dict(labels=labels, variables=variables, reward_name=_reward_name(args))
    try:
        cert = guarded(certify_property, private, args.property, mech, uset, **options)
    except ValueError as e:
        raise ValueError(f"--property: {e}") from None
    s0 = private.initial_state
    low, high = (float(x) for x in np.asarray(cert.value_at_initial, np.float64))
    entry = {
        "property": args.property,
        "kind": "certified",
        **numbers("certified_interval_at_initial_state", [low, high]),
        "confidence": float(cert.confidence),
        "set": name,
        "beta": beta,
        "support_aware": args.support_aware,
        "mechanism": mech.name,
        mech.parameter_name(): float(mech.parameter),
        **numbers("lower", cert.lower),
        **numbers("upper", cert.upper),
        "robust_property": cert.robust_property,
        "optimistic_property": cert.optimistic_property,
        "robust_policy": np.asarray(cert.policy).tolist(),
        "converged": bool(cert.robust.converged) and bool(cert.optimistic.converged),
    }
    model = model_fields(private)
    del model["horizon"], model["discount"]  # not used: properties are undiscounted
    meta = {
        "command": " ".join(["jaxprivmdp"] + sys.argv[1:]),
        "release": str(args.release),
        "horizon": user.horizon,
        "model": model,
        **entry,
        "properties": [entry],
    }
    path = args.out / "check.json"
    with atomic_outputs() as stage, writing():
        stage(path).write_text(json.dumps(meta, indent=2, allow_nan=False) + "\n")
    print(
        f"{args.property} of the true model at s0 = {s0}: in [{low:.10g}, {high:.10g}] "
        f"{_where(cert, mech)}"
    )
    if record.get("smoothing") is not None:
        note(
            f"note: the release was smoothed (smoothing = {record['smoothing']}): the interval "
            "is about the smoothed model, whose rows the mechanism privatized"
        )
    return [path]


def cmd_check_or_certify(args) -> list[Path]:
    """``check``: of ``--mdp`` as PRISM answers, or of the true model from ``--release``."""
    from ._property_commands import cmd_check

    if args.release is not None:
        return cmd_certify(args)
    given = [f for f in ("set", "beta") if getattr(args, f) is not None]
    given += ["support_aware"] if args.support_aware else []
    if given:
        flags = ", ".join("--" + f.replace("_", "-") for f in given)
        raise ValueError(f"{flags}: for --release (a certified check of the true model)")
    return cmd_check(args)

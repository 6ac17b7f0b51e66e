"""The options of ``check``: the properties (``--property``, ``--props`` and its ``--const``)
and what their formulas use (``--labels``, ``--variables``)."""

from __future__ import annotations

import argparse
from pathlib import Path


def labels_option(p: argparse.ArgumentParser) -> None:
    """``--labels``: the property commands' labels file."""
    p.add_argument(
        "--labels",
        type=Path,
        default=None,
        help="labels file (.lab, PRISM or Storm; or a .drn) (default: a .drn --mdp's own "
        "labels, or the .lab beside a .tra --mdp)",
    )


def check_options(p: argparse.ArgumentParser) -> None:
    """``check``'s ``--property``/``--props`` (one of them is needed), ``--const``,
    ``--labels``, ``--variables``, ``--step-policy`` and ``--dtype``."""
    p.add_argument(
        "--property",
        default=None,
        help="PRISM properties, separated by ';': numerical ('Pmax=? [F<=10 \"goal\"]'), "
        "boolean ('P>=0.9 [F \"goal\"]', Storm's 'Pmax>=0.5 [...]') or "
        "'filter(op, prop, states)' (op: forall exists count min max sum avg range argmin "
        "argmax state first print); checked after --props' (default: none)",
    )
    p.add_argument(
        "--props",
        type=Path,
        default=None,
        help="a PRISM properties file (.props): a property per line or ';'-separated, // "
        "comments, 'const int N = 10;' constants, '\"name\": ' prefixes (default: none)",
    )
    p.add_argument(
        "--const",
        action="append",
        default=None,
        metavar="NAME=VALUE",
        help="a value for a constant of --props, as PRISM's -const: one the file declares "
        "without a value ('const int N;') or one to override; repeat it or separate with ',' "
        "(--const N=10,p=0.5) (default: the file's values)",
    )
    labels_option(p)
    p.add_argument(
        "--variables",
        type=Path,
        default=None,
        help="PRISM states file (.sta: '(x,y)' then 'i:(1,2)' per state) for atoms such as "
        "s=2 or x>y (default: the .sta beside a .tra --mdp, if there is one)",
    )
    p.add_argument(
        "--step-policy",
        action="store_true",
        help="write the policy of a step-bounded property as one decision rule per step "
        "(k lists of S actions) instead of the rule of the first step (S actions)",
    )
    p.add_argument("--dtype", choices=("float32", "float64"), default="float64", help="floats")


def constants(values: list[str] | None) -> dict[str, str] | None:
    """``--const`` as ``{name: value}`` (None when not given); the values are checked where
    the file declares their type (:func:`jaxprivmdp.load_properties`).

    Raises:
      ValueError: an entry that is not ``NAME=VALUE``, or a name given twice.
    """
    if values is None:
        return None
    out: dict[str, str] = {}
    for entry in (e for v in values for e in v.split(",")):
        name, eq, value = (x.strip() for x in entry.partition("="))
        if not eq or not name.isidentifier() or not value:
            raise ValueError(f"--const {entry.strip()!r}: expected NAME=VALUE, e.g. N=10")
        if name in out:
            raise ValueError(f"--const: constant {name!r} given twice")
        out[name] = value
    return out

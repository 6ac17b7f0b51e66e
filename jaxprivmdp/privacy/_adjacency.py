""":class:`Adjacency`: which rows, and which MDPs, a guarantee calls adjacent."""

from __future__ import annotations

import dataclasses
from typing import Literal

from .._checks import real


@dataclasses.dataclass(frozen=True)
class Adjacency:
    """Adjacent rows and adjacent MDPs, the setting of every (ε, δ) statement.

    Rows ``p, q`` of one (state, action) are adjacent when ``‖p − q‖₁ <= b`` (general ℓ1
    adjacency: any number of entries changed), both in the domain of rows with every entry
    ``>= eta`` (the Dirichlet mechanism's accounting needs it; the additive mechanisms do
    not). Two MDPs are adjacent when they differ in one such row (``scope="row"``) or when
    every row may differ, each pair adjacent (``scope="all"``).

    Attributes:
      b: the ℓ1 bound, in ``(0, 1]``.
      eta: the *public* lower bound on every entry on the support, in ``(0, 1/n]`` (None:
        not given; where a statement needs it, it says so or uses its documented default).
      scope: ``"row"`` (one row of the MDP changes) or ``"all"`` (every row may change):
        read by :func:`mdp_guarantee`.
    """

    b: float
    eta: float | None = None
    scope: Literal["row", "all"] = "row"

    def __post_init__(self):
        object.__setattr__(self, "b", real("b", self.b, low=0.0, high=1.0, low_open=True))
        if self.eta is not None:
            object.__setattr__(self, "eta", real("eta", self.eta, low=0.0, low_open=True))
        if self.scope not in ("row", "all"):
            raise ValueError(f"scope must be 'row' or 'all', got {self.scope!r}")


def as_adjacency(function: str, adjacency) -> Adjacency:
    """``adjacency`` if it is an :class:`Adjacency`, else a TypeError with the object form
    (a bare number is the 0.2 ``b``)."""
    if isinstance(adjacency, Adjacency):
        return adjacency
    raise TypeError(
        f"{function}() takes the adjacency as an object, got {adjacency!r}: pass "
        "jp.privacy.Adjacency(b, eta)"
    )


def needs_eta(function: str, adjacency: Adjacency) -> float:
    """The adjacency's ``eta``, which the Dirichlet accounting needs."""
    if adjacency.eta is None:
        raise ValueError(
            f"{function}() needs the public lower bound eta: jp.privacy.Adjacency(b, eta)"
        )
    return adjacency.eta

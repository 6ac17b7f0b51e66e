"""The uncertainty sets as values: :class:`PaperSet`, :class:`ExactSet`, :class:`CertifiedSet`.

Each set is a small immutable pytree (``β`` a leaf, ``support_aware`` static) that says what
the bounds bound and how a row's box is built; the mechanism that released ``P̄`` turns it
into per-entry bounds (:meth:`jaxprivmdp.mechanisms.Mechanism.set_params`), and the robust
kernel optimizes over them. Every set has the form

    {β' P1 + (1 − β') P2 : P1, P2 ∈ Δ(support), l ≤ P2 ≤ u}

and differs in the union bound behind ``l ≤ u`` and the mixture weight ``β'``:

- :class:`PaperSet`: each row's box holds with probability ``≥ 1 − β`` (Lemma 1's box for the
  Dirichlet mechanism), ``β' = β``: the paper's set P̂ and its statement about
  ``E[V | P̄, k]`` (Theorems 1 and 2).
- :class:`ExactSet`: the same statement with each row's box from the exact marginals
  (Bonferroni over the row's entries), ``β' = β``.
- :class:`CertifiedSet`: every box of every allowed row holds at once with probability
  ``≥ 1 − β`` (Bonferroni over all entries), ``β' = 0``: the bounds hold for the **true** MDP.

``support_aware=True`` restricts both parts to each row's public support (``docs/bounds.md``).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, Literal

import jax
from jax.typing import ArrayLike

from .._checks import check_probability, is_concrete

Bound = Literal["paper", "exact", "certified"]


@dataclasses.dataclass(frozen=True)
class UncertaintySet:
    """A member of the set family (base class; use the three subclasses).

    Attributes:
      beta: ``β`` in ``(0, 1)``: the failure probability of the box (per row for the paper's
        and exact sets, jointly for the certified set).
      support_aware: restrict the set to each row's public support (static).
    """

    beta: ArrayLike = 0.1
    support_aware: bool = dataclasses.field(default=False, metadata=dict(static=True))

    name: ClassVar[str]
    #: ``"row"``: the union bound covers one row's entries; ``"model"``: every entry of
    #: every allowed row at once.
    scope: ClassVar[str] = "row"
    #: whether the box comes from the exact marginals (else the mechanism's radius).
    exact: ClassVar[bool] = True

    def __post_init__(self):
        if not isinstance(self.support_aware, bool):
            raise ValueError(f"support_aware must be True or False, got {self.support_aware!r}")
        if is_concrete(self.beta):
            check_probability("beta", self.beta)

    @property
    def mixture(self):
        """The weight ``β'`` of the free part of the set: ``β``, or 0 (certified)."""
        return 0.0 if self.scope == "model" else self.beta


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class PaperSet(UncertaintySet):
    """The paper's set P̂ (eq. 1): a box per row, ``β``-mixture (Theorems 1 and 2)."""

    name: ClassVar[str] = "paper"
    exact: ClassVar[bool] = False


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class ExactSet(UncertaintySet):
    """The paper's statement with each row's box from the exact marginals (tighter)."""

    name: ClassVar[str] = "exact"


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class CertifiedSet(UncertaintySet):
    """Every true row in its box at once with probability ``≥ 1 − β``: bounds on the true
    value, for every policy, at every stage and state (``docs/bounds.md``)."""

    name: ClassVar[str] = "certified"
    scope: ClassVar[str] = "model"


SETS: dict[str, type[UncertaintySet]] = {s.name: s for s in (PaperSet, ExactSet, CertifiedSet)}
BOUNDS: tuple[str, ...] = tuple(SETS)


def check_bound(bound) -> str:
    """``bound`` itself if it names a set, else a ValueError listing them."""
    if bound not in SETS:
        raise ValueError(f"bound must be one of {', '.join(map(repr, BOUNDS))}, got {bound!r}")
    return bound


def as_set(bound, beta=None, support_aware=None) -> UncertaintySet:
    """The public boundary's mapping: a name plus ``beta``/``support_aware``, or a set.

    A set object is returned as given; ``beta`` or ``support_aware`` passed beside it must
    agree with it (``None`` means "not given"), so nothing the user said is dropped.
    """
    if isinstance(bound, UncertaintySet):
        if beta is not None and not (is_concrete(beta, bound.beta) and beta == bound.beta):
            raise ValueError(
                f"beta={beta!r} was given beside bound={bound!r}: pass beta in the set only"
            )
        if support_aware is not None and bool(support_aware) != bound.support_aware:
            raise ValueError(
                f"support_aware={support_aware!r} was given beside bound={bound!r}: pass it "
                "in the set only"
            )
        return bound
    cls = SETS[check_bound(bound)]
    return cls(0.1 if beta is None else beta, bool(support_aware))

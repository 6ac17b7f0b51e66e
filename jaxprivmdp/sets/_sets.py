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

from .._checks import check_count, check_probability, is_concrete
from .._refusals import set_object
from ..models.core import check_public_support
from ._counts import UnionCounts, union_counts

Bound = Literal["paper", "exact", "certified"]


@dataclasses.dataclass(frozen=True)
class UncertaintySet:
    """A member of the set family (base class; use the three subclasses).

    Attributes:
      beta: ``β`` in ``(0, 1)``: the failure probability of the box (per row for the paper's
        and exact sets, jointly for the certified set).
      support_aware: restrict the set to each row's public support (static).
      counts: what the union bound counts (static), or None: counted on the model. A model
        traced under ``jax.jit``/``vmap`` is counted from its shapes (every entry of every
        row), which widens the set where masked actions or a support-aware set count fewer;
        :meth:`counted` records a concrete model's counts for such calls. Checked against a
        concrete model (a ``ValueError`` if below its counts); against a traced one at run
        time, where counts below the model's are replaced by those of its shapes.
    """

    beta: ArrayLike = 0.1
    support_aware: bool = dataclasses.field(default=False, metadata=dict(static=True))
    counts: UnionCounts | None = dataclasses.field(default=None, metadata=dict(static=True))

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
        if self.counts is not None:
            if not isinstance(self.counts, tuple) or len(self.counts) != 3:
                raise ValueError(
                    f"counts must be None or a UnionCounts of three ints, got {self.counts!r}"
                )
            fields = zip(UnionCounts._fields, self.counts, strict=True)
            counts = UnionCounts(*(check_count(f"counts.{f}", c) for f, c in fields))
            object.__setattr__(self, "counts", counts)

    def counted(self, mdp) -> UncertaintySet:
        """This set with the union bound's :class:`UnionCounts` on the concrete model
        ``mdp``, so that calls on a release of it traced under ``jax.jit`` or ``jax.vmap``
        (same structure: action mask, public support) use the sets an eager call uses.

        Raises:
          ValueError: if ``mdp``'s action mask or support is traced, or a support-aware set's
            ``mdp`` records no public support.
        """
        if self.support_aware:
            check_public_support(mdp)
        counts = union_counts(mdp, self.support_aware)
        if not all(isinstance(c, int) for c in counts):
            raise ValueError("counted() needs a concrete model (its action mask and support)")
        return dataclasses.replace(self, counts=counts)

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
#: The default set of the bounds: the paper's, ``β = 0.1`` (its figures' value).
PAPER_SET = PaperSet(0.1)


def set_named(name: str, beta=0.1, support_aware: bool = False) -> UncertaintySet:
    """The command line's ``--bound NAME``: the set called ``name`` (a ValueError listing
    the names otherwise). The Python API takes the objects only (:func:`as_set`)."""
    if name not in SETS:
        raise ValueError(f"bound must be one of {', '.join(map(repr, BOUNDS))}, got {name!r}")
    return SETS[name](beta, bool(support_aware))


def as_set(bound, function: str) -> UncertaintySet:
    """The set a public call was given, which must be an object: a name (the 0.2 form
    ``bound="certified"``) is a TypeError showing the object form."""
    return set_object(function, bound, UncertaintySet)

"""Which rows a mechanism privatizes, over which entries: the public structure of a release.

A mechanism privatizes every allowed row of the *input* model over its support: the full row,
the row's nonzero entries (``support="nonzero"``: the zero pattern is public), a sparse
model's listed successors, or the row mixed with the uniform distribution (``smoothing=η``,
which changes the data). The support found here travels with the release; no set ever
re-derives it from ``P̄``. Used by the mechanisms and by the privacy accounting of a whole
model (which rows count).
"""

from __future__ import annotations

import functools
from typing import Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from .._checks import check_range, check_shape, is_concrete
from ._dense import TabularMDP, validate_transitions
from ._ragged import RaggedMDP, unsupported
from ._sparse import SparseMDP

Support = Literal["nonzero"] | None


class ZeroEntryError(ValueError):
    """Rows with zero entries were given without ``support="nonzero"`` or ``smoothing``.

    Attributes:
      rows: the offending ``(state, action)`` pairs, in order.
    """

    def __init__(self, message: str, rows: list[tuple[int, int]]):
        super().__init__(message)
        self.rows = rows


class MechanismInput(NamedTuple):
    """The rows the mechanism privatizes (nothing the user gave is changed).

    Attributes:
      rows: `[S, A, S]` the rows that are privatized (smoothed when ``smoothing`` was given).
      support: `[S, A, S]` bool, entries sampled; entries outside stay exactly 0.
      action_mask: `[S, A]` bool, allowed actions; masked rows are never privatized.
    """

    rows: ArrayLike
    support: ArrayLike
    action_mask: ArrayLike


def check_options(support: Support, smoothing) -> None:
    """``support`` and ``smoothing`` as the mechanism accepts them (not their values vs rows)."""
    if support not in (None, "nonzero"):
        raise ValueError(f"support must be None or 'nonzero', got {support!r}")
    if smoothing is not None and support is not None:
        raise ValueError("pass either support='nonzero' or smoothing, not both")


def resolve_rows(xp, P, mask, support: Support, smoothing) -> MechanismInput:
    """Smoothing and support of the rows, in NumPy (``xp=np``) or JAX (``xp=jnp``).

    One formula for both: the host accounting needs NumPy float64, the jitted cores JAX.
    """
    n = P.shape[-1]
    if smoothing is not None:
        P = (1.0 - n * smoothing) * P + smoothing
    allowed = mask[:, :, None]
    if support == "nonzero":
        supp = (P > 0) | ~allowed
    else:
        supp = xp.ones(P.shape, bool)
    return MechanismInput(P, supp, mask)


def prepare_mechanism_input(
    transitions: ArrayLike,
    *,
    action_mask: ArrayLike | None = None,
    support: Support = None,
    smoothing: float | None = None,
    interior: bool = True,
) -> MechanismInput:
    """Validates concrete rows on the host and resolves their zero entries (float64 NumPy).

    A Dirichlet density needs every concentration ``k·p_j > 0``. Rows with zeros are refused
    unless ``support="nonzero"`` (the zero pattern is public structure, rows are privatized
    over their nonzero entries) or ``smoothing=η`` (rows are mixed with the uniform
    distribution, ``p ← (1 − nη) p + η``, which changes the data).

    ``interior=False`` (additive mechanisms): zero entries are allowed without ``support``.

    Raises:
      ValueError: for invalid transitions, or zero entries without an option to handle them
        (:class:`ZeroEntryError`).
    """
    check_options(support, smoothing)
    P, mask = validate_transitions(transitions, action_mask)
    if smoothing is not None:
        check_range("smoothing", smoothing, low=0.0, high=1.0 / P.shape[-1], low_open=True)
    rows_in = resolve_rows(np, P, mask, support, smoothing)
    if interior and support is None:
        zeros = np.argwhere((rows_in.rows <= 0) & mask[:, :, None])
        if zeros.size:
            rows = sorted({(int(s), int(a)) for s, a, _ in zeros})
            shown = ", ".join(f"(state {s}, action {a})" for s, a in rows[:5])
            more = f" and {len(rows) - 5} more" if len(rows) > 5 else ""
            raise ZeroEntryError(
                f"transition rows {shown}{more} have zero entries: the Dirichlet mechanism "
                "needs rows in the interior of the simplex. Pass support='nonzero' to treat the "
                "zero pattern as public and privatize each row over its nonzero entries, or "
                "smoothing=eta to mix every row with the uniform distribution first.",
                rows,
            )
    return rows_in


def mechanism_input(
    transitions: ArrayLike,
    action_mask: ArrayLike | None,
    support: Support,
    smoothing: float | None,
    dtype,
) -> MechanismInput:
    """The boundary of every function that privatizes: device arrays in ``dtype``.

    Concrete rows are validated (:func:`prepare_mechanism_input`); traced rows only have
    their shapes checked, and their smoothing and support are computed on the device.
    """
    check_options(support, smoothing)
    if is_concrete(transitions, action_mask, smoothing):
        rows_in = prepare_mechanism_input(
            transitions, action_mask=action_mask, support=support, smoothing=smoothing
        )
        return MechanismInput(
            jnp.asarray(rows_in.rows, dtype),
            jnp.asarray(rows_in.support),
            jnp.asarray(rows_in.action_mask),
        )
    P = jnp.asarray(transitions, dtype)
    if P.ndim != 3 or P.shape[0] != P.shape[2]:
        raise ValueError(f"transitions must have shape [S, A, S], got {P.shape}")
    mask = jnp.ones(P.shape[:2], bool) if action_mask is None else jnp.asarray(action_mask, bool)
    check_shape("action_mask", mask, P.shape[:2], "[S, A]")
    return resolve_rows(jnp, P, mask, support, smoothing)


@functools.partial(jax.jit, static_argnames=("support",))
def _device_support(P, mask, support: Support, smoothing):
    """``(smoothed rows or None, support, any allowed entry <= 0)``: the rows come back only
    when smoothed (a program's output is a copy; unsmoothed rows are the model's own)."""
    rows_in = resolve_rows(jnp, P, mask, support, smoothing)
    rows = None if smoothing is None else rows_in.rows
    return rows, rows_in.support, jnp.any((rows_in.rows <= 0) & mask[:, :, None])


@jax.jit  # one dispatch: four eager operations cost 191 µs a call on the CPU
def _listed_support(probs, next_states, action_mask):
    return (probs > 0) & (next_states >= 0) | ~action_mask[..., None]


def model_mechanism_input(
    mdp, support: Support, smoothing: float | None, *, interior: bool = True
) -> MechanismInput:
    """The rows of a model from :func:`make_mdp` to privatize (:func:`synthesize`, sweeps).

    ``make_mdp`` validated the rows once; here only what depends on the options is checked:
    the smoothing's range and, without ``support`` or ``smoothing``, zero entries, by one
    reduction on the device (the host builds the message only when there are some).
    ``interior=False`` (additive mechanisms): zero entries are allowed without ``support``.
    """
    check_options(support, smoothing)
    if isinstance(mdp, RaggedMDP):
        raise unsupported(
            "this function (dirichlet_mechanism, the command line's accounting; "
            "jp.privatize, synthesize and sweep take a RaggedMDP)"
        )
    if isinstance(mdp, SparseMDP):
        # Successor lists are privatized over their support: the lists are public structure.
        if smoothing is not None:
            raise ValueError(
                "smoothing mixes every row with the uniform distribution over all S states, "
                "which a SparseMDP cannot hold; its rows are privatized over their listed "
                "successors (as support='nonzero' does for a dense model)"
            )
        support = _listed_support(mdp.probs, mdp.next_states, mdp.action_mask)
        return MechanismInput(mdp.probs, support, mdp.action_mask)
    if smoothing is not None:
        check_range("smoothing", smoothing, low=0.0, high=1.0 / mdp.num_states, low_open=True)
    rows, supp, has_zero = _device_support(mdp.transitions, mdp.action_mask, support, smoothing)
    rows_in = MechanismInput(mdp.transitions if rows is None else rows, supp, mdp.action_mask)
    if interior and support is None and is_concrete(has_zero) and bool(has_zero):
        # Raises the ZeroEntryError that names the rows.
        prepare_mechanism_input(
            np.asarray(mdp.transitions),
            action_mask=np.asarray(mdp.action_mask),
            smoothing=smoothing,
        )
    return rows_in


def ragged_mechanism_input(mdp: RaggedMDP, support: Support, smoothing) -> MechanismInput:
    """:func:`model_mechanism_input` of a :class:`RaggedMDP`: ``rows`` and ``support`` are
    tuples, one `[n_b, K_b]` array per bucket, privatized over the listed successors with
    positive probability, as a :class:`SparseMDP`'s; ``action_mask`` is a tuple of `[n_b]`
    (each row allowed or not)."""
    check_options(support, smoothing)
    if smoothing is not None:
        raise ValueError(
            "smoothing mixes every row with the uniform distribution over all S states, "
            "which a RaggedMDP cannot hold; its rows are privatized over their listed successors"
        )
    allowed = mechanism_mask(mdp)
    supp = tuple(
        (b.probs > 0) & (b.next_states >= 0) | ~m[:, None]
        for b, m in zip(mdp.buckets, allowed, strict=True)
    )
    return MechanismInput(tuple(b.probs for b in mdp.buckets), supp, allowed)


def mechanism_mask(mdp):
    """The action mask a mechanism takes: ``mdp.action_mask``, or for a :class:`RaggedMDP`
    one `[n_b]` per bucket (whether each of its rows is allowed)."""
    if isinstance(mdp, RaggedMDP):
        mask = mdp.action_mask.reshape(-1)
        return tuple(mask[b.rows] for b in mdp.buckets)
    return mdp.action_mask


def mechanism_input_of(mdp, support: Support, smoothing, *, interior: bool = True):
    """:func:`model_mechanism_input`, or :func:`ragged_mechanism_input` for a ragged model
    (for the functions that privatize with :func:`jaxprivmdp.mechanisms.privatize_rows`)."""
    if isinstance(mdp, RaggedMDP):
        return ragged_mechanism_input(mdp, support, smoothing)
    return model_mechanism_input(mdp, support, smoothing, interior=interior)


def host_mechanism_input(
    model: ArrayLike | TabularMDP | SparseMDP,
    *,
    action_mask: ArrayLike | None = None,
    support: Support = None,
    smoothing: float | None = None,
    interior: bool = True,
) -> MechanismInput:
    """What a mechanism privatizes, on the host in float64 NumPy: for the accounting.

    ``model`` is a :class:`TabularMDP` or :class:`SparseMDP` (its own action mask; another
    is refused) or a concrete `[S, A, S]` array. The same rules as the mechanisms'
    (:func:`model_mechanism_input`, :func:`prepare_mechanism_input`): a sparse model's rows
    over their listed successors with positive probability (no ``smoothing``), a dense
    one's over all entries, its nonzero ones (``support="nonzero"``) or smoothed.
    ``interior``: as :func:`prepare_mechanism_input`.

    Raises:
      ValueError: as :func:`prepare_mechanism_input`; an ``action_mask`` beside a model;
        ``smoothing`` for a sparse model.
    """
    if isinstance(model, RaggedMDP):
        raise unsupported("the privacy accounting of a model")
    if isinstance(model, TabularMDP | SparseMDP) and action_mask is not None:
        raise ValueError("a model carries its own action_mask; do not pass another")
    if isinstance(model, SparseMDP):
        check_options(support, smoothing)
        if smoothing is not None:
            raise ValueError(
                "smoothing needs dense rows over all S states; a SparseMDP's rows are "
                "privatized over their listed successors"
            )
        P = np.asarray(model.probs, np.float64)
        supp = (P > 0) & (np.asarray(model.next_states) >= 0)
        return MechanismInput(P, supp, np.asarray(model.action_mask))
    if isinstance(model, TabularMDP):
        action_mask = np.asarray(model.action_mask)
        model = np.asarray(model.transitions)
    return prepare_mechanism_input(
        model, action_mask=action_mask, support=support, smoothing=smoothing, interior=interior
    )


def private_rows(rows_in: MechanismInput) -> np.ndarray:
    """`[S, A]` bool: the rows the mechanism changes, the only ones the accounting counts.

    An allowed row with at least two entries on its support. A row with one is
    deterministic: every mechanism returns it unchanged (all its mass on that entry), so it
    reveals nothing beyond the public support and costs no privacy. Masked rows are never
    privatized.
    """
    allowed = np.asarray(rows_in.action_mask, bool)
    return allowed & (np.asarray(rows_in.support, bool).sum(-1) >= 2)

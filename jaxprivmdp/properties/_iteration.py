"""The numerical cores of :func:`jaxprivmdp.check`, jit-compiled: interval iteration for
unbounded properties, backward induction for step-bounded ones, and their rounding margins.

:func:`interval_iteration` (Haddad & Monmege 2014; Baier, Klein, Leuschner, Parker,
Wunderlich 2017) iterates a lower bound up and an upper bound down from known bounds (0 and
the visiting-time bound, or verified guesses: :mod:`jaxprivmdp.properties._guess`) until they
meet (``lax.while_loop``); :func:`bounded_iteration` runs ``k`` backups
(``lax.scan``); :func:`solve_bounded` answers a step-bounded property with it. Products run at
``precision=HIGHEST`` (:func:`jaxprivmdp.models._rows.expect`).

Rounding. Interval iteration in floating point can cross the exact value (Hartmanns 2022),
so each backup is widened: every quantity here is non-negative, so the computed ``r + Σ p v``
is within a relative ``(n + 1) u`` of the exact one (``n`` terms, ``u = eps/2``; Higham 2002,
§3.1) and within a relative ``2 δ`` of the backup of the normalized rows (``δ = max |Σ p −
1|``); the lower bound is multiplied by ``1 − m``, the upper by ``1 + m``, with ``m = (n +
5) u + 2 δ``. The bounds then hold in the working dtype (for dense rows with ``S`` beyond a
few dozen, ``n`` is replaced by ``16 + 2⌈log₂ S⌉``, a heuristic for XLA's blocked summation,
as :mod:`jaxprivmdp.planning._bellman` does). The price is a floor on the reachable precision of
about ``2 m`` times the expected number of steps: about 1e-6 per step in float32, which is why
:func:`jaxprivmdp.check` runs these cores in float64 on a concrete model (only a traced one,
under ``jax.jit``, keeps its float32). The relative bound holds for results of at least the
dtype's ``tiny`` only (XLA flushes smaller ones to zero), so every widened backup also adds
an absolute :func:`~jaxprivmdp.properties._precision.underflow`, and a gap within
:func:`~jaxprivmdp.properties._precision.gap_floor` counts as met.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..models.core import Model, RaggedRows, Rows, expect, row_length, row_sums, transition_rows
from ._graph import Graph
from ._kernels import compiled
from ._precision import gap_floor, underflow


def model_rows(mdp: Model) -> Rows:
    """The model's transition rows as the :class:`Rows` pytree the cores take."""
    rows = transition_rows(mdp)
    if isinstance(rows, RaggedRows):
        return rows
    return Rows(rows.probs, rows.next_states)


def opt_sign(minimize: bool, dtype) -> jax.Array:
    """``-1`` to minimize, ``1`` to maximize: the cores take the optimum as a traced sign."""
    return jnp.asarray(-1 if minimize else 1, dtype)


def rounding_margin(mdp: Model) -> float:
    """The rounding of one backup ``r + Σ p v`` relative to its value, ``(n + 5) u``; the cores
    add the rows' distance from sums of 1 (:func:`host_widening`, :func:`_widening`)."""
    n = row_length(mdp)
    ulps = min(n + 5, 2 * (16 + 2 * math.ceil(math.log2(max(n, 2)))))  # units of eps/2
    return ulps * float(np.finfo(mdp.rewards.dtype).eps) / 2


def widening_pair(mdp: Model, relative: float) -> jax.Array:
    """`[2]` in the model's dtype: ``relative`` and the absolute :func:`underflow` of one
    backup, the ``margin`` the cores take."""
    absolute = underflow(row_length(mdp), mdp.rewards.dtype)
    return jnp.asarray([relative, absolute], mdp.rewards.dtype)


def host_widening(mdp: Model, g: Graph) -> float:
    """``m`` for :func:`interval_iteration`: ``(n + 5) u + 2 δ`` with ``δ`` the largest
    ``|Σ p − 1|`` over allowed rows, summed exactly enough in float64 on the host (a row
    ``s`` times a distribution changes ``Σ p v`` by the factor ``s``: relative ``δ/(1 − δ)
    <= 2 δ``), rounded up."""
    return widened(rounding_margin(mdp), g.row_error)


@compiled()
def widened(rounding: float, row_error: float) -> float:
    """:func:`host_widening`'s ``m`` from the rounding of one backup and ``δ`` (the largest
    ``|Σ p − 1|``; a release of a batch computes it in a compiled pass)."""
    return (rounding + 2 * (row_error + 1e-15)) * (1 + 1e-6)


def _widening(rows: Rows, usable: jax.Array, rounding: jax.Array) -> jax.Array:
    """``m``: a relative bound on how far a computed backup ``r + Σ p v`` (all terms ≥ 0) is
    from the exact backup with each row divided by its sum, ``δ = max |Σ p − 1|`` over the
    usable rows (rows are validated within 3.1e-5 of 1 and never renormalized; the values
    here are those of the rows read as the distributions they stand for):
    ``rounding + 2 (δ̂ + rounding)``, the computed sum ``δ̂`` being itself rounded."""
    sums = row_sums(rows)
    delta = jnp.max(jnp.where(usable, jnp.abs(sums - 1), 0))
    return 3 * rounding + 2 * delta


class Unfixed(NamedTuple):
    """What :func:`interval_iteration` iterates on (a pytree of arrays).

    Attributes:
      rewards: `[S, A]` rewards (zeros for probabilities).
      usable: `[S, A]` the pairs the optimum ranges over (allowed, not internal to a
        collapsed end component, not leading to an infinite state).
      group: `[S]` int: states of one collapsed end component share the optimum over its
        members (``group`` is the identity elsewhere).
      fixed, fixed_value: `[S]` the precomputed states and their values.
      upper0: `[S]` an upper bound on the unfixed states (used when ``has_upper``).
      has_upper: bool scalar.
      lower0: `[S]` a lower bound on the unfixed states (0, or a verified guess: see
        :mod:`jaxprivmdp.properties._guess`).
    """

    rewards: jax.Array
    usable: jax.Array
    group: jax.Array
    fixed: jax.Array
    fixed_value: jax.Array
    upper0: jax.Array
    has_upper: jax.Array
    lower0: jax.Array


@jax.jit
def interval_iteration(
    rows: Rows,
    problem: Unfixed,
    sign: jax.Array,
    margin: jax.Array,
    tol: jax.Array,
    max_iterations: jax.Array,
):
    """Interval iteration of ``v(s) = opt_{a usable} r(s, a) + Σ p v`` on the unfixed states.

    Args:
      rows: the model's rows; problem: the rewards, usable pairs, fixed states and starting
        bounds (:class:`Unfixed`).
      sign: ``1`` to maximize, ``-1`` to minimize (traced: one compilation for both).
      margin: `[2]` ``(m, a)``: ``m`` a bound on the relative error of a computed backup
        (its rounding and the rows' distance from sums of 1: :func:`host_widening`), ``a``
        the absolute one below ``tiny`` (:func:`widening_pair`); tol: relative precision
        (a gap within :func:`gap_floor` is met whatever it); max_iterations: a cap on
        iterations.

    Returns:
      ``(lower, upper, iterations, converged)``.
    """
    rewards, usable, group, fixed, fixed_value, upper0, has_upper, lower0 = problem
    S = fixed.shape[0]
    dtype = rewards.dtype
    low = jnp.asarray(-jnp.inf, dtype)

    def q_values(v):  # sign · Q, so that the optimum is always a max
        return jnp.where(usable, sign * (rewards + expect(rows, v)), low)

    def backup(v):
        w = jnp.max(q_values(v), axis=-1)
        return sign * jax.ops.segment_max(w, group, num_segments=S)[group]

    widen = jnp.stack([1 - margin[0], 1 + margin[0]])[:, None]
    shift = jnp.stack([-margin[1], margin[1]])[:, None]
    floor = gap_floor(dtype)
    bounds0 = jnp.stack(
        [
            jnp.where(fixed, fixed_value, lower0),
            jnp.where(fixed, fixed_value, jnp.where(has_upper, upper0, 0)),
        ]
    )

    def met(b):
        gap = b[1] - b[0]
        return has_upper & jnp.all((gap <= tol * (b[1] + b[0])) | (gap <= floor))

    def cond(carry):
        _, it, done = carry
        return (~done) & (it < max_iterations)

    def body(carry):
        b, it, _ = carry
        new = jnp.stack([backup(b[0]), backup(b[1])]) * widen + shift  # (vmap: slower)
        new = jnp.stack([jnp.maximum(b[0], new[0]), jnp.minimum(b[1], new[1])])
        new = jnp.where(fixed, fixed_value, new)
        new = new.at[1].set(jnp.where(has_upper, new[1], b[1]))
        return new, it + 1, met(new) | jnp.all(new == b)

    b, it, _ = lax.while_loop(cond, body, (bounds0, jnp.zeros((), jnp.int32), met(bounds0)))
    return b[0], b[1], it, met(b)


@functools.partial(jax.jit, static_argnames=("steps", "step_policy"))
def bounded_iteration(
    rows: Rows,
    rewards: jax.Array,
    usable: jax.Array,
    fixed: jax.Array,
    fixed_value: jax.Array,
    init: jax.Array,
    sign: jax.Array,
    margin: jax.Array,
    *,
    steps: int,
    step_policy: bool = False,
):
    """``steps`` backups ``v ← opt_a r + Σ p v`` (fixed states kept) from ``init``.

    ``sign`` is ``1`` to maximize, ``-1`` to minimize. Returns ``(values, error, policy)``:
    `[S]` values, `[S]` a bound on their rounding error, and the optimizing actions: `[S]`,
    the decision rule of the first step (the last backup, all ``steps`` to go; with no step,
    each state's first usable action), or with ``step_policy`` `[steps, S]`, first step
    first. Without ``step_policy`` the scan carries one `[S]` rule and stacks nothing, so
    memory is ``O(S A)`` whatever ``steps``. The error of a state is the largest over its
    pairs of the successors' errors propagated through the row plus the backup's own
    rounding ``m (|r| + Σ p |v|) + a`` (``|max_a x_a − max_a y_a| <= max_a |x_a − y_a|``;
    ``margin`` `[2]` ``(m, a)``, :func:`widening_pair`), ``a`` only where a term may be
    nonzero (``r``, or a successor with a value or an error: the indicator's sum of
    probabilities, each at least ``tiny``, does not underflow): 0 where every term is 0, so
    a value decided exactly stays exact.
    """
    dtype = rewards.dtype
    low = jnp.asarray(-jnp.inf, dtype)
    r_abs = jnp.abs(rewards)
    absolute = margin[1]
    margin = _widening(rows, usable, margin[0])

    def backup(v, e):
        q = jnp.where(usable, sign * (rewards + expect(rows, v)), low)
        v_new = jnp.where(fixed, fixed_value, sign * jnp.max(q, axis=-1))
        some = (r_abs > 0) | (expect(rows, ((v != 0) | (e != 0)).astype(dtype)) > 0)
        own = expect(rows, e) + margin * (r_abs + expect(rows, jnp.abs(v)))
        own = own + jnp.where(some, absolute, 0)
        e_new = jnp.where(fixed, 0, jnp.max(jnp.where(usable, own, 0), axis=-1))
        return v_new, e_new, jnp.argmax(q, axis=-1).astype(jnp.int32)

    if step_policy:

        def stacked(carry, _):
            v, e, rule = backup(*carry)
            return (v, e), rule

        # reverse: the last backup (the first step) lands at index 0, with no reversed copy
        carry = (init, jnp.zeros_like(init))
        (v, e), policy = lax.scan(stacked, carry, None, length=steps, reverse=True)
        return v, e, policy

    def latest(carry, _):  # only the newest rule is kept: the first step's, at the end
        return backup(carry[0], carry[1]), None

    first_usable = jnp.argmax(usable, axis=-1).astype(jnp.int32)
    carry = (init, jnp.zeros_like(init), first_usable)
    (v, e, policy), _ = lax.scan(latest, carry, None, length=steps)
    return v, e, policy


def solve_bounded(mdp: Model, rewards, fixed, fixed_value, init, steps, minimize, step_policy):
    """A step-bounded property by :func:`bounded_iteration`: ``(values, error, policy,
    iterations, converged)``, ``iterations`` being ``steps`` and ``converged`` True;
    ``policy`` `[S]` (the first step's rule), or `[steps, S]` with ``step_policy``."""
    v, e, policy = bounded_iteration(
        model_rows(mdp),
        rewards,
        mdp.action_mask,
        fixed,
        fixed_value,
        init,
        opt_sign(minimize, mdp.rewards.dtype),
        widening_pair(mdp, rounding_margin(mdp)),
        steps=steps,
        step_policy=step_policy,
    )
    return v, e, policy, steps, True

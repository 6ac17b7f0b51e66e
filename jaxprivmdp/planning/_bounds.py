"""Lower and upper bounds ``v̲ <= v̄`` on a privately synthesized policy's value (Theorems 1
and 2); the worst case is ``v̲`` for a reward, ``v̄`` for a cost (a minimization).

:func:`cost_of_privacy` is the boundary, :func:`bounds_core` its pure core.

What the bounds say depends on ``bound`` (the uncertainty set, ``jaxprivmdp.sets._boxes``):

- ``"paper"`` (default): the paper's set P̂ and statement, below.
- ``"exact"``: the same statement about ``E[V^π(s0) | P̄, k]``, with each row's box
  built from the exact Beta marginals of the Dirichlet mechanism (Bonferroni over the
  row's entries) instead of Lemma 1's uniform ``α``; the ``β`` mixture is kept.
- ``"certified"``: a statement about the **true** MDP. With probability at least
  ``1 − β`` over the mechanism, ``v̲_t(s) ≤ V_t^π(s) ≤ v̄_t(s)`` on the true MDP at every
  stage and state at once, for every policy ``π`` (so also for one synthesized from
  ``P̄``): every true row lies in its box jointly (Bonferroni over all entries of all
  allowed rows), and robust evaluation over boxes that hold the true rows bounds the true
  value (``docs/bounds.md``). Needs ``k`` to be the mechanism's parameter and ``P̄`` an
  unmodified Dirichlet release; with ``smoothing`` it bounds the smoothed MDP.

With ``α = sqrt(log(1/β) / (2(k + 1)))`` and ``P̂`` the set of the paper's eq. (1):

.. math::
    v̲_t(s) = Σ_a π_t(a|s) (r(s, a) + γ \\min_{p ∈ P̂(s, a)} p · v̲_{t+1}),
    \\qquad v̲_T = R_T,

and ``v̄`` with a max. Then ``v̲ ≤ V̄^π ≤ v̄`` at every stage and state, and
``|E[V^π(s0) | P̄, k] − V̄^π(s0)| ≤ v̄_0(s0) − v̲_0(s0)`` (Theorem 1). For an infinite
horizon the two fixed points (Theorem 2) are approached by iterating the γ-contractions to
``tol``; the returned vectors are widened by ``(γ‖v_n − v_{n−1}‖∞ + ρ) / (1 − γ)``, the
remaining contraction error plus a rounding margin ``ρ`` per backup (see
``rounding_margin``), so they bound the fixed points even if not converged, in float32
too. The radius ``α`` is rounded up to the model's dtype (a larger box is conservative).

Works under ``jax.jit``, ``jax.vmap`` (over ``k``, ``beta``, the policy and the model's
arrays) and ``jax.grad`` (with respect to ``k``, ``beta`` and the model's arrays; for an
infinite horizon by implicit differentiation at the fixed point, which builds a dense
`[2S, 2S]` Jacobian). Values are checked only when concrete.

Each inner problem is solved exactly by the sort-based greedy of
:func:`robust_expectation`, ranking the next-stage values once per stage. Only the first
``⌈1/α⌉ + 1`` entries in value order are touched (plus, for a dense support-aware set,
the most entries outside a row's support): a static width the call derives from
concrete ``k`` and ``β``, also under ``jax.jit`` when the model and policy are traced
and the mechanism and set are not. With a traced ``k`` or ``β`` nothing bounds it: pass
``fill_width`` (checked at run time, see below), or all ``S`` entries are filled (exact,
slower for large ``S``); :func:`sweep` sizes it from its concrete grid.

``support_aware=True`` restricts ``P̂`` (both its ``β`` part and its box) to each row's
*public* support: a :class:`SparseMDP`'s listed successors, or the support a dense model
records (``TabularMDP.support``: a release from :func:`dirichlet_mechanism` /
:func:`privatize` of a model, or ``make_mdp(..., support=mask)``). Never read off ``P̄``: its
zeros may be noise (a projection, an underflowed draw) where the true row is positive. Valid
when the support is public structure that ``P̄`` shares with ``P`` (``support="nonzero"``, or
a sparse model): then the true row, ``P̄`` and ``E[P | P̄, k]`` all put no mass outside it,
so restricting the set keeps every point the paper's argument uses (Lemma 2 and Theorem 1's
induction).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree
from jax.typing import ArrayLike

from .._refusals import refuses
from ..mechanisms.core import Mechanism, as_mechanism
from ..models.core import Model, Rows, transition_rows
from ..properties.core import BEST_CASE, WORST_CASE, PropertyModel, as_problem, in_property_scale
from ..sets.core import (
    PAPER_SET,
    RowBox,
    SetParams,
    UncertaintySet,
    as_set,
    policy_box,
    row_box,
)
from ._bellman import check_iterations
from ._kernel import checked_backup
from ._options import SolverOptions, solver_options
from ._policies import policy_rows, select_rows, validate_policy, weighted_sum
from ._rounding import default_tolerance, rounding_margin
from ._set_up import set_up
from ._width import CheckedWidth, at_width


class PrivacyBounds(NamedTuple):
    """Bounds on the value of a privately synthesized policy.

    Attributes:
      lower: ``v̲`` `[T + 1, S]` (finite horizon) or `[S]` (infinite horizon).
      upper: ``v̄``, same shape; ``lower <= upper`` in the problem's own scale (costs, for a
        minimization).
      cost: scalar ``v̄(s0) − v̲(s0)`` at the initial state (stage 0): the bound on the cost
        of privacy ``|E[V^π̄(s0) | P̄, k] − V̄^π̄(s0)|``.
      iterations: robust value-iteration sweeps (the horizon for a finite horizon).
      converged: whether the infinite-horizon iteration met its tolerance. The returned
        bounds are valid either way (they are widened by the remaining contraction error).
      minimize: bool, the direction (True: a cost: a ``min`` property, :func:`minimizing`);
        ``worst_case``/``best_case`` are ``lower``/``upper`` for a maximization, else swapped.
    """

    lower: jax.Array
    upper: jax.Array
    cost: jax.Array
    iterations: jax.Array
    converged: jax.Array
    minimize: jax.Array | None = None

    worst_case, best_case = WORST_CASE, BEST_CASE


class _Policy(NamedTuple):
    """What one decision rule uses: its rows, rewards, weights and their boxes."""

    rows: Rows
    rewards: jax.Array
    weights: jax.Array
    box: RowBox


def policy_boxes(mdp: Model, params: SetParams, support_aware: bool, *, stationary: bool = False):
    """``decision -> _Policy``. The paper's box is computed on the rows a decision uses
    (elementwise, fused into the stage). Beta boxes cost more than a stage's arithmetic: for
    a recursion with one decision rule (``stationary``: the infinite horizon, which calls
    the result once) they are looked up on the rows that rule uses; otherwise once for every
    row, then selected like the rows (a deterministic rule's `[S, S]` rows are a quarter of
    the lookups of `[S, 4, S]`; the same bits either way)."""
    everything = None
    if not params.is_radius_box and not stationary:
        everything = row_box(transition_rows(mdp), params, support_aware=support_aware)

    def of(decision) -> _Policy:
        rows, rewards, weights = policy_rows(mdp, decision)
        if everything is None:
            box = row_box(rows, params, support_aware=support_aware)
        else:
            box = policy_box(everything, lambda x: select_rows(x, decision)[0])
        return _Policy(rows, rewards, weights, box)

    return of


def _stage_backup(mdp: Model, used: _Policy, v_low, v_high, width: int, support_aware):
    """The policy's robust backup, and whether every fill it uses lay within ``width``."""
    low, high, complete = checked_backup(
        used.rows, used.box, v_low, v_high, width=width, support_aware=support_aware
    )
    g, w = mdp.discount, used.weights
    low, high = weighted_sum(w, used.rewards + g * low), weighted_sum(w, used.rewards + g * high)
    return low, high, jnp.all(complete | (w <= 0))


def bounds_stage(mdp: Model, used: _Policy, values, width: int, support_aware):
    """One stage of the finite-horizon bounds from the next stage's ``values = (v̲, v̄)``,
    rounded outward: ``((v̲_t, v̄_t), complete)`` (``used`` from :func:`policy_boxes`)."""
    low, high, done = _stage_backup(mdp, used, *values, width, support_aware)
    # Rounded outward per stage: each computed backup is within ρ of the exact backup of
    # the computed next stage, and the exact backups are monotone, so subtracting
    # (adding) ρ at every stage keeps v̲ below (v̄ above) the exact recursion's values.
    rho = rounding_margin(mdp, *values)
    return (low - rho, high + rho), done


def _finite_bounds(mdp, policy, boxes, width: int, support_aware):
    def stage(carry, decision):
        values, complete = carry
        out, done = bounds_stage(mdp, boxes(decision), values, width, support_aware)
        # Each stage stacks the values it was given (stage t + 1), not its own: a carry is
        # stored once, while a stage's own values were computed twice by XLA:CPU, for the
        # carry and again inside the output's copy, on one thread.
        return (out, complete & done), values

    rt = mdp.terminal_reward
    start = ((rt, rt), jnp.asarray(True))
    ((low0, high0), complete), (low, high) = jax.lax.scan(stage, start, policy, reverse=True)
    low = jnp.concatenate([low0[None], low], axis=0)
    high = jnp.concatenate([high0[None], high], axis=0)
    s0 = mdp.initial_state
    one = jnp.asarray(True)
    out = PrivacyBounds(low, high, high[0, s0] - low[0, s0], jnp.asarray(mdp.horizon), one)
    return out, complete


def _dense_tangent_solve(g, y):
    # Implicit differentiation of the fixed point solves (γB − I) x = y with B the backup's
    # Jacobian: a dense [2S, 2S] system, built only under differentiation.
    flat_y, unravel = ravel_pytree(y)
    jac = jax.jacfwd(lambda x: ravel_pytree(g(unravel(x)))[0])(flat_y)
    return unravel(jnp.linalg.solve(jac, flat_y))


def _infinite_bounds(mdp, policy, boxes, width: int, support_aware, tol, max_iterations):
    gamma = mdp.discount
    used = boxes(policy)  # a stationary policy: its rows and boxes once, outside the loop
    # Stop when the contraction error bound γ d / (1 − γ) is below tol.
    threshold = jnp.where(gamma > 0, tol * (1 - gamma) / gamma, jnp.inf)

    def backup(v):
        return _stage_backup(mdp, used, *v, width, support_aware)

    def residual(v):
        new = backup(v)
        return new[0] - v[0], new[1] - v[1]

    def iterate(_, v0):
        def cond(carry):
            _, _, d_low, d_high, it, _ = carry
            return (jnp.maximum(d_low, d_high) >= threshold) & (it < max_iterations)

        def body(carry):
            v_low, v_high, _, _, it, complete = carry
            new_low, new_high, done = backup((v_low, v_high))
            d_low = jnp.max(jnp.abs(new_low - v_low))
            d_high = jnp.max(jnp.abs(new_high - v_high))
            return new_low, new_high, d_low, d_high, it + 1, complete & done

        inf = jnp.asarray(jnp.inf, v0[0].dtype)
        start = (*v0, inf, inf, 0, jnp.asarray(True))
        low, high, d_low, d_high, it, complete = jax.lax.while_loop(cond, body, start)
        # The count and the flag travel as floats: custom_root's JVP rule mishandles integer
        # aux outputs (exact: max_iterations is far below 2^24).
        aux = (d_low, d_high, it.astype(low.dtype), complete.astype(low.dtype))
        return (low, high), aux

    v0 = jnp.zeros(mdp.num_states, mdp.rewards.dtype)
    # custom_root: the loop runs forward only; gradients come from the implicit function
    # theorem at the fixed point (reverse mode cannot go through a while_loop).
    (low, high), (d_low, d_high, it, complete) = jax.lax.custom_root(
        residual, (v0, v0), iterate, _dense_tangent_solve, has_aux=True
    )
    it = it.astype(jnp.int32)
    # With ρ the rounding error of one backup, ‖v_n − v*‖∞ ≤ (γ‖v_n − v_{n−1}‖∞ + ρ)/(1 − γ)
    # (Banach, with a perturbed last step): widen so the bounds stay valid, also in float32.
    rho = rounding_margin(mdp, low, high)
    low = low - (gamma * d_low + rho) / (1 - gamma)
    high = high + (gamma * d_high + rho) / (1 - gamma)
    s0 = mdp.initial_state
    converged = jnp.maximum(d_low, d_high) < threshold
    return PrivacyBounds(low, high, high[s0] - low[s0], it, converged), complete > 0


_STATIC = ("width", "support_aware")


@functools.partial(jax.jit, static_argnames=_STATIC)
def bounds_core(
    mdp,
    policy,
    params: SetParams,
    tol,
    max_iterations,
    *,
    width: int | CheckedWidth,
    support_aware: bool = False,
) -> PrivacyBounds:
    """:func:`cost_of_privacy` on validated inputs: pure, jit/vmap/grad-friendly.

    ``params`` are the set's (:func:`set_up`; whether they are a radius box or Beta tables,
    ``SetParams.is_radius_box``, is their pytree structure, static); ``tol=None`` means the
    default tolerance. ``width`` (an ``int`` proven sufficient, or a :class:`CheckedWidth`,
    see :func:`bounds_width`) and ``support_aware`` are static.
    """
    stationary = not mdp.is_finite_horizon
    boxes = policy_boxes(mdp, params, support_aware, stationary=stationary)
    if not mdp.is_finite_horizon:
        tol = default_tolerance(mdp) if tol is None else jnp.asarray(tol, mdp.rewards.dtype)

    def bounds(entries: int):
        if mdp.is_finite_horizon:
            return _finite_bounds(mdp, policy, boxes, entries, support_aware)
        return _infinite_bounds(mdp, policy, boxes, entries, support_aware, tol, max_iterations)

    return at_width(bounds, width, mdp.num_states)


@refuses("k", "beta", "support_aware", "tol", "max_iterations", "fill_width", "mechanism", "bound")
def cost_of_privacy(
    private_mdp: Model | PropertyModel,
    policy: ArrayLike,
    mechanism: Mechanism,
    bound: UncertaintySet = PAPER_SET,
    *,
    options: SolverOptions | None = None,
) -> PrivacyBounds:
    """Lower and upper bounds ``v̲ <= v̄`` on the value of a policy on a privatized MDP.

    Planning maximizes: a minimization (:func:`minimizing`, a ``min`` property) arrives
    negated, and its bounds are negated and swapped back, so the worst case is ``v̲`` for a
    reward and ``v̄`` for a cost (the result's ``worst_case``).

    With ``P̂`` the set of ``bound``: ``v̲_t(s) = Σ_a π_t(a|s) (r(s, a) + γ min_{p ∈ P̂(s, a)}
    p·v̲_{t+1})``, ``v̲_T = R_T``, and ``v̄`` with a max; then ``v̲ ≤ V̄^π ≤ v̄`` and the cost
    of privacy is at most ``v̄_0(s0) − v̲_0(s0)`` (Theorem 1; Theorem 2 for an infinite
    horizon, widened by the remaining contraction and rounding error). What each set's
    bounds say, the greedy fill's width and ``jax.jit``/``vmap``/``grad``: see the module.
    A :class:`PropertyModel` of a release gives the bounds of a step-bounded property.

    Args:
      private_mdp: the privatized MDP ``M̄`` (with ``P̄``).
      policy: deterministic `[T, S]` / `[S]` ints or stochastic `[T, S, A]` / `[S, A]`.
      mechanism: the mechanism that released ``P̄``, an object: ``jp.Dirichlet(k)``,
        ``jp.Gaussian(sigma)``, ``jp.Laplace(scale)``. The additive mechanisms' sets are
        the box ``‖P2 − P̄‖∞ <= r`` from the noise's tail.
      bound: the uncertainty set, an object: ``jp.PaperSet(beta)`` (default ``β = 0.1``,
        the paper's figures' value), ``jp.ExactSet(beta)``, ``jp.CertifiedSet(beta)`` (``β``
        the probability that the statement fails), each with ``support_aware=True`` to
        restrict ``P̂`` to each row's *public* support (see the module; never read off
        ``P̄``). The exact and certified sets tabulate Beta quantiles on the host for
        concrete ``k`` and ``β`` (a host callback when traced; no gradient with respect to
        ``k`` through their boxes).
      options: :class:`~jaxprivmdp.SolverOptions`: ``tol`` (infinite horizon: iterate until
        the contraction error is below it; default :func:`default_tolerance`),
        ``max_iterations`` (infinite horizon: guard on iterations, not static) and
        ``fill_width`` (optional static int ``>= 1``: how many entries, in value order,
        each greedy fill may reach. Default: derived from concrete ``k`` and ``β`` (and the
        public support), else all ``S``. Give it when ``k`` or ``β`` is traced (``jax.jit``
        or ``jax.vmap`` over the mechanism or the set): the bounds then check at run time
        that every fill completed within it and, if one did not, are computed again over
        all ``S`` entries (exact either way; under ``jax.vmap`` both run). With concrete
        ``k`` and ``β``, a value below the derived width is an error).

    Returns:
      :class:`PrivacyBounds`.

    Raises:
      TypeError: a mechanism or set that is not an object (the 0.2 keyword form).
      ValueError: for ``k <= 0``, ``beta`` outside ``(0, 1)``, an invalid policy,
        ``support_aware=True`` on a dense model that records no support, or
        a ``fill_width`` below ``1`` or below what concrete ``k`` and ``β`` need.

    References:
      Gohari, Hale, Topcu, CDC 2020, Theorems 1 and 2, Lemma 1, problem (P).
    """
    private_mdp, prop = as_problem(private_mdp, "private_mdp")
    policy = validate_policy(private_mdp, policy)
    opts = solver_options(options)
    check_iterations(opts.tol, opts.max_iterations)
    mech = as_mechanism(mechanism, "cost_of_privacy", dtype=private_mdp.rewards.dtype)
    bound = as_set(bound, "cost_of_privacy")
    params, width = set_up(private_mdp, mech, bound, opts.fill_width)
    static = dict(width=width, support_aware=bound.support_aware)
    out = bounds_core(private_mdp, policy, params, opts.tol, opts.max_iterations, **static)
    return in_property_scale(prop, out)

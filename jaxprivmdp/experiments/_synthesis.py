"""Algorithm 1 with its bounds, one run: ``synthesize`` and its pure core."""

from __future__ import annotations

from typing import NamedTuple

import jax
from jax.typing import ArrayLike

from .._checks import check_key, host_scalar
from ..mechanisms._dirichlet import Sampler, check_sampler
from ..mechanisms._registry import MechanismName, get_mechanism
from ..models._rows import Model, check_model, with_probs
from ..models._support import Support, model_mechanism_input
from ..planning._bellman import check_iterations, solve_core
from ..planning._bounds import bounds_core, prepare_set, robust_solve_core
from ..planning._evaluation import evaluate_core
from ..sets._boxes import Bound, SetParams


class RobustPolicy(NamedTuple):
    """The robust private policy: it maximizes the pessimistic value over the set.

    Attributes:
      policy: `[T, S]` / `[S]` its actions.
      private_values: its value ``V̄`` on the privatized MDP, same shape as the values.
      pessimistic: its ``v̲`` (the robust optimum: never below ``π̄``'s ``v̲``).
      optimistic: its ``v̄``.
      cost: scalar ``v̄(s0) − v̲(s0)``.
    """

    policy: jax.Array
    private_values: jax.Array
    pessimistic: jax.Array
    optimistic: jax.Array
    cost: jax.Array


class Synthesis(NamedTuple):
    """One run of Algorithm 1 and its cost-of-privacy bounds.

    Attributes:
      private_transitions: ``P̄`` (the only output that touches the data): `[S, A, S]`, or
        for a :class:`SparseMDP` the privatized ``probs`` `[S, A, K]` of its successor lists.
      policy: `[T, S]` / `[S]` the policy ``π̄`` synthesized on the privatized MDP.
      private_values: `[T + 1, S]` / `[S]` ``V̄^π̄``, its value on the privatized MDP (exact:
        backward induction, or a linear solve for an infinite horizon).
      pessimistic: ``v̲``, same shape (Theorem 1 / 2).
      optimistic: ``v̄``, same shape.
      cost: scalar ``v̄(s0) − v̲(s0)``.
      converged: infinite horizon: whether value iteration met its tolerance (if not, the
        policy may not be ε-optimal; the bounds stay valid). Always True for a finite horizon.
      robust: with ``robust=True``, the :class:`RobustPolicy` (post-processing of ``P̄``,
        like ``π̄``); None otherwise.
    """

    private_transitions: jax.Array
    policy: jax.Array
    private_values: jax.Array
    pessimistic: jax.Array
    optimistic: jax.Array
    cost: jax.Array
    converged: jax.Array
    robust: RobustPolicy | None = None


def synthesize_core(
    key,
    mdp,
    rows,
    support,
    k,
    params: SetParams,
    max_iterations,
    *,
    sampler: Sampler,
    mechanism: str = "dirichlet",
    kind: str = "radius",
    width: int,
    support_aware: bool = False,
    robust: bool = False,
) -> Synthesis:
    """:func:`synthesize` on validated inputs: pure, jit/vmap-friendly, calls only cores.

    ``k`` is the mechanism's parameter; ``mechanism`` names it (``_mechanisms``).
    """
    mech = get_mechanism(mechanism)
    p_bar = mech.privatize(key, rows, k, support, mdp.action_mask, sampler)
    private = with_probs(mdp, p_bar, support)
    sol = solve_core(private, None, max_iterations)
    values = sol.values
    if not mdp.is_finite_horizon:
        # Value iteration's values are within tol/2 of V̄*; report the policy's exact value.
        values = evaluate_core(private, sol.policy)
    set_args = dict(kind=kind, width=width, support_aware=support_aware)

    def bounds(policy):
        return bounds_core(private, policy, params, None, max_iterations, **set_args)

    b = bounds(sol.policy)
    converged = sol.converged & b.converged
    extra = None
    if robust:
        rob = robust_solve_core(private, params, max_iterations, **set_args)
        rb = bounds(rob.policy)
        converged = converged & rob.converged & rb.converged
        extra = RobustPolicy(
            rob.policy, evaluate_core(private, rob.policy), rb.pessimistic, rb.optimistic, rb.cost
        )
    return Synthesis(
        p_bar, sol.policy, values, b.pessimistic, b.optimistic, b.cost, converged, extra
    )


_STATIC = ("sampler", "mechanism", "kind", "width", "support_aware", "robust")
_synthesize_jit = jax.jit(synthesize_core, static_argnames=_STATIC)


def synthesize(
    key: jax.Array,
    mdp: Model,
    *,
    k: ArrayLike,
    beta: ArrayLike = 0.1,
    support: Support = None,
    smoothing: float | None = None,
    bound: Bound = "paper",
    support_aware: bool = False,
    robust: bool = False,
    mechanism: MechanismName = "dirichlet",
    sampler: Sampler = "jax",
    max_iterations: ArrayLike = 10_000,
) -> Synthesis:
    """Algorithm 1 (privatize, synthesize, evaluate) plus the cost-of-privacy bounds.

    1. ``P̄(s, a) ~ Dirichlet(k · P(s, a))`` for every allowed row (:func:`dirichlet_mechanism`).
    2. ``π̄``, ``V̄^π̄``: an optimal policy of the privatized MDP and its value (:func:`solve`).
    3. ``v̲``, ``v̄``: its pessimistic and optimistic values (:func:`cost_of_privacy`).
    4. With ``robust=True``: the robust private policy, which maximizes ``v̲`` over the
       chosen set (robust dynamic programming with the bounds' kernel), and its bounds.
    Steps 2-4 are post-processing of ``P̄``, so the output is as private as ``P̄``.

    Works under ``jax.jit`` and ``jax.vmap`` over ``key``, ``k``, ``beta`` and the model's
    arrays (values are checked only when concrete). With a traced ``k`` or ``beta`` the
    greedy fill spans all ``S`` entries (exact, slower for large ``S``); :func:`sweep` sizes
    it from its concrete grid.

    Args:
      key: PRNG key (use :func:`secure_key` for a real release).
      mdp: the true MDP from :func:`make_mdp`.
      k: the mechanism's parameter ``k > 0``.
      beta: ``β`` in ``(0, 1)`` for the bounds.
      support: ``None`` or ``"nonzero"``, see :func:`dirichlet_mechanism`.
      smoothing: optional ``η``, see :func:`dirichlet_mechanism`. The mechanism then
        privatizes the smoothed rows ``p̃ = (1 − Sη) p + η``, so ``P̄`` concentrates around
        ``p̃``, not ``P``: the bounds (Lemma 1, Theorem 1) are about the smoothed MDP, whose
        rows are up to ``(S − 1)η`` away from the true ones in ℓ∞.
      bound: the uncertainty set, ``"paper"`` (default), ``"exact"`` or ``"certified"``, see
        :func:`cost_of_privacy`.
      support_aware: restrict the bounds' set to each row's support, see
        :func:`cost_of_privacy`.
      robust: also synthesize the robust private policy (``Synthesis.robust``).
      mechanism: ``"dirichlet"`` (default, the paper's) or an additive-noise mechanism,
        ``"gaussian"`` or ``"laplace"``: noise of standard deviation / scale ``k`` on every
        supported entry, then the Euclidean projection onto the simplex over the support
        (``jaxprivmdp.mechanisms._registry``; calibrate ``k`` with ``privacy.calibrate``).
      sampler: ``"jax"`` (default: ``jax.random.dirichlet``'s sampler, the one to audit) or
        ``"fast"`` (same distribution, faster), see :func:`dirichlet_mechanism`.
      max_iterations: infinite horizon: guard on iterations (not static).

    Returns:
      :class:`Synthesis`.

    Raises:
      ValueError: for ``k <= 0``, ``beta`` outside ``(0, 1)`` or rows with zeros (see
        ``support``).

    References:
      Gohari, Hale, Topcu, CDC 2020, Algorithm 1, Theorems 1 and 2.
    """
    key = check_key(key)
    check_model(mdp)
    sampler = check_sampler(sampler)
    dtype = mdp.rewards.dtype
    check_iterations(None, max_iterations)
    mech = get_mechanism(mechanism)
    inp = model_mechanism_input(mdp, support, smoothing, interior=mech.needs_interior)
    kind, params, width = prepare_set(
        with_probs(mdp, inp.rows, inp.support), k, beta, bound, support_aware, mech
    )
    return _synthesize_jit(
        key,
        mdp,
        inp.rows,
        inp.support,
        host_scalar(k, dtype),
        params,
        max_iterations,
        sampler=sampler,
        mechanism=mech.name,
        kind=kind,
        width=width,
        support_aware=bool(support_aware),
        robust=bool(robust),
    )

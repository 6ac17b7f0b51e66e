"""The robust private policy: it optimizes the worst case over the set.

Planning always maximizes (a minimization arrives negated), so here it maximizes the lower
end ``v̲`` of the maximization problem: for a cost, that minimizes the upper bound ``v̄``.

Robust dynamic programming with the bounds' kernel (:func:`robust_backup`) over the set a
mechanism's release implies: post-processing of ``P̄``, so no privacy cost.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from .._refusals import refuses
from ..mechanisms.core import Mechanism, as_mechanism
from ..models.core import Model, transition_rows
from ..properties.core import PropertyModel, as_problem, in_property_scale
from ..sets.core import PAPER_SET, RowBox, SetParams, UncertaintySet, as_set, row_box
from ._bellman import Solution, backward_induction, check_iterations, value_iteration
from ._bounds import set_up
from ._kernel import robust_backup
from ._options import SolverOptions, solver_options
from ._rounding import default_tolerance
from ._width import CheckedWidth

_STATIC = ("width", "support_aware")


def robust_q(mdp: Model, box: RowBox, v, width, support_aware):
    """`[S, A]` ``r + γ min_{p ∈ set} p·v`` for every row; masked actions get the dtype's min."""
    low, _ = robust_backup(
        transition_rows(mdp), box, v, v, width=width, support_aware=support_aware
    )
    q = mdp.rewards + mdp.discount * low
    return jnp.where(mdp.action_mask, q, jnp.finfo(q.dtype).min)


@functools.partial(jax.jit, static_argnames=_STATIC)
def robust_solve_core(
    mdp,
    params: SetParams,
    max_iterations,
    *,
    width: int | CheckedWidth,
    support_aware: bool,
) -> Solution:
    """The policy maximizing the lower (worst-case) value of the maximization problem over the
    set: robust dynamic programming.

    Finite horizon: robust backward induction ``v_t = max_a r + γ min_{p} p·v_{t+1}``.
    Infinite horizon: robust value iteration (a γ-contraction; the stopping rule of
    :func:`jaxprivmdp.solve` makes the greedy policy ε-optimal for the robust problem, with
    ε the default tolerance). The sets are rectangular over (state, action) rows, so the
    greedy policy of the robust values attains them (Iyengar 2005; Nilim & El Ghaoui 2005).
    """
    box = row_box(transition_rows(mdp), params, support_aware=support_aware)

    def q_fn(v):
        return robust_q(mdp, box, v, width, support_aware)

    if mdp.is_finite_horizon:
        return backward_induction(mdp, q_fn)
    return value_iteration(mdp, q_fn, default_tolerance(mdp), max_iterations)


@refuses("k", "beta", "support_aware", "tol", "max_iterations", "fill_width", "mechanism", "bound")
def robust_solve(
    private_mdp: Model | PropertyModel,
    mechanism: Mechanism,
    bound: UncertaintySet = PAPER_SET,
    *,
    options: SolverOptions | None = None,
) -> Solution:
    """The robust private policy of a privatized MDP: it optimizes its worst case (maximizes
    the lower bound of a reward, minimizes the upper bound of a cost).

    ``v_t(s) = max_a r(s, a) + γ min_{p ∈ B(s, a)} p·v_{t+1}`` with ``B`` the set of
    ``bound`` (see :func:`cost_of_privacy`), by robust backward induction (finite horizon) or
    robust value iteration (infinite horizon, to the default tolerance). Post-processing of
    ``P̄``: no privacy cost. Its worst case (``cost_of_privacy(..., bound).worst_case``: the
    lower bound ``v̲`` of a reward) is never worse than that of any other policy, ``π̄``
    included; with a certified set it is a floor on its true value (a ceiling on a true
    cost) with probability ``≥ 1 − β``. :func:`synthesize` with
    ``robust=True`` runs this after Algorithm 1.

    Args:
      private_mdp: the privatized MDP ``M̄``, or a :class:`PropertyModel` of it: the robust
        policy of a step-bounded property or of :func:`minimizing`, ``values`` in its scale
        (for a minimization the policy minimizes the upper bound, and ``values`` are that
        bound: its worst case).
      mechanism: the mechanism that released ``P̄``, an object (``jp.Dirichlet(k)``, ...),
        see :func:`cost_of_privacy`.
      bound: the uncertainty set, an object (default ``jp.PaperSet(0.1)``).
      options: :class:`~jaxprivmdp.SolverOptions`: ``max_iterations`` (infinite horizon:
        guard on iterations, not static) and ``fill_width`` (static: how many entries, in
        value order, each greedy fill may reach, see :func:`cost_of_privacy`; give it when
        ``k`` or ``β`` is traced). Robust value iteration runs to the default tolerance
        (``tol`` is not used).

    Returns:
      A :class:`Solution`: the policy and its robust (worst-case) values.

    References:
      Iyengar, "Robust dynamic programming", Math. Oper. Res. 2005; Nilim & El Ghaoui,
      "Robust control of Markov decision processes with uncertain transition matrices",
      Oper. Res. 2005.
    """
    private_mdp, prop = as_problem(private_mdp, "private_mdp")
    opts = solver_options(options)
    check_iterations(None, opts.max_iterations)
    mech = as_mechanism(mechanism, "robust_solve", dtype=private_mdp.rewards.dtype)
    bound = as_set(bound, "robust_solve")
    params, width = set_up(private_mdp, mech, bound, opts.fill_width)
    out = robust_solve_core(
        private_mdp,
        params,
        opts.max_iterations,
        width=width,
        support_aware=bound.support_aware,
    )
    return in_property_scale(prop, out, ("values",), bounds=None)

"""Algorithm 1 with its bounds, one run: ``synthesize`` and its pure core.

``synthesize`` works under ``jax.jit`` and ``jax.vmap`` over ``key``, the mechanism's
parameter, the set's ``beta`` and the model's arrays (values are checked only when concrete).
With a traced ``k`` or ``beta`` the greedy fill spans all ``S`` entries (exact, slower for
large ``S``) unless ``SolverOptions(fill_width=...)`` is given; :func:`sweep` sizes it from
its concrete grid.

With ``smoothing=η`` the mechanism privatizes the smoothed rows ``p̃ = (1 − Sη) p + η``, so
``P̄`` concentrates around ``p̃``, not ``P``: the bounds (Lemma 1, Theorem 1) are about the
smoothed MDP, whose rows are up to ``(S − 1)η`` away from the true ones in ℓ∞.

With ``stage=t`` (finite horizon) one backward pass per policy keeps stage ``t`` only, in
`[S]` memory, and evaluates the policy on the true model in the same pass
(``true_values``): ``planning._stage_pass``. ``progress`` reports its stages from the compiled loop.

A :class:`~jaxprivmdp.PropertyModel` in place of the model: the policy of a step-bounded PRISM
property, its values and bounds in the property's scale (``property_scale``; a ``min``
property's ``lower`` is still the smaller number), see ``properties._reward``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from .._checks import check_key, host_scalar
from .._refusals import refuses
from ..mechanisms.core import Mechanism, as_mechanism, privatize_rows
from ..models.core import Model, Support, mechanism_mask, with_probs
from ..planning import SolverOptions
from ..planning.core import (
    Progress,
    SetArgs,
    as_progress,
    bounds_core,
    check_iterations,
    check_stage,
    evaluate_core,
    q_values,
    robust_q_fn,
    robust_solve_core,
    set_up,
    solve_core,
    solver_options,
    stage_pass,
)
from ..properties.core import (
    BEST_CASE,
    WORST_CASE,
    PropertyModel,
    as_problem,
    in_property_scale,
    problem_input,
)
from ..sets.core import PAPER_SET, SetParams, UncertaintySet, as_set


class RobustPolicy(NamedTuple):
    """The robust private policy: it optimizes its worst case over the set (maximizes ``v̲``;
    for a minimization, minimizes ``upper``).

    Attributes:
      policy: `[T, S]` / `[S]` its actions.
      private_values: its value ``V̄`` on the privatized MDP, same shape as the values.
      lower: its lower bound ``v̲`` (for a maximization the robust optimum: never below
        ``π̄``'s ``v̲``; for a minimization its ``upper`` is never above ``π̄``'s).
      upper: its upper bound ``v̄``.
      cost: scalar ``v̄(s0) − v̲(s0)``.
      true_values: its value on the true model, same shape as ``private_values`` (not part
        of the release: see :class:`Synthesis`).
      minimize: bool, the objective's direction (True: a cost, minimized: :func:`minimizing`
        or a ``min`` property), one per run (batched like the run).

    ``worst_case`` / ``best_case``: the bounds' ends relative to the direction (see
    :class:`Synthesis`).
    """

    policy: jax.Array
    private_values: jax.Array
    lower: jax.Array
    upper: jax.Array
    cost: jax.Array
    true_values: jax.Array | None = None
    minimize: jax.Array | None = None

    worst_case = WORST_CASE
    best_case = BEST_CASE


class Synthesis(NamedTuple):
    """One run of Algorithm 1 and its cost-of-privacy bounds.

    Not all of it is a release: ``true_values`` (here and in ``robust``) evaluates the policy
    on the sensitive model, for the analyst's eyes; publish ``P̄`` and what is computed from it
    (every other field), never ``true_values``.

    Attributes:
      private_transitions: ``P̄``, the mechanism's release: `[S, A, S]`, or for a
        :class:`SparseMDP` the privatized ``probs`` `[S, A, K]` of its successor lists. Every
        field but ``true_values`` (here and in ``robust``) is computed from ``P̄`` alone.
      policy: `[T, S]` / `[S]` the policy ``π̄`` synthesized on the privatized MDP (`[S]`
        with ``synthesize(..., stage=t)``: stage ``t`` only, as every field below).
      private_values: `[T + 1, S]` / `[S]` ``V̄^π̄``, its value on the privatized MDP (exact:
        backward induction, or a linear solve for an infinite horizon).
      lower: ``v̲``, the lower bound, same shape (Theorem 1 / 2), in the problem's own scale
        (for a minimization, the smaller cost).
      upper: ``v̄``, the upper bound, same shape; ``lower <= upper`` always.
      cost: scalar ``v̄(s0) − v̲(s0)``.
      converged: infinite horizon: whether value iteration met its tolerance (if not, the
        policy may not be ε-optimal; the bounds stay valid). Always True for a finite horizon.
      robust: with ``robust=True``, the :class:`RobustPolicy` (post-processing of ``P̄``,
        like ``π̄``); None otherwise.
      true_values: ``V^π̄``, the value of ``π̄`` on the true model (the one passed to
        :func:`synthesize`, unsmoothed), same shape as ``private_values``: `[T + 1, S]`,
        `[S]` for an infinite horizon, `[S]` ``V^π̄_t`` with ``stage=t`` (computed in the
        same stage-by-stage pass, in `[S]` memory: the way to the true value there, as
        ``evaluate`` needs the whole `[T, S]` policy). It equals ``evaluate(mdp, policy)``
        (bit for bit with ``stage=t``: that result's row ``t``). An evaluation on the
        sensitive model, like ``SweepResult.true_value``: it is NOT part of the release and
        carries no privacy guarantee; publish ``P̄`` and what is computed from it only.
        Always computed, so that it is there on every path (one policy evaluation per
        policy: 4-11% of a call on a 10⁴-state sparse gridworld on a CPU; nothing under
        ``jax.jit`` when the field is not used).
      minimize: bool, the objective's direction (True: a cost, minimized: :func:`minimizing`
        or a ``min`` property), one per run (batched like the run).

    Properties ``worst_case`` and ``best_case``: the bounds' ends relative to the direction,
    ``lower`` and ``upper`` for a maximization, ``upper`` and ``lower`` for a minimization.
    """

    private_transitions: jax.Array
    policy: jax.Array
    private_values: jax.Array
    lower: jax.Array
    upper: jax.Array
    cost: jax.Array
    converged: jax.Array
    robust: RobustPolicy | None = None
    true_values: jax.Array | None = None
    minimize: jax.Array | None = None

    worst_case = WORST_CASE
    best_case = BEST_CASE


def private_model(key, mdp, rows, support, mech: Mechanism):
    """``(P̄, M̄)``: the mechanism's release of ``rows`` and the privatized model."""
    p_bar = privatize_rows(mech, key, rows, support, mechanism_mask(mdp))
    return p_bar, with_probs(mdp, p_bar, support)


def stage_passes(private, params: SetParams, stage, evaluate_on=(), progress=None, **static):
    """Finite horizon: ``π̄`` and (``robust=True``) the robust policy, each in one
    :func:`stage_pass` keeping stage ``stage``, evaluated also on the models ``evaluate_on``.

    Returns ``(main, robust)``: ``main.values`` is ``V̄^π̄``; ``robust.evaluations[0]`` the
    robust policy's ``V̄``, then one per model in ``evaluate_on`` (as ``main.evaluations``).
    """
    args = SetArgs(params, static["width"], static["support_aware"])
    q_fn = lambda v: q_values(private, v)  # noqa: E731
    main = stage_pass(private, q_fn, args, evaluate_on, stage, progress)
    robust_pass = None
    if static["robust"]:
        robust_on = (private, *evaluate_on)  # first: the robust policy on the release itself
        robust_q = robust_q_fn(private, args)
        robust_pass = stage_pass(private, robust_q, args, robust_on, stage, progress)
    return main, robust_pass


def synthesize_core(
    key,
    mdp,
    rows,
    support,
    mech: Mechanism,
    params: SetParams,
    max_iterations,
    stage=None,
    *,
    width: int,
    support_aware: bool = False,
    robust: bool = False,
    progress: Progress | None = None,
) -> Synthesis:
    """:func:`synthesize` on validated inputs: pure, jit/vmap-friendly, calls only cores.

    ``mech`` is a mechanism object (its parameter a leaf: traced, batched); ``params`` its
    set's (:func:`jaxprivmdp.planning._bounds.set_up`). ``stage`` (an int leaf, finite horizon
    only) keeps that stage alone (:func:`stage_passes`); ``progress`` a static reporter.
    """
    p_bar, private = private_model(key, mdp, rows, support, mech)
    set_args = dict(width=width, support_aware=support_aware)
    if stage is not None and mdp.is_finite_horizon:
        # The true model is evaluated in the same passes (an `[S]` carry each): the `[T, S]`
        # policy that evaluate_core would need is never formed.
        main, robust_pass = stage_passes(
            private, params, stage, (mdp,), progress, robust=robust, **set_args
        )
        extra = None
        if robust_pass is not None:
            rp = robust_pass
            fields = (rp.policy, rp.evaluations[0], rp.lower, rp.upper, rp.cost)
            extra = RobustPolicy(*fields, true_values=rp.evaluations[1])
        out = (main.policy, main.values, main.lower, main.upper, main.cost)
        true_values = main.evaluations[0]
        return Synthesis(p_bar, *out, jnp.asarray(True), extra, true_values=true_values)
    sol = solve_core(private, None, max_iterations, progress=progress)
    values = sol.values
    if not mdp.is_finite_horizon:
        # Value iteration's values are within tol/2 of V̄*; report the policy's exact value.
        values = evaluate_core(private, sol.policy)

    def bounds(policy):
        return bounds_core(private, policy, params, None, max_iterations, **set_args)

    b = bounds(sol.policy)
    converged = sol.converged & b.converged
    extra = None
    if robust:
        robust_sol = robust_solve_core(private, params, max_iterations, **set_args)
        rb = bounds(robust_sol.policy)
        converged = converged & robust_sol.converged & rb.converged
        robust_values = evaluate_core(private, robust_sol.policy)
        fields = (robust_sol.policy, robust_values, rb.lower, rb.upper, rb.cost)
        extra = RobustPolicy(*fields, true_values=evaluate_core(mdp, robust_sol.policy))
    out = (p_bar, sol.policy, values, b.lower, b.upper, b.cost, converged, extra)
    return Synthesis(*out, true_values=evaluate_core(mdp, sol.policy))


_STATIC = ("width", "support_aware", "robust", "progress")
_synthesize_jit = jax.jit(synthesize_core, static_argnames=_STATIC)


@refuses(
    "k", "beta", "support_aware", "sampler", "max_iterations", "fill_width", "tol",
    "mechanism", "bound",
)  # fmt: skip
def synthesize(
    key: jax.Array,
    mdp: Model | PropertyModel,
    mechanism: Mechanism,
    bound: UncertaintySet = PAPER_SET,
    *,
    support: Support = None,
    smoothing: float | None = None,
    robust: bool = False,
    options: SolverOptions | None = None,
    stage: int | None = None,
    progress: bool | Callable[[int, int], None] | None = None,
) -> Synthesis:
    """Algorithm 1 (privatize, synthesize, evaluate) plus the cost-of-privacy bounds.

    ``P̄`` from the mechanism; ``π̄`` and ``V̄^π̄`` on ``P̄`` (:func:`solve`); its bounds
    ``v̲``, ``v̄`` (:func:`cost_of_privacy`); with ``robust=True`` the robust private policy
    (:func:`robust_solve`) and its bounds. Everything after ``P̄`` is post-processing. Works
    under ``jax.jit``/``jax.vmap`` (see the module for ``fill_width`` with a traced ``k``).

    Args:
      key: PRNG key (use :func:`secure_key` for a real release).
      mdp: the true model (:func:`make_mdp`, :func:`make_sparse_mdp`), or a
        :class:`PropertyModel` (:func:`property_model`): then ``π̄`` optimizes the
        step-bounded property and every value and bound is the property's; or
        :func:`minimizing` ``(mdp)``: the rewards minimized as a cost (values are costs,
        ``worst_case`` is ``upper``).
      mechanism: an object: ``jp.Dirichlet(k)`` (with ``sampler="jax"``, the default, or
        ``"fast"``: same distribution), ``jp.Gaussian(sigma)``, ``jp.Laplace(scale)``.
      bound: the set, an object: ``jp.PaperSet(beta)`` (the default, ``β = 0.1``),
        ``jp.ExactSet(beta)``, ``jp.CertifiedSet(beta)``, each with ``support_aware=``.
      support: ``None`` or ``"nonzero"`` (:func:`dirichlet_mechanism`).
      smoothing: optional ``η``: ``P̄`` is a release of ``(1 − Sη) P + η`` and the bounds are
        about that smoothed model (see the module).
      robust: also the robust private policy (``Synthesis.robust``).
      options: :class:`~jaxprivmdp.SolverOptions`: ``max_iterations`` (infinite horizon:
        guard on iterations, not static) and ``fill_width`` (static, the greedy fill's
        reach, :func:`cost_of_privacy`). Value iteration and the bounds use their default
        tolerances (``tol`` is not used).
      stage: finite horizon: keep only stage ``t`` in `[S]` memory (``stage=0`` for ``s0``):
        the `[S]` fields are bit for bit row ``t`` of the full `[T + 1, S]` ones, ``cost`` is
        unchanged; ``true_values`` (``π̄``'s value on ``mdp``, evaluated in the same pass) is
        how to get the true value there (:func:`evaluate` needs the `[T, S]` policy). ``t``
        is not static: another stage's policy on request is a new call with
        the same key, without recompiling. Infinite horizon: None or 0 (a no-op).
      progress: as :func:`solve`'s (True: a line on stderr at most every 5 s; a callable
        gets ``(done, total)``), over the stages of each policy's pass (of ``π̄``'s backward
        induction without ``stage``) or value iteration's sweeps.

    Returns:
      :class:`Synthesis`. Its ``true_values`` (and ``robust.true_values``) are evaluations
      on the sensitive ``mdp``, not part of the release (see :class:`Synthesis`).

    Raises:
      TypeError: a mechanism or set that is not an object (the 0.2 keyword form).
      ValueError: for ``k <= 0``, ``beta`` outside ``(0, 1)``, rows with zeros (see
        ``support``), a ``stage`` outside ``[0, T)`` or a ``progress`` that is not None,
        a bool or a callable.

    References:
      Gohari, Hale, Topcu, CDC 2020, Algorithm 1, Theorems 1 and 2.
    """
    key = check_key(key)
    mdp, prop = as_problem(mdp)
    dtype = mdp.rewards.dtype
    opts = solver_options(options)
    check_iterations(None, opts.max_iterations)
    check_stage(mdp, stage)
    finite = mdp.is_finite_horizon
    report = as_progress(progress, "backward induction" if finite else "value iteration")
    stage = jnp.asarray(stage, jnp.int32) if stage is not None and finite else None
    mech = as_mechanism(mechanism, "synthesize", dtype=dtype)
    bound = as_set(bound, "synthesize")
    rows_in = problem_input(mdp, prop, support, smoothing, interior=mech.needs_interior)
    mech = mech.replace(host_scalar(mech.parameter, dtype))
    model = with_probs(mdp, rows_in.rows, rows_in.support)
    params, width = set_up(model, mech, bound, opts.fill_width)
    static = dict(width=width, support_aware=bound.support_aware, robust=bool(robust))
    args = (key, mdp, rows_in.rows, rows_in.support, mech, params, opts.max_iterations, stage)
    return property_scale(prop, _synthesize_jit(*args, **static, progress=report))


def property_scale(prop: PropertyModel | None, out: Synthesis) -> Synthesis:
    """``out`` in the property's scale: a ``min`` property's values negated back, its
    bounds swapped (``lower`` stays the smaller number, ``upper`` the larger)."""
    values = ("private_values", "true_values")
    robust = in_property_scale(prop, out.robust, values)
    return in_property_scale(prop, out, values)._replace(robust=robust)

"""Sweeps: Algorithm 1 and its bounds for every (k, trial), in jit-compiled chunks.

The driver :func:`sweep` maps its arguments once onto a grid of mechanisms and a set
(:func:`mechanism_grid`), plans the chunks and runs them (``_chunks``), and returns the
`[K, N]` summaries as a :class:`SweepResult`; :func:`sweep_key` names each run's key.

What :func:`sweep` does:

1. Validates the model and options once, on the host (``sweep`` is an eager driver: it
   is not meant to be called under ``jax.jit``; compose :func:`synthesize` for that).
2. Numbers the ``K·N`` runs ``r = i·N + j`` (``i``-th ``k``, ``j``-th trial) and cuts
   them into chunks of ``batch_size`` runs (the last chunk padded by repeating the last
   run; its groups holding only padding are skipped inside the program). Each chunk is
   one call of a compiled function whose shape depends only on ``batch_size``: a new grid
   of ``k`` or trial count does not recompile.
3. Per chunk, the host lists its runs' indices ``(i, j)``, ``k`` and radius (nothing of
   size ``K·N`` is built); inside, each run derives its key :func:`sweep_key` ``(key, i,
   j)``, privatizes, solves, bounds and evaluates the policy on the true MDP, and keeps
   only the values at ``s0`` (:class:`RunSummary`). The chunk is sharded over ``devices``
   with ``jax.shard_map``; on each device its runs go through ``lax.map`` in vmapped groups
   of ``vector_width``.
4. Calls ``progress(done, total)`` after each chunk, then concatenates the chunks into
   `[K, N]` arrays and adds the non-private optimum.

Results are bitwise identical for every ``batch_size`` and device count at a fixed
``vector_width``, and entry ``[i, j]`` equals ``synthesize(sweep_key(key, i, j), mdp,
jp.Dirichlet(ks[i], sampler), ...)`` up to floating-point rounding. The grid is used in the
order given (duplicates are distinct runs with distinct keys).

How the runs are cut and run (:class:`Chunking`, ``chunking=``):

- ``batch_size``: runs per compiled call (progress is reported after each); rounded
  up to a multiple of ``vector_width`` times the device count. Default
  :func:`default_batch_size`: a power of two of groups, at most 256 runs on a CPU and 16
  groups on a GPU/TPU, so sweeps of similar size share one compilation.
  Pass a fixed value to never recompile.
- ``vector_width``: runs vectorized together on a device; the working memory is
  about ``vector_width`` runs. Default :func:`default_vector_width`, by backend: on a CPU
  cache-sized groups (<= 2^13 transition entries and 16 runs: 4 for Example 2, 1 for
  gridworlds); on a GPU/TPU about 2^25 entries, <= 4096 runs, within a quarter of the
  device's memory. Another ``vector_width``
  compiles differently and may change results at the level of floating-point
  rounding (seen: up to ~40 float32 ulps after 50 stages).
- ``devices``: devices to shard each chunk over (default: all of ``jax.devices()``).
- ``progress``: optional ``progress(done, total)``, called after each chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from .._checks import as_numpy, check_count, check_key, check_positive
from .._refusals import refuses
from ..mechanisms.core import Mechanism, as_mechanism
from ..models.core import Model, Support, with_probs
from ..planning import SolverOptions
from ..planning.core import (
    check_iterations,
    evaluate_core,
    q_values,
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
from ..sets.core import PAPER_SET, UncertaintySet, as_set
from ._chunks import Chunking, RobustSummary, at_s0, plan_chunks, run_chunks


class SweepResult(NamedTuple):
    """Algorithm 1 over a grid of ``k`` and many trials, at the initial state ``s0``.

    Attributes:
      private_value: `[K, N]` ``V̄^π̄(s0)``, the value on the privatized MDP.
      true_value: `[K, N]` ``V^π̄(s0)``, the private policy evaluated on the true MDP: what
        the agent really gets (needs the true MDP: simulation only).
      lower: `[K, N]` ``v̲(s0)``, the lower bound (in the problem's own scale).
      upper: `[K, N]` ``v̄(s0)``, the upper bound.
      cost: `[K, N]` ``v̄(s0) − v̲(s0)``.
      optimal_value: scalar ``V*(s0)``, the non-private optimum (for an infinite horizon: the
        exact value of the ε-optimal policy that value iteration returns).
      ks: `[K]` the grid of the mechanism's parameter (``k``, or σ / λ).
      converged: `[K, N]` bool, infinite horizon: whether value iteration (synthesis) and the
        bound iterations met their tolerance; always True for a finite horizon.
      robust: with ``robust=True``, the robust private policy's :class:`RobustSummary`
        (`[K, N]` fields); None otherwise.
      minimize: `[K, N]` bool, the objective's direction (True: a cost, minimized).

    Properties ``worst_case`` and ``best_case`` (`[K, N]`): ``lower`` and ``upper`` for a
    maximization, ``upper`` and ``lower`` for a minimization.
    """

    private_value: jax.Array
    true_value: jax.Array
    lower: jax.Array
    upper: jax.Array
    cost: jax.Array
    optimal_value: jax.Array
    ks: jax.Array
    converged: jax.Array
    robust: RobustSummary | None = None
    minimize: jax.Array | None = None

    worst_case = WORST_CASE
    best_case = BEST_CASE


# Sweep keys start from fold_in(key, _SWEEP_TAG), so they cannot coincide with the keys a
# user derives as fold_in(key, j) or split(key, n)[j] (equal under partitionable threefry)
# for any j < _SWEEP_TAG. The tag is the ASCII of "swep".
_SWEEP_TAG = 0x73776570


def sweep_key(key: jax.Array, i: ArrayLike, j: ArrayLike) -> jax.Array:
    """The key of run ``(i, j)`` (``i``-th ``k``, ``j``-th trial) of ``sweep(key, ...)``.

    ``fold_in(fold_in(fold_in(key, TAG), i), j)`` with a fixed tag: a run's key depends on
    its indices only, not on the grid's length or the number of trials, so extending a sweep
    keeps the earlier runs. ``synthesize(sweep_key(key, i, j), mdp, jp.Dirichlet(ks[i],
    sampler="fast"))`` reproduces run ``(i, j)`` of ``jp.Dirichlet.grid(ks, sampler="fast")``
    up to floating-point rounding.
    """
    key = check_key(key)
    return jax.random.fold_in(jax.random.fold_in(jax.random.fold_in(key, _SWEEP_TAG), i), j)


def mechanism_grid(mechanisms, dtype) -> Mechanism:
    """The sweep's mechanisms as one object holding a 1-D float64 grid of its parameter.

    ``mechanisms``: a mechanism with a scalar or 1-D parameter (``Dirichlet.grid(ks)``) or a
    sequence of mechanisms of one class with the same static options.
    """
    if not isinstance(mechanisms, Mechanism) and isinstance(mechanisms, list | tuple):
        mechanisms = _stack(list(mechanisms))
    grid = as_mechanism(mechanisms, "sweep")
    return grid.replace(_check_grid(grid.parameter, dtype, grid.parameter_name()))


def _check_grid(values, dtype, name="ks") -> np.ndarray:
    arr = as_numpy(name, values)
    if arr.ndim > 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence, got shape {arr.shape}")
    check_positive(name, arr, dtype=dtype, scalar=False)
    return np.atleast_1d(arr.astype(np.float64))


def _stack(mechanisms: list) -> Mechanism:
    """A list of mechanisms of one class and static options as one grid."""
    if not mechanisms or not all(isinstance(m, Mechanism) for m in mechanisms):
        raise ValueError(
            f"mechanisms must be a mechanism or a non-empty list of them, got {mechanisms!r}"
        )
    first = mechanisms[0]
    same = [
        type(m) is type(first) and m.static_options() == first.static_options() for m in mechanisms
    ]
    if not all(same):
        raise ValueError(
            "a sweep's mechanisms must share one class and its options; sweep each apart"
        )
    values = [np.asarray(m.parameter, np.float64) for m in mechanisms]
    if any(v.ndim for v in values):
        raise ValueError("each mechanism in a list must hold one parameter value")
    return first.replace(np.stack(values))


@refuses(
    "ks", "k", "beta", "support_aware", "mechanism", "sampler", "batch_size", "vector_width",
    "devices", "progress", "max_iterations", "fill_width", "tol", "bound",
)  # fmt: skip
def sweep(
    key: jax.Array,
    mdp: Model | PropertyModel,
    mechanisms: Mechanism | Sequence[Mechanism],
    bound: UncertaintySet = PAPER_SET,
    *,
    num_trials: int = 50,
    robust: bool = False,
    support: Support = None,
    smoothing: float | None = None,
    options: SolverOptions | None = None,
    chunking: Chunking | None = None,
) -> SweepResult:
    """Algorithm 1 and its bounds for every (k, trial), in jit-compiled chunks.

    An eager driver (compose :func:`synthesize` under ``jax.jit``); how the runs are cut,
    keyed, sharded and gathered: see the module. Entry ``[i, j]`` equals
    ``synthesize(sweep_key(key, i, j), mdp, jp.Dirichlet(ks[i], sampler), ...)`` up to
    rounding; results are bitwise identical for every ``batch_size`` and device count at a
    fixed ``vector_width``.

    Args:
      key: PRNG key.
      mdp: the true MDP, or a :class:`PropertyModel` (a step-bounded property's problem, or
        :func:`minimizing` ``(mdp)``: every field in the property's scale).
      mechanisms: one object holding a 1-D grid of its parameter
        (``jp.Dirichlet.grid(ks, sampler="fast")``; the fast sampler is the one to sweep
        with) or a list of mechanisms of one class and options
        (``[jp.Laplace(s) for s in ...]``).
      bound: the set, an object (``jp.CertifiedSet(0.1, support_aware=True)``; default
        ``jp.PaperSet(0.1)``), see :func:`cost_of_privacy`.
      num_trials: ``N``, independent runs per grid entry.
      robust: also the robust private policy in every run (``SweepResult.robust``).
      support: ``None`` or ``"nonzero"``, see :func:`dirichlet_mechanism`.
      smoothing: optional ``η``, see :func:`dirichlet_mechanism`, :func:`synthesize`.
      options: :class:`~jaxprivmdp.SolverOptions`; its ``max_iterations`` (infinite
        horizon: guard on iterations). The fill width is sized from the grid.
      chunking: :class:`~jaxprivmdp.Chunking`: ``batch_size``, ``vector_width``,
        ``devices`` and the ``progress(done, total)`` callback (see the module).

    Returns:
      :class:`SweepResult` with `[K, N]` fields.

    Raises:
      TypeError: mechanisms or a set that are not objects (the 0.2 keyword form
        ``ks=``, ``bound="certified"``), or options that are not the option objects.
      ValueError: for an empty or non-positive grid, ``num_trials < 1``, ``beta`` outside
        ``(0, 1)`` or rows with zeros (see ``support``).
    """
    key = check_key(key)
    mdp, prop = as_problem(mdp)
    dtype = mdp.rewards.dtype
    grid = mechanism_grid(mechanisms, dtype)
    bound = as_set(bound, "sweep")
    num_trials = check_count("num_trials", num_trials)
    max_iterations = solver_options(options).max_iterations
    check_iterations(None, max_iterations)
    if chunking is None:
        chunking = Chunking()
    elif not isinstance(chunking, Chunking):
        raise TypeError(f"chunking must be a jp.Chunking, got {chunking!r}")
    K, N = grid.parameter.size, num_trials
    plan = plan_chunks(mdp, K * N, grid, chunking)
    rows_in = problem_input(mdp, prop, support, smoothing, interior=grid.needs_interior)
    params, width = set_up(with_probs(mdp, rows_in.rows, rows_in.support), grid, bound)
    params = jax.tree.map(np.asarray, params)
    grid_dtype = grid.replace(grid.parameter.astype(dtype))
    args = (jax.random.fold_in(key, _SWEEP_TAG), mdp, rows_in.rows, rows_in.support, max_iterations)
    static = dict(width=width, support_aware=bound.support_aware, robust=bool(robust))
    static.update(devices=plan.devices, vector_width=plan.vector_width)
    runs = run_chunks(plan, grid_dtype, params, N, args, static, chunking.progress)
    optimal = _optimal_at_s0(mdp, max_iterations)
    res = SweepResult(**runs._asdict(), optimal_value=optimal, ks=jnp.asarray(grid_dtype.parameter))
    return _property_scale(prop, res)


@jax.jit
def _optimal_at_s0(mdp: Model, max_iterations) -> jax.Array:
    """``V^π*(s0)`` of the model's optimal policy, evaluated exactly (finite horizon: in one
    stage-0 backward pass, `[S]` memory)."""
    if mdp.is_finite_horizon:
        best = stage_pass(mdp, lambda v: q_values(mdp, v), evaluate_on=(mdp,))
        return best.evaluations[0][mdp.initial_state]
    return at_s0(mdp, evaluate_core(mdp, solve_core(mdp, None, max_iterations).policy))


def _property_scale(prop: PropertyModel | None, res: SweepResult) -> SweepResult:
    """``res`` in the property's scale (see ``_synthesis.property_scale``)."""
    robust = in_property_scale(prop, res.robust, ("true_value",))
    values = ("private_value", "true_value", "optimal_value")
    return in_property_scale(prop, res, values)._replace(robust=robust)

"""Sweeps: Algorithm 1 and its bounds for every (k, trial), in jit-compiled chunks.

The driver :func:`sweep` plans the chunks (:func:`plan_chunks`), lists each chunk's runs on
the host (:func:`chunk_runs`), runs them through one compiled function (``_sweep_chunk``,
sharded over devices; per run ``_run``, which calls :func:`synthesize_core`) and gathers the
per-run summaries into a :class:`SweepResult`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec
from jax.typing import ArrayLike

from .._checks import as_numpy, check_count, check_key, check_positive
from ..mechanisms._dirichlet import Sampler, check_sampler
from ..mechanisms._registry import MechanismName, get_mechanism
from ..models._rows import Model, check_model, transition_rows, with_probs
from ..models._support import Support, model_mechanism_input
from ..planning._bellman import check_iterations, solve_core
from ..planning._bounds import prepare_set
from ..planning._evaluation import evaluate_core
from ..sets._boxes import Bound, SetParams
from ._synthesis import synthesize_core


class SweepResult(NamedTuple):
    """Algorithm 1 over a grid of ``k`` and many trials, at the initial state ``s0``.

    Attributes:
      private_value: `[K, N]` ``V̄^π̄(s0)``, the value on the privatized MDP.
      true_value: `[K, N]` ``V^π̄(s0)``, the private policy evaluated on the true MDP: what
        the agent really gets (needs the true MDP: simulation only).
      pessimistic: `[K, N]` ``v̲(s0)``.
      optimistic: `[K, N]` ``v̄(s0)``.
      cost: `[K, N]` ``v̄(s0) − v̲(s0)``.
      optimal_value: scalar ``V*(s0)``, the non-private optimum (for an infinite horizon: the
        exact value of the ε-optimal policy that value iteration returns).
      ks: `[K]` the grid of ``k``.
      converged: `[K, N]` bool, infinite horizon: whether value iteration (synthesis) and the
        bound iterations met their tolerance; always True for a finite horizon.
      robust: with ``robust=True``, the robust private policy's :class:`RobustSummary`
        (`[K, N]` fields); None otherwise.
    """

    private_value: jax.Array
    true_value: jax.Array
    pessimistic: jax.Array
    optimistic: jax.Array
    cost: jax.Array
    optimal_value: jax.Array
    ks: jax.Array
    converged: jax.Array
    robust: RobustSummary | None = None


class RobustSummary(NamedTuple):
    """The robust private policy of each run, at ``s0``: its true value and its bounds."""

    true_value: jax.Array
    pessimistic: jax.Array
    optimistic: jax.Array
    cost: jax.Array


class RunSummary(NamedTuple):
    """One run of a sweep, at the initial state: the fields of :class:`SweepResult`."""

    private_value: jax.Array
    true_value: jax.Array
    pessimistic: jax.Array
    optimistic: jax.Array
    cost: jax.Array
    converged: jax.Array
    robust: RobustSummary | None = None


# Sweep keys start from fold_in(key, _SWEEP_TAG), so they cannot coincide with the keys a
# user derives as fold_in(key, j) or split(key, n)[j] (equal under partitionable threefry)
# for any j < _SWEEP_TAG. The tag is the ASCII of "swep".
_SWEEP_TAG = 0x73776570


def sweep_key(key: jax.Array, i: ArrayLike, j: ArrayLike) -> jax.Array:
    """The key of run ``(i, j)`` (``i``-th ``k``, ``j``-th trial) of ``sweep(key, ...)``.

    ``fold_in(fold_in(fold_in(key, TAG), i), j)`` with a fixed tag: a run's key depends on
    its indices only, not on the grid's length or the number of trials, so extending a sweep
    keeps the earlier runs. ``synthesize(sweep_key(key, i, j), mdp, k=ks[i],
    sampler="fast")`` reproduces run ``(i, j)`` up to floating-point rounding.
    """
    key = check_key(key)
    return jax.random.fold_in(jax.random.fold_in(jax.random.fold_in(key, _SWEEP_TAG), i), j)


def _at_s0(mdp: Model, values: jax.Array) -> jax.Array:
    return values[0, mdp.initial_state] if mdp.is_finite_horizon else values[mdp.initial_state]


def _run(key, k, params, mdp, rows, support, max_iterations, **static):
    """One run of a sweep: Algorithm 1, its bounds and the true value, at ``s0``."""
    out = synthesize_core(key, mdp, rows, support, k, params, max_iterations, **static)
    robust = None
    if out.robust is not None:
        robust = RobustSummary(
            true_value=_at_s0(mdp, evaluate_core(mdp, out.robust.policy)),
            pessimistic=_at_s0(mdp, out.robust.pessimistic),
            optimistic=_at_s0(mdp, out.robust.optimistic),
            cost=out.robust.cost,
        )
    return RunSummary(
        private_value=_at_s0(mdp, out.private_values),
        true_value=_at_s0(mdp, evaluate_core(mdp, out.policy)),
        pessimistic=_at_s0(mdp, out.pessimistic),
        optimistic=_at_s0(mdp, out.optimistic),
        cost=out.cost,
        converged=out.converged,
        robust=robust,
    )


class ChunkRuns(NamedTuple):
    """The runs of one chunk, built on the host per chunk (never for all ``K·N`` runs).

    Attributes:
      i: `[B]` int32 index into the grid of ``k``.
      j: `[B]` int32 trial index.
      k: `[B]` the run's ``k``.
      params: its set's parameters (`[B]`/`[B, G]` fields, as in :func:`synthesize`).
    """

    i: np.ndarray
    j: np.ndarray
    k: np.ndarray
    params: SetParams


def chunk_runs(c: int, batch_size: int, ks, params, num_trials: int) -> ChunkRuns:
    """Runs ``c·B .. (c+1)·B − 1`` (flat index ``i·N + j``); the padding repeats the last."""
    total = len(ks) * num_trials
    r = np.minimum(np.arange(c * batch_size, (c + 1) * batch_size), total - 1)
    i, j = np.divmod(r, num_trials)
    return ChunkRuns(
        i.astype(np.int32), j.astype(np.int32), ks[i], jax.tree.map(lambda x: x[i], params)
    )


@functools.partial(
    jax.jit,
    static_argnames=(
        "sampler",
        "mechanism",
        "kind",
        "width",
        "support_aware",
        "robust",
        "devices",
        "vector_width",
    ),
)
def _sweep_chunk(runs: ChunkRuns, key, mdp, rows, support, max_iterations, **static) -> RunSummary:
    """The runs of one chunk, sharded over ``devices``; its shape fixes the compilation.

    On each device the runs go through ``lax.map`` in vmapped groups of ``vector_width``: the
    compiled per-group program is the same whatever the chunk size or device count, so each
    run's result is bitwise independent of both. It also bounds the working memory.
    """
    devices, vector_width = static.pop("devices"), static.pop("vector_width")

    def one(run: ChunkRuns):
        run_key = jax.random.fold_in(jax.random.fold_in(key, run.i), run.j)
        return _run(run_key, run.k, run.params, mdp, rows, support, max_iterations, **static)

    def batched(runs):
        return jax.lax.map(one, runs, batch_size=vector_width)

    if len(devices) == 1:
        return batched(runs)
    mesh = jax.sharding.Mesh(np.asarray(devices), ("batch",))
    spec = PartitionSpec("batch")
    # Each shard runs independent runs: nothing is communicated, so the varying-axes type
    # check (which the loops' replicated carries would trip) is off.
    return jax.shard_map(batched, mesh=mesh, in_specs=spec, out_specs=spec, check_vma=False)(runs)


def default_vector_width(mdp: Model, sampler: Sampler, budget_bytes: float = 2**30) -> int:
    """Runs vectorized together: a power of two ``<= 16`` whose working set fits the budget.

    The working set of a run is about 16 arrays of the rows' size with the ``"fast"`` sampler and
    48 with ``"jax"`` (``benchmarks/bench_memory.py``); small groups keep it in cache
    (``benchmarks/RESULTS.md`` compares group sizes).
    """
    arrays = 16 if sampler == "fast" else 48
    per_run = arrays * transition_rows(mdp).probs.size * mdp.rewards.dtype.itemsize
    fit = max(1, int(budget_bytes // per_run))
    return min(16, 1 << (fit.bit_length() - 1))


def default_batch_size(total: int, group: int) -> int:
    """Runs per compiled call: ``total`` rounded up to a power-of-two number of groups, <= 256.

    Powers of two keep the number of distinct compiled chunk shapes small (a new trial count
    or grid of ``k`` recompiles only when it crosses a power of two below 256 runs) while a
    small sweep is padded by less than 2x.
    """
    groups = max(1, math.ceil(min(total, MAX_BATCH_SIZE) / group))
    return group * (1 << (groups - 1).bit_length())


MAX_BATCH_SIZE = 256


class ChunkPlan(NamedTuple):
    """How a sweep's runs are cut into compiled calls.

    Attributes:
      batch_size: runs per compiled call (a multiple of ``vector_width × len(devices)``).
      vector_width: runs vectorized together on one device.
      devices: the devices each chunk is sharded over.
      num_chunks: compiled calls; the last one is padded.
    """

    batch_size: int
    vector_width: int
    devices: tuple
    num_chunks: int


def plan_chunks(mdp, total, sampler, batch_size, vector_width, devices) -> ChunkPlan:
    """Validates the chunking options and fills in the defaults."""
    devices = tuple(devices) if devices is not None else tuple(jax.devices())
    if not devices:
        raise ValueError("devices must list at least one device")
    for name, value in (("batch_size", batch_size), ("vector_width", vector_width)):
        if value is not None:
            check_count(name, value)
    vector_width = int(vector_width or default_vector_width(mdp, sampler))
    group = vector_width * len(devices)
    if batch_size is None:
        batch_size = default_batch_size(total, group)
    batch_size = group * math.ceil(int(batch_size) / group)
    return ChunkPlan(batch_size, vector_width, devices, math.ceil(total / batch_size))


def _spans_processes(devices) -> bool:
    """True in a multi-process job whose devices include other processes' devices."""
    return any(d.process_index != jax.process_index() for d in devices)


def _global_runs(runs: ChunkRuns, devices) -> ChunkRuns:
    """A chunk's runs as global arrays sharded over ``devices`` of every process.

    Every process computes the same chunk on the host (the plan is deterministic), so each
    one provides the shards its own devices hold.
    """
    sharding = NamedSharding(Mesh(np.asarray(devices), ("batch",)), PartitionSpec("batch"))
    return jax.tree.map(
        lambda x: jax.make_array_from_callback(x.shape, sharding, lambda i: x[i]), runs
    )


def _gather(out: RunSummary) -> RunSummary:
    """Every process gets every run of the chunk (a gather over processes)."""
    from jax.experimental import multihost_utils

    return multihost_utils.process_allgather(out, tiled=True)


def _check_grid(ks, dtype) -> np.ndarray:
    arr = as_numpy("ks", ks)
    if arr.ndim > 1 or arr.size == 0:
        raise ValueError(f"ks must be a non-empty 1-D sequence, got shape {arr.shape}")
    check_positive("ks", arr, dtype=dtype, scalar=False)
    return np.atleast_1d(arr.astype(np.float64))


def sweep(
    key: jax.Array,
    mdp: Model,
    *,
    ks: Sequence[float] | ArrayLike,
    num_trials: int = 50,
    beta: ArrayLike = 0.1,
    support: Support = None,
    smoothing: float | None = None,
    bound: Bound = "paper",
    support_aware: bool = False,
    robust: bool = False,
    mechanism: MechanismName = "dirichlet",
    batch_size: int | None = None,
    vector_width: int | None = None,
    sampler: Sampler = "fast",
    devices: Sequence[jax.Device] | None = None,
    max_iterations: int = 10_000,
    progress: Callable[[int, int], None] | None = None,
) -> SweepResult:
    """Algorithm 1 and its bounds for every (k, trial), in jit-compiled chunks.

    What it does:

    1. Validates the model and options once, on the host (``sweep`` is an eager driver: it
       is not meant to be called under ``jax.jit``; compose :func:`synthesize` for that).
    2. Numbers the ``K·N`` runs ``r = i·N + j`` (``i``-th ``k``, ``j``-th trial) and cuts
       them into chunks of ``batch_size`` runs (the last chunk padded by repeating the last
       run). Each chunk is one call of a compiled function whose shape depends only on
       ``batch_size``: a new grid of ``k`` or trial count does not recompile.
    3. Per chunk, the host lists its runs' indices ``(i, j)``, ``k`` and radius (nothing of
       size ``K·N`` is built); inside, each run derives its key :func:`sweep_key` ``(key, i,
       j)``, privatizes, solves,
       bounds and evaluates the policy on the true MDP, and keeps only the values at ``s0``
       (:class:`RunSummary`). The chunk is sharded over ``devices`` with ``jax.shard_map``;
       on each device its runs go through ``lax.map`` in vmapped groups of ``vector_width``.
    4. Calls ``progress(done, total)`` after each chunk, then concatenates the chunks into
       `[K, N]` arrays and adds the non-private optimum.

    Results are bitwise identical for every ``batch_size`` and device count at a fixed
    ``vector_width``, and entry ``[i, j]`` equals ``synthesize(sweep_key(key, i, j), mdp,
    k=ks[i], sampler=sampler, ...)`` up to floating-point rounding. The grid is used in the
    order given (duplicates are distinct runs with distinct keys).

    Args:
      key: PRNG key.
      mdp: the true MDP.
      ks: `[K]` values of ``k > 0``.
      num_trials: ``N``, independent runs per ``k``.
      beta: ``β`` in ``(0, 1)``.
      support: ``None`` or ``"nonzero"``, see :func:`dirichlet_mechanism`.
      smoothing: optional ``η``, see :func:`dirichlet_mechanism` and :func:`synthesize`.
      bound: the uncertainty set, ``"paper"`` (default), ``"exact"`` or ``"certified"``, see
        :func:`cost_of_privacy` (their Beta-quantile tables are built once per ``k``).
      support_aware: restrict the bounds' set to each row's support, see
        :func:`cost_of_privacy`.
      robust: also synthesize the robust private policy in every run
        (``SweepResult.robust``).
      mechanism: ``"dirichlet"`` (default; ``ks`` are its ``k``) or ``"gaussian"`` /
        ``"laplace"`` (``ks`` are then the noise's σ or scale λ), see :func:`synthesize`.
      batch_size: runs per compiled call (progress is reported after each); rounded up to a
        multiple of ``vector_width`` times the device count. Default
        :func:`default_batch_size`: at most 256, a power of two of groups, so sweeps of
        similar size share one compilation. Pass a fixed value to never recompile.
      vector_width: runs vectorized together on a device; the working memory is about
        ``vector_width`` runs. Default :func:`default_vector_width` (16, or fewer for large
        MDPs so that a group fits in about 1 GiB). Another ``vector_width`` compiles
        differently and may change results at the level of floating-point rounding (seen:
        up to ~40 float32 ulps after 50 stages).
      sampler: ``"fast"`` (default here, where its speed matters) or ``"jax"``, see
        :func:`dirichlet_mechanism`.
      devices: devices to shard each chunk over (default: all of ``jax.devices()``).
      max_iterations: infinite horizon: guard on iterations.
      progress: optional callback ``progress(done, total)`` after each chunk.

    Returns:
      :class:`SweepResult` with `[K, N]` fields.

    Raises:
      ValueError: for an empty or non-positive ``ks``, ``num_trials < 1``, ``batch_size < 1``,
        ``beta`` outside ``(0, 1)``, or rows with zeros (see ``support``).
    """
    key = check_key(key)
    check_model(mdp)
    sampler = check_sampler(sampler)
    dtype = mdp.rewards.dtype
    ks_host = _check_grid(ks, dtype)
    num_trials = check_count("num_trials", num_trials)
    check_iterations(None, max_iterations)
    K, N = ks_host.size, num_trials
    plan = plan_chunks(mdp, K * N, sampler, batch_size, vector_width, devices)
    mech = get_mechanism(mechanism)
    inp = model_mechanism_input(mdp, support, smoothing, interior=mech.needs_interior)
    ks_dtype = ks_host.astype(dtype)
    kind, params, width = prepare_set(
        with_probs(mdp, inp.rows, inp.support), ks_host, beta, bound, support_aware, mech, grid=True
    )
    params = jax.tree.map(np.asarray, params)
    args = (jax.random.fold_in(key, _SWEEP_TAG), mdp, inp.rows, inp.support, max_iterations)
    static = dict(
        sampler=sampler,
        mechanism=mech.name,
        kind=kind,
        width=width,
        support_aware=bool(support_aware),
        robust=bool(robust),
        devices=plan.devices,
        vector_width=plan.vector_width,
    )
    total, chunks = K * N, []
    across = _spans_processes(plan.devices)
    for c in range(plan.num_chunks):
        runs = chunk_runs(c, plan.batch_size, ks_dtype, params, N)
        if across:
            runs = _global_runs(runs, plan.devices)
        out = _sweep_chunk(runs, *args, **static)
        chunks.append(_gather(out) if across else out)
        if progress is not None:
            jax.block_until_ready(chunks[-1])
            progress(min((c + 1) * plan.batch_size, total), total)
    runs = jax.tree.map(lambda *x: jnp.concatenate(x)[:total].reshape(K, N), *chunks)
    optimal = solve_core(mdp, None, max_iterations)
    return SweepResult(
        **runs._asdict(),
        optimal_value=_at_s0(mdp, evaluate_core(mdp, optimal.policy)),
        ks=jnp.asarray(ks_dtype),
    )

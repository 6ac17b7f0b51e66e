"""How a sweep's runs are cut into compiled chunks, run, sharded and gathered.

:func:`plan_chunks` picks the chunk size and vector width for the backend it runs on
(:func:`describe_devices`: platform and device memory); :func:`chunk_runs` lists one chunk's
runs on the host (never all ``K·N``); ``sweep_chunk`` runs them through one compiled function
(sharded over devices; per run :func:`run_one`: ``synthesize_core``, for a finite horizon
with ``stage=0``, in `[S]` memory), skipping the
padded groups of the last chunk; :func:`run_chunks` drives the chunks, reports progress and
gathers `[K, N]` summaries.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from .._checks import check_count
from ..mechanisms.core import Mechanism
from ..models.core import Model, device_memory, row_slots
from ..properties.core import BEST_CASE, WORST_CASE
from ..sets.core import SetParams
from ._synthesis import synthesize_core


class RobustSummary(NamedTuple):
    """The robust private policy of each run, at ``s0``: its true value and its bounds
    (``minimize``: the direction, as :class:`SweepResult`'s; ``worst_case``, ``best_case``)."""

    true_value: jax.Array
    lower: jax.Array
    upper: jax.Array
    cost: jax.Array
    minimize: jax.Array | None = None

    worst_case = WORST_CASE
    best_case = BEST_CASE


class RunSummary(NamedTuple):
    """One run of a sweep, at the initial state: the fields of :class:`SweepResult`."""

    private_value: jax.Array
    true_value: jax.Array
    lower: jax.Array
    upper: jax.Array
    cost: jax.Array
    converged: jax.Array
    robust: RobustSummary | None = None


def at_s0(mdp: Model, values: jax.Array) -> jax.Array:
    return values[0, mdp.initial_state] if mdp.is_finite_horizon else values[mdp.initial_state]


def run_one(key, mech, params, mdp, rows, support, max_iterations, **static):
    """One run of a sweep: Algorithm 1, its bounds and the true value, at ``s0``.

    ``synthesize_core`` with, for a finite horizon, ``stage=0`` (one backward pass per policy
    that keeps stage 0 and evaluates it on the true model too: `[S]` memory, the numbers of
    the full path bit for bit)."""
    stage = jnp.asarray(0, jnp.int32) if mdp.is_finite_horizon else None
    out = synthesize_core(key, mdp, rows, support, mech, params, max_iterations, stage, **static)
    s0 = mdp.initial_state  # every field below is `[S]`: stage 0, or the infinite horizon's
    robust = None
    if out.robust is not None:
        r = out.robust
        robust = RobustSummary(r.true_values[s0], r.lower[s0], r.upper[s0], r.cost)
    return RunSummary(
        private_value=out.private_values[s0],
        true_value=out.true_values[s0],
        lower=out.lower[s0],
        upper=out.upper[s0],
        cost=out.cost,
        converged=out.converged,
        robust=robust,
    )


class ChunkRuns(NamedTuple):
    """The runs of one chunk, built on the host per chunk (never for all ``K·N`` runs).

    Attributes:
      i: `[B]` int32 index into the grid of the mechanism's parameter.
      j: `[B]` int32 trial index.
      mechanism: the run's mechanism (its parameter `[B]`).
      params: its set's parameters (`[B]`/`[B, G]` fields, as in :func:`synthesize`).
      real: `[B]` bool, False for the padding of the last chunk (None: every run is real).
    """

    i: np.ndarray
    j: np.ndarray
    mechanism: Mechanism
    params: SetParams
    real: np.ndarray | None = None


def chunk_runs(c: int, batch_size: int, grid: Mechanism, params, num_trials: int) -> ChunkRuns:
    """Runs ``c·B .. (c+1)·B − 1`` (flat index ``i·N + j``); the padding repeats the last
    run and is marked not ``real``."""
    total = np.size(grid.parameter) * num_trials
    flat = np.arange(c * batch_size, (c + 1) * batch_size)
    i, j = np.divmod(np.minimum(flat, total - 1), num_trials)
    mech, params = jax.tree.map(lambda x: x[i], (grid, params))
    return ChunkRuns(i.astype(np.int32), j.astype(np.int32), mech, params, flat < total)


@functools.partial(
    jax.jit,
    static_argnames=(
        "width",
        "support_aware",
        "robust",
        "devices",
        "vector_width",
    ),
)
def sweep_chunk(runs: ChunkRuns, key, mdp, rows, support, max_iterations, **static) -> RunSummary:
    """The runs of one chunk, sharded over ``devices``; its shape fixes the compilation.

    On each device the runs go through ``lax.map`` in vmapped groups of ``vector_width``: the
    compiled per-group program is the same whatever the chunk size or device count, so each
    run's result is bitwise independent of both. It also bounds the working memory. A group
    with no ``real`` run (the padding of a sweep's last chunk) is skipped by a ``lax.cond``:
    the last chunk costs its real runs rounded up to a group, in the one compiled program.
    """
    devices, vector_width = static.pop("devices"), static.pop("vector_width")

    def one(run: ChunkRuns):
        run_key = jax.random.fold_in(jax.random.fold_in(key, run.i), run.j)
        return run_one(
            run_key, run.mechanism, run.params, mdp, rows, support, max_iterations, **static
        )

    def group(runs: ChunkRuns):
        if runs.real is None:
            return jax.vmap(one)(runs)
        shapes = jax.eval_shape(jax.vmap(one), runs)

        def skip(_):
            return jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), shapes)

        return jax.lax.cond(jnp.any(runs.real), jax.vmap(one), skip, runs)

    def batched(runs):
        groups = jax.tree.map(lambda x: x.reshape((-1, vector_width) + x.shape[1:]), runs)
        out = jax.lax.map(group, groups)
        return jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), out)

    if len(devices) == 1:
        return batched(runs)
    mesh = jax.sharding.Mesh(np.asarray(devices), ("batch",))
    spec = PartitionSpec("batch")
    # Each shard runs independent runs: nothing is communicated, so the varying-axes type
    # check (which the loops' replicated carries would trip) is off.
    return jax.shard_map(batched, mesh=mesh, in_specs=spec, out_specs=spec, check_vma=False)(runs)


class DeviceInfo(NamedTuple):
    """What the chunking defaults read from the devices a sweep runs on.

    Attributes:
      platform: ``"cpu"``, ``"gpu"``, ``"tpu"``, ... (the first device's ``platform``).
      memory: bytes of one device (its allocator's ``bytes_limit``; the host's on a CPU),
        None where unknown.
      count: number of devices a chunk is sharded over.
    """

    platform: str
    memory: int | None
    count: int

    @property
    def accelerator(self) -> bool:
        return self.platform != "cpu"


def describe_devices(devices) -> DeviceInfo:
    """:class:`DeviceInfo` of ``devices`` (any objects with ``platform`` and ``memory_stats()``,
    so tests can pass stand-ins); the memory is asked of this process's first one."""
    devices = tuple(devices)
    me = jax.process_index()
    local = next((d for d in devices if getattr(d, "process_index", me) == me), devices[0])
    return DeviceInfo(str(devices[0].platform).lower(), device_memory(local), len(devices))


CPU_GROUP_ENTRIES = 2**13  # transition entries per group on a CPU: cache-sized groups
CPU_MAX_WIDTH = 16
MAX_BATCH_SIZE = 256  # runs per compiled call on a CPU
ACCELERATOR_MEMORY_FRACTION = 0.25  # of the device's memory, for one group's working set
ACCELERATOR_GROUP_ENTRIES = 2**25  # transition entries per group that fill an H100/H200
ACCELERATOR_MAX_WIDTH = 4096
ACCELERATOR_GROUPS = 16  # groups per compiled call on an accelerator


def _floor_pow2(n: float) -> int:
    return 1 << (max(1, int(n)).bit_length() - 1)


def default_vector_width(mdp: Model, sampler: str, device: DeviceInfo | None = None) -> int:
    """Runs vectorized together: a power of two sized for the backend.

    On a CPU: cache-sized groups, at most ``2¹³`` transition entries (and 16 runs) per group:
    4 runs of Example 2 (S = 20, A = 5), 1 of any model with 4,096 or more entries (a 20×20
    gridworld has 4,800). Wider groups cost a CPU more than they save (on the 20×20 gridworld,
    16 runs per group take 3× the CPU time per run of single runs: a vmapped iteration runs
    until its slowest run has converged; measured by ``benchmarks/bench_chunking.py``).
    On an accelerator (GPU, TPU): enough runs to fill it, about ``2²⁵`` transition entries per
    group (4096 runs of Example 2, 256 of a 100×100 gridworld, the best measured on an H200),
    at most 4096, with a working set within a quarter of the device's memory (4 GiB where the
    device does not say): about 16 arrays of the rows' size per run with the ``"fast"``
    sampler and 48 with ``"jax"`` (``benchmarks/bench_memory.py``; the additive mechanisms
    count as ``"fast"``). ``device`` defaults to this process's first device.
    """
    device = describe_devices(jax.local_devices()[:1]) if device is None else device
    entries = row_slots(mdp)
    if not device.accelerator:
        return min(CPU_MAX_WIDTH, _floor_pow2(CPU_GROUP_ENTRIES // entries))
    per_run = (16 if sampler == "fast" else 48) * entries * mdp.rewards.dtype.itemsize
    budget = ACCELERATOR_MEMORY_FRACTION * (device.memory or 2**34)
    fit = min(budget // per_run, ACCELERATOR_GROUP_ENTRIES // entries)
    return min(ACCELERATOR_MAX_WIDTH, _floor_pow2(fit))


def default_batch_size(total: int, group: int, device: DeviceInfo | None = None) -> int:
    """Runs per compiled call: ``total`` rounded up to a power-of-two number of groups, at most
    256 runs on a CPU and 16 groups on an accelerator (65,536 runs of Example 2 on a GPU).

    Powers of two keep the number of distinct compiled chunk shapes small (a new trial count
    or grid of ``k`` recompiles only when it crosses a power of two below the cap); the groups
    of padding are skipped (``sweep_chunk``), so they cost nothing but their compilation.
    """
    accelerator = device is not None and device.accelerator
    cap = ACCELERATOR_GROUPS * group if accelerator else MAX_BATCH_SIZE
    groups = max(1, math.ceil(min(total, cap) / group))
    return group * (1 << (groups - 1).bit_length())


class ChunkPlan(NamedTuple):
    """How a sweep's runs are cut into compiled calls.

    Attributes:
      batch_size: runs per compiled call (a multiple of ``vector_width × len(devices)``).
      vector_width: runs vectorized together on one device.
      devices: the devices each chunk is sharded over.
      num_chunks: compiled calls; the last one is padded (its padded groups are skipped).
    """

    batch_size: int
    vector_width: int
    devices: tuple
    num_chunks: int


@dataclasses.dataclass(frozen=True)
class Chunking:
    """How :func:`~jaxprivmdp.sweep` cuts its runs into compiled chunks and runs them.

    Attributes:
      batch_size: runs per compiled call (progress is reported after each), rounded up to a
        multiple of ``vector_width`` times the device count. None: :func:`default_batch_size`
        (a power of two of groups, at most 256 runs on a CPU and 16 groups on a GPU/TPU, so
        sweeps of similar size share one compilation). A fixed value never recompiles.
      vector_width: runs vectorized together on a device (the working memory is about
        ``vector_width`` runs). None: :func:`default_vector_width`, by backend. Another width
        compiles differently and may change results at the level of rounding.
      devices: the devices each chunk is sharded over (None: all of ``jax.devices()``).
      progress: optional ``progress(done, total)``, called after each chunk.
    """

    batch_size: int | None = None
    vector_width: int | None = None
    devices: Sequence | None = None
    progress: Callable[[int, int], None] | None = None

    def __post_init__(self):
        for name in ("batch_size", "vector_width"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, check_count(name, getattr(self, name)))
        if self.devices is not None:
            object.__setattr__(self, "devices", tuple(self.devices))
            if not self.devices:
                raise ValueError("devices must list at least one device")
        if self.progress is not None and not callable(self.progress):
            raise ValueError(f"progress must be None or a callable, got {self.progress!r}")


def plan_chunks(mdp, total, grid: Mechanism, chunking: Chunking) -> ChunkPlan:
    """Fills in the defaults of ``chunking`` for the devices' platform and memory
    (:func:`default_vector_width`, :func:`default_batch_size`)."""
    devices = chunking.devices or tuple(jax.devices())
    batch_size, vector_width = chunking.batch_size, chunking.vector_width
    device = describe_devices(devices)
    # The Dirichlet's "jax" sampler needs 3x the working memory of the others.
    sampler = grid.static_options().get("sampler", "fast")
    vector_width = int(vector_width or default_vector_width(mdp, sampler, device))
    group = vector_width * len(devices)
    if batch_size is None:
        batch_size = default_batch_size(total, group, device)
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


def run_chunks(plan, grid, params, N, args, static, progress) -> RunSummary:
    """Every chunk through the compiled function; `[K, N]` summaries."""
    K = grid.parameter.size
    total, chunks = K * N, []
    across = _spans_processes(plan.devices)
    for c in range(plan.num_chunks):
        runs = chunk_runs(c, plan.batch_size, grid, params, N)
        if across:
            runs = _global_runs(runs, plan.devices)
        out = sweep_chunk(runs, *args, **static)
        chunks.append(_gather(out) if across else out)
        if progress is not None:
            jax.block_until_ready(chunks[-1])
            progress(min((c + 1) * plan.batch_size, total), total)
    return jax.tree.map(lambda *x: jnp.concatenate(x)[:total].reshape(K, N), *chunks)

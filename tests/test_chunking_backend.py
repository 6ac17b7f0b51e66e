"""experiments/_chunks: chunking defaults per backend (stand-in device descriptions, no GPU
needed) and the skipped padding of a sweep's last chunk. Nothing here is timed."""

from __future__ import annotations

import functools

import jax
import numpy as np
import pytest

import jaxprivmdp as jp
from jaxprivmdp.experiments._chunks import (
    DeviceInfo,
    chunk_runs,
    default_batch_size,
    default_vector_width,
    describe_devices,
    plan_chunks,
    sweep_chunk,
)
from jaxprivmdp.models._rows import with_probs
from jaxprivmdp.models._support import model_mechanism_input
from jaxprivmdp.planning._bounds import set_up
from jaxprivmdp.sets._sets import set_named as as_set

pytestmark = pytest.mark.integration

KS = (1.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 35.0, 40.0)
H200 = 139 * 2**30


class FakeDevice:
    """A stand-in for a jax.Device: what describe_devices reads."""

    def __init__(self, platform: str, bytes_limit: int | None, process_index: int = 0):
        self.platform, self.bytes_limit, self.process_index = platform, bytes_limit, process_index

    def memory_stats(self):
        return None if self.bytes_limit is None else {"bytes_limit": self.bytes_limit}


@pytest.fixture(scope="module")
def example2():
    return jp.examples.random_mdp(jax.random.key(0))  # S = 20, A = 5, T = 10


@pytest.fixture(scope="module")
def grid100():
    return jp.examples.gridworld(100, 100)  # sparse, 10⁴ states, 4 actions, 3 successors


def _plan(mdp, total, devices, sampler="fast", **options):
    grid = jp.Dirichlet(np.asarray(KS), sampler=sampler)
    return plan_chunks(mdp, total, grid, jp.Chunking(devices=devices, **options))


def test_describe_devices_reads_platform_memory_and_count():
    info = describe_devices([FakeDevice("gpu", H200), FakeDevice("gpu", H200)])
    assert info == DeviceInfo("gpu", H200, 2) and info.accelerator
    cpu = describe_devices([FakeDevice("cpu", None)])
    assert cpu.platform == "cpu" and not cpu.accelerator
    assert cpu.memory is None or cpu.memory > 0  # the host's memory where the OS says
    real = describe_devices(jax.devices())
    assert real.platform == jax.devices()[0].platform and real.count == len(jax.devices())


def test_gpu_defaults_fill_the_device(example2, grid100):
    # The best chunkings measured on an H200 (benchmarks/bench_chunking.py): Example 2 at
    # 4096 × 65536, the 100×100 support-aware gridworld sweep at vector_width 256.
    gpu = (FakeDevice("gpu", H200),)
    plan = _plan(example2, 9 * 20_000, gpu)
    assert (plan.vector_width, plan.batch_size, plan.num_chunks) == (4096, 65536, 3)
    plan = _plan(grid100, 9 * 100, gpu)
    assert (plan.vector_width, plan.batch_size) == (256, 1024)
    # The width does not depend on the sweep's size (results stay bitwise reproducible): a
    # small sweep is one group, its padded lanes run alongside on the GPU.
    assert _plan(example2, 9 * 50, gpu).batch_size == 4096


def test_gpu_defaults_stay_within_the_memory_budget(grid100):
    # 16 arrays of 10⁴·4·3 float32 entries per run; a quarter of 1 GiB holds 34 runs.
    small = _plan(grid100, 900, (FakeDevice("gpu", 2**30),))
    assert small.vector_width == 32
    per_run = 16 * 10_000 * 4 * 3 * 4
    assert small.vector_width * per_run <= 2**30 / 4
    # The Dirichlet's "jax" sampler needs 3x the memory: 11 runs fit.
    assert _plan(grid100, 900, (FakeDevice("gpu", 2**30),), sampler="jax").vector_width == 8
    # A device that does not report its memory gets a 16 GiB assumption (4 GiB for a group).
    info = DeviceInfo("gpu", None, 1)
    assert default_vector_width(grid100, "fast", info) == 256


def test_cpu_defaults_keep_small_groups(example2, grid100):
    # Cache-sized groups: 2¹³ transition entries; Example 2 has 2,000 per run.
    cpu = (FakeDevice("cpu", None),)
    plan = _plan(example2, 9 * 20_000, cpu)
    assert (plan.vector_width, plan.batch_size) == (4, 256)
    assert _plan(grid100, 900, cpu).vector_width == 1
    assert _plan(example2, 20, cpu).batch_size == 32  # 5 groups, rounded to 8
    tiny = jp.examples.random_mdp(jax.random.key(0), 5, 3)  # 75 entries
    assert _plan(tiny, 900, cpu).vector_width == 16
    # The defaults without a device description are this machine's.
    here = describe_devices(jax.local_devices()[:1])
    assert default_vector_width(example2, "fast") == default_vector_width(example2, "fast", here)


def test_explicit_chunking_overrides_and_rounds_to_groups(example2):
    gpus = (FakeDevice("gpu", H200), FakeDevice("gpu", H200))
    plan = _plan(example2, 1000, gpus, vector_width=3, batch_size=10)
    assert (plan.vector_width, plan.batch_size, plan.num_chunks) == (3, 12, 84)
    assert plan.devices == gpus
    assert default_batch_size(1000, 6, DeviceInfo("gpu", H200, 2)) == 96  # 16 groups
    with pytest.raises(ValueError, match="batch_size"):
        _plan(example2, 10, gpus, batch_size=0)
    with pytest.raises(ValueError, match="devices"):
        _plan(example2, 10, ())


def test_padded_groups_of_the_last_chunk_are_skipped(example2):
    # 3 real runs in a chunk of 8 at vector_width 2: the group with runs 2-3 is computed
    # (run 3 repeats run 2), the groups 4-5 and 6-7 are skipped (zeros), not recomputed.
    mdp = example2
    grid = jp.Dirichlet(np.asarray([5.0], np.float32), sampler="fast")
    inp = model_mechanism_input(mdp, None, None, interior=grid.needs_interior)
    params, width = set_up(with_probs(mdp, inp.rows, inp.support), grid, as_set("paper"))
    runs = chunk_runs(0, 8, grid, jax.tree.map(np.asarray, params), 3)
    np.testing.assert_array_equal(runs.real, np.arange(8) < 3)
    static = dict(width=width, support_aware=False, robust=False)
    static.update(devices=tuple(jax.devices()[:1]), vector_width=2)
    out = functools.partial(sweep_chunk, **static)(
        runs, jax.random.key(0), mdp, inp.rows, inp.support, 100
    )
    value = np.asarray(out.private_value)
    assert np.all(value[:4] > 0) and value[3] == value[2]
    np.testing.assert_array_equal(value[4:], 0.0)
    assert not np.asarray(out.converged)[4:].any()

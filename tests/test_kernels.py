"""The host's compiled loops (``properties._kernels``): compiled without Numba's on-disk
cache where Numba cannot write one (a read-only install with no writable home); the strongly
connected components against SciPy's."""

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

import jaxprivmdp.properties._kernels as kernels


def test_a_kernel_compiles_without_a_writable_cache(monkeypatch):
    real = kernels.numba.njit

    def njit(*args, **options):  # (Numba's own lazy imports call it with a function too)
        if options.get("cache"):
            raise RuntimeError("cannot cache function 'f': no locator available for file")
        return real(*args, **options)

    monkeypatch.setattr(kernels.numba, "njit", njit)

    @kernels._compiled()
    def total(x):
        out = 0.0
        for v in x:
            out += v
        return out

    assert total(np.arange(4.0)) == 6.0


@pytest.mark.parametrize("seed", range(40))
def test_strong_components_agree_with_scipy(seed):
    """The same partition as ``scipy.sparse.csgraph`` (self-loops, repeated edges, isolated
    nodes included), labelled successors first: every edge to the same or a lower label."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 80))
    E = int(rng.integers(0, 3 * n))
    src, dst = rng.integers(0, n, E), rng.integers(0, n, E)
    if seed % 4 == 0:  # a long cycle through every node: one component, deep recursion
        src, dst = np.r_[src, np.arange(n)], np.r_[dst, (np.arange(n) + 1) % n]
    count, label = kernels.strong_components(n, src, dst)
    graph = csr_matrix((np.ones(src.size), (src, dst)), shape=(n, n))
    expected, theirs = connected_components(graph, directed=True, connection="strong")
    assert count == expected and sorted(set(label.tolist())) == list(range(count))
    assert len(set(zip(label.tolist(), theirs.tolist(), strict=True))) == count
    assert np.all(label[dst] <= label[src])

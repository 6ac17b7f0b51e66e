"""The host's compiled loops (``properties._kernels``): compiled without Numba's on-disk
cache where Numba cannot write one (a read-only install with no writable home)."""

import numpy as np

import jaxprivmdp.properties._kernels as kernels


def test_a_kernel_compiles_without_a_writable_cache(monkeypatch):
    real = kernels.numba.njit

    def njit(**options):
        if options.get("cache"):
            raise RuntimeError("cannot cache function 'f': no locator available for file")
        return real(**options)

    monkeypatch.setattr(kernels.numba, "njit", njit)

    @kernels._compiled()
    def total(x):
        out = 0.0
        for v in x:
            out += v
        return out

    assert total(np.arange(4.0)) == 6.0

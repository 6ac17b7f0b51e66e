"""One `synthesize` with both bounds on an n×n gridworld, infinite horizon (γ = 0.95).

Run: ``/usr/bin/time -v python benchmarks/sparse_large.py N AWARE`` (AWARE 1 for the
support-aware set, 0 for the paper's); prints first-call and steady-state times and the
peak RSS. A first measurement for the sparse-model issue, not yet a pytest-benchmark module.
"""

import resource
import sys
import time

import jax

import jaxprivmdp as jp

n = int(sys.argv[1])
aware = sys.argv[2] == "1"
g = jp.examples.gridworld(n, n, discount=0.95)
f = lambda: jax.block_until_ready(
    jp.synthesize(jax.random.key(0), g, k=50.0, sampler="fast", support_aware=aware)
)
t = time.time()
out = f()
t1 = time.time() - t
t = time.time()
f()
t2 = time.time() - t
print(
    f"{n}x{n} aware={aware}: first {t1:.2f}s steady {t2:.2f}s cost {float(out.cost):.3f} conv {bool(out.converged)} maxrss {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB",
    flush=True,
)

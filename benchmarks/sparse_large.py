"""One `synthesize` with both bounds on an n×n gridworld, infinite horizon (γ = 0.95).

Run: ``/usr/bin/time -v python benchmarks/sparse_large.py N AWARE`` (AWARE 1 for the
support-aware set, 0 for the paper's); prints first-call and steady-state times and the
peak RSS (a plain script: one call, peak memory, not repeated rounds).
"""

import resource
import sys
import time

import jax

import jaxprivmdp as jp


def main(n: int, aware: bool) -> None:
    g = jp.examples.gridworld(n, n, discount=0.95)

    def once():
        uset = jp.PaperSet(0.1, support_aware=aware)
        out = jp.synthesize(jax.random.key(0), g, jp.Dirichlet(50.0, sampler="fast"), uset)
        return jax.block_until_ready(out)

    t = time.perf_counter()
    out = once()
    first = time.perf_counter() - t
    t = time.perf_counter()
    once()
    steady = time.perf_counter() - t
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{n}x{n} support_aware={aware}: first {first:.2f} s, steady {steady:.2f} s, "
        f"cost {float(out.cost):.3f}, converged {bool(out.converged)}, max RSS {rss:.0f} MB"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2] == "1")

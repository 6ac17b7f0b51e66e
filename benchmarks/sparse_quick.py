"""Sparse vs dense on the same 50×50 gridworld (S = 2500, A = 4, T = 100): one `synthesize`
with both bounds after compilation, and the bounds of both kinds on the same privatized rows.

Run: ``python benchmarks/sparse_quick.py`` (a plain script: one comparison, not repeated
rounds).
"""

import dataclasses
import time

import jax
import numpy as np

import jaxprivmdp as jp


def run(m):
    kw = {} if isinstance(m, jp.SparseMDP) else {"support": "nonzero"}
    out = jp.synthesize(jax.random.key(0), m, jp.Dirichlet(50.0, sampler="fast"), **kw)
    return jax.block_until_ready(out)


def main() -> None:
    sparse = jp.examples.gridworld(50, 50, horizon=100, discount=1.0)
    dense = jp.to_dense(sparse)
    best = {}
    for name, m in (("sparse", sparse), ("dense", dense)):
        run(m)  # compile
        times = []
        for _ in range(3):
            t = time.perf_counter()
            run(m)
            times.append(time.perf_counter() - t)
        best[name] = min(times)
    ratio = best["dense"] / best["sparse"]
    print({k: round(v, 4) for k, v in best.items()}, f"dense/sparse {ratio:.1f}")
    out = run(sparse)
    p_sparse = dataclasses.replace(sparse, probs=out.private_transitions)
    mech = jp.Dirichlet(50.0)
    bs = jp.cost_of_privacy(p_sparse, out.policy, mech)
    bd = jp.cost_of_privacy(jp.to_dense(p_sparse), out.policy, mech)
    for f in ("lower", "upper"):
        diff = np.abs(np.asarray(getattr(bs, f)) - np.asarray(getattr(bd, f))).max()
        print(f"max |dense - sparse| {f}: {float(diff):.3g}")


if __name__ == "__main__":
    main()

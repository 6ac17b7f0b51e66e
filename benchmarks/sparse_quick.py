"""Sparse vs dense on the same 50×50 gridworld (S = 2500, A = 4, T = 100): one `synthesize`
with both bounds after compilation, and the bounds of both kinds on the same privatized rows.

Run: ``python benchmarks/sparse_quick.py`` (a first measurement for the sparse-model issue;
not yet a pytest-benchmark module).
"""

import time

import jax
import numpy as np

import jaxprivmdp as jp

g = jp.examples.gridworld(50, 50, horizon=100, discount=1.0)
d = jp.to_dense(g)


def run(m):
    kw = {} if isinstance(m, jp.SparseMDP) else {"support": "nonzero"}
    return jax.block_until_ready(jp.synthesize(jax.random.key(0), m, k=50.0, sampler="fast", **kw))


for m in (g, d):
    run(m)
ts = {}
for name, m in (("sparse", g), ("dense", d)):
    times = []
    for _ in range(3):
        t = time.perf_counter()
        run(m)
        times.append(time.perf_counter() - t)
    ts[name] = min(times)
print({k: round(v, 4) for k, v in ts.items()}, "dense/sparse", round(ts["dense"] / ts["sparse"], 1))
# Same numbers, given the same privatized rows:
out = run(g)
import dataclasses

p_sparse = dataclasses.replace(g, probs=out.private_transitions)
p_dense = jp.to_dense(p_sparse)
bs = jp.cost_of_privacy(p_sparse, out.policy, k=50.0)
bd = jp.cost_of_privacy(p_dense, out.policy, k=50.0)
print(
    "max |dense - sparse| pessimistic",
    float(np.abs(np.asarray(bs.pessimistic) - np.asarray(bd.pessimistic)).max()),
    "optimistic",
    float(np.abs(np.asarray(bs.optimistic) - np.asarray(bd.optimistic)).max()),
)

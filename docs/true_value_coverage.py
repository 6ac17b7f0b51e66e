"""How often the true value of the private policy falls outside [pessimistic, optimistic].

Run: python docs/true_value_coverage.py  (the README quotes its output)
"""

import jax
import numpy as np

import jaxprivmdp as jp

KS = [1, 5, 10, 20, 40]
TRIALS = 200
for name, mdp, support in [
    ("Example 1", jp.examples.investment(), "nonzero"),
    ("Example 2", jp.examples.random_mdp(jax.random.key(0)), None),
]:
    r = jp.sweep(
        jax.random.key(0),
        mdp,
        jp.Dirichlet.grid(KS, sampler="fast"),
        num_trials=TRIALS,
        support=support,
    )
    tv, lo, hi = map(np.asarray, (r.true_value, r.lower, r.upper))
    outside = ((tv < lo) | (tv > hi)).sum(axis=1)
    per_k = dict(zip(KS, outside.tolist(), strict=True))
    print(f"{name}: runs outside [v_low, v_high] per k {per_k} of {TRIALS} each")

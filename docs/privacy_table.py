"""Prints the README's table: the (ε, δ = 1e-3) each k of Figure 1 buys for the paper's examples.

Run: python docs/privacy_table.py
"""

import jax
import numpy as np

import jaxprivmdp as jp
from jaxprivmdp import privacy

KS = (1, 5, 10, 15, 20, 25, 30, 35, 40)
B, DELTA = 0.1, 1e-3

m1, m2 = jp.examples.investment(), jp.examples.random_mdp(jax.random.key(0))
P2 = np.asarray(m2.transitions)
print(f"b = {B}, target delta = {DELTA}, adjacency: one row differs")
print(
    f"| k | Example 1 (n = 2, η = 0.1) | Example 2 as is (η = {P2.min():.1e}) "
    "| Example 2, smoothing = 0.01 (η = 0.01) |"
)
print("|---|---|---|---|")
for k in KS:
    g1 = privacy.mdp_guarantee(
        k, m1, privacy.Adjacency(B, 0.1), target_delta=DELTA, support="nonzero"
    )
    g2 = privacy.mdp_guarantee(k, m2, privacy.Adjacency(B, float(P2.min())), target_delta=DELTA)
    g3 = privacy.mdp_guarantee(
        k, m2, privacy.Adjacency(B, 0.01), target_delta=DELTA, smoothing=0.01
    )
    print(f"| {k} | ε = {g1.epsilon:.2f} | ε = {g2.epsilon:.0f} | ε = {g3.epsilon:.1f} |")

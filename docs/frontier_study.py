"""The privacy–utility frontier of Examples 1 and 2 and the 20×20 gridworld (README).

For target ε in {0.25, 0.5, 1, 2, 4, 8, 16, 32} at δ = 1e-3 (one row differs by at most
b = 0.1 in ℓ1), every mechanism is calibrated to its least-noise parameter and run 50
times: the mean true value of the private policy, its pessimistic bound and the
non-private optimum, per mechanism. Writes docs/frontier.png and docs/frontier.json.

Run: python docs/frontier_study.py   (about a minute on 2 CPU cores)
"""

import json
import time
from pathlib import Path

import jax
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import jaxprivmdp as jp  # noqa: E402
from jaxprivmdp.experiments import _report  # noqa: E402
from jaxprivmdp.experiments._frontier import frontier  # noqa: E402

EPSILONS = [0.25, 0.5, 1, 2, 4, 8, 16, 32]
DELTA = 1e-3
TRIALS = 50
MODELS = {
    "Example 1 (investment)": (jp.examples.investment(), "nonzero"),
    "Example 2 (random, S=20)": (jp.examples.random_mdp(jax.random.key(0)), None),
    "20x20 gridworld (T=60)": (jp.examples.gridworld(20, 20, horizon=60, discount=1.0), None),
}

out = Path(__file__).parent
fig, axes = plt.subplots(1, 3, figsize=(16, 4.6), constrained_layout=True)
record = {"epsilons": EPSILONS, "delta": DELTA, "trials": TRIALS, "b": 0.1, "models": {}}
start = time.perf_counter()
for i, (ax, (name, (mdp, support))) in enumerate(zip(axes, MODELS.items(), strict=True)):
    t0 = time.perf_counter()
    res = frontier(
        jax.random.key(i),
        mdp,
        epsilons=EPSILONS,
        delta=DELTA,
        num_trials=TRIALS,
        support=support,
        bound=jp.PaperSet(0.1, support_aware=isinstance(mdp, jp.SparseMDP)),
    )
    _report.frontier_panel(ax, res, name)
    record["models"][name] = {
        "seconds": round(time.perf_counter() - t0, 1),
        "floor_epsilon": res.floor,
        "eta": res.eta,
        "n": res.n,
        "optimal_value": res.optimal_value,
        "rows": res.rows(),
    }
    print(f"{name}: {record['models'][name]['seconds']} s; V* = {res.optimal_value:.4f}")
    for m in res.parameter:
        cells = [
            f"{float(res.true_value[m][j].mean()):.3f}" if res.reachable[m][j] else "-"
            for j in range(len(EPSILONS))
        ]
        print(f"  {m:>9}: " + "  ".join(cells))
record["wall_time_s"] = round(time.perf_counter() - start, 1)
record["jax"] = jax.__version__
fig.suptitle(
    f"Value against ε at δ = {DELTA:g}, {TRIALS} releases per point (solid: true value of the "
    "private policy; dashed: pessimistic bound)"
)
fig.savefig(out / "frontier.png", dpi=130)
(out / "frontier.json").write_text(json.dumps(record, indent=1) + "\n")
print(f"wrote {out / 'frontier.png'} in {record['wall_time_s']} s")

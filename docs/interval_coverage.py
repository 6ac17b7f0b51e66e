"""Coverage of certified property values: how often the certified interval holds the truth.

Run: ``python docs/interval_coverage.py`` (CPU, about 10 minutes on 2 cores; ``--trials N``
releases per cell, default 1000; ``--quick``: 50). Writes ``docs/interval_coverage.json`` and
prints the markdown table that ``docs/interval.md`` shows.

``jp.certify_property(release, 'Pmax=? [F "goal"]', mechanism, jp.CertifiedSet(β))`` promises:
with probability ``>= 1 − β`` over the mechanism's noise, the true model's ``Pmax`` lies in
``[lower, upper]`` (every state at once), and the robust (``Pmaxmin``) policy's true value is
at least ``lower``. Each cell (model × mechanism × noise level) draws ``trials`` releases of
the fixed true model, certifies each, and records:

- ``covered``: the fraction of releases with ``lower <= Pmax_true <= upper`` in *every* state
  (``Pmax_true`` by ``jp.check`` on the true point model, float64, ``tol=1e-12``; its own
  honest bounds are compared: ``lower <= its upper`` and ``its lower <= upper``);
- ``policy_ok``: the fraction whose robust policy's true reachability probability (solved
  with NumPy on the true model, an oracle independent of the checker) is at least
  ``lower − 1e-9`` in every state (the slack: the linear solve's rounding);
- the Wilson 95% interval of each fraction, and the mean width ``upper − lower`` at ``s0``.

Both fractions must be at least ``1 − β = 0.9``; the certified set's union bound is
conservative, so they are usually far above it.

Models (all with an absorbing ``goal``; values strictly between 0 and 1 somewhere):
the paper's Example 1 (investment: ``Pmax = 0.9`` of reaching ``Hit``; released on its
public support, ``support="nonzero"``, with ``CertifiedSet(0.1, support_aware=True)``:
without it the boxes let nature move mass from ``Miss`` to ``Hit`` and every upper end is
1), a 4×4 gridworld with slip 0.2 where every move falls into an absorbing trap with
probability 0.05, and a random sparse MDP (30 states, 2 actions, 4 successors per row, an
absorbing goal, two absorbing traps; it starts in the state whose ``Pmax`` is closest to
0.5).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
from pathlib import Path

os.environ.setdefault("JAX_ENABLE_X64", "1")

import jax  # noqa: E402
import numpy as np  # noqa: E402

import jaxprivmdp as jp  # noqa: E402

BETA = 0.1
PROP = 'Pmax=? [F "goal"]'
MECHANISMS = {"dirichlet": [20.0, 200.0], "gaussian": [0.05, 0.01]}  # k; σ (more noise first)
HERE = Path(__file__).parent
CHUNK = 100
SOLVE_SLACK = 1e-9  # np.linalg.solve's rounding in the policy's value (values <= 1)


def investment():
    mdp = jp.examples.investment()
    goal = np.array([False, True, False])
    return mdp, goal, "nonzero"  # the paper's public support (its rows' structural zeros)


def gridworld_fall(fall=0.05):
    g = jp.examples.gridworld(4, 4, slip=0.2)
    nxt, probs = np.array(g.next_states), np.array(g.probs, np.float64)
    S, A, _ = nxt.shape
    trap = S  # a new absorbing state: every move off the goal falls into it w.p. `fall`
    nxt = np.concatenate([nxt, np.full((S, A, 1), trap)], axis=-1)
    probs = np.concatenate([probs * (1 - fall), np.full((S, A, 1), fall)], axis=-1)
    nxt[S - 1, :, 1:] = -1  # the goal (bottom-right) stays absorbing
    probs[S - 1, :, 1:] = 0.0
    nxt[S - 1, :, 0], probs[S - 1, :, 0] = S - 1, 1.0
    nxt = np.concatenate([nxt, np.full((1, A, nxt.shape[-1]), -1)])
    probs = np.concatenate([probs, np.zeros((1, A, probs.shape[-1]))])
    nxt[trap, :, 0], probs[trap, :, 0] = trap, 1.0
    rewards = np.concatenate([np.array(g.rewards), np.zeros((1, A))])
    mdp = jp.make_sparse_mdp(nxt.astype(np.int32), probs, rewards, discount=0.95)
    goal = np.zeros(S + 1, bool)
    goal[S - 1] = True
    return mdp, goal, None


def random_sparse(S=30, A=2, K=4, seed=0):
    rng = np.random.default_rng(seed)
    nxt = np.stack([[rng.choice(S, K, replace=False) for _ in range(A)] for _ in range(S)])
    probs = rng.dirichlet(np.ones(K), size=(S, A))
    for absorbing in (0, 1, 2):  # 0: goal, 1 and 2: traps
        nxt[absorbing] = -1
        probs[absorbing] = 0.0
        nxt[absorbing, :, 0], probs[absorbing, :, 0] = absorbing, 1.0
    goal = np.zeros(S, bool)
    goal[0] = True
    args = (nxt.astype(np.int32), probs, rng.uniform(size=(S, A)))
    values = np.asarray(jp.check(jp.make_sparse_mdp(*args), PROP, labels={"goal": goal}).values)
    s0 = int(np.argmin(np.abs(values - 0.5)))  # start where the answer is least trivial
    return jp.make_sparse_mdp(*args, discount=0.95, initial_state=s0), goal, None


MODELS = {
    "Example 1 (investment)": investment,
    "gridworld 4×4, 5% fall per move": gridworld_fall,
    "random sparse (30 states)": random_sparse,
}


def dense_rows(mdp) -> np.ndarray:
    """`[S, A, S]` float64 transition matrix of a TabularMDP or SparseMDP."""
    if isinstance(mdp, jp.TabularMDP):
        return np.asarray(mdp.transitions, np.float64)
    nxt, probs = np.asarray(mdp.next_states), np.asarray(mdp.probs, np.float64)
    S, A, _ = nxt.shape
    P = np.zeros((S, A, S))
    s, a, k = np.nonzero(nxt >= 0)
    np.add.at(P, (s, a, nxt[s, a, k]), probs[s, a, k])
    return P


def policy_reach(P: np.ndarray, policy: np.ndarray, goal: np.ndarray) -> np.ndarray:
    """`[S]` the probability of ever reaching ``goal`` under a memoryless policy: states that
    cannot reach it in the policy's graph get 0, the others solve ``(I − Q) x = b``."""
    S = P.shape[0]
    M = P[np.arange(S), policy]  # [S, S]
    can = goal.copy()
    while True:  # backward reachability in the policy's graph
        grown = can | ((M > 0) & can[None, :]).any(axis=1)
        if (grown == can).all():
            break
        can = grown
    x = goal.astype(np.float64)
    solve = can & ~goal
    if solve.any():
        Q = M[np.ix_(solve, solve)]
        b = M[np.ix_(solve, goal)].sum(axis=1)
        x[solve] = np.linalg.solve(np.eye(Q.shape[0]) - Q, b)
    return x


def wilson(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score 95% interval of a binomial proportion."""
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def mechanism_of(name: str, level: float):
    return jp.Dirichlet(level) if name == "dirichlet" else jp.Gaussian(level)


def run_cell(mdp, goal, support, mech, trials: int, seed: int) -> dict:
    labels = {"goal": goal}
    exact = jp.check(mdp, PROP, labels=labels, tol=1e-12)  # honest bounds on the truth
    truth_lo, truth_hi = (np.asarray(x, np.float64) for x in (exact.lower, exact.upper))
    truth = np.asarray(exact.values, np.float64)
    P = dense_rows(mdp)
    release_batch = jax.jit(jax.vmap(lambda k: jp.privatize(k, mdp, mech, support=support)))
    keys = jax.random.split(jax.random.key(seed), trials)
    covered = policy_ok = 0
    widths, misses = [], []
    # A dense release's structural zeros are public (support="nonzero"): a set that ignores
    # them lets nature move mass from Miss to Hit, and every upper end is 1. A sparse
    # release's boxes stay on its successor lists whatever the flag.
    uset = jp.CertifiedSet(BETA, support_aware=support is not None)
    for start in range(0, trials, CHUNK):
        batch = release_batch(keys[start : start + CHUNK])
        for i in range(keys[start : start + CHUNK].shape[0]):
            release = jax.tree.map(lambda x, i=i: x[i], batch)
            cert = jp.certify_property(release, PROP, mech, uset, labels=labels)
            lo, hi = np.asarray(cert.lower, np.float64), np.asarray(cert.upper, np.float64)
            covered += bool(np.all((lo <= truth_hi) & (truth_lo <= hi)))
            achieved = policy_reach(P, np.asarray(cert.policy), goal)
            policy_ok += bool(np.all(achieved >= lo - SOLVE_SLACK))
            s0 = mdp.initial_state
            widths.append(hi[s0] - lo[s0])
            misses.append(float(np.max(np.maximum(lo - truth, truth - hi))))
    return dict(
        trials=trials,
        true_pmax_s0=float(truth[mdp.initial_state]),
        covered=covered / trials,
        covered_wilson95=wilson(covered, trials),
        policy_ok=policy_ok / trials,
        policy_ok_wilson95=wilson(policy_ok, trials),
        mean_width_s0=float(np.mean(widths)),
        largest_miss=float(np.max(misses)),
    )


def table(cells: list[dict]) -> str:
    lines = [
        "| model | mechanism | true Pmax(s0) | mean width at s0 | covered (Wilson 95%) "
        "| robust policy ≥ lower (Wilson 95%) |",
        "|---|---|---|---|---|---|",
    ]
    for c in cells:
        cov, pol = c["covered_wilson95"], c["policy_ok_wilson95"]
        lines.append(
            f"| {c['model']} | {c['mechanism']} | {c['true_pmax_s0']:.3f} "
            f"| {c['mean_width_s0']:.3f} | {c['covered']:.3f} [{cov[0]:.3f}, {cov[1]:.3f}] "
            f"| {c['policy_ok']:.3f} [{pol[0]:.3f}, {pol[1]:.3f}] |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="50 releases per cell")
    parser.add_argument("--out", type=Path, default=HERE / "interval_coverage.json")
    args = parser.parse_args()
    trials = 50 if args.quick else args.trials
    t0 = time.perf_counter()
    cells = []
    for m, (name, build) in enumerate(MODELS.items()):
        mdp, goal, support = build()
        for mech_name, levels in MECHANISMS.items():
            for j, level in enumerate(levels):
                mech = mechanism_of(mech_name, level)
                t = time.perf_counter()
                cell = run_cell(mdp, goal, support, mech, trials, seed=100 * m + 10 * j)
                label = (
                    f"Dirichlet(k={level:g})"
                    if mech_name == "dirichlet"
                    else (f"Gaussian(σ={level:g})")
                )
                cell.update(model=name, mechanism=label, seconds=time.perf_counter() - t)
                cells.append(cell)
                print(
                    f"{name}, {label}: covered {cell['covered']:.3f}, policy "
                    f"{cell['policy_ok']:.3f}, {cell['seconds']:.1f} s",
                    flush=True,
                )
    low = min(cells, key=lambda c: min(c["covered"], c["policy_ok"]))
    out = dict(
        command="python docs/interval_coverage.py" + (" --quick" if args.quick else ""),
        beta=BETA,
        property=PROP,
        uncertainty_set="jp.CertifiedSet(0.1)",
        trials_per_cell=trials,
        seconds=time.perf_counter() - t0,
        date_utc=time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        versions=dict(jax=jax.__version__, numpy=np.__version__, python=platform.python_version()),
        x64=bool(jax.config.jax_enable_x64),
        lowest=dict(
            model=low["model"],
            mechanism=low["mechanism"],
            covered=low["covered"],
            policy_ok=low["policy_ok"],
        ),
        cells=cells,
    )
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    print(f"\nwrote {args.out}\n\n{table(cells)}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python
"""The public functions eagerly and under ``jax.jit``, side by side.

    python benchmarks/bench_jit.py [--quick] [--budget-s SECONDS] [--only TEXT ...] [--json OUT]

For a dense model (Example 2's generator, S = 1000, A = 4, T = 20, every row privatized with
``support="nonzero"`` so that the support-aware sets apply) and a sparse one (the same sizes,
K = 8 random successors per row), one release ``P̄`` (Dirichlet, k = 5) and its optimal
policy, each row times, round-robin in one loop (:func:`common.interleaved`, so a burst of
outside load hits every column alike):

- ``evaluate(P̄, π)`` eagerly and ``jax.jit(evaluate)`` (the baselines);
- ``cost_of_privacy(P̄, π, jp.Dirichlet(5.0), uset)`` eagerly, and under ``jax.jit`` as a user
  writes it: ``jax.jit(lambda m, p: jp.cost_of_privacy(m, p, mech, uset))`` (model and policy
  traced, the mechanism and the set closed over), for every set (``PaperSet``, ``ExactSet``,
  ``CertifiedSet``, each with and without ``support_aware``);
- the same with the mechanism traced too (``jax.jit(lambda m, p, mech: ...)``): without a
  hint the fill spans all ``S`` entries; with ``fill_width=`` the width the eager call derives
  (when the library takes one) it stays narrow, checked at run time;
- ``synthesize(key, M, jp.Dirichlet(5.0, sampler="fast"), uset)`` eagerly and as
  ``jax.jit(lambda key, m: jp.synthesize(key, m, mech, uset))``.

The table gives each call's median after compilation, its ratio to ``evaluate`` called the
same way (eager ÷ eager, jit ÷ jit: the targets are ≤ 5× under ``jit``, as eagerly),
the jit ÷ eager ratio (target for ``synthesize``: ≤ 1.5) and the first jitted call (tracing and
compilation). Every timed call ends with ``jax.block_until_ready``. ``--quick`` uses S = 200.
The library is imported from this checkout (its root first on ``sys.path``).

Why not pytest-benchmark: its rounds run one benchmark after another, so the ratio of two
medians mixes two load levels on this shared machine; the interleaved loop of ``common``
(whose samples go into pytest-benchmark's ``Stats``) keeps the ratios fair.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # this checkout, before any installed copy
sys.path.insert(1, str(REPO / "benchmarks"))

import jax  # noqa: E402
import numpy as np  # noqa: E402
from common import block, interleaved, machine_info, print_header, write_json  # noqa: E402

import jaxprivmdp as jp  # noqa: E402

K = 5.0
SETS = {
    "paper": jp.PaperSet,
    "exact": jp.ExactSet,
    "certified": jp.CertifiedSet,
}


def sparse_model(S: int, A: int, T: int, successors: int, seed: int) -> Any:
    """Random successor lists: ``successors`` distinct states per row, Dirichlet(1) rows."""
    rng = np.random.default_rng(seed)
    idx = np.argsort(rng.random((S, A, S)), axis=-1)[..., :successors]
    probs = rng.dirichlet(np.ones(successors), size=(S, A))
    return jp.make_sparse_mdp(
        idx,
        probs,
        rng.uniform(0, 1, size=(S, A)),
        terminal_reward=rng.uniform(0, 1, size=S),
        horizon=T,
    )


def problems(S: int, A: int, T: int) -> dict[str, tuple[Any, Any, Any]]:
    """``{name: (true model, release, its optimal policy)}`` for dense and sparse."""
    dense = jp.examples.random_mdp(jax.random.key(3), num_states=S, num_actions=A, horizon=T)
    out = {}
    for name, mdp in (("dense", dense), ("sparse", sparse_model(S, A, T, 8, 5))):
        release = jp.privatize(jax.random.key(4), mdp, jp.Dirichlet(K), support="nonzero")
        out[name] = block((mdp, release, jp.solve(release).policy))
    return out


def eager_width(release, uset) -> int:
    """The width an eager call derives from the concrete k and β (a private helper)."""
    from jaxprivmdp.planning._bounds import set_up

    return int(set_up(release, jp.Dirichlet(K), uset)[-1])  # the width, last in every revision


def first_call(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    block(fn())
    return time.perf_counter() - t0


def cop_calls(release, policy, uset) -> dict[str, Callable[[], Any]]:
    mech = jp.Dirichlet(K)
    jitted = jax.jit(lambda m, p: jp.cost_of_privacy(m, p, mech, uset))
    return {
        "eager": lambda: jp.cost_of_privacy(release, policy, mech, uset),
        "jit": lambda: jitted(release, policy),
    }


def traced_k_calls(release, policy, uset, width: int | None) -> dict[str, Callable[[], Any]]:
    mech = jp.Dirichlet(K)
    extra = {} if width is None else {"options": jp.SolverOptions(fill_width=width)}
    jitted = jax.jit(lambda m, p, mc: jp.cost_of_privacy(m, p, mc, uset, **extra))
    return {
        "eager": lambda: jp.cost_of_privacy(release, policy, mech, uset, **extra),
        "jit": lambda: jitted(release, policy, mech),
    }


def synth_calls(mdp, uset) -> dict[str, Callable[[], Any]]:
    # The fast sampler: the reference one spends ~15 s on a dense S = 1000 release on CPU,
    # which would hide what jit changes in planning and bounds.
    mech, key = jp.Dirichlet(K, sampler="fast"), jax.random.key(7)
    jitted = jax.jit(lambda key, m: jp.synthesize(key, m, mech, uset, support="nonzero"))
    return {
        "eager": lambda: jp.synthesize(key, mdp, mech, uset, support="nonzero"),
        "jit": lambda: jitted(key, mdp),
    }


def rows(S: int) -> list[tuple[str, str, Callable]]:
    """``(model, label, make)``: ``make(problem)`` gives the eager and jitted calls."""
    out = []
    for model in ("dense", "sparse"):
        for name, cls in SETS.items():
            for aware in (False, True):
                uset = cls(0.1, support_aware=aware)
                label = f"cost_of_privacy {name}{' aware' if aware else ''}"
                out.append((model, label, lambda pr, u=uset: cop_calls(pr[1], pr[2], u)))
        for name in ("paper", "certified"):
            uset = SETS[name](0.1)
            label = f"cost_of_privacy {name}, k traced"
            out.append((model, label, lambda pr, u=uset: traced_k_calls(pr[1], pr[2], u, None)))
            out.append(
                (
                    model,
                    f"{label}, fill_width= the eager width",
                    lambda pr, u=uset: traced_k_calls(pr[1], pr[2], u, eager_width(pr[1], u)),
                )
            )
        for name, aware in (("paper", False), ("exact", False), ("certified", False)):
            uset = SETS[name](0.1, support_aware=aware)
            label = f"synthesize {name}"
            out.append((model, label, lambda pr, u=uset: synth_calls(pr[0], u)))
    return out


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    S, A, T = (200, 4, 20) if args.quick else (1000, 4, 20)
    probs = problems(S, A, T)
    eval_jit = jax.jit(jp.evaluate)
    results = []
    for model, label, make in rows(S):
        if args.only and not any(t in f"{model} {label}" for t in args.only):
            continue
        _, release, policy = probs[model]
        calls = make(probs[model])
        compile_s = first_call(calls["jit"])
        timed = {
            "evaluate eager": lambda r=release, p=policy: jp.evaluate(r, p),
            "evaluate jit": lambda r=release, p=policy: eval_jit(r, p),
            **calls,
        }
        st = interleaved(timed, min_rounds=args.rounds, budget_s=args.budget_s)
        med = {n: s.median for n, s in st.items()}
        res = dict(
            model=f"{model} S={S} A={A} T={T}",
            call=label,
            eager_s=med["eager"],
            jit_s=med["jit"],
            eager_over_evaluate=med["eager"] / med["evaluate eager"],
            jit_over_evaluate=med["jit"] / med["evaluate jit"],
            jit_over_eager=med["jit"] / med["eager"],
            evaluate_eager_s=med["evaluate eager"],
            evaluate_jit_s=med["evaluate jit"],
            first_jit_call_s=compile_s,
            rounds=st["jit"].rounds,
        )
        print(table_row(res), flush=True)
        results.append(res)
    return results


def ms(x: float) -> str:
    return f"{x * 1e3:.3g} ms" if x < 1 else f"{x:.3g} s"


def table_head() -> str:
    return (
        "| model | call | eager | jit | eager ÷ evaluate | jit ÷ evaluate (jit) | jit ÷ eager "
        "| evaluate eager / jit | first jit call | rounds |\n"
        "|---|---|---|---|---|---|---|---|---|---|"
    )


def table_row(r: dict[str, Any]) -> str:
    return (
        f"| {r['model']} | {r['call']} | {ms(r['eager_s'])} | {ms(r['jit_s'])} "
        f"| {r['eager_over_evaluate']:.2f} | {r['jit_over_evaluate']:.2f} "
        f"| {r['jit_over_eager']:.2f} | {ms(r['evaluate_eager_s'])} / "
        f"{ms(r['evaluate_jit_s'])} | {ms(r['first_jit_call_s'])} | {r['rounds']} |"
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="S = 200 instead of 1000")
    p.add_argument("--budget-s", type=float, default=3.0, help="timed seconds per row")
    p.add_argument("--rounds", type=int, default=7, help="at least this many rounds per row")
    p.add_argument("--only", nargs="*", default=(), help="rows whose name contains any TEXT")
    p.add_argument("--json", type=Path, help="also write the results as JSON")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    info = machine_info()
    print_header("Eager vs jax.jit", info)
    print(table_head(), flush=True)
    results = run(args)
    if args.json:
        write_json(args.json, dict(info=info, results=results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

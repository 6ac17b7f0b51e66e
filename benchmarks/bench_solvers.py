"""Non-private finite-horizon planning: ``jaxprivmdp.solve`` vs other solvers.

Backward induction ``V_t = max_a r + P V_{t+1}`` (``V_T = R_T``, γ = 1) on random MDPs with
``S ∈ {200, 500, 1000}``, ``A = 5``, ``T = 10``:

* ours: ``jaxprivmdp.solve`` (a jitted reverse ``lax.scan``), after compilation;
* NumPy: a vectorized loop written here, ``Q = R + (P.reshape(S·A, S) @ V).reshape(S, A)``
  per stage (one BLAS matrix-vector product per stage), in the benchmark's dtype;
* QuantEcon: ``quantecon.markov.backward_induction(DiscreteDP(R, Q, 1.0), T, v_term)``
  (float64), if installed;
* pymdptoolbox: ``mdptoolbox.mdp.FiniteHorizon(P, R, 1.0, N=T, h=R_T).run()`` (float64),
  if installed.

Only the solve is timed (model construction is excluded for every solver); all results are
checked against the NumPy values. Target: ours not slower than any of them.

Run: ``python benchmarks/bench_solvers.py [--quick] [--dtype float32|float64]``.
"""

from __future__ import annotations

import contextlib
import io
import warnings

import common

NAME = "bench_solvers"
A = 5
T = 10

args = common.script_args(__doc__.splitlines()[0], default_dtype="float64")

import numpy as np  # noqa: E402

import jaxprivmdp as jp  # noqa: E402


def blas_settings():
    """``{label: context manager}``: the BLAS default, and one thread (via threadpoolctl).

    On a small or shared machine a multi-threaded BLAS matrix-vector product can be far
    slower than a single-threaded one (threads wait for a busy core), so every BLAS-based
    solver is timed both ways and its faster setting counts.
    """
    settings = {"BLAS default threads": contextlib.nullcontext}
    try:
        from threadpoolctl import threadpool_limits

        settings["BLAS 1 thread"] = lambda: threadpool_limits(limits=1, user_api="blas")
    except ImportError:
        pass
    return settings


def numpy_backward_induction(P2, R, RT, T):
    """``P2`` `[S·A, S]`; returns policy `[T, S]` and values `[T + 1, S]`."""
    S, A = R.shape
    V = np.empty((T + 1, S), R.dtype)
    pi = np.empty((T, S), np.int64)
    V[T] = RT
    for t in reversed(range(T)):
        Q = R + (P2 @ V[t + 1]).reshape(S, A)
        pi[t] = Q.argmax(axis=1)
        V[t] = Q.max(axis=1)
    return pi, V


def optional_solvers():
    """``{name: (setup(P, R, RT) -> run, run() -> (policy [T, S], values [T + 1, S]))}``."""
    solvers, skipped = {}, {}
    try:
        from quantecon.markov import DiscreteDP, backward_induction

        def qe_setup(P, R, RT):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "infinite horizon methods disabled at β=1"
                ddp = DiscreteDP(R, P, 1.0)

            def run():
                values, sigmas = backward_induction(ddp, T, v_term=RT)
                return sigmas, values

            return run

        solvers["QuantEcon backward_induction"] = qe_setup
    except ImportError as e:
        skipped["QuantEcon"] = f"ImportError: {e}"
    try:
        import mdptoolbox.mdp

        def mdpt_setup(P, R, RT):
            with contextlib.redirect_stdout(io.StringIO()):  # it prints a γ = 1 warning
                fh = mdptoolbox.mdp.FiniteHorizon(np.transpose(P, (1, 0, 2)), R, 1.0, N=T, h=RT)

            def run():
                fh.run()
                return fh.policy.T, fh.V.T

            return run

        solvers["pymdptoolbox FiniteHorizon"] = mdpt_setup
    except ImportError as e:
        skipped["pymdptoolbox"] = f"ImportError: {e}"
    return solvers, skipped


def main():
    env = common.machine_info()
    np_dtype = np.dtype(args.dtype)
    sizes = (200, 500) if args.quick else (200, 500, 1000)
    budget = 0.3 if args.quick else 1.0
    solvers, skipped = optional_solvers()
    import importlib.metadata as md

    versions = {}
    for dist in ("quantecon", "pymdptoolbox", "numba"):
        try:
            versions[dist] = md.version(dist)
        except md.PackageNotFoundError:
            versions[dist] = "not installed"
    env["other_solvers"] = versions
    common.print_header(
        f"Finite-horizon backward induction: jaxprivmdp.solve vs NumPy / QuantEcon / "
        f"pymdptoolbox (A = {A}, T = {T})",
        env,
        notes=[
            "versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()),
            "after compilation (ours) / after a warm-up call (others, e.g. numba JIT); "
            "median of repeated calls, all solvers of a size called round-robin (same outside "
            "load), once per BLAS thread setting; model construction not timed",
            f"ours and NumPy in {args.dtype}; QuantEcon and pymdptoolbox in float64",
        ]
        + [f"skipped {k}: {v}" for k, v in skipped.items()],
    )
    settings = blas_settings()
    results = []
    for S in sizes:
        rng = np.random.default_rng(S)
        P = rng.dirichlet(np.ones(S), size=(S, A))
        P /= P.sum(-1, keepdims=True)
        R = rng.uniform(0, 1, size=(S, A))
        RT = rng.uniform(0, 1, size=S)
        mdp = jp.make_mdp(P, R, terminal_reward=RT, horizon=T, dtype=args.dtype)
        first_s = common.first_call(lambda mdp=mdp: jp.solve(mdp))
        sol = jp.solve(mdp)
        P2 = P.reshape(S * A, S).astype(np_dtype)
        Rn, RTn = R.astype(np_dtype), RT.astype(np_dtype)
        pi_ref, V_ref = numpy_backward_induction(P2, Rn, RTn, T)
        runs = {"NumPy": lambda P2=P2, Rn=Rn, RTn=RTn: numpy_backward_induction(P2, Rn, RTn, T)}
        entry = {
            "S": S,
            "ours_max_abs_diff_vs_numpy": float(
                np.max(np.abs(np.asarray(sol.values, np.float64) - V_ref))
            ),
            "ours_policy_agreement": float(np.mean(np.asarray(sol.policy) == pi_ref)),
            "others": {},
        }
        for name, setup in solvers.items():
            try:
                run = setup(P, R, RT)
                pi, V = run()
                runs[name] = run
                entry["others"][name] = dict(
                    max_abs_diff_vs_numpy=float(np.max(np.abs(np.asarray(V, np.float64) - V_ref))),
                    policy_agreement=float(np.mean(np.asarray(pi) == pi_ref)),
                )
            except Exception as e:  # noqa: BLE001 - report a broken optional solver and go on
                entry["others"][name] = dict(error=f"{type(e).__name__}: {e}")
                print(f"({name} failed at S = {S}: {type(e).__name__}: {e})")
        # Every BLAS setting: ours and the others called round-robin (same outside load).
        # XLA does not use the BLAS library, so the setting only affects the others.
        timings = {}
        for label, ctx in settings.items():
            with ctx():
                calls = {"ours": lambda mdp=mdp: jp.solve(mdp), **runs}
                timings[label] = common.time_interleaved(calls, min_repeats=5, budget_s=4 * budget)
        ours = min((t["ours"] for t in timings.values()), key=lambda t: t.median_s)
        ours.first_s = first_s
        entry["ours"] = ours.as_dict()
        for name in runs:
            per = {label: t[name] for label, t in timings.items()}
            best = min(per, key=lambda k: per[k].median_s)
            record = dict(
                time=per[best].as_dict(),
                best_setting=best,
                blas={k: v.as_dict() for k, v in per.items()},
            )
            if name == "NumPy":
                entry["numpy"] = record["time"]
                entry["numpy_best_setting"] = best
                entry["numpy_blas"] = record["blas"]
            else:
                entry["others"][name].update(record)
        results.append(entry)

    names = ["NumPy (vectorized, this script)", *solvers]
    rows = []
    for e in results:
        row = [
            e["S"],
            common.fmt_time(e["ours"]["median_s"]),
            common.fmt_time(e["ours"]["compile_s_estimate"]),
        ]
        cells = [(e["numpy"]["median_s"], e["numpy_best_setting"])]
        for name in solvers:
            o = e["others"][name]
            cells.append(
                (o["time"]["median_s"], o["best_setting"]) if "time" in o else (float("nan"), "")
            )
        for t, setting in cells:
            tag = " (1 thr)" if setting == "BLAS 1 thread" else ""
            row += [common.fmt_time(t) + tag, common.fmt_ratio(t / e["ours"]["median_s"])]
        rows.append(row)
    headers = ["S", "ours (solve)", "ours compile"]
    for name in names:
        headers += [name, "÷ ours"]
    common.print_table(
        "Time per solve (after compilation / warm-up; others: their faster BLAS setting, "
        "`(1 thr)` = one BLAS thread)",
        headers,
        rows,
    )
    rows = []
    for e in results:
        row = [e["S"]]
        for label in blas_settings():
            row.append(common.fmt_time(e["numpy_blas"][label]["median_s"]))
            for name in solvers:
                o = e["others"][name]
                row.append(common.fmt_time(o["blas"][label]["median_s"]) if "blas" in o else "")
        rows.append(row)
    headers = ["S"]
    for label in blas_settings():
        headers += [f"NumPy, {label}"] + [f"{name}, {label}" for name in solvers]
    common.print_table("The other solvers under both BLAS thread settings", headers, rows)

    rows = []
    for e in results:
        row = [
            e["S"],
            f"{e['ours_max_abs_diff_vs_numpy']:.1e}",
            f"{e['ours_policy_agreement']:.3f}",
        ]
        for name in solvers:
            o = e["others"][name]
            if "time" in o:
                row += [f"{o['max_abs_diff_vs_numpy']:.1e}", f"{o['policy_agreement']:.3f}"]
            else:
                row += ["error", "error"]
        rows.append(row)
    headers = ["S", "ours max |ΔV|", "ours policy agreement"]
    for name in solvers:
        headers += [f"{name} max |ΔV|", "policy agreement"]
    common.print_table("Agreement with the NumPy reference", headers, rows)

    rows = []
    for e in results:
        row = [e["S"], common.fmt_time(e["ours"]["min_s"])]
        for t in [e["numpy"]] + [o["time"] for o in e["others"].values() if "time" in o]:
            row += [common.fmt_time(t["min_s"]), common.fmt_ratio(t["min_s"] / e["ours"]["min_s"])]
        rows.append(row)
    headers = ["S", "ours (solve)"]
    for name in names[: len(rows[0]) // 2 - 1] if rows else []:
        headers += [name, "÷ ours"]
    common.print_table(
        "Minimum instead of median (the run least disturbed by outside load; XLA uses both "
        "cores, so its median suffers more when another process holds one)",
        headers,
        rows,
    )

    worst = {}
    for e in results:
        others = [e["numpy"]["median_s"]] + [
            o["time"]["median_s"] for o in e["others"].values() if "time" in o
        ]
        worst[e["S"]] = min(others) / e["ours"]["median_s"]
    met = all(v >= 1 for v in worst.values())
    worst_min = {
        e["S"]: min(
            [e["numpy"]["min_s"]]
            + [o["time"]["min_s"] for o in e["others"].values() if "time" in o]
        )
        / e["ours"]["min_s"]
        for e in results
    }
    print(
        "Target: ours not slower than the fastest other solver after compilation: "
        f"{common.verdict(met)} (fastest other ÷ ours: "
        + ", ".join(f"S={S}: {common.fmt_ratio(v)}" for S, v in worst.items())
        + "); within 10% of the fastest at every size: "
        + ("yes" if all(v >= 1 / 1.1 for v in worst.values()) else "no")
        + ". By minima: "
        + ", ".join(f"S={S}: {common.fmt_ratio(v)}" for S, v in worst_min.items())
        + f" ({common.verdict(all(v >= 1 for v in worst_min.values()))}).\n"
    )
    common.write_json(
        common.results_path(NAME, args),
        dict(
            environment=env,
            A=A,
            T=T,
            skipped=skipped,
            sizes=results,
            speedup=worst,
            speedup_min=worst_min,
            met=met,
        ),
    )


if __name__ == "__main__":
    main()

#!/usr/bin/env python
"""The interval (robust) Bellman backup beside the point-model backup, and an interval MDP
reachability check at 10⁶ states end to end.

(a) **Backup throughput.** Random sparse rows ``[S, A, K]`` (``K`` distinct successors per
row, drawn uniformly; a random distribution ``p`` per row and the box ``[p − 0.05, p + 0.05]``
clipped to ``[0, 1]``). One jitted backup each, on the same successor lists:

- interval: ``max_a (r + min_{x in box} x · v)``, nature's optimum by
  ``jaxprivmdp.models.core.interval_expect`` (the checker's kernel: a sort per row, the
  greedy "O-maximization" fill), one value vector;
- point: ``max_a (r + p · v)`` by ``jaxprivmdp.models.core.expect`` (the point checker's and
  planning's gather-and-sum);
- interval, sort-based: the same greedy fill with each row sorted by value first
  (:func:`sorted_expect`: the kernel's path for rows longer than
  ``PAIRWISE_MAX_SUCCESSORS``; for shorter ones the kernel reads each entry's "mass poured
  before it" off a ``K × K`` comparison instead), checked against the kernel on every case.

Timed interleaved (``common.round_robin``: one call of each per round, so outside load
hits both alike), float32 and float64, ``S`` = 10⁴, 10⁵, 10⁶ (``A = 2``, ``K = 8``) and a
``K`` sweep (4, 8, 16) at ``S = 10⁵``. Reported: transition entries per second
(``S · A · K`` over the median backup), states per second, and interval ÷ point time.

(b) **A check at 10⁶ states.** ``jp.check(imdp, 'Pmaxmin=? [F "goal"]')`` on a random
interval MDP of ``S`` states (2 actions, 4 uniformly random successors per row, boxes of
±0.05 around Dirichlet(1) rows, 1% absorbing goal states and 5% absorbing traps), in
its own process (float64), timed from the model's construction (``jp.make_interval_mdp``'s
validation included) to the answer on the host; peak memory is the child's ``VmHWM``
(read by the child itself). The phases (graph analysis on the host, iteration on the
device, policy) are timed by wrapping the functions of ``jaxprivmdp.properties._interval_check`` and
``_interval_iteration`` from outside. Two runs: 10⁵ states to convergence, and 10⁶ states
capped at ``CAPPED_ITERATIONS`` iterations (``max_iterations``: the graph analysis, the
compilation and the cost per iteration; ``--full`` lifts the cap, which takes as many
iterations as the 10⁵ run, each about ten times its cost).

Run: ``python benchmarks/bench_interval.py [--quick] [--skip-backup] [--skip-check]
[--full]`` (``--quick``: S up to 10⁵ and a 2·10⁴-state check). Writes
``benchmarks/results/bench_interval.json`` (``_quick``); with ``--skip-backup`` or
``--skip-check`` it keeps the other part of an existing file (and its ``env``). The child
alone: ``python benchmarks/bench_interval.py --child S [--max-iterations N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("JAX_ENABLE_X64", "1")  # float64 and float32 arrays side by side

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

import jaxprivmdp as jp  # noqa: E402
from jaxprivmdp.models.core import Rows, expect, interval_expect  # noqa: E402

HALF_WIDTH = 0.05
PROP = 'Pmaxmin=? [F "goal"]'
SECOND_CALL_ABOVE_S = 120.0  # a second (compiled) check only after a shorter first one
CAPPED_ITERATIONS = 64  # the 10^6 check's cap without --full: the cost per iteration


def random_rows(S: int, A: int, K: int, seed: int = 0):
    """``(next_states, p, lower, upper, rewards)`` as NumPy float64: K distinct random
    successors per row (a random offset pattern, so no sampling loop), Dirichlet(1) ``p``."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, S, size=(S, A, 1))
    offsets = np.sort(rng.choice(np.arange(1, 4 * K), size=(S, A, K), replace=True), axis=-1)
    offsets[..., 0] = 0
    offsets = np.maximum.accumulate(offsets + np.arange(K), axis=-1)  # strictly increasing
    nxt = ((base + offsets) % S).astype(np.int32)  # distinct since the offsets < S
    p = rng.dirichlet(np.ones(K), size=(S, A))
    lower = np.clip(p - HALF_WIDTH, 0, 1)
    upper = np.clip(p + HALF_WIDTH, 0, 1)
    return nxt, p, lower, upper, rng.uniform(size=(S, A))


@jax.jit
def interval_backup(lower, upper, nxt, rewards, v):
    q = rewards + interval_expect(lower, upper, nxt, v[None], -1)[0]
    return jnp.max(q, axis=-1)


def sorted_expect(lower, upper, nxt, v, sign):
    """Nature's optimum by the sort-based greedy fill: each row's entries sorted by value,
    then poured in that order (the kernel's path above ``PAIRWISE_MAX_SUCCESSORS``
    successors and for dense rows; for short lists it compares entries pairwise instead)."""
    from jaxprivmdp.models._interval_expect import _sorted_rows

    l_, caps, w = _sorted_rows(lower, upper, nxt, v[None], sign, jnp)
    slack = jnp.maximum(1 - jnp.sum(l_, axis=-1), 0)[..., None]
    x = l_ + jnp.clip(slack - (jnp.cumsum(caps, axis=-1) - caps), 0, caps)
    return jnp.sum(jnp.where(x > 0, x * w, 0), axis=-1)[0]


@jax.jit
def sorted_backup(lower, upper, nxt, rewards, v):
    return jnp.max(rewards + sorted_expect(lower, upper, nxt, v, -1), axis=-1)


@jax.jit
def point_backup(probs, nxt, rewards, v):
    q = rewards + expect(Rows(probs, nxt), v)
    return jnp.max(q, axis=-1)


def backup_case(S: int, A: int, K: int, dtype: str, budget_s: float) -> dict:
    nxt, p, lower, upper, r = random_rows(S, A, K)
    dt = np.dtype(dtype)
    nxt_d = jnp.asarray(nxt)
    p_d, lo_d, up_d, r_d = (jnp.asarray(x.astype(dt)) for x in (p, lower, upper, r))
    v = jnp.asarray(np.random.default_rng(1).uniform(size=S).astype(dt))
    del p, lower, upper
    calls = {
        "interval": lambda: interval_backup(lo_d, up_d, nxt_d, r_d, v),
        "point": lambda: point_backup(p_d, nxt_d, r_d, v),
        "interval_sort": lambda: sorted_backup(lo_d, up_d, nxt_d, r_d, v),
    }
    a, b = calls["interval"](), calls["interval_sort"]()
    agree = float(jnp.max(jnp.abs(a - b)))
    first = {name: common.first_call(fn) for name, fn in calls.items()}
    samples = common.round_robin(calls, min_rounds=5, budget_s=budget_s)
    entries = S * A * K
    out = dict(S=S, A=A, K=K, dtype=dtype, entries=entries)
    median = {}
    for name, (wall, cpu) in samples.items():
        median[name] = float(np.median(wall))
        out[name] = dict(
            first_s=first[name],
            median_s=median[name],
            min_s=float(np.min(wall)),
            cpu_median_s=float(np.median(cpu)),
            rounds=len(wall),
            entries_per_s=entries / median[name],
            states_per_s=S / median[name],
        )
    out["interval_over_point"] = median["interval"] / median["point"]
    out["sort_over_point"] = median["interval_sort"] / median["point"]
    out["sort_max_abs_difference"] = agree
    print(
        f"S={S:>8} A={A} K={K:>2} {dtype}: interval {common.fmt_time(out['interval']['median_s'])}"
        f" ({out['interval']['entries_per_s'] / 1e6:.1f} M entries/s), point "
        f"{common.fmt_time(out['point']['median_s'])} ({out['point']['entries_per_s'] / 1e6:.1f}"
        f" M entries/s), ratio {out['interval_over_point']:.2f}; sort-based "
        f"{common.fmt_time(out['interval_sort']['median_s'])}, ratio "
        f"{out['sort_over_point']:.2f} (max |difference| {agree:.1e})",
        flush=True,
    )
    return out


# ----------------------------------------------------------------------------- (b) the check


def random_imdp(S: int, A: int = 2, K: int = 4, seed: int = 0):
    """The benchmark's interval MDP and its goal label (see the module docstring)."""
    nxt, _, lower, upper, r = random_rows(S, A, K, seed)
    rng = np.random.default_rng(seed + 1)
    special = rng.choice(S, size=max(1, S // 100) + max(1, S // 20), replace=False)
    goal_states = special[: max(1, S // 100)]  # 1% goals, 5% traps
    nxt[special] = -1  # absorbing: a self-loop with bounds [1, 1]
    lower[special] = 0.0
    upper[special] = 0.0
    nxt[special, :, 0] = special[:, None]
    lower[special, :, 0] = upper[special, :, 0] = 1.0
    goal = np.zeros(S, bool)
    goal[goal_states] = True
    imdp = jp.make_interval_mdp(lower, upper, r, next_states=nxt, discount=0.95, dtype="float64")
    return imdp, goal


def _phase_timers():
    """Wraps the interval checker's phases from outside; ``{phase: [seconds]}``."""
    from jaxprivmdp.properties import _interval_check as ic

    spent: dict[str, list[float]] = {}

    def wrap(module, name, label):
        fn = getattr(module, name)

        def timed(*args, **kwargs):
            t = time.perf_counter()
            out = fn(*args, **kwargs)
            jax.block_until_ready(out) if not isinstance(out, np.ndarray) else None
            spent.setdefault(label, []).append(time.perf_counter() - t)
            return out

        setattr(module, name, timed)

    for name, label in (
        ("run", "iteration (device, interval iteration)"),
        ("_policy", "policy extraction"),
    ):
        if hasattr(ic, name):
            wrap(ic, name, label)
    from jaxprivmdp.properties import _interval_iteration as ii

    for name, label in (
        ("iterate", "  of which: iterate (device chunks)"),
        ("pre_fixpoint", "  of which: pre_fixpoint (verified guess)"),
        ("deflate", "  of which: deflate (bisection on staying sets)"),
        ("verified", "    verified (one B(U) <= U test)"),
    ):
        if hasattr(ii, name):
            wrap(ii, name, label)
    graph = ic.graph
    for name in ("edges", "positive", "almost_sure", "staying_components"):
        if hasattr(graph, name):
            wrap(graph, name, f"graph.{name} (host)")
    return spent


def child(S: int, max_iterations: int | None) -> None:
    """Builds the model, checks it twice (the first compiles), prints one JSON line."""
    t0 = time.perf_counter()
    imdp, goal = random_imdp(S)
    built = time.perf_counter() - t0
    spent = _phase_timers()
    res = {}
    for call in ("first", "second"):
        if call == "second" and res["first"]["seconds"] > SECOND_CALL_ABOVE_S:
            break  # compilation is a small part of a long first call: not worth repeating
        spent.clear()
        t = time.perf_counter()
        cap = {} if max_iterations is None else {"max_iterations": max_iterations}
        r = jp.check(imdp, PROP, labels={"goal": goal}, **cap)
        jax.block_until_ready(r.values)
        res[call] = dict(
            seconds=time.perf_counter() - t,
            phases={k: sum(v) for k, v in spent.items()},
            phase_calls={k: len(v) for k, v in spent.items()},
        )
    lo, up = np.asarray(r.lower), np.asarray(r.upper)
    print(
        json.dumps(
            dict(
                S=S,
                rows=int(imdp.action_mask.sum()),
                entries=int((np.asarray(imdp.next_states) >= 0).sum()),
                build_s=built,
                converged=bool(np.all(r.converged)),
                iterations=int(r.iterations),
                value_s0=[float(lo[0]), float(up[0])],
                max_width=float(np.max(up - lo)),
                mean_value=float(np.mean(lo)),
                total_s=time.perf_counter() - t0,
                # This process's own peak: after exec, unlike ru_maxrss, which on Linux keeps
                # the RSS of the parent forked from (here the backup benchmark's arrays).
                vm_hwm=common.proc_status().get("VmHWM"),
                **{f"{k}_check": v for k, v in res.items()},
            )
        ),
        flush=True,
    )


def derived(out: dict) -> dict:
    """Per-iteration cost and the host's share, from the last check's phases."""
    last = out.get("second_check", out["first_check"])
    phases = last["phases"]
    iterate = phases.get("  of which: iterate (device chunks)", 0.0)
    host = sum(v for k, v in phases.items() if k.startswith("graph."))
    return dict(
        seconds_per_iteration=iterate / max(out["iterations"], 1),
        host_graph_s=host,
        iteration_s=phases.get("iteration (device, interval iteration)", 0.0),
        check_s=last["seconds"],
    )


def check_case(S: int, max_iterations: int | None = None) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "child.log")
        cmd = [sys.executable, os.path.abspath(__file__), "--child", str(S)]
        if max_iterations is not None:
            cmd += ["--max-iterations", str(max_iterations)]
        run = common.run_watched_child(cmd, log, kill_gib=8.0)
        text = open(log).read()
    lines = [line for line in text.splitlines() if line.startswith("{")]
    out = dict(S=S, property=PROP, max_iterations=max_iterations, **run)
    if run["returncode"] != 0 or not lines:
        out["error"] = text[-3000:]
        print(f"check at S={S}: FAILED\n{text[-3000:]}")
        return out
    out.update(json.loads(lines[-1]))
    out["peak_gib"] = out["vm_hwm"] / 2**30
    out.update(derived(out))
    # What a user waits for: the model's construction and the first (compiling) check.
    out["end_to_end_s"] = out["build_s"] + out["first_check"]["seconds"]
    done = out["converged"] and max_iterations is None
    out["target_met"] = bool(out["end_to_end_s"] <= 60 and out["peak_gib"] <= 2) if done else None
    last = out.get("second_check", out["first_check"])
    print(
        f"check at S={S}{'' if max_iterations is None else f' (cap {max_iterations})'}"
        f": build + first check {out['end_to_end_s']:.1f} s (build {out['build_s']:.1f} s), "
        f"process {run['wall_s']:.1f} s, peak {out['peak_gib']:.2f} GiB, {out['iterations']} "
        f"iterations, converged {out['converged']}, value(s0) {out['value_s0']}",
        flush=True,
    )
    for k, v in last["phases"].items():
        print(f"   {k}: {v:.2f} s")
    return out


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _git() -> dict:
    def run(*args):
        return subprocess.run(
            ["git", *args], cwd=common.REPO_ROOT, capture_output=True, text=True
        ).stdout.strip()

    return dict(commit=run("rev-parse", "HEAD"), dirty=bool(run("status", "--porcelain")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--skip-backup", action="store_true")
    parser.add_argument("--skip-check", action="store_true")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--max-iterations", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument(
        "--full", action="store_true", help="the 10^6 check without an iteration cap"
    )
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child, args.max_iterations)
        return
    info = dict(
        jax=common.jax_info(),
        machine=dict(
            platform=platform.platform(), processor=_cpu_name(), python=platform.python_version()
        ),
        git=_git(),
        load_average_1m=common.load_average(),
        command="python benchmarks/bench_interval.py " + " ".join(sys.argv[1:]),
        date_utc=time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
    )
    payload: dict = dict(env=info, backup=[], check=None)
    name = "bench_interval" + ("_quick" if args.quick else "")
    path = common.Path(args.out) if args.out else common.RESULTS_DIR / f"{name}.json"
    if path.is_file() and (args.skip_backup or args.skip_check):  # keep the other part
        previous = json.loads(path.read_text())
        kept = "backup" if args.skip_backup else "check"
        payload[kept], payload[f"{kept}_env"] = (
            previous[kept],
            previous.get(f"{kept}_env", previous["env"]),
        )
    sizes = [10_000, 100_000] if args.quick else [10_000, 100_000, 1_000_000]
    budget = 0.5 if args.quick else 3.0
    if not args.skip_backup:
        for dtype in ("float32", "float64"):
            for S in sizes:
                payload["backup"].append(backup_case(S, 2, 8, dtype, budget))
            for K in (4, 16):
                payload["backup"].append(backup_case(100_000, 2, K, dtype, budget))
    if not args.skip_check:
        if args.quick:
            payload["check"] = [check_case(20_000)]
        else:
            cap = None if args.full else CAPPED_ITERATIONS
            payload["check"] = [check_case(100_000), check_case(1_000_000, cap)]
    common.write_json(path, payload)


if __name__ == "__main__":
    main()

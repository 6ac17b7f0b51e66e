"""The cost of the bounds relative to one policy evaluation (a plain Bellman recursion).

``cost_of_privacy`` (both bounds ``v̲``, ``v̄``) against ``evaluate`` of the same policy on
the same privatized MDP, for ``S ∈ {100, 300, 1000}``, ``A = 5``, ``T = 10``, ``k = 10``,
``β = 0.1``; both after compilation, median of many calls. Target: ratio <= 5 for a
deterministic policy (each bound is a Bellman-like pass plus a selection of the ``width``
smallest / largest of ``S`` values and a greedy fill over them per stage). Also times a
stochastic policy (the same policy as one-hot floats), which touches every action's rows.

Then profiles the pieces of one stage of the library's ``_robust.robust_backup`` as small
jitted micro-benchmarks, each run over ``T`` stages in a ``lax.scan`` (so per-call overhead
is amortized as in the real recursion): the gather of the chosen rows, the two 1-D
``lax.top_k`` calls (and, for reference, the full ``argsort`` of the ``[2, S]`` values the
previous version used), the dense product ``lower @ [v_low, −v_high, 1]`` (which also gives
the slack), the gather of the ``width`` selected columns, the cumsum/clip/einsum fill; and the
Bellman ``rows @ v`` for reference. Finally, a benchmark-only re-implementation of the
PREVIOUS library version of the bounds (full ``argsort``, separate ``Σ lower``, ``jnp.sum``
fill), checked equal to the library's output, shows what the current implementation gained.

Run: ``python benchmarks/bench_bounds_vs_bellman.py [--quick] [--dtype float32|float64]``.
"""

from __future__ import annotations

import dataclasses

import common

NAME = "bench_bounds_vs_bellman"
K = 10.0
BETA = 0.1
A = 5
T = 10
TARGET = 5.0

args = common.parse_args(__doc__.splitlines()[0], default_dtype="float32")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxprivmdp as jp  # noqa: E402
from jaxprivmdp import _bounds, _planning, _robust  # noqa: E402  (compiled cores, pieces)


def make_problem(S, dtype):
    rng = np.random.default_rng(S)
    P = rng.dirichlet(np.ones(S), size=(S, A))
    P /= P.sum(-1, keepdims=True)
    mdp = jp.make_mdp(
        P,
        rng.uniform(0, 1, size=(S, A)),
        terminal_reward=rng.uniform(0, 1, size=S),
        horizon=T,
        dtype=dtype,
    )
    p_bar = jp.dirichlet_mechanism(jax.random.key(S), mdp.transitions, K)  # default sampler
    private = dataclasses.replace(mdp, transitions=p_bar)
    return private, jp.solve(private).policy


def core_args(private, policy):
    """The arguments ``cost_of_privacy`` passes to its jitted core (finite horizon)."""
    dtype = private.rewards.dtype
    alpha = np.sqrt(np.log(1 / np.float64(BETA)) / (2 * (np.float64(K) + 1)))
    width = _robust.fill_width(alpha, private.num_states)
    return (
        (
            private,
            policy,
            jnp.asarray(alpha, dtype),
            jnp.asarray(BETA, dtype),
            jnp.zeros((), dtype),  # tol: unused for a finite horizon
        ),
        dict(width=width, max_iterations=10_000),
    )


# ----------------------------------------------------------------------------- old version


def _backup_argsort_old(p_rows, alpha, v_low, v_high, beta, width):
    """The PREVIOUS library version of ``_robust.robust_backup`` (before 8c0410e).

    A stable ``argsort`` of the stacked `[2, S]` values, ``Σ lower`` as a separate reduction
    and the fill's sum over ``width`` as ``jnp.sum(pour * w, -1)``. Benchmark-only, for
    reference: the library now uses two 1-D ``lax.top_k``, one dense product with a `[S, 3]`
    matrix and an ``einsum`` for the fill.
    """
    lower = jnp.maximum(p_rows - alpha, 0)
    slack = jnp.maximum(1 - jnp.sum(lower, axis=-1), 0)
    w = jnp.stack([v_low, -v_high])  # [2, S]: a max is a min of the negated values.
    order = jnp.argsort(w, axis=-1)[:, :width]  # [2, m]
    w_sorted = jnp.take_along_axis(w, order, axis=-1)
    base = lower @ w.T  # [..., 2]
    p_sorted = jnp.moveaxis(p_rows[..., order], -2, 0)  # [2, ..., m]
    caps = jnp.minimum(p_sorted + alpha, 1) - jnp.maximum(p_sorted - alpha, 0)
    w_sorted = w_sorted.reshape((2,) + (1,) * (caps.ndim - 2) + (width,))
    fill = _robust._fill(jnp.broadcast_to(slack, caps.shape[:-1]), caps, w_sorted)
    inner = jnp.moveaxis(base, -1, 0) + fill
    out = beta * jnp.min(w, axis=-1).reshape((2,) + (1,) * (inner.ndim - 1)) + (1 - beta) * inner
    return out[0], -out[1]


@jax.jit(static_argnames=("width",))
def bounds_argsort_old(mdp, policy, alpha, beta, *, width):
    """The finite-horizon bounds of ``_bounds._finite_bounds`` with the old backup."""

    def stage(carry, decision):
        v_low, v_high = carry
        p_rows, weights = _planning.select_rows(mdp.transitions, decision)
        rewards, _ = _planning.select_rows(mdp.rewards, decision)
        low, high = _backup_argsort_old(p_rows, alpha, v_low, v_high, beta, width)
        g = mdp.discount
        out = (
            _planning.weighted_sum(weights, rewards + g * low),
            _planning.weighted_sum(weights, rewards + g * high),
        )
        return out, out

    rt = mdp.terminal_reward
    _, (low, high) = jax.lax.scan(stage, (rt, rt), policy, reverse=True)
    return low, high


# ----------------------------------------------------------------------------- pieces


def _stages(piece):
    """Runs ``piece(v) -> [S] update`` for T stages with a carried dependency."""

    @jax.jit
    def run(v0, *operands):
        def body(v, _):
            return piece(v, *operands), None

        v, _ = jax.lax.scan(body, v0, None, length=T)
        return v

    return run


def micro_pieces(private, policy, alpha, width):
    """Jitted callables ``f(v0, ...)`` for each piece, with their operands."""
    S = private.num_states
    dtype = private.rewards.dtype
    decision = policy[0]
    rows_sel, _ = _planning.select_rows(private.transitions, decision)  # [S, 1, S]
    lower0 = jnp.maximum(rows_sel - alpha, 0)
    slack0 = jnp.maximum(1 - jnp.sum(lower0, axis=-1), 0)  # [S, 1]
    _, lo0 = jax.lax.top_k(-rows_sel[0, 0], width)
    _, hi0 = jax.lax.top_k(rows_sel[0, 0], width)
    order0 = jnp.stack([lo0, hi0])  # [2, width]
    eps = jnp.asarray(1e-3, dtype)

    def gather_rows(v, transitions, decision):
        r, _ = _planning.select_rows(transitions, decision)
        return v * (1 - eps) + eps * jnp.sum(r, axis=-1)[:, 0]  # use every gathered entry

    def top_k_1d(v):
        _, lo = jax.lax.top_k(-v, width)
        _, hi = jax.lax.top_k(v, width)
        return v + eps * (lo[0] + hi[0]).astype(dtype)

    def argsort(v):
        order = jnp.argsort(jnp.stack([v, -v]), axis=-1)[:, :width]
        return v + eps * order[0, 0].astype(dtype)

    def dense(v, p_rows):
        lower = jnp.maximum(p_rows - alpha, 0)
        d = lower @ jnp.stack([v, -v, jnp.ones_like(v)], axis=-1)  # [S, 1, 3]
        slack = jnp.maximum(1 - d[..., 2], 0)
        return v * (1 - eps) + eps * (d[:, 0, 0] + slack[:, 0])

    def gather_cols(v, p_rows, order):
        p_sorted = p_rows[..., order + (v[0] > 1e9)]  # [S, 1, 2, width]
        return v * (1 - eps) + eps * p_sorted[:, 0, 0, 0]

    def fill(v, p_sorted, slack):
        caps = jnp.moveaxis(
            jnp.minimum(p_sorted + alpha, 1) - jnp.maximum(p_sorted - alpha, 0), -2, 0
        )  # [2, S, 1, width]
        w_sorted = jnp.stack([v[:width], -v[:width]])  # [2, width]
        before = jnp.cumsum(caps, axis=-1) - caps
        pour = jnp.clip(jnp.broadcast_to(slack, caps.shape[:-1])[..., None] - before, 0, caps)
        out = jnp.einsum("k...m,km->k...", pour, w_sorted)  # [2, S, 1]
        return v * (1 - eps) + eps * out[0, :, 0]

    def bellman(v, p_rows):
        return v * (1 - eps) + eps * (p_rows @ v)[:, 0]

    p_sorted = rows_sel[..., order0]
    return [
        (
            "gather the chosen rows [S, 1, S] (select_rows)",
            gather_rows,
            (private.transitions, decision),
        ),
        (f"two 1-D lax.top_k(·, {width}) calls (library)", top_k_1d, ()),
        ("old: full argsort of the stacked [2, S] values (reference)", argsort, ()),
        ("dense product: lower = max(p̄ − α, 0), lower @ [v, −v, 1], slack", dense, (rows_sel,)),
        (f"gather the {width} selected columns p̄[..., order]", gather_cols, (rows_sel, order0)),
        (f"fill: caps, cumsum, clip, einsum over {width}", fill, (p_sorted, slack0)),
        ("reference: Bellman rows @ v (evaluate's pass)", bellman, (rows_sel,)),
    ], jnp.zeros(S, dtype)


# ----------------------------------------------------------------------------- main


OLD = "old_argsort_version"


def measure(S, dtype, budget):
    private, policy = make_problem(S, dtype)
    one_hot = jax.nn.one_hot(policy, A, dtype=dtype)
    out = {"S": S}
    pos, kw = core_args(private, policy)
    ref = _bounds.bounds_core(*pos, **kw)
    for name, pol in (("deterministic", policy), ("stochastic (one-hot)", one_hot)):
        pos_p, kw_p = core_args(private, pol)
        calls = {
            "evaluate_core": lambda pol=pol: _planning._evaluate_finite(private, pol),
            "bounds_core": lambda pos_p=pos_p, kw_p=kw_p: _bounds.bounds_core(*pos_p, **kw_p),
            "evaluate": lambda pol=pol: jp.evaluate(private, pol),
            "cost_of_privacy": lambda pol=pol: jp.cost_of_privacy(private, pol, k=K, beta=BETA),
        }
        if name == "deterministic":
            # A user's jax.jit around cost_of_privacy with k as an argument: k is traced, so
            # the library cannot bound the fill width and uses all S entries.
            jit_traced = jax.jit(lambda pol, k: jp.cost_of_privacy(private, pol, k=k, beta=BETA))
            k_arr = jnp.asarray(K, dtype)
            calls["cost_of_privacy_jit_traced_k"] = lambda f=jit_traced, k=k_arr: f(policy, k)
            # The same width = S with the previous version's full argsort (for comparison).
            calls["old_width_S"] = lambda: bounds_argsort_old(
                private, policy, pos[2], pos[3], width=S
            )
            # The previous library version (benchmark-only re-implementation), checked below.
            calls[OLD] = lambda: bounds_argsort_old(
                private, policy, pos[2], pos[3], width=kw["width"]
            )
        # Round-robin: every callable sees the same outside load, so the ratios are fair.
        t = common.time_interleaved(calls, budget_s=4 * budget)
        if "cost_of_privacy_jit_traced_k" in t:
            traced = t.pop("cost_of_privacy_jit_traced_k")
            out["jit_traced_k"] = dict(
                time=traced.as_dict(),
                ratio_to_bounds_core=traced.median_s / t["bounds_core"].median_s,
                old_width_S=t.pop("old_width_S").as_dict(),
            )
        out[name] = dict(
            width=kw_p["width"],
            **{k: v.as_dict() for k, v in t.items() if k != OLD},
            ratio_core=t["bounds_core"].median_s / t["evaluate_core"].median_s,
            ratio_public=t["cost_of_privacy"].median_s / t["evaluate"].median_s,
        )
        if OLD in t:
            low, high = calls[OLD]()
            diff = max(
                float(jnp.max(jnp.abs(low - ref.pessimistic[:-1]))),
                float(jnp.max(jnp.abs(high - ref.optimistic[:-1]))),
            )
            out[OLD] = dict(
                time=t[OLD].as_dict(),
                ratio_core=t[OLD].median_s / t["evaluate_core"].median_s,
                max_abs_diff_vs_library=diff,
            )
    # Pieces.
    pieces, v0 = micro_pieces(private, policy, pos[2], kw["width"])
    out["pieces"] = []
    for label, fn, operands in pieces:
        t = common.time_call(_stages(fn), v0, *operands, budget_s=budget / 2)
        out["pieces"].append(dict(piece=label, time=t.as_dict()))
    # Per-XLA-op profile of the compiled cores (jax.profiler trace), best effort.
    out["xla_profile"] = {}
    for label, jitted, a, k in (
        ("bounds_core", _bounds.bounds_core, pos, kw),
        ("evaluate_core", _planning._evaluate_finite, (private, policy), {}),
    ):
        text = jitted.lower(*a, **k).compile().as_text()
        out["xla_profile"][label] = common.xla_op_profile(
            lambda j=jitted, a=a, k=k: j(*a, **k), text
        )
    return out


def print_profile(r):
    prof = r.get("xla_profile") or {}
    b = prof.get("bounds_core")
    if not b:
        print("(no jax.profiler trace available for the XLA op profile)\n")
        return
    ops = [p for p in b if not p["container"]]
    total = sum(p["seconds_per_call"] for p in ops)
    rows = [
        [
            p["op"],
            p["source"].replace("while/body/", "").replace("closed_call/", "")[:60],
            f"{p['launches_per_call']:.0f}",
            common.fmt_time(p["seconds_per_call"]),
            f"{100 * p['seconds_per_call'] / total:.0f}%",
        ]
        for p in ops[:10]
    ]
    ev = prof.get("evaluate_core") or []
    ev_total = sum(p["seconds_per_call"] for p in ev if not p["container"])
    common.print_table(
        f"XLA op profile of the compiled bounds core, S = {r['S']} (jax.profiler trace; top 10 "
        f"of {len(ops)} ops; sum of op times {common.fmt_time(total)} per call, evaluate core: "
        f"{common.fmt_time(ev_total)})",
        ["XLA op", "from JAX op", "launches / call", "time / call", "share"],
        rows,
    )
    if ev:
        rows = [
            [
                p["op"],
                p["source"].replace("while/body/", "").replace("closed_call/", "")[:60],
                f"{p['launches_per_call']:.0f}",
                common.fmt_time(p["seconds_per_call"]),
            ]
            for p in ev
            if not p["container"]
        ][:5]
        common.print_table(
            f"XLA op profile of the compiled evaluate core, S = {r['S']} (top 5)",
            ["XLA op", "from JAX op", "launches / call", "time / call"],
            rows,
        )


def main():
    env = common.environment(args)
    dtype = jnp.dtype(args.dtype)
    sizes = (100, 300) if args.quick else (100, 300, 1000)
    budget = 0.3 if args.quick else 1.0
    common.print_header(
        "Bounds (cost_of_privacy) vs one policy evaluation (evaluate)",
        env,
        notes=[
            f"A = {A}, T = {T}, k = {K:g}, β = {BETA}; random MDP privatized with the "
            "Dirichlet mechanism; policy = solve(private).policy",
            "after compilation: median of repeated calls, each ended by "
            "jax.block_until_ready; the callables compared in one table are called "
            "round-robin (common.time_interleaved) so that they share the same outside load",
            "`core` = the jitted computation (`_bounds.bounds_core`, `_planning."
            "_evaluate_finite`); `public` = the public call with its eager validation",
        ],
    )
    results = [measure(S, dtype, budget) for S in sizes]

    for name in ("deterministic", "stochastic (one-hot)"):
        rows = []
        for r in results:
            d = r[name]
            rows.append(
                [
                    r["S"],
                    common.fmt_time(d["evaluate_core"]["median_s"]),
                    common.fmt_time(d["bounds_core"]["median_s"]),
                    f"{d['ratio_core']:.2f}",
                    common.fmt_time(d["evaluate"]["median_s"]),
                    common.fmt_time(d["cost_of_privacy"]["median_s"]),
                    f"{d['ratio_public']:.2f}",
                    common.verdict(d["ratio_core"] <= TARGET),
                ]
            )
        common.print_table(
            f"{name} policy: bounds / evaluate (width = {results[0][name]['width']})",
            [
                "S",
                "evaluate core",
                "bounds core",
                "ratio",
                "evaluate public",
                "cost_of_privacy public",
                "ratio",
                f"core ratio <= {TARGET:g}",
            ],
            rows,
        )

    common.print_table(
        "Pitfall: jax.jit(lambda policy, k: cost_of_privacy(..., k=k)) — k is traced, so the "
        "fill width cannot be bounded: width = S, lax.top_k selects and the fill covers all S "
        "entries (deterministic policy)",
        [
            "S",
            "bounds core (width from k)",
            "jitted call, traced k (width = S)",
            "slow-down",
            "old argsort version, width = S",
        ],
        [
            [
                r["S"],
                common.fmt_time(r["deterministic"]["bounds_core"]["median_s"]),
                common.fmt_time(r["jit_traced_k"]["time"]["median_s"]),
                common.fmt_ratio(r["jit_traced_k"]["ratio_to_bounds_core"]),
                common.fmt_time(r["jit_traced_k"]["old_width_S"]["median_s"]),
            ]
            for r in results
        ],
    )

    for r in results:
        ev = r["deterministic"]["evaluate_core"]["median_s"]
        bc = r["deterministic"]["bounds_core"]["median_s"]
        rows = [
            [
                p["piece"],
                common.fmt_time(p["time"]["median_s"]),
                common.fmt_time(p["time"]["min_s"]),
                f"{p['time']['median_s'] / ev:.2f}",
                f"{100 * p['time']['median_s'] / bc:.0f}%",
            ]
            for p in r["pieces"]
        ]
        common.print_table(
            f"Pieces of the bounds, S = {r['S']}, over T = {T} stages (deterministic policy; "
            f"bounds core {common.fmt_time(bc)}, evaluate core {common.fmt_time(ev)})",
            ["piece (T stages in a lax.scan)", "median", "min", "/ evaluate", "/ bounds core"],
            rows,
        )

    print_profile(results[-1])

    rows = []
    for r in results:
        old = r[OLD]
        lib = r["deterministic"]["bounds_core"]["median_s"]
        rows.append(
            [
                r["S"],
                common.fmt_time(lib),
                f"{r['deterministic']['ratio_core']:.2f}",
                common.fmt_time(old["time"]["median_s"]),
                f"{old['ratio_core']:.2f}",
                common.fmt_ratio(old["time"]["median_s"] / lib),
                f"{old['max_abs_diff_vs_library']:.1e}",
            ]
        )
    common.print_table(
        "Current library core vs the PREVIOUS version (benchmark-only re-implementation: "
        "argsort of [2, S], separate Σ lower, jnp.sum fill), deterministic policy, same "
        "round-robin timing",
        [
            "S",
            "library core",
            "÷ evaluate",
            "old argsort version",
            "÷ evaluate",
            "old ÷ library",
            "max |Δ| vs library",
        ],
        rows,
    )
    met = all(r["deterministic"]["ratio_core"] <= TARGET for r in results)
    print(
        f"Target (deterministic policy, compiled cores): bounds / evaluate <= {TARGET:g}: "
        f"{common.verdict(met)} (worst "
        f"{max(r['deterministic']['ratio_core'] for r in results):.2f}).\n"
    )
    common.write_json(
        NAME,
        dict(environment=env, k=K, beta=BETA, A=A, T=T, target=TARGET, sizes=results, met=met),
        args.out,
    )


if __name__ == "__main__":
    main()

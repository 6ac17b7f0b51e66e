"""The cost of the bounds relative to one policy evaluation (a plain Bellman recursion).

``cost_of_privacy`` (both bounds ``v̲``, ``v̄``) against ``evaluate`` of the same policy on
the same privatized MDP, for ``S ∈ {100, 300, 1000}``, ``A = 5``, ``T = 10``, ``k = 10``,
``β = 0.1``. Target: compiled cores ``bounds_core / evaluate_core <= 5`` for a deterministic
policy (each bound is a Bellman-like pass plus a selection of the ``width`` smallest / largest
of ``S`` values and a greedy fill over them per stage). Also a stochastic policy (the same
policy as one-hot floats), which touches every action's rows.

pytest-benchmark times (``--bench-quick``: S ∈ {100, 300}):

* ``test_bounds_vs_evaluate[S-kind-variant]``: ``evaluate_core``, ``bounds_core``, ``evaluate``
  and ``cost_of_privacy``. The ``bounds_core`` variant also times all of them round-robin
  (``common.interleaved``) and keeps the fair ratios in ``extra_info`` (``ratio_core``,
  ``ratio_public``), for the deterministic policy with two more callables: a user's
  ``jax.jit(lambda policy, k: cost_of_privacy(m, policy, Dirichlet(k), uset))`` (``k``
  traced: the fill width cannot be bounded, ``width = S``) and the previous (argsort)
  version at ``width = S``; at the largest S it adds a per-XLA-op profile of the compiled
  bounds (``jax.profiler``).
* ``test_bound_set[S-bound]``: the uncertainty set (``PaperSet``, ``ExactSet`` or
  ``CertifiedSet``, deterministic policy): ``bounds_core`` with what ``cost_of_privacy(m,
  p, mech, uset)`` passes it (``common.prepare_set``), interleaved with ``evaluate_core``
  (``ratio_core``, same target ≤ 5), the paper's core, the public call and, for the non-paper
  sets, two diagnostics: the paper's box at ``width = S`` and ``_sets.row_box`` alone (the
  per-entry interpolated lookup in the Beta tables). ``extra_info.prepare_set``: the
  host time of ``prepare_set``, first call (tables built, caches cleared) and cached.
* ``test_piece[S-piece]``: the pieces of one stage of ``_robust.robust_backup`` as small jitted
  micro-benchmarks, each run over ``T`` stages in a ``lax.scan`` (so per-call overhead is
  amortized as in the real recursion): row gather, the two 1-D ``lax.top_k``, the previous
  full ``argsort`` (reference), the dense product ``lower @ [v_low, −v_high, 1]``, the gather
  of the ``width`` selected columns, the cumsum/clip/einsum fill, and the Bellman ``rows @ v``.
* ``test_old_argsort_version[S]``: a benchmark-only re-implementation of the PREVIOUS version
  of the bounds (full ``argsort``, separate ``Σ lower``, ``jnp.sum`` fill), checked equal to
  the library's output, with its interleaved ratio to the library's core.

Run: ``python -m pytest benchmarks/bench_bounds_vs_bellman.py --benchmark-only
--benchmark-json=benchmarks/results/bench_bounds_vs_bellman.json [--bench-quick]``.
"""

from __future__ import annotations

import dataclasses
import functools

import common
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxprivmdp as jp
from jaxprivmdp.models import _rows as _models
from jaxprivmdp.planning import _bounds, _evaluation, _policies

K = 10.0
BETA = 0.1
A = 5
T = 10
TARGET = 5.0
SIZES = (100, 300, 1000)
QUICK_SIZES = (100, 300)
KINDS = ("deterministic", "stochastic")
VARIANTS = ("evaluate_core", "bounds_core", "evaluate", "cost_of_privacy")
BOUNDS = ("paper", "exact", "certified")
PIECES = ("gather_rows", "top_k_1d", "argsort", "dense", "gather_cols", "fill", "bellman")


@functools.cache
def problem(S, dtype):
    """The privatized MDP, its policy, and the arguments ``cost_of_privacy`` gives its core."""
    mdp = common.random_finite_mdp(S, A, T, dtype, seed=S)
    p_bar = jp.dirichlet_mechanism(
        jax.random.key(S), mdp.transitions, jp.Dirichlet(K, sampler="fast")
    )
    private = dataclasses.replace(mdp, transitions=p_bar)
    policy = jp.solve(private).policy
    np_dtype = mdp.rewards.dtype
    # The paper's set exactly as cost_of_privacy builds it; a, b (α, β as NumPy scalars) feed
    # the benchmark-only old version and the micro pieces.
    params, kw = set_args(private, "paper")
    a, b = np.asarray(params.alpha, np_dtype), np.asarray(BETA, np_dtype)
    return private, policy, params, kw, a, b


def set_args(private, bound, support_aware=False):
    """``(params, static kwargs)`` that ``cost_of_privacy`` gives its core for the set named
    ``bound``."""
    return common.set_args(private, K, BETA, bound, support_aware)


def core(private, policy, params, kw):
    """``_bounds.bounds_core`` with the arguments ``cost_of_privacy`` passes it."""
    return _bounds.bounds_core(private, policy, params, None, 10_000, **kw)


def skip_unless(quick, S):
    if quick and S not in QUICK_SIZES:
        pytest.skip("--bench-quick")


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
    fill = jnp.sum(_pour(slack, caps) * w_sorted, axis=-1)
    inner = jnp.moveaxis(base, -1, 0) + fill
    out = beta * jnp.min(w, axis=-1).reshape((2,) + (1,) * (inner.ndim - 1)) + (1 - beta) * inner
    return out[0], -out[1]


def _pour(slack, caps_sorted):
    """The greedy fill of the entries in value order: ``clip(slack − Σ_{j<i} cap_j, 0, cap_i)``."""
    before = jnp.cumsum(caps_sorted, axis=-1) - caps_sorted
    return jnp.clip(
        jnp.broadcast_to(slack, caps_sorted.shape[:-1])[..., None] - before, 0, caps_sorted
    )


@jax.jit(static_argnames=("width",))
def bounds_argsort_old(mdp, policy, alpha, beta, *, width):
    """The finite-horizon bounds of ``_bounds._finite_bounds`` with the old backup."""

    def stage(carry, decision):
        v_low, v_high = carry
        p_rows, weights = _policies.select_rows(mdp.transitions, decision)
        rewards, _ = _policies.select_rows(mdp.rewards, decision)
        low, high = _backup_argsort_old(p_rows, alpha, v_low, v_high, beta, width)
        g = mdp.discount
        out = (
            _policies.weighted_sum(weights, rewards + g * low),
            _policies.weighted_sum(weights, rewards + g * high),
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
    rows_sel, _ = _policies.select_rows(private.transitions, decision)  # [S, 1, S]
    lower0 = jnp.maximum(rows_sel - alpha, 0)
    slack0 = jnp.maximum(1 - jnp.sum(lower0, axis=-1), 0)  # [S, 1]
    _, lo0 = jax.lax.top_k(-rows_sel[0, 0], width)
    _, hi0 = jax.lax.top_k(rows_sel[0, 0], width)
    order0 = jnp.stack([lo0, hi0])  # [2, width]
    eps = jnp.asarray(1e-3, dtype)

    def gather_rows(v, transitions, decision):
        r, _ = _policies.select_rows(transitions, decision)
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


# ----------------------------------------------------------------------------- benchmarks


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("S", SIZES)
def test_bounds_vs_evaluate(benchmark, dtype, quick, S, kind, variant):
    skip_unless(quick, S)
    private, policy, params, kw, a, b = problem(S, dtype)
    width = kw["width"]
    pol = (
        policy
        if kind == "deterministic"
        else jax.nn.one_hot(policy, A, dtype=private.rewards.dtype)
    )
    calls = {
        "evaluate_core": lambda: _evaluation.evaluate_core(private, pol),
        "bounds_core": lambda: core(private, pol, params, kw),
        "evaluate": lambda: jp.evaluate(private, pol),
        "cost_of_privacy": lambda: jp.cost_of_privacy(
            private, pol, jp.Dirichlet(K), jp.PaperSet(BETA)
        ),
    }
    benchmark.group = f"bounds vs evaluate S={S} {kind}"
    extra = dict(S=S, kind=kind, variant=variant, width=width)
    if variant == "bounds_core":
        extra["aot"] = common.aot_compile_time(
            _bounds.bounds_core, private, pol, params, None, 10_000, **kw
        )
        if kind == "deterministic":
            # A user's jax.jit with k as an argument: k is traced, so width = S.
            jit_traced = jax.jit(
                lambda p, k: jp.cost_of_privacy(private, p, jp.Dirichlet(k), jp.PaperSet(BETA))
            )
            k_arr = jnp.asarray(K, private.rewards.dtype)
            calls["jit_traced_k"] = lambda: jit_traced(policy, k_arr)
            calls["old_argsort_width_S"] = lambda: bounds_argsort_old(
                private, policy, a, b, width=S
            )
        st = common.interleaved(calls, budget_s=1.0 if quick else 4.0)
        extra.update(
            interleaved={n: common.summary(s) for n, s in st.items()},
            ratio_core=st["bounds_core"].median / st["evaluate_core"].median,
            ratio_public=st["cost_of_privacy"].median / st["evaluate"].median,
        )
        extra["target_met"] = extra["ratio_core"] <= TARGET
        if kind == "deterministic":
            extra["jit_traced_k_over_core"] = st["jit_traced_k"].median / st["bounds_core"].median
            if S == max(QUICK_SIZES if quick else SIZES):
                extra["xla_profile"] = {
                    name: common.xla_op_profile(
                        lambda j=j, args=args, kw=kw: j(*args, **kw),
                        j.lower(*args, **kw).compile().as_text(),
                    )
                    for name, j, args, kw in (
                        (
                            "bounds_core",
                            _bounds.bounds_core,
                            (private, policy, params, None, 10_000),
                            kw,
                        ),
                        ("evaluate_core", _evaluation.evaluate_core, (private, policy), {}),
                    )
                }
    common.bench(benchmark, calls[variant], **extra)


@pytest.mark.parametrize("piece", PIECES)
@pytest.mark.parametrize("S", SIZES)
def test_piece(benchmark, dtype, quick, S, piece):
    skip_unless(quick, S)
    private, policy, _, kw, a, _ = problem(S, dtype)
    width = kw["width"]
    pieces, v0 = micro_pieces(private, policy, jnp.asarray(a), width)
    label, fn, operands = dict(zip(PIECES, pieces, strict=True))[piece]
    run = _stages(fn)
    benchmark.group = f"pieces of a stage S={S}"
    common.bench(benchmark, lambda: run(v0, *operands), S=S, piece=label, width=width)


@pytest.mark.parametrize("S", SIZES)
def test_old_argsort_version(benchmark, dtype, quick, S):
    skip_unless(quick, S)
    private, policy, params, kw, a, b = problem(S, dtype)
    width = kw["width"]
    ref = core(private, policy, params, kw)
    low, high = bounds_argsort_old(private, policy, a, b, width=width)
    diff = max(
        float(jnp.max(jnp.abs(low - ref.lower[:-1]))),
        float(jnp.max(jnp.abs(high - ref.upper[:-1]))),
    )
    calls = {
        "library": lambda: core(private, policy, params, kw),
        "old": lambda: bounds_argsort_old(private, policy, a, b, width=width),
    }
    st = common.interleaved(calls, budget_s=1.0 if quick else 3.0)
    benchmark.group = f"old argsort version S={S}"
    common.bench(
        benchmark,
        calls["old"],
        S=S,
        width=width,
        max_abs_diff_vs_library=diff,
        old_over_library=st["old"].median / st["library"].median,
        interleaved={n: common.summary(s) for n, s in st.items()},
    )
    assert diff < (1e-4 if private.rewards.dtype == np.float32 else 1e-10)


# ----------------------------------------------------------------------------- uncertainty sets


def row_box_fn(kw):
    """The jitted per-entry box of every row (``_sets.row_box``), as ``bounds_core`` builds it."""
    return jax.jit(lambda m, p: common.row_box(_models.transition_rows(m), p, kw))


@pytest.mark.parametrize("bound", BOUNDS)
@pytest.mark.parametrize("S", SIZES)
def test_bound_set(benchmark, dtype, quick, S, bound):
    """``bounds_core`` of the set named ``bound`` / ``evaluate_core``, deterministic policy
    (target <= 5).

    Interleaved with the paper's core and, for the non-paper sets, two diagnostics that split
    the extra time: the paper's box at ``width = S`` (what a full-width fill costs) and the
    box of every row alone (``_sets.row_box``: the per-entry interpolated lookup in the
    tables, over all ``S·A·S`` entries). ``prepare_set`` (host) is timed apart: first call
    (tables built) and cached.
    """
    skip_unless(quick, S)
    private, policy, paper_params, paper_kw, _, _ = problem(S, dtype)
    params, kw = set_args(private, bound)
    calls = {
        "evaluate_core": lambda: _evaluation.evaluate_core(private, policy),
        "bounds_core": lambda: core(private, policy, params, kw),
    }
    if bound != "paper":
        full = dict(paper_kw, width=S)
        calls.update(
            paper_core=lambda: core(private, policy, paper_params, paper_kw),
            paper_box_width_S=lambda: core(private, policy, paper_params, full),
            row_box_only=functools.partial(row_box_fn(kw), private, params),
            cost_of_privacy=lambda: jp.cost_of_privacy(
                private, policy, jp.Dirichlet(K), common.uncertainty_set(bound, BETA)
            ),
        )
    else:
        calls["cost_of_privacy"] = lambda: jp.cost_of_privacy(
            private, policy, jp.Dirichlet(K), jp.PaperSet(BETA)
        )
    benchmark.group = f"bound sets vs evaluate S={S}"
    extra = dict(
        S=S,
        A=A,
        T=T,
        k=K,
        beta=BETA,
        bound=bound,
        width=kw["width"],
        grid_size=0 if params.tables is None else sum(int(x.shape[-1]) for x in params.tables[::2]),
        aot=common.aot_compile_time(
            _bounds.bounds_core, private, policy, params, None, 10_000, **kw
        ),
        prepare_set=common.time_prepare_set(private, K, BETA, bound),
    )
    st = common.interleaved(calls, budget_s=1.0 if quick else 4.0)
    base = st["evaluate_core"].median
    extra.update(
        interleaved={n: common.summary(s) for n, s in st.items()},
        ratio_core=st["bounds_core"].median / base,
        ratios_to_evaluate_core={n: s.median / base for n, s in st.items()},
        cost_s0=float(core(private, policy, params, kw).cost),
        cost_s0_paper=float(core(private, policy, paper_params, paper_kw).cost),
    )
    extra["target_met"] = extra["ratio_core"] <= TARGET
    common.bench(benchmark, calls["bounds_core"], **extra)

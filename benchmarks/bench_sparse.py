"""Sparse models (``SparseMDP``): bounds vs one evaluation, solve vs SciPy / QuantEcon, bandwidth.

The model is ``examples.gridworld(n, n, horizon=T, discount=γ)`` (``S = n²``, ``A = 4``,
``K = 3`` successors per row), ``T = 20``, ``γ = 0.95``, for ``n ∈ {100, 1000}`` (``S = 10⁴``
and ``10⁶``; ``--bench-quick``: ``n = 100`` only). Every timed call is compiled first and ended
by ``jax.block_until_ready``.

* ``test_bounds_vs_evaluate[n-variant]``: on the gridworld privatized by
  ``Dirichlet(10, sampler="fast")`` with its optimal deterministic policy
  (``solve``): ``_evaluation.evaluate_core`` (one policy evaluation, ``T`` stages),
  ``_bounds.bounds_core`` with the paper's set and with ``support_aware=True`` (both bounds,
  ``β = 0.1``, ``width = _bounds.bounds_width``). The ``bounds_paper`` variant also times all
  of them round-robin with ``_bellman.solve_core`` (``common.interleaved``) and keeps the
  fair ratios ``bounds / evaluate`` (target ≤ 5) and, as the memory-bandwidth study, each
  core's time per stage, successor entries per second (``S·K`` per stage: one action per
  state) and the bytes per second it implies (``bytes_per_stage`` below) as a fraction of
  this machine's copy bandwidth.
* ``test_copy_bandwidth``: a STREAM-like copy, ``np.copyto`` of a 1 GiB float32 array (256 MiB
  with ``--bench-quick``), best of 5 rounds; bandwidth counted STREAM's way (read + write =
  2 × the array's bytes per copy).
* ``test_solve_vs_scipy[n-variant]``: non-private backward induction on the (not privatized)
  gridworld, ``T = 20``: ``_bellman.solve_core`` vs a SciPy-sparse loop written here (a
  ``scipy.sparse.csr_matrix`` of the ``[S·A, S]`` transitions, ``Q = R + γ (P @ V)`` per stage,
  argmax and max over actions in NumPy; float32) vs QuantEcon's
  ``backward_induction(DiscreteDP(R, Q, γ, s_indices, a_indices), T, v_term)`` with a sparse
  ``Q`` (state-action-pair form; its values are float64 by design) when ``quantecon`` is
  installed. Model construction is excluded for every solver; the ``solve_core`` variant
  times all of them round-robin and checks their values against ours. Target: ours not
  slower.

* ``test_bound_set_sparse[n-bound-aware]``: the uncertainty sets (``PaperSet``,
  ``ExactSet``, ``CertifiedSet``) on ``examples.gridworld(n, n, horizon=60, discount=1.0)``,
  ``n ∈ {20, 32}`` (``S = 400, 1024``; ``--bench-quick``: 20), privatized at ``k = 10``, with
  its optimal deterministic policy: ``bounds_core`` (arguments from ``common.prepare_set``,
  ``support_aware`` True and False) / ``evaluate_core``, interleaved with the paper's core and
  ``_sets.row_box`` alone; ``extra_info.prepare_set``: the host set-up, first call (quantile
  tables built) and cached. Target ≤ 5 with ``support_aware=True``.

At ``n = 1000`` a call takes seconds, so those benchmarks run 3 rounds
(``benchmark.pedantic``) and the round-robin comparison 5 rounds.

Run: ``python -m pytest benchmarks/bench_sparse.py --benchmark-only
--benchmark-json=benchmarks/results/bench_sparse.json [--bench-quick]``.
"""

from __future__ import annotations

import functools
import warnings

import common
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxprivmdp as jp
from jaxprivmdp.planning import _bellman, _bounds, _evaluation

T = 20
GAMMA = 0.95
K_PRIVACY = 10.0
BETA = 0.1
TARGET = 5.0
SIZES = (100, 1000)
QUICK_SIZES = (100,)
BOUND_VARIANTS = ("evaluate_core", "bounds_paper", "bounds_support_aware")
SOLVE_VARIANTS = ("solve_core", "scipy_csr", "quantecon")
LARGE_ROUNDS = 3  # pytest-benchmark rounds where one call takes seconds
LARGE_INTERLEAVED_ROUNDS = 5


def skip_unless(quick, n):
    if quick and n not in QUICK_SIZES:
        pytest.skip("--bench-quick")


def bench_large(benchmark, fn, size, **extra_info):
    """``common.bench``, or for n = 1000 a first call and ``LARGE_ROUNDS`` pedantic rounds."""
    if size < 1000:
        return common.bench(benchmark, fn, **extra_info)
    first = common.first_call(fn)
    benchmark.extra_info.update(
        first_call_s=first, load_average_1m=common.load_average(), **extra_info
    )
    out = benchmark.pedantic(lambda: common.block(fn()), rounds=LARGE_ROUNDS, iterations=1)
    stats = getattr(benchmark, "stats", None)
    if stats is not None:
        benchmark.extra_info["compile_s_estimate"] = max(first - stats.stats.median, 0.0)
    return out


@functools.cache
def grid(n, dtype):
    return jp.examples.gridworld(n, n, horizon=T, discount=GAMMA, dtype=dtype)


@functools.cache
def private_problem(n, dtype):
    """The privatized gridworld, its optimal policy `[T, S]` and the paper's set's arguments."""
    private = jp.privatize(
        jax.random.key(n), grid(n, dtype), jp.Dirichlet(K_PRIVACY, sampler="fast")
    )
    policy = jp.solve(private).policy
    return common.block((private, policy)) + (set_args(private, "paper"),)


def set_args(private, bound):
    """``{support_aware: (params, static kwargs)}`` as ``cost_of_privacy`` builds them."""
    return {
        aware: common.set_args(private, K_PRIVACY, BETA, bound, aware) for aware in (False, True)
    }


def core(private, policy, args):
    """``_bounds.bounds_core`` with ``(params, static kwargs)`` from :func:`set_args`."""
    params, kw = args
    return _bounds.bounds_core(private, policy, params, None, 10_000, **kw)


# ----------------------------------------------------------------------------- bandwidth


@functools.cache
def copy_bandwidth(nbytes, rounds=5):
    """Best-of-``rounds`` seconds of ``np.copyto`` between two float32 arrays of ``nbytes``."""
    import time

    src = np.ones(nbytes // 4, np.float32)
    dst = np.zeros_like(src)
    np.copyto(dst, src)  # touch every page first
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        times.append(time.perf_counter() - t0)
    best = min(times)
    return dict(
        array_bytes=nbytes,
        best_s=best,
        rounds=rounds,
        stream_copy_bytes_per_s=2 * nbytes / best,  # STREAM: read + write
    )


def copy_bytes(quick):
    return (256 if quick else 1024) * 2**20


def bytes_per_stage(S, A, Kmax, itemsize):
    """The memory traffic assumed for one stage with a deterministic policy (A' = 1).

    ``minimal``: the chosen action's successor indices (int32) and probabilities, ``S·K``
    entries each, plus per state the decision (int32), the reward, the next-stage value
    vectors read (2) and the new ones written (2). ``lines``: a state's ``A·K`` indices and
    probabilities are contiguous (``A·K·4 = 48`` bytes), so a cache line brings the other
    actions' entries too: the whole ``next_states`` and ``probs`` arrays and the ``[S, A]``
    rewards are counted as read. The gathered value table ``[S, 3]`` at the successors is
    not counted (grid neighbours: mostly cache hits).
    """
    per_state = 4 + itemsize + 4 * itemsize
    return dict(
        minimal=S * Kmax * (4 + itemsize) + S * per_state,
        lines=S * A * Kmax * (4 + itemsize) + S * A * itemsize + S * (4 + 4 * itemsize),
    )


@pytest.mark.parametrize("variant", BOUND_VARIANTS)
@pytest.mark.parametrize("n", SIZES)
def test_bounds_vs_evaluate(benchmark, dtype, quick, n, variant):
    skip_unless(quick, n)
    private, policy, args = private_problem(n, dtype)
    S, A, Kmax = private.next_states.shape
    widths = {aware: args[aware][1]["width"] for aware in (False, True)}
    calls = {
        "evaluate_core": lambda: _evaluation.evaluate_core(private, policy),
        "bounds_paper": lambda: core(private, policy, args[False]),
        "bounds_support_aware": lambda: core(private, policy, args[True]),
    }
    benchmark.group = f"sparse bounds vs evaluate {n}x{n}"
    extra = dict(n=n, S=S, A=A, K=Kmax, T=T, k=K_PRIVACY, beta=BETA, width=widths[False])
    if variant == "bounds_paper":
        extra["aot"] = {
            ("support_aware" if aware else "paper"): common.aot_compile_time(
                _bounds.bounds_core, private, policy, args[aware][0], None, 10_000, **args[aware][1]
            )
            for aware in (False, True)
        }
        calls_rr = dict(calls, solve_core=lambda: _bellman.solve_core(private, None, 10_000))
        if n >= 1000:
            st = common.interleaved(calls_rr, min_rounds=LARGE_INTERLEAVED_ROUNDS, budget_s=0.0)
        else:
            st = common.interleaved(calls_rr, budget_s=1.0 if quick else 4.0)
        base = st["evaluate_core"].median
        extra.update(
            interleaved={name: common.summary(s) for name, s in st.items()},
            ratio_paper=st["bounds_paper"].median / base,
            ratio_support_aware=st["bounds_support_aware"].median / base,
            solve_over_evaluate=st["solve_core"].median / base,
        )
        extra["target_met_paper"] = extra["ratio_paper"] <= TARGET
        extra["target_met_support_aware"] = extra["ratio_support_aware"] <= TARGET
        # Memory bandwidth: per-stage time of each core (T stages per call) vs a copy.
        copy = copy_bandwidth(copy_bytes(quick))
        traffic = bytes_per_stage(S, A, Kmax, np.dtype(private.rewards.dtype).itemsize)
        stages = {}
        for name in ("evaluate_core", "bounds_paper", "bounds_support_aware"):
            stage_s = st[name].median / T
            stages[name] = dict(
                stage_s=stage_s,
                entries_per_s=S * Kmax / stage_s,
                **{f"{label}_bytes_per_s": nbytes / stage_s for label, nbytes in traffic.items()},
                **{
                    f"{label}_fraction_of_copy": nbytes / stage_s / copy["stream_copy_bytes_per_s"]
                    for label, nbytes in traffic.items()
                },
            )
        extra["bandwidth"] = dict(copy=copy, bytes_per_stage=traffic, stages=stages)
    bench_large(benchmark, calls[variant], n, **extra)


def test_copy_bandwidth(benchmark, quick):
    nbytes = copy_bytes(quick)
    src = np.ones(nbytes // 4, np.float32)
    dst = np.zeros_like(src)
    np.copyto(dst, src)
    benchmark.group = "copy bandwidth"
    benchmark.extra_info.update(array_bytes=nbytes, load_average_1m=common.load_average())
    benchmark.pedantic(np.copyto, args=(dst, src), rounds=5, iterations=1)
    best = benchmark.stats.stats.min
    benchmark.extra_info["stream_copy_bytes_per_s_best"] = 2 * nbytes / best


# ----------------------------------------------------------------------------- solvers


@functools.cache
def flat_model(n, dtype):
    """The gridworld as ``[S·A, S]`` CSR (padding dropped), ``R`` `[S, A]` and ``R_T``."""
    import scipy.sparse as sp

    g = grid(n, dtype)
    S, A, Kmax = g.next_states.shape
    ns = np.asarray(g.next_states).reshape(S * A, Kmax)
    p = np.asarray(g.probs).reshape(S * A, Kmax)
    rows = np.broadcast_to(np.arange(S * A)[:, None], ns.shape)
    keep = ns >= 0
    P = sp.csr_matrix((p[keep], (rows[keep], ns[keep])), shape=(S * A, S))
    P.sum_duplicates()
    R = np.asarray(g.rewards)
    assert bool(np.all(np.asarray(g.action_mask))), "every action allowed on this map"
    return P, R, np.asarray(g.terminal_reward)


def scipy_backward_induction(P, R, RT, gamma, T):
    """``P`` CSR `[S·A, S]`; returns policy `[T, S]` and values `[T + 1, S]` (R's dtype)."""
    S, A = R.shape
    g = R.dtype.type(gamma)
    V = np.empty((T + 1, S), R.dtype)
    pi = np.empty((T, S), np.int32)
    V[T] = RT
    for t in reversed(range(T)):
        Q = R + g * (P @ V[t + 1]).reshape(S, A)
        pi[t] = Q.argmax(axis=1)
        V[t] = np.take_along_axis(Q, pi[t][:, None].astype(np.intp), axis=1)[:, 0]
    return pi, V


def quantecon_solver(P, R, RT, gamma, T):
    """QuantEcon's ``backward_induction`` on the state-action-pair form, or None."""
    try:
        from quantecon.markov import DiscreteDP, backward_induction
    except ImportError:
        return None
    S, A = R.shape
    s_idx, a_idx = np.divmod(np.arange(S * A), A)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ddp = DiscreteDP(R.reshape(-1), P, gamma, s_idx, a_idx)

    def run():
        vs, sigmas = backward_induction(ddp, T, v_term=RT.astype(np.float64))
        return sigmas, vs

    return run


@pytest.mark.parametrize("variant", SOLVE_VARIANTS)
@pytest.mark.parametrize("n", SIZES)
def test_solve_vs_scipy(benchmark, dtype, quick, n, variant):
    skip_unless(quick, n)
    g = grid(n, dtype)
    P, R, RT = flat_model(n, dtype)
    qe = quantecon_solver(P, R, RT, GAMMA, T)
    calls = {
        "solve_core": lambda: _bellman.solve_core(g, None, jnp.asarray(10_000)),
        "scipy_csr": lambda: scipy_backward_induction(P, R, RT, GAMMA, T),
    }
    if qe is not None:
        calls["quantecon"] = qe
    if variant not in calls:
        pytest.skip("quantecon is not installed")
    S, A = R.shape
    benchmark.group = f"sparse solve vs SciPy/QuantEcon {n}x{n}"
    extra = dict(n=n, S=S, A=A, T=T, gamma=GAMMA, nnz=int(P.nnz))
    if variant == "solve_core":
        ours = common.block(calls["solve_core"]())
        v_ours = np.asarray(ours.values, np.float64)
        checks = {}
        for name in calls:
            if name == "solve_core":
                continue
            pi, V = calls[name]()
            checks[name] = dict(
                max_abs_value_diff=float(np.max(np.abs(np.asarray(V, np.float64) - v_ours))),
                policy_agreement=float(np.mean(np.asarray(pi) == np.asarray(ours.policy))),
            )
        if n >= 1000:
            st = common.interleaved(calls, min_rounds=LARGE_INTERLEAVED_ROUNDS, budget_s=0.0)
        else:
            st = common.interleaved(calls, budget_s=1.0 if quick else 4.0)
        extra.update(
            checks=checks,
            interleaved={name: common.summary(s) for name, s in st.items()},
            other_over_ours={
                name: s.median / st["solve_core"].median
                for name, s in st.items()
                if name != "solve_core"
            },
        )
        extra["target_met"] = all(r >= 1 for r in extra["other_over_ours"].values())
        for name, c in checks.items():
            assert c["max_abs_value_diff"] < 1e-3 * max(1.0, float(np.abs(v_ours).max())), name
    bench_large(benchmark, calls[variant], n, **extra)


# ----------------------------------------------------------------------------- uncertainty sets

SET_SIZES = (20, 32)  # S = 400 and 1024
QUICK_SET_SIZES = (20,)
SET_HORIZON = 60
BOUNDS = ("paper", "exact", "certified")


@functools.cache
def set_problem(n, dtype):
    """``examples.gridworld(n, n, horizon=60, discount=1.0)`` privatized at k = 10, its policy."""
    g = jp.examples.gridworld(n, n, horizon=SET_HORIZON, discount=1.0, dtype=dtype)
    private = jp.privatize(jax.random.key(n), g, jp.Dirichlet(K_PRIVACY, sampler="fast"))
    policy = jp.solve(private).policy
    return common.block((private, policy))


def row_box_fn(static):
    from jaxprivmdp.models import _rows as _models

    return jax.jit(lambda m, p: common.row_box(_models.transition_rows(m), p, static))


@pytest.mark.parametrize("aware", (True, False), ids=("support_aware", "whole_simplex"))
@pytest.mark.parametrize("bound", BOUNDS)
@pytest.mark.parametrize("n", SET_SIZES)
def test_bound_set_sparse(benchmark, dtype, quick, n, bound, aware):
    """``bounds_core`` of the set named ``bound`` (support-aware or not) / ``evaluate_core`` on a
    small gridworld.

    Interleaved with ``evaluate_core``, the paper's core with the same ``support_aware`` and
    ``_sets.row_box`` alone; ``prepare_set`` (host) first call and cached. Target <= 5 (the
    target's case is ``support_aware=True``; the whole simplex is informational).
    """
    if quick and n not in QUICK_SET_SIZES:
        pytest.skip("--bench-quick")
    private, policy = set_problem(n, dtype)
    S, A, Kmax = private.next_states.shape
    args = set_args(private, bound)[aware]
    paper = set_args(private, "paper")[aware]
    calls = {
        "evaluate_core": lambda: _evaluation.evaluate_core(private, policy),
        "bounds_core": lambda: core(private, policy, args),
    }
    if bound != "paper":
        calls["paper_core"] = lambda: core(private, policy, paper)
        calls["row_box_only"] = functools.partial(row_box_fn(args[1]), private, args[0])
    benchmark.group = f"sparse bound sets {n}x{n} T={SET_HORIZON}"
    extra = dict(
        n=n,
        S=S,
        A=A,
        K=Kmax,
        T=SET_HORIZON,
        discount=1.0,
        k=K_PRIVACY,
        beta=BETA,
        bound=bound,
        support_aware=aware,
        width=args[1]["width"],
        aot=common.aot_compile_time(
            _bounds.bounds_core, private, policy, args[0], None, 10_000, **args[1]
        ),
        prepare_set=common.time_prepare_set(private, K_PRIVACY, BETA, bound, aware),
    )
    st = common.interleaved(calls, budget_s=1.0 if quick else 4.0)
    base = st["evaluate_core"].median
    extra.update(
        interleaved={name: common.summary(s) for name, s in st.items()},
        ratio_core=st["bounds_core"].median / base,
        ratios_to_evaluate_core={name: s.median / base for name, s in st.items()},
        cost_s0=float(core(private, policy, args).cost),
        cost_s0_paper=float(core(private, policy, paper).cost),
    )
    extra["target_met"] = extra["ratio_core"] <= TARGET
    common.bench(benchmark, calls["bounds_core"], **extra)

"""Dirichlet sampling throughput: the fast sampler vs ``jax.random`` vs NumPy.

Run ``python benchmarks/bench_sampling.py [--dtype float64] [--repeats 7]``. Not a test.

The shapes are those of a privacy sweep: ``alpha`` of shape ``(K·N, S, A, S)`` with
``K·N = 450`` (9 privacy levels × 50 trials), one Dirichlet row per ``(trial, s, a)``;
``alpha = k · p`` with ``k ∈ {1, 40}`` and ``p`` from a flat Dirichlet per row.

Timed, on the same rows:
  * ``jax.random.dirichlet`` (jitted; the reference),
  * ``softmax(jaxprivmdp.mechanisms._sampling.loggamma)`` (jitted; ours), on the whole
    array and ``vmap``-ed
    over the ``K·N`` blocks with one key each (as the library calls it),
  * NumPy ``rng.standard_gamma(alpha)`` normalised (per-row alphas, like ours),
  * NumPy ``rng.dirichlet(alpha_row, size=rows)`` (one constant row: NumPy's fastest path),
  * the floor of ``jax.random``: one ``normal`` and one ``uniform`` per element (the least
    any rejection sampler built on ``jax.random`` draws), and ours: the inline Threefry bits
    our first pass hashes (``num_candidates + 1`` hashes per element) and nothing else.

JAX functions are compiled first (compile time reported separately), then all methods are
timed round-robin (so load changes hit them alike) with ``jax.block_until_ready``; the
table gives medians.
"""

from __future__ import annotations

import argparse
import time

import common
import jax
import jax.numpy as jnp
import numpy as np

CASES = [  # (K·N, S, A)
    (450, 20, 5),
    (9, 200, 10),
    (450, 3, 4),
]
CONCENTRATIONS = (1.0, 40.0)


def _fast_dirichlet(key, alpha):
    # What the mechanism does with sampler="fast": normalized log-gamma variates.
    from jaxprivmdp.mechanisms import _sampling

    return jax.nn.softmax(_sampling.loggamma(key, alpha), axis=-1)


def _alpha(rows, num_states, num_actions, k, dtype, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(num_states), size=(rows, num_states, num_actions))
    return (k * p).astype(dtype)


def _compile(fn, *args):
    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    return compiled, time.perf_counter() - start


def _run_case(rows, num_states, num_actions, k, dtype, repeats, with_reference):
    from jaxprivmdp.mechanisms import _sampling

    alpha_np = _alpha(rows, num_states, num_actions, k, dtype)
    alpha = jnp.asarray(alpha_np)
    n = alpha.size
    num_rows = n // num_states
    keys = [jax.random.key(r) for r in range(repeats + 1)]
    m = 2  # loggamma's default num_candidates

    def floor_jax(key, a):
        kz, ku = jax.random.split(key)
        return jax.random.normal(kz, a.shape, a.dtype) + jax.random.uniform(ku, a.shape, a.dtype)

    def floor_ours(key, a):
        bits = _sampling._Bits(key, n, a.dtype)
        total = jnp.zeros((n,), a.dtype)
        for stream in range(m + 1):
            b0, b1 = bits.pair(stream)
            total = total + _sampling._mantissa(b0) + _sampling._mantissa(b1)
        return total

    def ours_vmapped(key, a):  # how the library calls it: one key per (level, trial) block
        return jax.vmap(_fast_dirichlet)(jax.random.split(key, a.shape[0]), a)

    jax_fns = {
        "ours": _fast_dirichlet,
        "ours vmap": ours_vmapped,
        "floor jax.random": floor_jax,
        "floor ours": floor_ours,
    }
    if with_reference:
        jax_fns["jax.random"] = jax.random.dirichlet
    compiled, compile_s = {}, {}
    for name, fn in jax_fns.items():
        compiled[name], compile_s[name] = _compile(fn, keys[0], alpha)
        jax.block_until_ready(compiled[name](keys[0], alpha))  # warm up

    rng = np.random.default_rng(0)
    alpha_row = alpha_np.reshape(-1, num_states)[0].astype(np.float64)

    def numpy_gamma():
        g = rng.standard_gamma(alpha_np, dtype=dtype)
        return g / g.sum(-1, keepdims=True)

    def numpy_dirichlet():
        return rng.dirichlet(alpha_row, size=num_rows)

    numpy_fns = {"numpy standard_gamma": numpy_gamma, "numpy dirichlet(row)": numpy_dirichlet}
    for fn in numpy_fns.values():
        fn()

    times = {name: [] for name in (*compiled, *numpy_fns)}
    for r in range(repeats):
        key = keys[r + 1]
        for name, fn in compiled.items():
            start = time.perf_counter()
            jax.block_until_ready(fn(key, alpha))
            times[name].append(time.perf_counter() - start)
        for name, fn in numpy_fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: float(np.median(t)) for name, t in times.items()}, compile_s


def _fmt(seconds):
    return "cached" if seconds != seconds else f"{seconds:.2f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--repeats", type=int, default=7, help="timed runs per method (>= 5)")
    parser.add_argument(
        "--skip-reference",
        action="store_true",
        help="do not time jax.random.dirichlet (slow on CPU)",
    )
    args = parser.parse_args()
    if args.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    dtype = np.dtype(args.dtype)

    print(common.describe(common.machine_info()))
    print(f"- dtype {dtype}, repeats {args.repeats} (median, round-robin)")
    print("- ours: softmax(jaxprivmdp.mechanisms._sampling.loggamma), num_candidates=2 (default)")
    print()

    header = (
        "| alpha shape | k | ours ms | ours vmap ms | jax.random ms | numpy gamma ms "
        "| numpy dirichlet(row) ms "
        "| jax/ours | numpy gamma/ours | numpy dirichlet/ours | floor jax.random ms "
        "| floor ours ms | compile ours s | compile jax s |"
    )
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for rows, num_states, num_actions in CASES:
        for i, k in enumerate(CONCENTRATIONS):
            t, c = _run_case(
                rows, num_states, num_actions, k, dtype, args.repeats, not args.skip_reference
            )
            if i:  # same shapes: the executables come from jax's compilation cache
                c = {name: float("nan") for name in c}
            ours = t["ours"]
            ref = t.get("jax.random", float("nan"))
            print(
                f"| ({rows}, {num_states}, {num_actions}, {num_states}) | {k:g} "
                f"| {1e3 * ours:.1f} | {1e3 * t['ours vmap']:.1f} | {1e3 * ref:.1f} "
                f"| {1e3 * t['numpy standard_gamma']:.1f} "
                f"| {1e3 * t['numpy dirichlet(row)']:.1f} | {ref / ours:.1f} "
                f"| {t['numpy standard_gamma'] / ours:.2f} "
                f"| {t['numpy dirichlet(row)'] / ours:.2f} "
                f"| {1e3 * t['floor jax.random']:.1f} | {1e3 * t['floor ours']:.1f} "
                f"| {_fmt(c['ours'])} | {_fmt(c.get('jax.random', float('nan')))} |",
                flush=True,
            )
    print()
    print(f"load average (1 min) at the end {common.load_average()}")


if __name__ == "__main__":
    main()

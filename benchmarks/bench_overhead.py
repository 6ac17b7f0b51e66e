"""What the public eager boundary costs per call, over the jitted core it dispatches to.

Every public function validates its inputs eagerly (host checks, radius and fill width in
NumPy) and then calls a pure jitted core. Per call, side by side, after compilation:

* ``cost_of_privacy`` vs ``_bounds.bounds_core``,
* ``evaluate`` vs ``_evaluation.evaluate_core``,
* ``solve`` vs ``_bellman.solve_core``,
* ``synthesize`` vs ``_synthesis._synthesize_jit`` (``sampler="fast"`` in both),
* and ``jax.jit(lambda ...: f(...))``, the user's way to skip the boundary (``k``, ``β`` are
  Python constants of the lambda, so the fill width stays bounded as in the public call).

The core gets exactly what the boundary would pass it (host scalars, validated policy,
mechanism rows). Problems: Example 2 (``examples.random_mdp(key(0))``, S=20, A=5, T=10) and
the same generator at S=300; privatized with ``k = 10`` (``sampler="fast"``), policy from
``solve``.

Each variant is a pytest-benchmark (``test_boundary[S-fn-variant]``). The ``public``
variant also times the three round-robin (``common.interleaved``), so that their ratios see
the same load; ``extra_info`` holds ``public_over_core`` and ``user_jit_over_core``.

Run: ``python -m pytest benchmarks/bench_overhead.py --benchmark-only
--benchmark-json=benchmarks/results/bench_overhead.json [--bench-quick]``.
"""

from __future__ import annotations

import dataclasses
import functools

import common
import jax
import numpy as np
import pytest

import jaxprivmdp as jp
from jaxprivmdp.experiments import _synthesis
from jaxprivmdp.models import _support
from jaxprivmdp.planning import _bellman, _bounds, _evaluation, _policies

K = 10.0
BETA = 0.1
MAX_ITERATIONS = 10_000
SIZES = (20, 300)
QUICK_SIZES = (20,)
FUNCTIONS = ("cost_of_privacy", "evaluate", "solve", "synthesize")
VARIANTS = ("public", "core", "user_jit")


@functools.cache
def calls(S: int, dtype: str) -> dict[str, dict[str, object]]:
    """``{function: {variant: zero-argument callable}}`` on one problem."""
    mdp = jp.examples.random_mdp(jax.random.key(0), num_states=S, dtype=dtype)
    key = jax.random.key(1)
    p_bar = jp.dirichlet_mechanism(key, mdp.transitions, jp.Dirichlet(K, sampler="fast"))
    private = dataclasses.replace(mdp, transitions=p_bar)
    policy = jp.solve(private).policy
    np_dtype = mdp.rewards.dtype
    # What the boundaries pass their cores: the paper's set from `common.prepare_set` (as
    # cost_of_privacy and synthesize build it) and `k` as a host scalar in the model's dtype.
    params, set_kw = common.set_args(private, K, BETA, "paper")
    k = np.asarray(K, np_dtype)
    valid = _policies.validate_policy(private, policy)
    inp = _support.mechanism_input(mdp.transitions, mdp.action_mask, None, None, np_dtype)

    mech, fast, uset = jp.Dirichlet(K), jp.Dirichlet(K, sampler="fast"), jp.PaperSet(BETA)
    jit_cost = jax.jit(lambda m, p: jp.cost_of_privacy(m, p, mech, uset))
    jit_eval = jax.jit(jp.evaluate)
    jit_solve = jax.jit(jp.solve)
    jit_syn = jax.jit(lambda key, m: jp.synthesize(key, m, fast, uset))
    return {
        "cost_of_privacy": dict(
            public=lambda: jp.cost_of_privacy(private, policy, mech, uset),
            core=lambda: _bounds.bounds_core(
                private, valid, params, None, MAX_ITERATIONS, **set_kw
            ),
            user_jit=lambda: jit_cost(private, policy),
        ),
        "evaluate": dict(
            public=lambda: jp.evaluate(mdp, policy),
            core=lambda: _evaluation.evaluate_core(mdp, valid),
            user_jit=lambda: jit_eval(mdp, policy),
        ),
        "solve": dict(
            public=lambda: jp.solve(private),
            core=lambda: _bellman.solve_core(private, None, MAX_ITERATIONS),
            user_jit=lambda: jit_solve(private),
        ),
        "synthesize": dict(
            public=lambda: jp.synthesize(key, mdp, fast, uset),
            core=lambda: _synthesis._synthesize_jit(
                key,
                mdp,
                inp.rows,
                inp.support,
                jp.Dirichlet(k, sampler="fast"),
                params,
                MAX_ITERATIONS,
                robust=False,
                **set_kw,
            ),
            user_jit=lambda: jit_syn(key, mdp),
        ),
    }


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("fn", FUNCTIONS)
@pytest.mark.parametrize("S", SIZES)
def test_boundary(benchmark, dtype, quick, S, fn, variant):
    if quick and S not in QUICK_SIZES:
        pytest.skip("--bench-quick")
    benchmark.group = f"boundary {fn} S={S}"
    c = calls(S, dtype)[fn]
    extra = dict(S=S, A=5, T=10, function=fn, variant=variant)
    if variant == "public":
        # Round-robin, so that the ratios are not skewed by the load between benchmarks.
        st = common.interleaved(c, budget_s=0.5 if quick else 2.0, min_rounds=20)
        r = common.ratios(st, "core")
        extra.update(
            interleaved={name: common.summary(s) for name, s in st.items()},
            public_over_core=r["public"],
            user_jit_over_core=r["user_jit"],
            public_minus_core_s=st["public"].median - st["core"].median,
        )
    common.bench(benchmark, c[variant], **extra)

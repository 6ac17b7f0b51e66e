"""Every matrix product in the public cores runs at ``precision=HIGHEST``.

On NVIDIA GPUs JAX runs float32 products in TF32 by default (10-bit significands), which
voids every rounding bound the library states. CI has no GPU, so this CPU test walks the
jaxprs of the public cores, into every sub-jaxpr (jit, scan, while, cond, custom_jvp /
custom_vjp, custom_root, custom_linear_solve, ...), and fails on any ``dot_general`` or
``conv_general_dilated`` whose precision is not HIGHEST for both operands, naming the
primitive, the source line that emitted it and the path of sub-jaxprs that leads there.
``make_jaxpr`` traces without compiling, so the walk is cheap.
"""

from __future__ import annotations

import functools
import os
from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import random_arrays, random_stochastic_policy, sub_jaxprs
from jax.extend import core as jex_core

import jaxprivmdp as jp
from jaxprivmdp.experiments._chunks import chunk_runs, sweep_chunk
from jaxprivmdp.mechanisms._registry import _privatize_jit, mechanism_class
from jaxprivmdp.models._rows import with_probs
from jaxprivmdp.models._support import model_mechanism_input
from jaxprivmdp.planning._bellman import solve_core
from jaxprivmdp.planning._bounds import bounds_core, set_up
from jaxprivmdp.planning._evaluation import evaluate_core
from jaxprivmdp.planning._robust_policy import robust_solve_core
from jaxprivmdp.sets._sets import set_named as as_set

pytestmark = pytest.mark.integration

HIGHEST = jax.lax.Precision.HIGHEST
PRODUCTS = ("dot_general", "conv_general_dilated", "ragged_dot_general")
KEY = jax.random.key(0)
H = 3  # finite horizon


# ----------------------------------------------------------------------------- the walker


def is_highest(precision) -> bool:
    """Both operands at HIGHEST (``precision`` is None, one Precision, or a pair)."""
    if isinstance(precision, (tuple, list)):
        return len(precision) == 2 and all(p == HIGHEST for p in precision)
    return precision == HIGHEST


def where(eqn) -> str:
    """The source line that emitted ``eqn`` (the innermost frame outside JAX), if known."""
    try:
        from jax._src import source_info_util

        text = source_info_util.summarize(eqn.source_info)
    except Exception:  # a private API: the message only loses its location
        return "<unknown source>"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    return text.replace(root, "")


def low_precision_products(jaxpr, path=()) -> list[str]:
    """One line per product in ``jaxpr`` (recursively) whose precision is not HIGHEST."""
    if isinstance(jaxpr, jex_core.ClosedJaxpr):
        jaxpr = jaxpr.jaxpr
    found = []
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name in PRODUCTS and not is_highest(eqn.params.get("precision")):
            via = " / ".join(path) or "top level"
            found.append(
                f"{name} precision={eqn.params.get('precision')} at {where(eqn)} (via {via})"
            )
        for param, value in eqn.params.items():
            for sub in sub_jaxprs(value):
                found += low_precision_products(sub, path + (f"{name}.{param}",))
    return found


def assert_highest(cases: dict):
    """``cases``: label -> a thunk returning a ClosedJaxpr. Fails listing every offender."""
    offenders = {}
    for label, make in cases.items():
        for line in low_precision_products(make()):
            offenders.setdefault(line, label)  # the first case that reaches each product
    if offenders:
        lines = [f"  {line}  [first in {label}]" for line, label in offenders.items()]
        pytest.fail(
            f"{len(offenders)} product(s) not at precision=HIGHEST (TF32 on GPUs):\n"
            + "\n".join(lines)
        )


def test_the_walker_finds_products_in_nested_jaxprs():
    """A default-precision product hidden in scan ∘ cond ∘ custom_jvp ∘ while ∘ jit."""

    def core(precision):
        @jax.custom_jvp
        def inner(x):
            return jnp.dot(x, x, precision=precision)

        inner.defjvp(lambda p, t: (inner(*p), t[0]))

        def loop(x):
            return jax.lax.while_loop(lambda c: c[1] < 2, lambda c: (inner(c[0]), c[1] + 1), (x, 0))

        def step(c, _):
            return jax.lax.cond(c[0, 0] > 0, jax.jit(lambda y: loop(y)[0]), lambda y: y, c), None

        return lambda x: jax.lax.scan(step, x, length=2)[0]

    x = jnp.ones((2, 2))
    found = low_precision_products(jax.make_jaxpr(core(None))(x))
    assert len(found) == 1 and found[0].startswith("dot_general precision=None at tests")
    assert "scan.jaxpr / cond.branches" in found[0] and "custom_jvp_call" in found[0]
    assert low_precision_products(jax.make_jaxpr(core(HIGHEST))(x)) == []
    conv = jax.make_jaxpr(lambda a: jnp.convolve(a, a))(jnp.ones(3))
    assert [f.split()[0] for f in low_precision_products(conv)] == ["conv_general_dilated"]
    solve = jax.make_jaxpr(jnp.linalg.solve)(jnp.eye(3), jnp.ones(3))
    assert low_precision_products(solve) == []  # its custom_linear_solve is walked, and clean


# ----------------------------------------------------------------------------- the models


@functools.cache
def models(horizon):
    """Dense S = 5 and S = 70 (the robust kernel's two dense branches, S <= 64 and above),
    successor lists with K = 3 and K = 20 (pairwise and sorted fills). Each records its
    public support, as a release does (the support-aware sets need it)."""

    def dense(seed, S, A, zeros=0):
        P, R, RT, _ = random_arrays(seed, num_states=S, num_actions=A)
        if zeros:  # `zeros` entries of each row set to 0: successor lists of S − zeros
            rng = np.random.default_rng(seed)
            for idx in np.ndindex(S, A):
                P[idx][rng.choice(S, zeros, replace=False)] = 0
            P /= P.sum(-1, keepdims=True)
        kw = dict(discount=0.9) if horizon is None else dict(terminal_reward=RT, horizon=horizon)
        return jp.make_mdp(P, R, support=P > 0, **kw)

    return {
        "dense5": dense(0, 5, 3),
        "dense70": dense(1, 70, 2),
        "sparse3": jp.to_sparse(dense(2, 8, 2, zeros=5)),
        "sparse20": jp.to_sparse(dense(3, 24, 2, zeros=4)),
    }


def policies(mdp):
    lead = (mdp.horizon,) if mdp.is_finite_horizon else ()
    S, A = mdp.num_states, mdp.num_actions
    det = jnp.zeros(lead + (S,), jnp.int32)
    return det, jnp.asarray(random_stochastic_policy(0, np.ones((S, A), bool), lead))


HORIZONS = pytest.mark.parametrize("horizon", [H, None], ids=["finite", "infinite"])


def jaxpr_of(fn, *args):
    return lambda: jax.make_jaxpr(fn)(*args)


# ----------------------------------------------------------------------------- the cores
# Host preparation (validation, set parameters, Beta tables) runs outside make_jaxpr, as the
# public functions do before they call their jitted cores; only the cores are traced.


@HORIZONS
def test_planning_cores(horizon):
    """``solve_core`` and ``evaluate_core``: dense and sparse, deterministic and stochastic
    policies, and the gradient of ``evaluate_core`` (implicit tangents and transposes)."""
    cases = {}
    for name in ("dense5", "sparse3"):
        mdp = models(horizon)[name]
        det, stoch = policies(mdp)
        cases[f"solve_core {name}"] = jaxpr_of(solve_core, mdp, None, 100)
        cases[f"evaluate_core {name} deterministic"] = jaxpr_of(evaluate_core, mdp, det)
        cases[f"evaluate_core {name} stochastic"] = jaxpr_of(evaluate_core, mdp, stoch)

        def value(rewards, mdp=mdp, policy=stoch):
            return evaluate_core(replace(mdp, rewards=rewards), policy).sum()

        cases[f"grad evaluate_core {name}"] = jaxpr_of(jax.grad(value), mdp.rewards)
    assert_highest(cases)


# (model, mechanism, bound, support_aware, k): every branch of the robust kernel. Dense rows
# with S <= 64 and a full fill take the pairwise shared order, a narrow fill (k = 1) or
# S > 64 the top_k one; successor lists are ranked together (support_aware off) or row by
# row (on: pairwise for K <= 16, sorted above). "paper" and the additive mechanisms build
# boxes of a radius, "exact"/"certified" Dirichlet boxes Beta intervals.
KERNEL_CASES = [
    ("dense5", "dirichlet", "paper", False, 1e4),
    ("dense5", "dirichlet", "paper", False, 1.0),
    ("dense5", "dirichlet", "certified", True, 1e4),
    ("dense5", "gaussian", "certified", False, 1e-3),
    ("dense70", "dirichlet", "exact", False, 1e4),
    ("dense70", "laplace", "paper", True, 1e-3),
    ("sparse3", "dirichlet", "paper", False, 1.0),
    ("sparse3", "dirichlet", "certified", True, 1e4),
    ("sparse20", "dirichlet", "exact", True, 1e4),
    ("sparse20", "gaussian", "paper", False, 1e-3),
]


@HORIZONS
def test_bounds_and_robust_cores(horizon):
    """``bounds_core`` and ``robust_solve_core`` with the arguments ``set_up`` builds
    (every kernel branch for an infinite horizon; the finite one shares the kernel)."""
    cases = {}
    for name, mechanism, bound, support_aware, k in KERNEL_CASES[:: 1 if horizon is None else 3]:
        mdp = models(horizon)[name]
        det, stoch = policies(mdp)
        uset = as_set(bound, 0.1, support_aware)
        params, width = set_up(mdp, mechanism_class(mechanism)(k), uset)
        static = dict(width=width, support_aware=support_aware)
        label = f"{name} {mechanism} {bound} support_aware={support_aware} width={width}"
        policy = stoch if name == "sparse3" else det
        cases[f"bounds_core {label}"] = jaxpr_of(
            functools.partial(bounds_core, **static), mdp, policy, params, None, 100
        )
        cases[f"robust_solve_core {label}"] = jaxpr_of(
            functools.partial(robust_solve_core, **static), mdp, params, 100
        )
    # The gradient: implicit differentiation at the fixed point (a Jacobian and a solve).
    mdp = models(horizon)["dense5"]
    policy, _ = policies(mdp)
    params, width = set_up(mdp, jp.Dirichlet(30.0), jp.PaperSet(0.1))
    static = dict(width=width, support_aware=False)

    def cost(rewards):
        return bounds_core(replace(mdp, rewards=rewards), policy, params, None, 100, **static).cost

    cases["grad bounds_core dense5"] = jaxpr_of(jax.grad(cost), mdp.rewards)
    assert_highest(cases)


@pytest.mark.parametrize(
    ("horizon", "name", "mechanism", "bound", "support_aware"),
    [
        (H, "dense5", "dirichlet", "paper", False),
        (None, "dense5", "dirichlet", "certified", True),
        (None, "sparse3", "gaussian", "certified", True),
        (H, "sparse20", "laplace", "exact", False),
    ],
)
def test_synthesis_sweep_and_mechanism_cores(horizon, name, mechanism, bound, support_aware):
    """``synthesize_core`` (``robust=True``) inside the sweep's chunk, and the mechanism."""
    mdp = models(horizon)[name]
    cls = mechanism_class(mechanism)
    ks = np.asarray([5.0, 20.0] if mechanism == "dirichlet" else [0.05, 0.2], np.float32)
    support = "nonzero" if name.startswith("dense") else None
    inp = model_mechanism_input(mdp, support, None, interior=cls.needs_interior)
    cases = {}
    for sampler in ("jax", "fast") if mechanism == "dirichlet" else (None,):
        mech = cls(ks[0]) if sampler is None else cls(ks[0], sampler=sampler)
        cases[f"privatize {name} {mechanism} {sampler}"] = jaxpr_of(
            _privatize_jit, KEY, inp.rows, mech, inp.support, inp.action_mask
        )
    grid = mech.replace(ks)
    released = with_probs(mdp, inp.rows, inp.support)
    params, width = set_up(released, grid, as_set(bound, 0.1, support_aware))
    runs = chunk_runs(0, 2, grid, jax.tree.map(np.asarray, params), 1)
    static = dict(
        width=width,
        support_aware=support_aware,
        robust=True,
        devices=tuple(jax.devices()[:1]),
        vector_width=2,
    )
    cases[f"sweep chunk (synthesize_core) {name} {mechanism} {bound}"] = jaxpr_of(
        functools.partial(sweep_chunk, **static), runs, KEY, mdp, inp.rows, inp.support, 100
    )
    assert_highest(cases)

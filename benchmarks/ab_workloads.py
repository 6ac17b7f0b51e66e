"""Named workloads for ``ab.py``: the same calls, timed on two revisions of the package.

Each workload is a function ``workload(jp, quick) -> {call name: call}`` registered with
:func:`workload`. ``jp`` is the ``jaxprivmdp`` package of the side being timed (the worker
process has put that revision first on ``sys.path`` before importing it), so a workload
builds its models with that revision's own classes. A call is a zero-argument callable, or a
pair ``(prepare, run)``: ``prepare()`` is untimed and its result is passed to ``run`` (a
fresh input per call, e.g. a policy that JAX has not cached). ``quick`` picks sizes that
compile and run in seconds, for a smoke test.

Calls are written in the object form (``jp.Dirichlet(k)``, ``jp.PaperSet(beta)``, ...).
A revision that does not know a spelling fails that workload with its own error message;
the other workloads still run.

This module must not import ``common.py`` (it puts this checkout on ``sys.path``) or the
library at module level: the worker imports it before choosing which package to load.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

WORKLOADS: dict[str, Callable[[Any, bool], dict[str, Any]]] = {}

# Figure 1's privacy parameters (the sweep's k grid)
FIGURE1_KS = (1.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 35.0, 40.0)


def workload(fn: Callable[[Any, bool], dict[str, Any]]) -> Callable[[Any, bool], dict[str, Any]]:
    """Register ``fn`` under its name."""
    WORKLOADS[fn.__name__] = fn
    return fn


def _x64() -> None:
    import jax

    jax.config.update("jax_enable_x64", True)


def _release(jp, mdp, k: float, **privatize_kw):
    """A Dirichlet release of ``mdp`` and its optimal policy (fixed keys)."""
    import jax

    rel = jp.privatize(jax.random.key(4), mdp, jp.Dirichlet(k), **privatize_kw)
    return rel, jp.solve(rel).policy


def _set(jp, name: str, beta: float = 0.1, support_aware: bool = False):
    cls = {"paper": jp.PaperSet, "exact": jp.ExactSet, "certified": jp.CertifiedSet}[name]
    return cls(beta, support_aware=support_aware)


@workload
def tiny(jp, quick: bool) -> dict[str, Any]:
    """Example 2's shape at S = 5: solve and the paper's bounds, eagerly (a smoke test)."""
    import jax

    mdp = jp.examples.random_mdp(jax.random.key(0), 5, 2, horizon=3)
    rel, policy = _release(jp, mdp, 10.0)
    mech, uset = jp.Dirichlet(10.0), jp.PaperSet(0.1)
    return {
        "solve": lambda: jp.solve(rel),
        "cost_of_privacy": lambda: jp.cost_of_privacy(rel, policy, mech, uset),
    }


@workload
def public_call(jp, quick: bool) -> dict[str, Any]:
    """The per-trial target's call: ``cost_of_privacy`` on the LP baseline's problem (Example
    2's generator, S = 20, A = 5, T = 10, float64), eagerly as a user calls it and under
    ``jax.jit`` (the jitted program alone: the difference is the eager boundary's work).
    Each call gets a fresh copy of the policy: a trial's policy is new, and JAX caches an
    array it has copied back once."""
    import jax
    import numpy as np

    _x64()
    mdp = jp.examples.random_mdp(jax.random.key(0), dtype=np.float64)
    p_bar = jp.privatize(jax.random.key(1), mdp, jp.Dirichlet(10.0, sampler="fast"))
    policy = np.asarray(jp.solve(p_bar).policy)
    mech, uset = jp.Dirichlet(10.0), jp.PaperSet(0.1)
    jitted = jax.jit(lambda m, p: jp.cost_of_privacy(m, p, mech, uset))

    def fresh():
        return jax.block_until_ready(jax.device_put(policy))

    return {
        "cost_of_privacy": (fresh, lambda p: jp.cost_of_privacy(p_bar, p, mech, uset)),
        "cost_of_privacy under jit": (fresh, lambda p: jitted(p_bar, p)),
    }


def _sets_calls(jp, rel, policy, k: float, support_aware: bool) -> dict[str, Any]:
    """``jax.jit(evaluate)`` and each uncertainty set's ``cost_of_privacy`` under ``jax.jit``
    as a user writes it."""
    import jax

    ev = jax.jit(jp.evaluate)
    calls = {"evaluate": lambda: ev(rel, policy)}
    for name in ("paper", "exact", "certified"):
        mech, uset = jp.Dirichlet(k), _set(jp, name, support_aware=support_aware)
        f = jax.jit(lambda m, p, mech=mech, uset=uset: jp.cost_of_privacy(m, p, mech, uset))
        calls[name] = lambda f=f: f(rel, policy)
    return calls


def _dense_release(jp, quick: bool, discounted: bool):
    import jax

    S, A, T = (100, 4, 5) if quick else (1000, 4, 20)
    mdp = jp.examples.random_mdp(
        jax.random.key(3),
        S,
        A,
        horizon=None if discounted else T,
        discount=0.9 if discounted else None,
    )
    return _release(jp, mdp, 5.0, support="nonzero")


@workload
def sets(jp, quick: bool) -> dict[str, Any]:
    """Each uncertainty set under ``jax.jit`` next to ``jax.jit(evaluate)`` (target: ≤ 5×), on
    a dense Dirichlet(5) release of Example 2's generator, S = 1000, A = 4, T = 20
    (``support="nonzero"``), with its optimal policy."""
    rel, policy = _dense_release(jp, quick, discounted=False)
    return _sets_calls(jp, rel, policy, 5.0, support_aware=False)


@workload
def sets_aware(jp, quick: bool) -> dict[str, Any]:
    """``sets`` with the support-aware sets."""
    rel, policy = _dense_release(jp, quick, discounted=False)
    return _sets_calls(jp, rel, policy, 5.0, support_aware=True)


@workload
def sets_discounted(jp, quick: bool) -> dict[str, Any]:
    """``sets`` on the same generator with an infinite horizon, γ = 0.9."""
    rel, policy = _dense_release(jp, quick, discounted=True)
    return _sets_calls(jp, rel, policy, 5.0, support_aware=False)


@workload
def sets_sparse(jp, quick: bool) -> dict[str, Any]:
    """``sets`` on a sparse model: 8 random distinct successors a row, Dirichlet(1) rows,
    S = 1000, A = 4, T = 20."""
    import numpy as np

    S, A, T, K = (100, 4, 5, 8) if quick else (1000, 4, 20, 8)
    rng = np.random.default_rng(5)
    idx = np.argsort(rng.random((S, A, S)), axis=-1)[..., :K]
    probs = rng.dirichlet(np.ones(K), size=(S, A))
    mdp = jp.make_sparse_mdp(
        idx,
        probs,
        rng.uniform(0, 1, size=(S, A)),
        terminal_reward=rng.uniform(0, 1, size=S),
        horizon=T,
    )
    rel, policy = _release(jp, mdp, 5.0)
    return _sets_calls(jp, rel, policy, 5.0, support_aware=False)


def _gridworld_calls(jp, grid, k: float) -> dict[str, Any]:
    """A user's eager calls on one gridworld: planning, the paper's bounds, the certified
    support-aware bounds, and (finite horizon) ``synthesize`` with the fast sampler."""
    import jax

    policy = jp.solve(grid).policy
    mech = jp.Dirichlet(k)
    certified = jp.CertifiedSet(0.1, support_aware=True)
    return {
        "solve": lambda: jp.solve(grid),
        "evaluate": lambda: jp.evaluate(grid, policy),
        "cost_of_privacy paper": lambda: jp.cost_of_privacy(grid, policy, mech, jp.PaperSet(0.1)),
        "cost_of_privacy certified aware": lambda: jp.cost_of_privacy(
            grid, policy, mech, certified
        ),
        "synthesize": lambda: jp.synthesize(
            jax.random.key(0), grid, jp.Dirichlet(k, sampler="fast")
        ),
    }


@workload
def sparse(jp, quick: bool) -> dict[str, Any]:
    """Sparse gridworlds (3 successors a row), 50×50 and 300×300, T = 100, γ = 1, k = 50:
    ``solve``, ``evaluate``, ``cost_of_privacy`` (paper's set; certified support-aware) and
    ``synthesize``, each called eagerly."""
    calls = {}
    for side in (8,) if quick else (50, 300):
        grid = jp.examples.gridworld(side, side, horizon=100, discount=1.0)
        for name, fn in _gridworld_calls(jp, grid, 50.0).items():
            calls[f"{side}x{side} {name}"] = fn
    return calls


@workload
def sparse_discounted(jp, quick: bool) -> dict[str, Any]:
    """``synthesize`` (k = 10, fast sampler) on a discounted 300×300 gridworld, γ = 0.95."""
    import jax

    side = 8 if quick else 300
    grid = jp.examples.gridworld(side, side, discount=0.95)
    mech = jp.Dirichlet(10.0, sampler="fast")
    return {"synthesize": lambda: jp.synthesize(jax.random.key(0), grid, mech)}


@workload
def sparse_sweep(jp, quick: bool) -> dict[str, Any]:
    """The Figure-1 sweep (9 k × 4 trials, ``sweep``'s defaults) of a 100×100 gridworld,
    T = 200, γ = 1: seconds a call, so run it with few rounds."""
    import jax

    side, trials = (8, 1) if quick else (100, 4)
    grid = jp.examples.gridworld(side, side, horizon=200, discount=1.0)
    grid_mech = jp.Dirichlet.grid(FIGURE1_KS)
    return {"sweep": lambda: jp.sweep(jax.random.key(0), grid, grid_mech, num_trials=trials).cost}


@workload
def mdp_guarantee(jp, quick: bool) -> dict[str, Any]:
    """The accounting of a gridworld of S = 10⁶ (1000×1000, A = 4): k = 10, b = 0.1, each
    row's own minimum (``eta=None``), ``target_delta = 1e-6``, one row adjacent and every
    row adjacent. Seconds a call: run it with few rounds."""
    side = 10 if quick else 1000
    grid = jp.examples.gridworld(side, side)

    def call(scope: str):
        adjacency = jp.privacy.Adjacency(b=0.1, scope=scope)
        g = jp.privacy.mdp_guarantee(10.0, grid, adjacency, target_delta=1e-6)
        return g.epsilon, g.delta, g.num_rows

    return {"row": lambda: call("row"), "all": lambda: call("all")}


@workload
def beta_lookup(jp, quick: bool) -> dict[str, Any]:
    """The exact/certified sets' Beta box lookup (``sets._beta.intervals``, a library
    internal) under ``jax.jit`` on what a dense release holds: ``R = S·A`` rows of ``S``
    entries, each a Dirichlet(5/S) draw (some 65 % exactly 0 in float32), with the tables of
    k = 5 at the certified level 0.1 / (2 R S); the pair ``(lower, upper)`` and
    ``(lower, upper - lower)`` as the boxes use it, float32 and float64."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    _x64()
    beta = importlib.import_module(jp.__name__ + ".sets._beta")
    rows, size = (400, 100) if quick else (4000, 1000)
    level = 0.1 / (2 * rows * size)
    draw = np.random.default_rng(0).dirichlet(np.full(size, 5.0 / size), size=rows)
    pair = jax.jit(beta.intervals)

    @jax.jit
    def caps(x, t):
        lower, upper = beta.intervals(x, t)
        return lower, upper - lower

    calls = {}
    for dtype in ("float32", "float64"):
        x = jnp.asarray(draw, dtype)
        t = beta.BetaTables(*map(jnp.asarray, beta.host_tables(5.0, level, dtype)))
        calls[f"pair {dtype}"] = lambda x=x, t=t: pair(x, t)
        calls[f"caps {dtype}"] = lambda x=x, t=t: caps(x, t)
    return calls


@workload
def sparse_kernel(jp, quick: bool) -> dict[str, Any]:
    """One stage of the sparse robust kernel (``planning._kernel.checked_backup``, a library
    internal) on a 300×300 gridworld with one decision per state: the paper's box of
    half-width 0.05 with and without ``support_aware``, next to the plain expectation (a
    gather and a dot, ``evaluate``'s stage)."""
    import jax
    import jax.numpy as jnp

    kernel = importlib.import_module(jp.__name__ + ".planning._kernel")
    rows_mod = importlib.import_module(jp.__name__ + ".models._rows")
    boxes = importlib.import_module(jp.__name__ + ".sets._boxes")
    side = 20 if quick else 300
    m = jp.examples.gridworld(side, side)
    rows = rows_mod.Rows(m.probs[:, 0], m.next_states[:, 0])
    alpha = jnp.float32(0.05)
    box = boxes.RowBox(
        jnp.maximum(rows.probs - alpha, 0), jnp.minimum(rows.probs + alpha, 1), alpha, 0.01
    )
    v_low = jax.random.uniform(jax.random.key(0), (m.num_states,))
    v_high = v_low + 0.1
    calls = {}
    for aware in (False, True):
        f = jax.jit(
            lambda r, b, lo, hi, aware=aware: kernel.checked_backup(
                r, b, lo, hi, width=32, support_aware=aware
            )
        )
        calls[f"backup support_aware={aware}"] = lambda f=f: f(rows, box, v_low, v_high)
    expect = jax.jit(lambda r, v: jnp.sum(r.probs * v[rows_mod.successors(r)], axis=-1))
    calls["expectation"] = lambda: expect(rows, v_low)
    return calls


def _check_calls(jp, cases, releases: int = 0) -> dict[str, Any]:
    """``jp.check`` (float64, its second call: compiled) on ``bench_check.py``'s cases, the
    models built by stormpy from ``check_models.py``'s sources; with ``releases``, on a
    batch of that many Dirichlet(1000) releases of each (``bench_check_batch.py``'s)."""
    import os
    import sys
    import tempfile

    import jax
    import numpy as np

    _x64()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from check_models import family_source

    calls = {}
    folder = tempfile.mkdtemp()
    for case in cases:
        text, constants = family_source(case.family, case.constants)
        path = os.path.join(folder, f"{case.family}.prism")
        with open(path, "w") as f:
            f.write(text)
        built = jp.load_prism(
            path, constants=constants or None, reward_structure=case.reward, dtype=np.float64
        )

        model = built.model
        if releases:
            keys = jax.random.split(jax.random.key(0), releases)
            privatize = lambda k, m=model: jp.privatize(  # noqa: E731
                k, m, jp.Dirichlet(1000.0), support="nonzero"
            )
            model = jax.vmap(privatize)(keys)

        def call(m=model, labels=built.labels, case=case):
            return jp.check(m, case.prop, labels=labels, reward_name=case.reward).values

        calls[f"{case.family}[{case.constants}] {case.prop}"] = call
    return calls


@workload
def check(jp, quick: bool) -> dict[str, Any]:
    """``jp.check`` on ``bench_check.py``'s quick set (10³ states: the fixed costs of a
    check), and with ``quick`` False also its medium set (10⁴–10⁵ states)."""
    from bench_check import MEDIUM, QUICK

    return _check_calls(jp, QUICK if quick else QUICK + MEDIUM)


@workload
def check_batch(jp, quick: bool) -> dict[str, Any]:
    """``jp.check`` on 32 releases of ``bench_check_batch.py``'s models (with ``quick``: its
    two of 10³ states only), one call for the batch (the times are the batch's: ÷ 32 for a
    model's)."""
    from bench_check_batch import CASES

    cases = CASES[:2] if quick else CASES
    return _check_calls(jp, cases, releases=32)

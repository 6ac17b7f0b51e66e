"""Shared strict numerics, small random MDPs and independent oracles for the core tests.

Sizes are fixed (``S = 5``, ``A = 3``, ``T = 4``) so that the jit caches are shared across
tests: compilation, not computation, dominates the run time.
"""

import gc
import os

import jax
import numpy as np
import pytest
from jax.extend import core as jex_core
from scipy.optimize import linprog

import jaxprivmdp as jp

jax.config.update("jax_numpy_rank_promotion", "raise")

FAST_COMPILE = "--xla_backend_optimization_level=0"

# The tiers besides the unit tier (registered in pyproject.toml). A test marked with none of
# them is marked ``unit``; the README's ``python -m pytest`` runs ``-m unit``.
TIERS = ("slow", "integration", "statistical", "cli", "prism", "notebook", "multiprocess")


def pytest_configure(config):
    """Without ``-m``, ``python -m pytest`` runs the unit tier (``-m unit``), and test paths
    named on the command line (``pytest tests/test_cli.py``) run their tests of every tier
    but slow (``-m "not slow"``). Here, not in pyproject's addopts, so that a run of
    ``benchmarks/`` (which this file does not reach) selects its benchmarks.

    Tests compile with XLA's backend optimization level 0 (``XLA_FLAGS``): compilation
    dominates every tier, the slow one included (about 30 % less CPU time on the unit tier,
    23 % on the slow tests). ``JAXPRIVMDP_TEST_FULL_OPT=1`` keeps XLA's default build (CI's
    numerical-core passes, float32 and float64). Set before any test module creates an
    array, so the backend starts with it; subprocesses inherit it; an optimization level
    already in ``XLA_FLAGS`` is kept.
    """
    given_m = any(a == "-m" or a.startswith("-m") for a in config.invocation_params.args)
    if not config.option.markexpr and not given_m:  # `-m ""` selects everything
        named_paths = config.args_source == pytest.Config.ArgsSource.ARGS
        config.option.markexpr = "not slow" if named_paths else "unit"
    flags = os.environ.get("XLA_FLAGS", "")
    if os.environ.get("JAXPRIVMDP_TEST_FULL_OPT"):
        return
    if "xla_backend_optimization_level" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {FAST_COMPILE}".strip()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Mark ``unit`` every test that no tier claims (before ``-m`` deselects)."""
    for item in items:
        if not any(item.get_closest_marker(tier) for tier in TIERS):
            item.add_marker(pytest.mark.unit)


S, A, T = 5, 3, 4
GAMMA = 0.9

# --------------------------------------------------------------------------- jaxprs


def sub_jaxprs(value):
    """Every Jaxpr in a primitive's parameter: a (Closed)Jaxpr, or lists/tuples/dicts of them."""
    if isinstance(value, jex_core.ClosedJaxpr):
        yield value.jaxpr
    elif isinstance(value, jex_core.Jaxpr):
        yield value
    elif isinstance(value, (tuple, list)):  # also NamedTuples (custom_linear_solve's jaxprs)
        for item in value:
            yield from sub_jaxprs(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from sub_jaxprs(item)


def equations(jaxpr):
    """Every equation of ``jaxpr`` and of its sub-jaxprs (scan, while, cond, pjit, ...)."""
    for eqn in jaxpr.eqns:
        yield eqn
        for value in eqn.params.values():
            for sub in sub_jaxprs(value):
                yield from equations(sub)


# --------------------------------------------------------------------------- random MDPs


def random_arrays(seed, *, num_states=S, num_actions=A, masked=False, concentration=1.0):
    """``(P, R, R_T, mask)`` in float64 NumPy; masked rows hold junk the library must ignore."""
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.full(num_states, concentration), size=(num_states, num_actions))
    P /= P.sum(-1, keepdims=True)
    R = rng.uniform(0, 1, size=(num_states, num_actions))
    RT = rng.uniform(0, 1, size=num_states)
    mask = np.ones((num_states, num_actions), bool)
    if masked:
        mask = rng.uniform(size=(num_states, num_actions)) < 0.6
        mask[np.arange(num_states), rng.integers(0, num_actions, num_states)] = True
        mask[0, 0] = False  # at least one masked entry, and state 0 loses its lowest action
        mask[0, 1] = True
        # Junk a masked row may hold: rows that are not distributions, huge rewards.
        P[~mask] = 0.0
        R[~mask] = 1e6
    return P, R, RT, mask


def build_mdp(seed=0, *, horizon=T, masked=False, initial_state=0, dtype=None, **kw):
    P, R, RT, mask = random_arrays(seed, masked=masked, **kw)
    if horizon is None:
        return jp.make_mdp(
            P, R, discount=GAMMA, action_mask=mask, initial_state=initial_state, dtype=dtype
        )
    return jp.make_mdp(
        P,
        R,
        terminal_reward=RT,
        horizon=horizon,
        discount=1.0 if seed % 2 == 0 else GAMMA,
        action_mask=mask,
        initial_state=initial_state,
        dtype=dtype,
    )


# Each compiled XLA:CPU program keeps a few memory mappings; a test worker that compiles
# thousands of programs crosses Linux's vm.max_map_count (65,530 by default) and crashes in
# its next compilation (a segfault in backend_compile). Past this many mappings, the
# compiled programs are dropped between test files (recompiled where needed).
MAX_MAPPINGS = 30_000


def _mappings() -> int:
    try:
        with open("/proc/self/maps", "rb") as f:
            return sum(1 for _ in f)
    except OSError:  # not Linux: no such limit to watch
        return 0


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    yield
    if _mappings() > MAX_MAPPINGS:
        jax.clear_caches()
        gc.collect()


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def finite_mdp():
    return build_mdp(0)


@pytest.fixture
def infinite_mdp():
    return build_mdp(1, horizon=None)


@pytest.fixture
def masked_finite_mdp():
    return build_mdp(2, masked=True)


@pytest.fixture
def masked_infinite_mdp():
    return build_mdp(3, horizon=None, masked=True)


@pytest.fixture(params=["finite", "infinite", "masked_finite", "masked_infinite"])
def any_mdp(request):
    return request.getfixturevalue(f"{request.param}_mdp")


# --------------------------------------------------------------------------- CLI inputs

# A 3-state MDP in PRISM's explicit format (written here, not copied): the .lab's init is
# state 1, which earns 10 per step; state 0 chooses between a fair coin over {1, 2} and
# staying.
PRISM_TRA = """3 4 5
0 0 1 0.5
0 0 2 0.5
1 0 1 1
2 0 2 1
0 1 0 1
"""
PRISM_SREW = """3 2
1 10
2 1
"""
PRISM_LAB = """0="init" 1="goal"
1: 0
"""


@pytest.fixture
def prism_model(tmp_path):
    """``tmp_path / "m.tra"`` with its ``m.srew`` and ``m.lab`` beside it."""
    for name, text in (("m.tra", PRISM_TRA), ("m.srew", PRISM_SREW), ("m.lab", PRISM_LAB)):
        (tmp_path / name).write_text(text)
    return tmp_path / "m.tra"


def to_numpy(mdp):
    """The MDP's arrays as float64 NumPy, for the oracles."""
    return dict(
        P=np.asarray(mdp.transitions, np.float64),
        R=np.asarray(mdp.rewards, np.float64),
        RT=np.asarray(mdp.terminal_reward, np.float64),
        gamma=float(mdp.discount),
        mask=np.asarray(mdp.action_mask),
        horizon=mdp.horizon,
    )


def random_stochastic_policy(seed, mask, lead=()):
    """`[*lead, S, A]` probabilities over the allowed actions (float32)."""
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.1, 1.0, size=lead + mask.shape) * mask
    w = w / w.sum(-1, keepdims=True)
    return w.astype(np.float32)


# --------------------------------------------------------------------------- oracles


def lp_inner(v, p_bar, alpha, beta, maximize=False):
    """The paper's LP (P) written out literally and solved by HiGHS.

    Variables ``x = [P1, P2, p]`` (``3n``). Equalities ``1ᵀP1 = 1``, ``1ᵀP2 = 1``,
    ``1ᵀp = 1`` and ``βP1 + (1 − β)P2 − p = 0``; inequalities ``P2 − p̄ <= α`` and
    ``−(P2 − p̄) <= α``; bounds ``P1, P2, p >= 0``. Objective ``± vᵀp``.
    """
    v = np.asarray(v, np.float64)
    p_bar = np.asarray(p_bar, np.float64)
    n = v.size
    eye, zero = np.eye(n), np.zeros((n, n))
    ones, zeros = np.ones(n), np.zeros(n)
    c = np.concatenate([zeros, zeros, -v if maximize else v])
    A_eq = np.vstack(
        [
            np.concatenate([ones, zeros, zeros]),
            np.concatenate([zeros, ones, zeros]),
            np.concatenate([zeros, zeros, ones]),
            np.hstack([beta * eye, (1 - beta) * eye, -eye]),
        ]
    )
    b_eq = np.concatenate([[1.0, 1.0, 1.0], zeros])
    A_ub = np.vstack([np.hstack([zero, eye, zero]), np.hstack([zero, -eye, zero])])
    b_ub = np.concatenate([p_bar + alpha, alpha - p_bar])
    res = linprog(
        c,
        A_ub=A_ub,
        b_ub=b_ub,
        A_eq=A_eq,
        b_eq=b_eq,
        bounds=[(0, None)] * (3 * n),
        method="highs",
    )
    assert res.status == 0, res.message
    return -res.fun if maximize else res.fun


def greedy_inner(v, p_bar, alpha, beta, maximize=False):
    """NumPy loop version of the inner problem (fractional knapsack), for long iterations.

    Written independently of the library; the tests check it against :func:`lp_inner`.
    """
    v = np.asarray(v, np.float64)
    w = -v if maximize else v
    lo = np.maximum(p_bar - alpha, 0.0)
    hi = np.minimum(p_bar + alpha, 1.0)
    x = lo.copy()
    left = 1.0 - lo.sum()
    for j in np.argsort(w, kind="stable"):
        add = min(max(left, 0.0), hi[j] - lo[j])
        x[j] += add
        left -= add
    val = beta * w.min() + (1 - beta) * float(x @ w)
    return -val if maximize else val


def np_backward_induction(P, R, RT, gamma, mask, horizon):
    """Plain loops: ``V_t(s) = max_{a ∈ A_s} r + γ P V_{t+1}``; ties go to the lowest a."""
    S_, A_ = R.shape
    V = np.zeros((horizon + 1, S_))
    V[horizon] = RT
    Q = np.full((horizon, S_, A_), -np.inf)
    pol = np.zeros((horizon, S_), int)
    for t in reversed(range(horizon)):
        for s in range(S_):
            for a in range(A_):
                if mask[s, a]:
                    Q[t, s, a] = R[s, a] + gamma * P[s, a] @ V[t + 1]
            best = -np.inf
            for a in range(A_):
                if Q[t, s, a] > best:
                    best, pol[t, s] = Q[t, s, a], a
            V[t, s] = best
    return pol, V, Q


def np_value_iteration(P, R, gamma, mask, tol=1e-13):
    """Value iteration in float64 to ``tol``; returns ``(V*, Q*)``."""
    S_, A_ = R.shape
    V = np.zeros(S_)
    for _ in range(100_000):
        Q = np.where(mask, R + gamma * np.einsum("sat,t->sa", P, V), -np.inf)
        V_new = Q.max(-1)
        if np.max(np.abs(V_new - V)) < tol:
            V = V_new
            break
        V = V_new
    Q = np.where(mask, R + gamma * np.einsum("sat,t->sa", P, V), -np.inf)
    return V, Q


def np_policy_matrices(P, R, policy):
    """``(P_π, r_π)`` for an `[S]` int or `[S, A]` float decision rule."""
    policy = np.asarray(policy)
    S_, A_ = R.shape
    if np.issubdtype(policy.dtype, np.integer):
        policy = np.eye(A_)[policy]
    policy = policy.astype(np.float64)
    P_pi = np.zeros((S_, S_))
    r_pi = np.zeros(S_)
    for s in range(S_):
        for a in range(A_):
            if policy[s, a] > 0:
                P_pi[s] += policy[s, a] * P[s, a]
                r_pi[s] += policy[s, a] * R[s, a]
    return P_pi, r_pi


def np_evaluate(P, R, RT, gamma, policy, horizon):
    """Exact values of a policy: backward recursion or ``(I − γ P_π)⁻¹ r_π``."""
    if horizon is None:
        P_pi, r_pi = np_policy_matrices(P, R, policy)
        return np.linalg.solve(np.eye(len(r_pi)) - gamma * P_pi, r_pi)
    V = np.zeros((horizon + 1, R.shape[0]))
    V[horizon] = RT
    for t in reversed(range(horizon)):
        P_pi, r_pi = np_policy_matrices(P, R, np.asarray(policy)[t])
        V[t] = r_pi + gamma * P_pi @ V[t + 1]
    return V


def aligned_copy(x: np.ndarray) -> np.ndarray:
    """A copy of ``x`` at a 64-byte-aligned address: where ``jax.device_put`` on a CPU keeps
    a view of a NumPy buffer instead of copying it (a model built from it must not)."""
    buf = np.empty(x.nbytes + 64, np.uint8)
    start = -buf.ctypes.data % 64
    out = buf[start : start + x.nbytes].view(x.dtype).reshape(x.shape)
    out[...] = x
    return out

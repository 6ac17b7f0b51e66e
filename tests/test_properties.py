"""Property-based tests (hypothesis) of the library's invariants, against outside oracles.

1. ``robust_expectation`` (the greedy) equals the optimum of the paper's LP (P), written out
   over ``(P1, P2)`` and solved by SciPy's HiGHS.
2. ``dirichlet_mechanism(support="nonzero")`` returns rows on the simplex with the input's
   support, and zeros on masked rows, for both samplers.
3. ``v̲ <= V̄ <= v̄`` for ``synthesize`` and, on the privatized MDP, for any policy
   (:func:`jaxprivmdp.evaluate` is the value the bounds must bracket).
4. The bounds are monotone in the uncertainty set: a larger ``α`` (smaller ``k``) never
   raises ``v̲`` nor lowers ``v̄``.
5. ``robust_expectation``: jit == eager, vmap == a Python loop.

Hypothesis runs derandomized and without an example database (the profile below), so CI
sees the same examples every run. Shapes are fixed where the property allows it: compiling,
not computing, dominates the run time, and fixed shapes keep the jit caches warm.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, target
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.optimize import linprog

import jaxprivmdp as jp

settings.register_profile(
    "jaxprivmdp-properties",
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=50,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
PROFILE = settings.get_profile("jaxprivmdp-properties")  # not loaded: other files keep theirs

# --------------------------------------------------------------------------- strategies

BETAS = st.one_of(
    st.floats(1e-12, 1e-3),  # near 0: almost all weight on the box around p̄
    st.floats(1e-3, 1 - 1e-3),
    st.floats(1 - 1e-3, 1 - 1e-12),  # near 1: almost all weight on the free P1
)
ALPHAS = st.one_of(
    st.just(0.0),
    st.floats(1e-12, 1e-6),  # tiny: P2 pinned to p̄ up to rounding
    st.floats(0.0, 1.0),
    st.floats(1.0, 10.0),  # >= 1: the box constrains nothing
)
# Log-uniform k over the range the brief asks for, with its end points.
KS = st.one_of(st.sampled_from([1e-3, 1e6]), st.floats(-3.0, 6.0).map(lambda e: 10.0**e))


@st.composite
def simplex_rows(draw, n, *, tiny=1e-30):
    """One float64 row on the simplex of size ``n``: exact zeros, tiny and equal entries."""
    weight = st.one_of(
        st.just(0.0), st.just(tiny), st.just(1.0), st.floats(1e-9, 1.0), st.floats(0.0, 1.0)
    )
    w = np.array(draw(st.lists(weight, min_size=n, max_size=n)), np.float64)
    if not w.sum() > 0:
        w[draw(st.integers(0, n - 1))] = 1.0
    return w / w.sum()


@st.composite
def value_vectors(draw, n):
    """``[n]`` values with many ties (a small pool) at scales from 1e-6 to 1e6."""
    pool = st.one_of(st.sampled_from([-1.0, 0.0, 0.5, 1.0]), st.floats(-1.0, 1.0))
    scale = draw(st.sampled_from([1e-6, 1.0, 1e3, 1e6]))
    return scale * np.array(draw(st.lists(pool, min_size=n, max_size=n)), np.float64)


@st.composite
def inner_problems(draw, n=None):
    """``(v, p̄, α, β)`` of the inner problem, ``n`` in 1..8 unless given."""
    n = draw(st.integers(1, 8)) if n is None else n
    return draw(value_vectors(n)), draw(simplex_rows(n)), draw(ALPHAS), draw(BETAS)


@st.composite
def masks(draw, num_states, num_actions):
    """`[S, A]` bool with at least one allowed action per state."""
    mask = draw(hnp.arrays(np.bool_, (num_states, num_actions)))
    for s in range(num_states):
        mask[s, draw(st.integers(0, num_actions - 1))] = True
    return mask


def _normal(x: np.ndarray) -> np.ndarray:
    """``x`` with the numbers below float32's smallest normal made 0: models refuse them (XLA
    flushes them to zero); the change is far inside the row-sum tolerance."""
    return np.where(np.abs(x) < np.finfo(np.float32).tiny, 0.0, x)


@st.composite
def mdps(draw, num_states, num_actions, horizon):
    """A float32 MDP with structural zeros, masked actions with junk rows, any discount."""
    P = np.stack(
        [
            np.stack([draw(simplex_rows(num_states)) for _ in range(num_actions)])
            for _ in range(num_states)
        ]
    )
    mask = draw(masks(num_states, num_actions))
    R = draw(hnp.arrays(np.float64, (num_states, num_actions), elements=st.floats(-10, 10)))
    P[~mask] = 0.0  # junk the library must ignore: not a distribution, huge rewards
    R[~mask] = 1e6
    P, R = _normal(P), _normal(R)
    if horizon is None:
        discount = draw(st.floats(0.0, 0.95))
        return jp.make_mdp(P, R, discount=discount, action_mask=mask)
    RT = _normal(draw(hnp.arrays(np.float64, (num_states,), elements=st.floats(-10, 10))))
    discount = draw(st.one_of(st.just(1.0), st.floats(0.0, 1.0)))
    return jp.make_mdp(
        P, R, terminal_reward=RT, horizon=horizon, discount=discount, action_mask=mask
    )


@st.composite
def policies(draw, mdp):
    """A random deterministic (`[T, S]` / `[S]` ints) or stochastic policy on allowed actions."""
    mask = np.asarray(mdp.action_mask)
    lead = (mdp.horizon,) if mdp.is_finite_horizon else ()
    if draw(st.booleans()):
        allowed = [np.flatnonzero(m) for m in mask]
        choice = [
            [draw(st.sampled_from(list(allowed[s]))) for s in range(mdp.num_states)]
            for _ in range(int(np.prod(lead, dtype=int)))
        ]
        return np.array(choice, np.int32).reshape(lead + (mdp.num_states,))
    w = draw(
        hnp.arrays(
            np.float64, lead + mask.shape, elements=st.one_of(st.just(0.0), st.floats(0.0, 1.0))
        )
    )
    w = np.where(mask, w, 0.0)
    empty = w.sum(-1) == 0  # states left without mass: uniform over their allowed actions
    w = np.where(empty[..., None], mask.astype(np.float64), w)
    return (w / w.sum(-1, keepdims=True)).astype(np.float32)


# --------------------------------------------------------------------------- oracles


def lp_value(v, p_bar, alpha, beta, *, maximize):
    """Problem (P) literally, over ``x = [P1, P2]`` (``2n`` variables), solved by HiGHS.

    ``min/max (β P1 + (1 − β) P2)·v`` s.t. ``1ᵀP1 = 1``, ``1ᵀP2 = 1``, ``P2 − p̄ <= α``,
    ``p̄ − P2 <= α``, ``P1, P2 >= 0``.
    """
    n = v.size
    sign = -1.0 if maximize else 1.0
    # HiGHS's optimality tolerances are absolute: scale the objective to max |c| = 1 (the
    # optimal set does not change) or at |v| ~ 1e-6 it stops at a vertex 1e-9 off.
    scale = scale_of(v) or 1.0
    c = sign * np.concatenate([beta * v, (1 - beta) * v]) / scale
    ones, zeros = np.ones(n), np.zeros(n)
    A_eq = np.stack([np.concatenate([ones, zeros]), np.concatenate([zeros, ones])])
    eye, zero = np.eye(n), np.zeros((n, n))
    A_ub = np.vstack([np.hstack([zero, eye]), np.hstack([zero, -eye])])
    b_ub = np.concatenate([p_bar + alpha, alpha - p_bar])
    res = linprog(
        c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=[1.0, 1.0], bounds=(0, None), method="highs"
    )
    assert res.status == 0, res.message
    return sign * scale * res.fun


@jax.jit
def both_jit(v, p_bar, alpha, beta):
    return (
        jp.robust_expectation(v, p_bar, alpha=alpha, beta=beta),
        jp.robust_expectation(v, p_bar, alpha=alpha, beta=beta, maximize=True),
    )


def scale_of(*arrays):
    return max(float(np.max(np.abs(np.asarray(a, np.float64)))) for a in arrays)


# --------------------------------------------------------------------------- 1. greedy = LP


@pytest.mark.integration
@settings(PROFILE)
@given(inner_problems())
def test_greedy_equals_lp(problem):
    v, p_bar, alpha, beta = problem
    with jax.enable_x64(True):
        low, high = (float(x) for x in both_jit(v, p_bar, alpha, beta))
    # HiGHS's feasibility tolerance is absolute (1e-7) in the probabilities.
    tol = 1e-7 * v.size * scale_of(v)
    assert low == pytest.approx(lp_value(v, p_bar, alpha, beta, maximize=False), rel=0, abs=tol)
    assert high == pytest.approx(lp_value(v, p_bar, alpha, beta, maximize=True), rel=0, abs=tol)


# --------------------------------------------------------------------------- 2. the mechanism

MS, MA = 4, 3  # mechanism shape `[MS, MA, MS]`, fixed: one compilation per sampler and dtype


@st.composite
def mechanism_inputs(draw):
    rows = []
    for _ in range(MS * MA):
        kind = draw(st.sampled_from(["generic", "one-point", "tiny"]))
        if kind == "one-point":
            row = np.zeros(MS)
            row[draw(st.integers(0, MS - 1))] = 1.0
        elif kind == "tiny":  # entries of 1e-30 next to ordinary ones
            row = draw(simplex_rows(MS, tiny=1e-30))
            row[draw(st.integers(0, MS - 1))] = 1e-30
            row /= row.sum()
        else:
            row = draw(simplex_rows(MS))
        rows.append(row)
    P = np.stack(rows).reshape(MS, MA, MS)
    mask = draw(masks(MS, MA))
    junk = draw(st.sampled_from([0.0, -1.0, 0.7]))
    P[~mask] = junk  # masked rows need not be distributions
    return P, mask


@pytest.mark.statistical
@settings(PROFILE)
@given(
    mechanism_inputs(),
    KS,
    st.sampled_from(["jax", "fast"]),
    st.sampled_from([np.float32, np.float64]),
    st.integers(0, 2**32 - 1),
)
def test_mechanism_rows_on_simplex_with_input_support(inputs, k, sampler, dtype, seed):
    P, mask = inputs
    P = P.astype(dtype)
    with jax.enable_x64(dtype == np.float64):
        out = jp.dirichlet_mechanism(
            jax.random.key(seed),
            P,
            jp.Dirichlet(k, sampler=sampler),
            support="nonzero",
            action_mask=mask,
        )
        out = np.asarray(out)
    assert out.dtype == dtype and out.shape == P.shape
    assert np.all(out >= 0), out  # also no NaN
    np.testing.assert_array_equal(out[~mask], 0.0)
    allowed = np.broadcast_to(mask[..., None], P.shape)
    outside = allowed & (P == 0)
    np.testing.assert_array_equal(out[outside], 0.0)
    np.testing.assert_allclose(out[mask].sum(-1), 1.0, rtol=0, atol=8 * np.finfo(dtype).eps)
    # A one-point support stays put, exactly.
    single = mask & ((P > 0).sum(-1) == 1)
    np.testing.assert_array_equal(out[single], (P[single] > 0).astype(dtype))


# --------------------------------------------------------------------------- 3. v̲ <= V̄ <= v̄


def assert_brackets(low, value, high, what):
    low, value, high = (np.asarray(x, np.float64) for x in (low, value, high))
    assert low.shape == value.shape == high.shape, what
    assert np.all(np.isfinite(low)) and np.all(np.isfinite(high)), what
    scale = 1 + scale_of(low, value, high)
    slack = 1e-5 * scale  # float32 rounding of the recursions
    # Steer the search towards violations (hypothesis maximizes these).
    target(float(np.max(low - value)) / scale, label=f"{what}: v̲ − V")
    target(float(np.max(value - high)) / scale, label=f"{what}: V − v̄")
    assert np.all(low <= value + slack), (what, low - value)
    assert np.all(value <= high + slack), (what, value - high)


def check_synthesis_brackets(data, mdp):
    k, beta = data.draw(KS, "k"), data.draw(BETAS, "beta")
    seed = data.draw(st.integers(0, 2**32 - 1), "seed")
    out = jp.synthesize(
        jax.random.key(seed), mdp, jp.Dirichlet(k), jp.PaperSet(beta), support="nonzero"
    )
    assert_brackets(out.lower, out.private_values, out.upper, "synthesize")
    assert float(out.cost) >= 0
    # On the privatized MDP the bounds bracket the value of any policy, not only π̄.
    private = dataclasses.replace(mdp, transitions=out.private_transitions)
    policy = data.draw(policies(private), "policy")
    b = jp.cost_of_privacy(private, policy, jp.Dirichlet(k), jp.PaperSet(beta))
    assert_brackets(b.lower, jp.evaluate(private, policy), b.upper, "any policy")
    assert float(b.cost) >= 0


@pytest.mark.statistical
@settings(PROFILE, max_examples=25)
@given(st.sampled_from([3, None]).flatmap(lambda h: mdps(4, 3, h)), st.data())
def test_bounds_bracket_private_values(mdp, data):
    """Fixed shape `[4, 3]` (varied effective sizes through masks and structural zeros)."""
    check_synthesis_brackets(data, mdp)


# Shapes at the edges of S in 2..5, A in 1..3, T in 1..4 or infinite. Each costs a
# compilation of seconds, so three of them rather than all 60 combinations.
SHAPES = [(2, 1, 1), (3, 2, None), (5, 3, 2)]


@pytest.mark.slow
@settings(PROFILE, max_examples=8)
@given(st.sampled_from(SHAPES).flatmap(lambda shape: mdps(*shape)), st.data())
def test_bounds_bracket_private_values_other_shapes(mdp, data):
    check_synthesis_brackets(data, mdp)


# --------------------------------------------------------------------------- 4. monotone in α


@pytest.mark.integration
@settings(PROFILE, max_examples=30)
@given(mdps(4, 3, 3), st.data())
def test_bounds_monotone_in_alpha(mdp, data):
    """A smaller ``k`` (larger ``α``, a larger set ``P̂``): ``v̲`` not larger, ``v̄`` not smaller."""
    k_small, k_large = sorted((data.draw(KS, "k1"), data.draw(KS, "k2")))
    beta = data.draw(BETAS, "beta")
    policy = data.draw(policies(mdp), "policy")
    wide = jp.cost_of_privacy(mdp, policy, jp.Dirichlet(k_small), jp.PaperSet(beta))
    tight = jp.cost_of_privacy(mdp, policy, jp.Dirichlet(k_large), jp.PaperSet(beta))
    scale = 1 + scale_of(wide.lower, wide.upper)
    slack = 1e-5 * scale
    target(float(np.max(wide.lower - tight.lower)) / scale, label="v̲ rises")
    target(float(np.max(tight.upper - wide.upper)) / scale, label="v̄ falls")
    assert np.all(np.asarray(wide.lower) <= np.asarray(tight.lower) + slack)
    assert np.all(np.asarray(wide.upper) >= np.asarray(tight.upper) - slack)
    assert float(wide.cost) >= float(tight.cost) - 2 * slack


@settings(PROFILE)
@given(inner_problems(), ALPHAS)
def test_inner_problem_monotone_in_alpha(problem, other_alpha):
    """The same at the level of one row, in float64: nested sets, monotone optima."""
    v, p_bar, alpha, beta = problem
    a_small, a_large = sorted((alpha, other_alpha))
    with jax.enable_x64(True):
        low_s, high_s = (float(x) for x in both_jit(v, p_bar, a_small, beta))
        low_l, high_l = (float(x) for x in both_jit(v, p_bar, a_large, beta))
    tol = 1e-12 * scale_of(v)
    assert low_l <= low_s + tol and high_l >= high_s - tol
    # p̄ itself is in every set (Lemma 2's first claim).
    mid = float(v @ p_bar)
    assert low_l <= mid + tol and mid <= high_l + tol


# --------------------------------------------------------------------------- 5. jit, vmap

BATCH, WIDTH = 4, 6  # fixed `[BATCH, WIDTH]` inputs for the batching properties


@st.composite
def batches(draw):
    items = [draw(inner_problems(WIDTH)) for _ in range(BATCH)]
    return tuple(np.array(x) for x in zip(*items, strict=True))


def eager_both(v, p_bar, alpha, beta):
    return (
        jp.robust_expectation(v, p_bar, alpha=alpha, beta=beta),
        jp.robust_expectation(v, p_bar, alpha=alpha, beta=beta, maximize=True),
    )


@pytest.mark.statistical
@settings(PROFILE, max_examples=30)
@given(batches(), st.sampled_from([np.float32, np.float64]))
def test_jit_equals_eager_and_vmap_equals_loop(batch, dtype):
    v, p_bar, alpha, beta = batch
    v, p_bar = v.astype(dtype), p_bar.astype(dtype)
    with jax.enable_x64(dtype == np.float64):
        alpha, beta = jnp.asarray(alpha, dtype), jnp.asarray(beta, dtype)
        eager = np.asarray(eager_both(v, p_bar, alpha, beta))
        jitted = np.asarray(both_jit(v, p_bar, alpha, beta))
        vmapped = np.asarray(jax.vmap(both_jit)(v, p_bar, alpha, beta))
        looped = np.stack(
            [np.asarray(eager_both(v[i], p_bar[i], alpha[i], beta[i])) for i in range(BATCH)],
            axis=-1,
        )
    assert eager.shape == jitted.shape == vmapped.shape == looped.shape == (2, BATCH)
    tol = 4 * np.finfo(dtype).eps * scale_of(v)  # XLA may fuse and reorder the sums
    np.testing.assert_allclose(jitted, eager, rtol=0, atol=tol)
    np.testing.assert_allclose(vmapped, looped, rtol=0, atol=tol)
    np.testing.assert_allclose(eager, looped, rtol=0, atol=tol)

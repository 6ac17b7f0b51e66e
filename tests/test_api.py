"""The JAX-native public API: every public function under jit, vmap and grad, and the
regressions a new user found (float64 mode, overflow, complex input, keys, accounting)."""

import dataclasses

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import build_mdp

import jaxprivmdp as jp
from jaxprivmdp.planning import _bellman as _planning
from jaxprivmdp.planning import _bounds
from jaxprivmdp.privacy import _special

pytestmark = pytest.mark.integration

KS = jnp.asarray([1.0, 5.0, 40.0])
KEY = jax.random.key(0)


@pytest.fixture(scope="module")
def mdp():
    return build_mdp(0)


@pytest.fixture(scope="module")
def imdp():
    return build_mdp(1, horizon=None)


def _close(a, b, **kw):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), **kw)


# ----------------------------------------------------------------------------- jit, vmap


def test_synthesize_under_jit_and_vmap_over_keys_k_beta_and_model(mdp, imdp):
    keys = jax.random.split(KEY, 3)
    betas = jnp.asarray([0.1, 0.2, 0.3])
    P = jnp.stack([mdp.transitions, jnp.roll(mdp.transitions, 1, axis=-1), mdp.transitions])

    def run(key, k, b, p):
        return jp.synthesize(
            key, dataclasses.replace(mdp, transitions=p), jp.Dirichlet(k), jp.PaperSet(b)
        )

    batched = jax.jit(jax.vmap(run))(keys, KS, betas, P)
    for i in range(3):
        one = run(keys[i], float(KS[i]), float(betas[i]), P[i])
        np.testing.assert_array_equal(batched.private_transitions[i], one.private_transitions)
        np.testing.assert_array_equal(batched.policy[i], one.policy)
        _close(batched.lower[i], one.lower, atol=1e-5)
        _close(batched.upper[i], one.upper, atol=1e-5)
    eager = jp.synthesize(KEY, imdp, jp.Dirichlet(5.0))
    _close(
        jax.jit(lambda m: jp.synthesize(KEY, m, jp.Dirichlet(5.0)).cost)(imdp),
        eager.cost,
        atol=1e-5,
    )


def test_mechanism_under_jit_and_vmap(mdp):
    # jit over the rows: no tracer may be converted to a host array.
    eager = jp.dirichlet_mechanism(KEY, mdp.transitions, jp.Dirichlet(5.0))
    np.testing.assert_array_equal(
        jax.jit(lambda p: jp.dirichlet_mechanism(KEY, p, jp.Dirichlet(5.0)))(mdp.transitions), eager
    )
    P = np.asarray(mdp.transitions).copy()
    P[0, 0] = [1.0] + [0.0] * (P.shape[-1] - 1)  # a structural zero pattern
    keys = jax.random.split(KEY, 3)
    for opts in (dict(support="nonzero"), dict(smoothing=0.01)):
        # Traced rows: the support and the smoothing are computed on the device.
        got = jax.jit(
            jax.vmap(lambda key, k, p: jp.dirichlet_mechanism(key, p, jp.Dirichlet(k), **opts))  # noqa: B023
        )(keys, KS, jnp.stack([P] * 3))
        for i in range(3):
            want = jp.dirichlet_mechanism(keys[i], P, jp.Dirichlet(float(KS[i])), **opts)
            _close(got[i], want, atol=1e-6)


def test_solve_and_evaluate_under_jit_and_vmap(mdp, imdp):
    for m in (mdp, imdp):
        sol = jp.solve(m)
        jitted = jax.jit(jp.solve)(m)
        np.testing.assert_array_equal(jitted.policy, sol.policy)
        _close(jax.jit(jp.evaluate)(m, sol.policy), jp.evaluate(m, sol.policy), atol=1e-6)
        rewards = jnp.stack([m.rewards, 2 * m.rewards])
        values = jax.vmap(lambda r: jp.solve(dataclasses.replace(m, rewards=r)).values)(rewards)  # noqa: B023
        _close(values[1], jp.solve(dataclasses.replace(m, rewards=rewards[1])).values, atol=1e-5)


def test_cost_of_privacy_under_jit_and_vmap(mdp, imdp):
    for m in (mdp, imdp):
        policy = jp.solve(m).policy
        eager = [
            jp.cost_of_privacy(m, policy, jp.Dirichlet(float(k)), jp.PaperSet(0.2)) for k in KS
        ]
        batched = jax.vmap(
            lambda k: jp.cost_of_privacy(m, policy, jp.Dirichlet(k), jp.PaperSet(0.2))  # noqa: B023
        )(KS)
        jitted = jax.jit(
            lambda k, b: jp.cost_of_privacy(m, policy, jp.Dirichlet(k), jp.PaperSet(b))  # noqa: B023
        )(KS[1], 0.2)
        for i, one in enumerate(eager):
            _close(batched.lower[i], one.lower, atol=1e-4)
            _close(batched.upper[i], one.upper, atol=1e-4)
        _close(jitted.cost, eager[1].cost, atol=1e-4)
        # Over the model's arrays: a batch of reward tables.
        rewards = jnp.stack([m.rewards, 2 * m.rewards])
        by_model = jax.vmap(
            lambda r: jp.cost_of_privacy(  # noqa: B023
                dataclasses.replace(m, rewards=r),  # noqa: B023
                policy,  # noqa: B023
                jp.Dirichlet(5.0),
            )
        )(rewards)
        one = jp.cost_of_privacy(
            dataclasses.replace(m, rewards=rewards[1]), policy, jp.Dirichlet(5.0)
        )
        _close(by_model.upper[1], one.upper, atol=1e-4)


def test_max_iterations_does_not_recompile(imdp):
    policy = jp.solve(imdp).policy
    jp.solve(imdp, options=jp.SolverOptions(max_iterations=100))
    jp.cost_of_privacy(
        imdp, policy, jp.Dirichlet(5.0), options=jp.SolverOptions(max_iterations=100)
    )
    sizes = _planning.solve_core._cache_size(), _bounds.bounds_core._cache_size()
    for n in (3, 1000):
        jp.solve(imdp, options=jp.SolverOptions(max_iterations=n))
        jp.cost_of_privacy(
            imdp, policy, jp.Dirichlet(5.0), options=jp.SolverOptions(max_iterations=n)
        )
    assert (_planning.solve_core._cache_size(), _bounds.bounds_core._cache_size()) == sizes
    assert int(jp.solve(imdp, options=jp.SolverOptions(max_iterations=3)).iterations) == 3


def test_cores_do_not_call_public_boundaries(mdp):
    """The jitted synthesis traces once per static configuration, whatever k and beta."""

    @chex.assert_max_traces(n=1)
    def run(k, b):
        return jp.synthesize(KEY, mdp, jp.Dirichlet(k), jp.PaperSet(b)).cost

    jitted = jax.jit(run)
    for k, b in ((1.0, 0.1), (5.0, 0.2), (40.0, 0.3)):
        jitted(k, b)


# ----------------------------------------------------------------------------- grad


@pytest.mark.parametrize("horizon", [4, None])
def test_grad_of_a_bound_matches_finite_differences(horizon):
    with jax.enable_x64(True):
        m = build_mdp(3, horizon=horizon, dtype=np.float64)
        policy = jp.solve(m).policy
        s0 = (0, m.initial_state) if horizon else (m.initial_state,)

        def bound(rewards, k):
            m2 = dataclasses.replace(m, rewards=rewards)
            b = jp.cost_of_privacy(
                m2, policy, jp.Dirichlet(k), jp.PaperSet(0.1), options=jp.SolverOptions(tol=1e-12)
            )
            return b.lower[s0] + 0.5 * b.upper[s0]

        k0 = 5.0
        g_r, g_k = jax.grad(bound, argnums=(0, 1))(m.rewards, k0)
        h = 1e-6
        fd_k = (bound(m.rewards, k0 + h) - bound(m.rewards, k0 - h)) / (2 * h)
        assert float(g_k) == pytest.approx(float(fd_k), rel=1e-4, abs=1e-7)
        direction = np.random.default_rng(0).normal(size=m.rewards.shape)
        fd_r = (bound(m.rewards + h * direction, k0) - bound(m.rewards - h * direction, k0)) / (
            2 * h
        )
        assert float(jnp.vdot(g_r, direction)) == pytest.approx(float(fd_r), rel=1e-4, abs=1e-7)
        assert float(g_k) != 0.0


def test_grad_of_evaluate_with_respect_to_rewards(mdp):
    policy = jp.solve(mdp).policy
    g = jax.grad(lambda r: jp.evaluate(dataclasses.replace(mdp, rewards=r), policy)[0, 0])(
        mdp.rewards
    )
    assert g.shape == mdp.rewards.shape and float(g.sum()) > 0


# ----------------------------------------------------------------------------- float64 mode


def test_float32_model_in_float64_mode():
    """Regression: a float32 model (e.g. a `privatize` release) used with x64 on."""
    P32 = np.asarray(build_mdp(0).transitions, np.float32)  # row sums off by ~1e-7
    R = np.asarray(build_mdp(0).rewards)
    with jax.enable_x64(True):
        m = jp.make_mdp(np.asarray(P32), R, horizon=4, dtype=np.float64)
        assert np.abs(np.asarray(m.transitions).sum(-1) - 1).max() > 1e-9
        jp.synthesize(KEY, m, jp.Dirichlet(5.0))
        jp.sweep(KEY, m, jp.Dirichlet.grid([1.0, 5.0], sampler="fast"), num_trials=2)
        jp.dirichlet_mechanism(KEY, m.transitions, jp.Dirichlet(5.0))
        jp.privacy.mdp_guarantee(5.0, m, jp.privacy.Adjacency(0.1), target_delta=1e-3)


def test_readme_snippet_eta_in_float64():
    """Regression: 1 − 0.9 = 0.09999999999999998 is not 'below eta = 0.1'."""
    with jax.enable_x64(True):
        mdp = jp.examples.investment(dtype=np.float64)
        assert float(np.asarray(mdp.transitions)[0, 0, 2]) < 0.1
        g = jp.privacy.mdp_guarantee(
            10.0, mdp, jp.privacy.Adjacency(0.1, 0.1), target_delta=1e-3, support="nonzero"
        )
        assert g.epsilon > 0
        with pytest.raises(ValueError, match="below eta"):
            jp.privacy.mdp_guarantee(
                10.0, mdp, jp.privacy.Adjacency(0.1, 0.1001), target_delta=1e-3, support="nonzero"
            )


def test_float64_without_x64_is_refused():
    if jax.config.jax_enable_x64:
        pytest.skip("x64 is on")
    with pytest.raises(ValueError, match="jax_enable_x64"):
        jp.make_mdp(np.full((2, 1, 2), 0.5), np.zeros((2, 1)), horizon=1, dtype="float64")


# ----------------------------------------------------------------------------- bad input


def test_k_overflowing_the_dtype_is_refused(mdp):
    if mdp.rewards.dtype != jnp.float32:
        pytest.skip("float32 only")
    for call in (
        lambda: jp.synthesize(KEY, mdp, jp.Dirichlet(1e39)),
        lambda: jp.dirichlet_mechanism(KEY, mdp.transitions, jp.Dirichlet(1e39)),
        lambda: jp.sweep(KEY, mdp, jp.Dirichlet.grid([1.0, 1e39], sampler="fast"), num_trials=1),
        lambda: jp.cost_of_privacy(mdp, jp.solve(mdp).policy, jp.Dirichlet(1e39)),
    ):
        with pytest.raises(ValueError, match="overflows float32"):
            call()
    # Large but representable k: finite results, no NaN.
    out = jp.synthesize(KEY, mdp, jp.Dirichlet(1e30))
    assert np.all(np.isfinite(np.asarray(out.private_transitions)))


def test_complex_input_is_refused(mdp):
    P = np.asarray(mdp.transitions).astype(np.complex64)
    with pytest.raises(ValueError, match="complex"):
        jp.make_mdp(P, np.asarray(mdp.rewards), horizon=1)
    with pytest.raises(ValueError, match="complex"):
        jp.make_mdp(np.asarray(mdp.transitions), np.asarray(mdp.rewards) + 1j, horizon=1)
    with pytest.raises(ValueError, match="complex"):
        jp.dirichlet_mechanism(KEY, P, jp.Dirichlet(5.0))
    with pytest.raises(ValueError, match="complex"):
        jp.synthesize(KEY, mdp, jp.Dirichlet(5.0 + 1j))


def test_float16_rows_are_named():
    P = np.full((3, 1, 3), 1 / 3, np.float16)
    with pytest.raises(ValueError, match="float16"):
        jp.make_mdp(P, np.zeros((3, 1)), horizon=1)


def test_api_errors_are_value_errors(monkeypatch):
    with pytest.raises(ValueError, match="key must be a JAX PRNG key"):
        jp.examples.random_mdp(0)
    with pytest.raises(ValueError, match="num_states must be an int >= 1"):
        jp.examples.random_mdp(KEY, 0)
    assert jp.privacy.compose([(1.0, 1e-3), (2.0, 1e-3)]).epsilon == 3.0
    with pytest.raises(ValueError, match=r"guarantees\[0\]"):
        jp.privacy.compose([1.0])
    # A k so large that the series needs too many terms: a ValueError, not a RuntimeError.
    monkeypatch.setattr(_special, "MAX_SERIES_TERMS", 10_000)
    with pytest.raises(ValueError, match="too large for the accounting"):
        _special.log_betainc_series(1e16 * 0.05, 1e16 * 0.95, np.log(0.0499999))


def test_mdp_guarantee_repr_is_a_summary():
    P = jp.make_mdp(np.full((40, 4, 40), 1 / 40), np.zeros((40, 4)), horizon=1)
    g = jp.privacy.mdp_guarantee(
        5.0, P, jp.privacy.Adjacency(0.1, 1 / 40, scope="all"), target_delta=0.001
    )
    assert g.num_rows == 160 and len(g.per_row) == 160
    text = repr(g)
    assert "160 rows" in text and len(text) < 300 and "\n" not in text


# ----------------------------------------------------------------------------- keys


def test_sweep_keys_do_not_collide_with_user_derivations(mdp):
    res = jp.sweep(KEY, mdp, jp.Dirichlet.grid([5.0], sampler="jax"), num_trials=4)
    user = {
        float(jp.synthesize(key, mdp, jp.Dirichlet(5.0)).private_values[0, 0])
        for key in [jax.random.fold_in(KEY, j) for j in range(4)] + list(jax.random.split(KEY, 4))
    }
    assert not user & {float(v) for v in np.asarray(res.private_value).ravel()}
    # And run (i, j) is reproduced by sweep_key.
    one = jp.synthesize(jp.sweep_key(KEY, 0, 2), mdp, jp.Dirichlet(5.0))
    assert float(res.private_value[0, 2]) == pytest.approx(
        float(one.private_values[0, 0]), abs=1e-5
    )


def test_extending_a_sweep_keeps_its_runs(mdp):
    # The sampler and chunk of the test above: the same compiled chunk serves both tests.
    opts = dict(chunking=jp.Chunking(batch_size=4))
    small = jp.sweep(KEY, mdp, jp.Dirichlet.grid([1.0, 5.0], sampler="jax"), num_trials=2, **opts)
    large = jp.sweep(
        KEY, mdp, jp.Dirichlet.grid([1.0, 5.0, 9.0], sampler="jax"), num_trials=3, **opts
    )
    np.testing.assert_array_equal(small.cost, large.cost[:2, :2])


# ----------------------------------------------------------------------------- float32 validity


@pytest.mark.parametrize("seed", [1, 3, 5])
def test_float32_infinite_horizon_bounds_bracket_the_float64_fixed_points(seed):
    """Regression: float32 bounds were up to 12 ulps inside the exact fixed points."""
    rng = np.random.default_rng(seed)
    S, A = 12, 3
    P = rng.dirichlet(np.full(S, 0.3), size=(S, A)).astype(np.float32)
    P = P.astype(np.float64)
    P /= P.sum(-1, keepdims=True)
    R = rng.uniform(-5, 5, size=(S, A))
    m32 = jp.make_mdp(P, R, discount=0.95, dtype=np.float32)
    policy = jp.solve(m32).policy
    for k in (2.0, 50.0):
        b32 = jp.cost_of_privacy(m32, policy, jp.Dirichlet(k), jp.PaperSet(0.1))
        with jax.enable_x64(True):
            # The same float32 model, exactly, in float64, iterated to 1e-13.
            m64 = jp.make_mdp(
                np.asarray(m32.transitions, np.float64),
                np.asarray(m32.rewards, np.float64),
                discount=float(np.float32(0.95)),
                dtype=np.float64,
            )
            b64 = jp.cost_of_privacy(
                m64, policy, jp.Dirichlet(k), jp.PaperSet(0.1), options=jp.SolverOptions(tol=1e-13)
            )
            low, high = np.asarray(b64.lower), np.asarray(b64.upper)
        assert np.all(np.asarray(b32.lower, np.float64) <= low)
        assert np.all(np.asarray(b32.upper, np.float64) >= high)

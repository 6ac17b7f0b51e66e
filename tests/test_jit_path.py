"""One code path under ``jax.jit`` and eagerly, guarded by the programs.

A user's ``jax.jit(lambda m, p: cost_of_privacy(m, p, mech, uset))`` must compile the fill
the eager call runs: the same static width (the ``k`` of ``top_k``, the length of the
``cumsum``), derived from the concrete ``k`` and ``β`` although the model and the policy are
traced. Where nothing concrete bounds the width (a traced ``k``, a traced support) a
``fill_width`` hint is checked at run time, and a hint that is too small falls back to all
``S`` entries: the results are compared with the eager ones and with HiGHS on the paper's LP.
No timing: ``make_jaxpr`` shows the widths without compiling.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import equations, lp_inner

import jaxprivmdp as jp
from jaxprivmdp.experiments._synthesis import synthesize_core
from jaxprivmdp.models._rows import with_probs
from jaxprivmdp.models._support import model_mechanism_input
from jaxprivmdp.planning._bounds import bounds_core, set_up
from jaxprivmdp.planning._width import CheckedWidth, bounds_width

pytestmark = pytest.mark.integration

S, A, T = 40, 3, 3
K = 1.0  # wide boxes: every set's width is below S
SETS = (jp.PaperSet, jp.ExactSet, jp.CertifiedSet)


# ----------------------------------------------------------------------------- programs


def fill_ops(fn, *args) -> dict[str, list]:
    """The ops that set a fill's cost: ``top_k`` widths, ``cumsum``/``sort`` lengths,
    ``cond`` and host callbacks (sorted, so two programs compare as multisets)."""
    ops = {"top_k": [], "cumsum": [], "sort": [], "cond": [], "pure_callback": []}
    for eqn in equations(jax.make_jaxpr(fn)(*args).jaxpr):
        name = eqn.primitive.name
        if name == "top_k":
            ops[name].append(eqn.params["k"])
        elif name in ("cumsum", "sort"):
            ops[name].append(eqn.invars[0].aval.shape[-1])
        elif name in ("cond", "pure_callback"):
            ops[name].append(1)
    return {name: sorted(v) for name, v in ops.items()}


# ----------------------------------------------------------------------------- models


def dense_model(seed=0, *, missing=0, horizon=T):
    """A random dense model; each row misses ``missing`` random entries (structural zeros)."""
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(S), size=(S, A))
    for s in range(S):
        for a in range(A):
            P[s, a, rng.choice(S, missing, replace=False)] = 0.0
    P /= P.sum(-1, keepdims=True)
    R = rng.uniform(size=(S, A))
    if horizon is None:
        return jp.make_mdp(P, R, discount=0.9)
    return jp.make_mdp(P, R, terminal_reward=rng.uniform(size=S), horizon=horizon)


def problem(kind, seed=0):
    """``(true model, release, its optimal policy)``: dense, or 4 successors per row."""
    if kind == "dense":
        mdp = dense_model(seed)
    else:
        mdp = jp.to_sparse(dense_model(seed, missing=S - 4))
    release = jp.privatize(jax.random.key(seed), mdp, jp.Dirichlet(K), support="nonzero")
    return mdp, release, jp.solve(release).policy


PROBLEMS = {}


def shared(kind):
    """One problem per kind for the whole module: the jit caches are shared."""
    if kind not in PROBLEMS:
        PROBLEMS[kind] = problem(kind)
    return PROBLEMS[kind]


@pytest.fixture(scope="module", params=["dense", "sparse"])
def models(request):
    return request.param, shared(request.param)


def assert_same(got, want, rtol=0.0):
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        a, b = np.asarray(a), np.asarray(b)
        if np.issubdtype(a.dtype, np.floating):
            np.testing.assert_allclose(a, b, rtol=rtol, atol=0)
        else:
            np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------------------- the widths


@pytest.mark.parametrize("aware", [False, True])
@pytest.mark.parametrize("cls", SETS)
def test_jit_compiles_the_eager_fill(models, cls, aware):
    """Model and policy traced, mechanism and set closed over: the eager call's program."""
    kind_of_model, (_, release, policy) = models
    mech, uset = jp.Dirichlet(K), cls(0.1, support_aware=aware)
    params, width = set_up(release, mech, uset)
    sparse_rows = aware and kind_of_model == "sparse"  # filled row by row: no width
    assert isinstance(width, int) and (width < S or sparse_rows)

    def user(m, p):
        return jp.cost_of_privacy(m, p, mech, uset)

    def eager_core(m, p):
        static = dict(width=width, support_aware=aware)
        return bounds_core(m, p, params, None, 10_000, **static)

    jitted, eager = fill_ops(user, release, policy), fill_ops(eager_core, release, policy)
    assert not jitted["pure_callback"]  # the Beta tables are built on the host, as eagerly
    if aware and kind_of_model == "dense":
        # The support is traced: the eager width, checked once, all S entries as fallback.
        assert set(jitted["top_k"]) <= {width, S} and width in jitted["top_k"]
        # (Windows up to 64 wide sum by slices, with no cumsum: the top_k widths tell.)
        assert jitted["cond"] and max(jitted["cumsum"], default=0) <= S
    else:
        assert jitted == eager  # the same program: the same results
        assert all(w <= width for w in jitted["top_k"] + jitted["cumsum"])
    if aware or cls is jp.PaperSet:
        # The same program gives the same bits. The dense support-aware program is another one
        # (the traced support's check and fallback), which XLA:GPU fuses and so sums in
        # another order: 1 float32 ulp apart on an H100, the same bits on a CPU; both are
        # inside the bounds' outward rounding.
        other_order = aware and kind_of_model == "dense" and jax.default_backend() != "cpu"
        got, want = jax.jit(user)(release, policy), user(release, policy)
        assert_same(got, want, rtol=4 * np.finfo(np.float32).eps if other_order else 0.0)


@pytest.mark.parametrize(
    ("kind_of_model", "cls"),
    [("dense", jp.PaperSet), pytest.param("sparse", jp.CertifiedSet, marks=pytest.mark.slow)],
)
def test_synthesize_jit_compiles_the_eager_fill(kind_of_model, cls):
    mdp = shared(kind_of_model)[0]
    mech, uset, key = jp.Dirichlet(K, sampler="fast"), cls(0.1), jax.random.key(5)

    def user(key, m):
        return jp.synthesize(key, m, mech, uset, support="nonzero")

    inp = model_mechanism_input(mdp, "nonzero", None, interior=True)
    params, width = set_up(with_probs(mdp, inp.rows, inp.support), mech, uset)
    static = dict(width=width, support_aware=False)

    def eager_core(key, m):
        return synthesize_core(key, m, inp.rows, inp.support, mech, params, 10_000, **static)

    assert width < S
    assert fill_ops(user, key, mdp) == fill_ops(eager_core, key, mdp)
    assert_same(jax.jit(user)(key, mdp), user(key, mdp))


def test_the_width_of_each_case():
    """Proven ints from concrete values; CheckedWidth hints where a value is traced."""
    _, release, _ = shared("dense")
    alpha = 0.4  # the fill reaches ⌈2.5⌉ entries, one more against rounding: 4
    assert bounds_width(release, alpha, False, is_radius_box=True) == 4
    # One entry above 1/2: 5 -> 6.
    assert bounds_width(release, alpha, False, is_radius_box=False) == 6
    # Full rows: no entry outside.
    assert bounds_width(release, alpha, True, is_radius_box=True) == 4
    assert bounds_width(release, alpha, False, fill_width=9, is_radius_box=True) == 9
    assert bounds_width(release, alpha, False, fill_width=400, is_radius_box=True) == S
    assert bounds_width(release, 0.0, False, is_radius_box=False) == S  # a traced k's Beta box
    assert bounds_width(release, 0.0, False, fill_width=8, is_radius_box=False) == CheckedWidth(8)
    zeros = jp.privatize(
        jax.random.key(1), dense_model(missing=3), jp.Dirichlet(K), support="nonzero"
    )
    assert bounds_width(zeros, alpha, True, is_radius_box=True) == 4 + 3
    seen = []

    def traced(m, a):
        seen.append(bounds_width(m, alpha, True, is_radius_box=True))  # the support is traced
        seen.append(bounds_width(m, a, False, is_radius_box=True))  # alpha is traced
        seen.append(bounds_width(m, a, False, fill_width=6, is_radius_box=True))
        return a

    jax.jit(traced)(zeros, alpha)
    assert seen == [CheckedWidth(4), S, CheckedWidth(6)]
    with pytest.raises(ValueError, match="fill_width=3 is below the 4 entries"):
        bounds_width(release, alpha, False, fill_width=3, is_radius_box=True)
    with pytest.raises(ValueError, match="fill_width must be >= 1"):
        bounds_width(release, alpha, False, fill_width=0, is_radius_box=True)


# ----------------------------------------------------------------------------- hints


def lp_bounds(mdp, policy, alpha, beta, aware=False):
    """Theorem 1's recursion with every inner problem solved by HiGHS (float64)."""
    P, R = np.asarray(mdp.transitions, np.float64), np.asarray(mdp.rewards, np.float64)
    support = np.asarray(mdp.support) if aware else np.ones(P.shape, bool)
    low = [np.asarray(mdp.terminal_reward, np.float64)]
    high = [low[0]]
    for t in reversed(range(mdp.horizon)):
        lo, hi = np.zeros(S), np.zeros(S)
        for s in range(S):
            a, keep = int(policy[t, s]), support[s, int(policy[t, s])]
            p = P[s, a, keep]
            lo[s] = R[s, a] + lp_inner(low[0][keep], p, alpha, beta)
            hi[s] = R[s, a] + lp_inner(high[0][keep], p, alpha, beta, maximize=True)
        low.insert(0, lo)
        high.insert(0, hi)
    return np.stack(low), np.stack(high)


def assert_brackets_lp(b, low, high):
    """Outward of the LP recursion, by no more than the rounding margins (float32)."""
    pess, opt = np.asarray(b.lower, np.float64), np.asarray(b.upper, np.float64)
    tol = 64 * (T + 1) * np.finfo(np.float32).eps * (np.abs(high).max() + 1)
    assert np.all(pess <= low + 1e-12) and np.all(opt >= high - 1e-12)
    assert np.max(low - pess) <= tol and np.max(opt - high) <= tol


@pytest.mark.parametrize("hint", [2, 4])
def test_traced_k_with_a_hint_is_exact(hint):
    """A traced k: the hint is checked; at 2 entries (k = 5: α = 0.44, the fills need 3)
    the unchecked narrow fill is wrong, and the bounds fall back to all S entries."""
    _, release, policy = shared("dense")
    uset, k = jp.PaperSet(0.1), 5.0

    def user(mech):
        return jp.cost_of_privacy(
            release, policy, mech, uset, options=jp.SolverOptions(fill_width=hint)
        )

    ops = fill_ops(user, jp.Dirichlet(k))
    assert ops["top_k"] == [hint] and ops["cond"]  # the fallback: S <= 64, no top_k
    got = jax.jit(user)(jp.Dirichlet(k))
    want = jp.cost_of_privacy(release, policy, jp.Dirichlet(k), uset)
    assert_same(got, want, rtol=1e-6)
    if hint == 2:
        alpha = float(jp.concentration_radius(k, 0.1))
        assert_brackets_lp(got, *lp_bounds(release, np.asarray(policy), alpha, 0.1))
    params, width = set_up(release, jp.Dirichlet(k), uset)
    assert width == 4
    narrow = bounds_core(release, policy, params, None, 10, width=hint)
    assert (hint < 3) == (not np.allclose(narrow.lower, want.lower, rtol=1e-6))


def test_traced_support_falls_back_where_rows_miss_entries():
    """Support-aware dense rows with structural zeros: proven eagerly (reach + misses),
    checked under jit (model traced), both equal to all S entries and to HiGHS."""
    mdp = dense_model(2, missing=30)
    release = jp.privatize(jax.random.key(2), mdp, jp.Dirichlet(K), support="nonzero")
    policy = jp.solve(release).policy
    mech, uset = jp.Dirichlet(K), jp.PaperSet(0.1, support_aware=True)
    params, width = set_up(release, mech, uset)
    assert width == 3 + 30  # the fill's 3, and 30 entries outside every row's support
    eager = jp.cost_of_privacy(release, policy, mech, uset)
    jitted = jax.jit(lambda m, p: jp.cost_of_privacy(m, p, mech, uset))(release, policy)
    narrow = bounds_core(release, policy, params, None, 10, width=3, support_aware=True)
    assert not np.allclose(narrow.lower, eager.lower, rtol=1e-6)
    assert_same(jitted, eager, rtol=1e-6)
    alpha = float(jp.concentration_radius(K, 0.1))
    assert_brackets_lp(jitted, *lp_bounds(release, np.asarray(policy), alpha, 0.1, aware=True))


def test_a_traced_model_is_counted_from_its_shapes_and_a_closed_over_one_is_not():
    """README: a model traced under jit is counted from its shapes (every entry of every
    row), so a support-aware certified set on rows with structural zeros is wider than the
    eager one, and still contains it; the same model closed over gives the eager bits."""
    mdp = dense_model(3, missing=30)
    release = jp.privatize(jax.random.key(3), mdp, jp.Dirichlet(K), support="nonzero")
    policy = jp.solve(release).policy
    mech, uset = jp.Dirichlet(K), jp.CertifiedSet(0.1, support_aware=True)
    eager = jp.cost_of_privacy(release, policy, mech, uset)
    traced = jax.jit(lambda m, p: jp.cost_of_privacy(m, p, mech, uset))(release, policy)
    closed = jax.jit(lambda p: jp.cost_of_privacy(release, p, mech, uset))(policy)
    assert_same(closed, eager)
    low, high = np.asarray(traced.lower), np.asarray(traced.upper)
    assert np.all(low <= np.asarray(eager.lower))
    assert np.all(high >= np.asarray(eager.upper))
    assert float(traced.cost) > float(eager.cost)


@pytest.mark.parametrize("cls", [jp.PaperSet, pytest.param(jp.ExactSet, marks=pytest.mark.slow)])
def test_vmap_over_k_with_a_hint(cls):
    """Under vmap the check is batched: both widths run, the results are the eager ones."""
    _, release, policy = shared("dense")
    uset = cls(0.1)
    ks = jnp.array([0.5, 1.0, 4.0])

    def cost(k):
        return jp.cost_of_privacy(
            release, policy, jp.Dirichlet(k), uset, options=jp.SolverOptions(fill_width=8)
        ).cost

    got = jax.jit(jax.vmap(cost))(ks)
    want = [jp.cost_of_privacy(release, policy, jp.Dirichlet(k), uset).cost for k in ks]
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.slow
def test_grad_through_a_checked_width():
    """The gradient with respect to k through the check (hint 2: falls back; 8: holds)
    equals the one over all S entries (no hint)."""
    _, release, policy = shared("dense")

    def grad(hint):
        def cost(k):
            return jp.cost_of_privacy(
                release, policy, jp.Dirichlet(k), options=jp.SolverOptions(fill_width=hint)
            ).cost

        return jax.jit(jax.value_and_grad(cost))(1.0)

    (c_full, g_full), (c2, g2), (c8, g8) = grad(None), grad(2), grad(8)
    assert np.isfinite(g_full) and g_full < 0
    np.testing.assert_allclose([c2, c8], [c_full, c_full], rtol=1e-6)
    np.testing.assert_allclose([g2, g8], [g_full, g_full], rtol=1e-5)


def test_infinite_horizon_and_robust_solve_with_a_hint():
    """A hint of 1 entry: the fallback, after the while loop and in robust value iteration."""
    mdp = dense_model(4, horizon=None)
    release = jp.privatize(jax.random.key(4), mdp, jp.Dirichlet(K), support="nonzero")
    policy = jp.solve(release).policy
    uset, mech = jp.PaperSet(0.1), jp.Dirichlet(K)
    got = jax.jit(
        lambda m: jp.cost_of_privacy(
            release, policy, m, uset, options=jp.SolverOptions(fill_width=1)
        )
    )(mech)
    assert_same(got, jp.cost_of_privacy(release, policy, mech, uset), 1e-5)
    rob = jax.jit(
        lambda m: jp.robust_solve(release, m, uset, options=jp.SolverOptions(fill_width=1))
    )(mech)
    want = jp.robust_solve(release, mech, uset)
    np.testing.assert_array_equal(rob.policy, want.policy)
    np.testing.assert_allclose(rob.values, want.values, rtol=1e-5)


def lookup_shapes(fn, *args) -> set[tuple]:
    """The shapes the Beta boxes are looked up on (each lookup bitcasts its entries)."""
    eqns = equations(jax.make_jaxpr(fn)(*args).jaxpr)
    return {e.invars[0].aval.shape for e in eqns if e.primitive.name == "bitcast_convert_type"}


@pytest.mark.parametrize("cls", [jp.ExactSet, jp.CertifiedSet])
def test_discounted_beta_boxes_are_looked_up_on_the_policy_rows(cls):
    """Infinite horizon: one decision rule for the whole recursion, so the Beta boxes are
    looked up on its `[S, 1, S]` rows, not on all `[S, A, S]` (1.5-2.5x faster at S = 1000);
    a stochastic rule uses every row. The bounds are those of the
    same rule written as one-hot probabilities."""
    mdp = dense_model(5, horizon=None)
    release = jp.privatize(jax.random.key(5), mdp, jp.Dirichlet(K), support="nonzero")
    policy = jp.solve(release).policy
    mech, uset = jp.Dirichlet(K), cls(0.1)

    def user(m, p):
        return jp.cost_of_privacy(m, p, mech, uset)

    one_hot = jax.nn.one_hot(policy, A, dtype=release.rewards.dtype)
    assert (S, 1, S) in lookup_shapes(user, release, policy)
    assert (S, A, S) not in lookup_shapes(user, release, policy)
    assert (S, A, S) in lookup_shapes(user, release, one_hot)
    assert_same(jax.jit(user)(release, policy), user(release, one_hot), 1e-5)


def test_a_concrete_k_refuses_a_hint_below_its_width():
    _, release, policy = shared("dense")
    with pytest.raises(ValueError, match="fill_width=2 is below the 3 entries"):
        jp.cost_of_privacy(release, policy, jp.Dirichlet(K), options=jp.SolverOptions(fill_width=2))
    with pytest.raises(ValueError, match="fill_width must be an integer"):
        jp.robust_solve(release, jp.Dirichlet(K), options=jp.SolverOptions(fill_width=4.0))
    wide = jp.cost_of_privacy(
        release, policy, jp.Dirichlet(K), options=jp.SolverOptions(fill_width=16)
    )
    assert_same(wide, jp.cost_of_privacy(release, policy, jp.Dirichlet(K)), rtol=1e-6)


@pytest.mark.slow
def test_synthesize_over_a_traced_k_with_a_hint():
    mdp = shared("dense")[0]
    ks, key = jnp.array([0.5, 4.0]), jax.random.key(6)

    def cost(k, hint):
        mech = jp.Dirichlet(k, sampler="fast")
        return jp.synthesize(
            key, mdp, mech, support="nonzero", options=jp.SolverOptions(fill_width=hint)
        ).cost

    got = jax.jit(jax.vmap(lambda k: cost(k, 4)))(ks)
    np.testing.assert_allclose(got, [cost(k, None) for k in ks], rtol=1e-6)

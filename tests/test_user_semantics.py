"""What a new user hits: one count of private rows, sets under jit and vmap on
both model kinds, sizes checked before allocating, one rule for horizon and discount,
``mdp_guarantee`` of any model, and dense and sparse releases drawn from the same key."""

import jax
import numpy as np
import pytest

import jaxprivmdp as jp
from jaxprivmdp.experiments._frontier import frontier
from jaxprivmdp.models._dense import DEFAULT_DISCOUNT
from jaxprivmdp.models._support import host_mechanism_input, private_rows

pytestmark = pytest.mark.integration

# ------------------------------------------------------------- item 4: the private rows


def test_private_rows_of_example_1_are_its_four_two_entry_rows():
    mdp = jp.examples.investment()
    rows = private_rows(host_mechanism_input(mdp, support="nonzero"))
    assert rows.sum() == 4 and rows[0].all() and not rows[1:].any()  # Hit, Miss: self-loops
    # Over every entry (the additive mechanisms without support) the self-loops change too.
    assert private_rows(host_mechanism_input(mdp, interior=False)).sum() == 6
    # A sparse model: its listed successors; the gridworld's absorbing goal is deterministic.
    grid = jp.examples.gridworld(3, 3, horizon=4)
    assert private_rows(host_mechanism_input(grid)).sum() == 9 * 4 - 4


def test_frontier_composes_only_the_private_rows():
    mdp = jp.examples.investment()
    res = frontier(
        jax.random.key(0), mdp, epsilons=[4.0], delta=1e-3, num_trials=2, support="nonzero"
    )
    assert res.num_rows == 4
    # Laplace is pure ε: basic composition of 4 rows at ε = 4 is 16 (it counted 6: 24).
    assert res.all_rows["laplace"][0, 0] == pytest.approx(16.0)
    # The Dirichlet mechanism's whole-MDP ε is mdp_guarantee's for every row at once.
    k = float(res.parameter["dirichlet"][0])
    g = jp.privacy.mdp_guarantee(
        k,
        mdp,
        jp.privacy.Adjacency(res.b, res.eta, scope="all"),
        target_delta=0.001,
        support="nonzero",
    )
    assert g.num_rows == res.num_rows
    assert res.all_rows["dirichlet"][0, 0] == pytest.approx(g.epsilon, rel=1e-12)


# ------------------------------------------------------------ item 11: any kind of model


def test_mdp_guarantee_takes_any_kind_of_model():
    mdp = jp.examples.investment()
    kw = dict(target_delta=1e-3, support="nonzero")
    for adjacency in ("row", "all"):
        adj = jp.privacy.Adjacency(0.1, 0.1, scope=adjacency)
        of_model = jp.privacy.mdp_guarantee(10.0, mdp, adj, **kw)
        assert of_model.num_rows == 4
        of_sparse = jp.privacy.mdp_guarantee(
            10.0,
            jp.to_sparse(mdp),
            jp.privacy.Adjacency(0.1, 0.1, scope=adjacency),
            target_delta=0.001,
        )
        assert of_sparse.epsilon == pytest.approx(of_model.epsilon, rel=1e-12)
    with pytest.raises(TypeError, match="takes a model"):
        jp.privacy.mdp_guarantee(10.0, np.asarray(mdp.transitions), adj, **kw)
    with pytest.raises(TypeError, match="the model's own mask"):
        jp.privacy.mdp_guarantee(10.0, mdp, adj, action_mask=mdp.action_mask, **kw)
    with pytest.raises(ValueError, match="zero entries"):  # as the mechanism refuses it
        jp.privacy.mdp_guarantee(10.0, mdp, jp.privacy.Adjacency(0.1, 0.1), target_delta=0.001)


# ------------------------------------------------------- item 10: one rule for defaults


def _arrays():
    P = np.full((2, 1, 2), 0.5)
    return P, np.ones((2, 1))


def test_a_horizon_means_undiscounted_and_none_means_the_documented_default():
    P, R = _arrays()
    idx, probs = np.array([[[0, 1]], [[0, 1]]]), P
    models = {
        "make_mdp": lambda **kw: jp.make_mdp(P, R, **kw),
        "make_sparse_mdp": lambda **kw: jp.make_sparse_mdp(idx, probs, R, **kw),
        "gridworld": lambda **kw: jp.examples.gridworld(2, 2, **kw),
        "random_mdp": lambda **kw: jp.examples.random_mdp(jax.random.key(0), 3, 2, **kw),
    }
    for name, build in models.items():
        finite = build(horizon=30)
        assert finite.horizon == 30 and float(finite.discount) == 1.0, name
        infinite = build(horizon=None)  # make_mdp(P, R) raised about "discount 1.0"
        assert infinite.horizon is None, name
        assert float(infinite.discount) == pytest.approx(DEFAULT_DISCOUNT)
        given = build(horizon=30, discount=0.9)
        assert float(given.discount) == pytest.approx(0.9), name
        with pytest.raises(ValueError, match="discount"):
            build(horizon=None, discount=1.0)  # an explicit 1 still needs a horizon


def test_load_mdp_follows_the_same_rule(tmp_path):
    P, R = _arrays()
    path = tmp_path / "m.npz"
    np.savez(path, transitions=P, rewards=R)
    assert float(jp.load_mdp(path, horizon=30).discount) == 1.0
    infinite = jp.load_mdp(path)
    assert infinite.horizon is None
    assert float(infinite.discount) == pytest.approx(DEFAULT_DISCOUNT)


# ------------------------------------------------- item 9: sizes checked before allocating


def test_to_dense_of_a_huge_model_says_what_it_needs_and_what_to_use():
    grid = jp.examples.gridworld(1000, 1000)  # 10⁶ states: built sparse in O(S)
    with pytest.raises(ValueError, match=r"needs 18\.2 TiB, more than .*keep the model sparse"):
        jp.to_dense(grid)
    assert jp.to_dense(jp.examples.gridworld(3, 3)).transitions.shape == (9, 4, 9)


def test_random_mdp_of_a_huge_size_is_refused_before_drawing():
    with pytest.raises(ValueError, match=r"random_mdp\(num_states=1000000.*TiB.*sparse model"):
        jp.examples.random_mdp(jax.random.key(0), 10**6)


# ------------------------------------------------- item 7: every set under jit and vmap

KEY = jax.random.key(0)
KS, BETAS = np.array([10.0, 40.0]), np.array([0.1, 0.05])
SETS = (jp.PaperSet, jp.ExactSet, jp.CertifiedSet)


def _released(kind):
    """A small gridworld released by the Dirichlet mechanism, sparse or dense (the dense
    release records its support), and the private policy."""
    grid = jp.examples.gridworld(2, 3, horizon=3)
    model = grid if kind == "sparse" else jp.to_dense(grid)
    private = jp.privatize(KEY, model, jp.Dirichlet(10.0), support="nonzero")
    return private, jp.solve(private).policy


def _bounds(private, policy, k, beta, cls, support_aware):
    out = jp.cost_of_privacy(private, policy, jp.Dirichlet(k), cls(beta, support_aware))
    return jax.numpy.stack([out.lower[0], out.upper[0]])


# Over the whole simplex (the paper's default) too, with the tests marked slow (a minute on
# 2 cores). By default each set and each kind of model runs once (certified on a sparse
# model, which users hit first, included); every other (set, kind) pair is marked slow.
DEFAULT_PAIRS = {("paper", "dense"), ("exact", "sparse"), ("certified", "sparse")}


@pytest.mark.parametrize("support_aware", [True, pytest.param(False, marks=pytest.mark.slow)])
@pytest.mark.parametrize(
    ("cls", "kind"),
    [
        pytest.param(
            cls,
            kind,
            id=f"{cls.name}-{kind}",
            marks=() if (cls.name, kind) in DEFAULT_PAIRS else pytest.mark.slow,
        )
        for cls in SETS
        for kind in ("sparse", "dense")
    ],
)
def test_every_set_under_jit_and_vmap_on_both_model_kinds(cls, kind, support_aware):
    private, policy = _released(kind)
    run = lambda m, k, b: _bounds(m, policy, k, b, cls, support_aware)  # noqa: E731
    want = np.stack([run(private, k, b) for k, b in zip(KS, BETAS, strict=True)])

    # k and β traced, the model concrete: the level is one ulp lower at most, and the Beta
    # intervals come from the device tables instead of the host's (a conservative
    # approximation of the same quantiles): the same sets or slightly wider, never narrower.
    def contains(got, eager):
        assert np.all(got[..., 0, :] <= eager[..., 0, :] + 1e-5)
        assert np.all(got[..., 1, :] >= eager[..., 1, :] - 1e-5)
        np.testing.assert_allclose(got, eager, rtol=0.02, atol=1e-5)

    contains(jax.jit(lambda k, b: run(private, k, b))(KS[0], BETAS[0]), want[0])
    contains(jax.vmap(lambda k, b: run(private, k, b))(KS, BETAS), want)
    # The model traced too: its support is unknown at trace time, so the union bound counts
    # every entry of every row; the sets may only be wider.
    wide = jax.jit(run)(private, KS[0], BETAS[0])
    assert np.all(wide[0] <= want[0, 0] + 1e-5) and np.all(wide[1] >= want[0, 1] - 1e-5)


def test_synthesize_with_certified_support_aware_sets_on_a_sparse_model():
    """Runs under jit (no tracer converted to a host array) and vmap (no host callback)."""
    grid = jp.examples.gridworld(4, 5, horizon=4)
    uset = jp.CertifiedSet(0.1, support_aware=True)
    cost = lambda k: jp.synthesize(KEY, grid, jp.Dirichlet(k), uset).cost  # noqa: E731
    want = [float(cost(k)) for k in KS]
    np.testing.assert_allclose(jax.jit(cost)(KS[0]), want[0], rtol=1e-5)
    np.testing.assert_allclose(jax.vmap(cost)(KS), want, rtol=1e-5)


@pytest.mark.parametrize("kind", ["sparse", "dense"])
def test_additive_mechanisms_sets_under_vmap_over_beta(kind):
    """The noise's radius came through a callback that had no batching rule."""
    grid = jp.examples.gridworld(2, 3, horizon=3)
    model = grid if kind == "sparse" else jp.to_dense(grid)
    private = jp.privatize(KEY, model, jp.Gaussian(0.05), support="nonzero")
    policy = jp.solve(private).policy
    for cls in SETS:

        def run(beta, cls=cls):
            out = jp.cost_of_privacy(private, policy, jp.Gaussian(0.05), cls(beta, True))
            return out.lower[0]

        want = np.stack([run(b) for b in BETAS])
        np.testing.assert_allclose(jax.vmap(run)(BETAS), want, rtol=1e-5, atol=1e-5)


# ------------------------------------------------ item 13: dense and sparse, the same draws


def _dense_rows(sparse, probs):
    """A sparse model's rows scattered into `[S, A, S]`."""
    S, A, _ = sparse.next_states.shape
    out = np.zeros((S, A, S))
    idx = np.asarray(sparse.next_states)
    s, a, j = np.nonzero(idx >= 0)
    out[s, a, idx[s, a, j]] = np.asarray(probs)[s, a, j]
    return out


# Full rows (Example 2's kind) with the tests marked slow; the default run draws Example 1
# (rows with zeros, dense first) and a gridworld (sparse first) through the same sampler.
@pytest.mark.parametrize(
    "case",
    [
        "investment",
        "gridworld",
        pytest.param("random", marks=pytest.mark.slow),
    ],
)
def test_fast_sampler_draws_a_dense_model_and_its_sparse_twin_alike(case):
    """Example 1 and its to_sparse (one key, the same draws in both layouts), a gridworld
    (listed in state order) and its dense form, full rows (Example 2's kind)."""
    cases = {
        "investment": (jp.examples.investment(), None),
        "gridworld": (None, jp.examples.gridworld(3, 4, horizon=5)),
        "random": (jp.examples.random_mdp(KEY, 6, 2), None),
    }
    for dense, sparse in [cases[case]]:
        dense = jp.to_dense(sparse) if dense is None else dense
        sparse = jp.to_sparse(dense) if sparse is None else sparse
        support = "nonzero" if bool(np.any(np.asarray(dense.transitions) == 0)) else None
        want = jp.dirichlet_mechanism(
            KEY, dense, jp.Dirichlet(7.0, sampler="fast"), support=support
        )
        got = jp.dirichlet_mechanism(KEY, sparse, jp.Dirichlet(7.0, sampler="fast"))
        np.testing.assert_allclose(
            _dense_rows(sparse, got.probs), want.transitions, rtol=1e-6, atol=1e-7
        )


def test_sweep_gives_the_same_numbers_for_both_kinds():
    dense = jp.examples.investment()
    grid = jp.Dirichlet.grid([2.0, 20.0], sampler="fast")
    a = jp.sweep(KEY, dense, grid, num_trials=4, support="nonzero")
    b = jp.sweep(KEY, jp.to_sparse(dense), grid, num_trials=4)
    for field in ("true_value", "lower", "upper", "cost"):
        np.testing.assert_allclose(getattr(b, field), getattr(a, field), rtol=1e-5, atol=1e-6)


def test_named_draws_do_not_depend_on_the_layout_and_keep_the_law():
    """An element's draw depends on its name only, the fallback included (one candidate
    per pass leaves thousands of elements to it); the law is Gamma's."""
    from scipy import stats

    from jaxprivmdp.mechanisms._sampling import loggamma

    n = 20_000
    a = jax.numpy.full((n,), 0.5)
    names = (np.arange(n) // 7, np.arange(n) % 7)
    x = np.asarray(loggamma(KEY, a, num_candidates=1, names=names))
    perm = np.random.default_rng(0).permutation(n)
    shuffled = tuple(u[perm] for u in names)
    y = np.asarray(loggamma(KEY, a, num_candidates=1, names=shuffled))
    np.testing.assert_array_equal(y, x[perm])
    # The first n/2 elements alone (a different fallback: fewer pending, other slots).
    half = np.asarray(
        loggamma(KEY, a[: n // 2], num_candidates=1, names=tuple(u[: n // 2] for u in names))
    )
    np.testing.assert_array_equal(half, x[: n // 2])
    # 200 elements redraw every element per round (no compaction): the same draws too.
    small = loggamma(KEY, a[:200], num_candidates=1, names=tuple(u[:200] for u in names))
    np.testing.assert_array_equal(np.asarray(small), x[:200])
    assert stats.kstest(np.exp(x), stats.gamma(0.5).cdf).pvalue > 1e-3

"""A set's union-bound counts for a model traced under ``jit``/``vmap``.

A traced model is counted from its shapes (every entry of every row): where masked actions
or a support-aware set count fewer, its sets are wider than eagerly. ``uset.counted(model)``
records a concrete model's :class:`UnionCounts` as static data, so that a jitted call on a
release of the same structure uses the eager sets; the counts are checked eagerly (a
``ValueError``) and in the program (a traced model that counts more gets its shapes' counts,
never fewer than it has). Oracles: the eager call without counts, and entries counted here
in NumPy.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxprivmdp as jp

pytestmark = pytest.mark.integration

S, A, T, K = 30, 3, 3, 2.0
MECHANISMS = {"dirichlet": jp.Dirichlet(K), "gaussian": jp.Gaussian(0.05)}


def structured_model(seed=0):
    """Rows with 20 structural zeros of 30, a masked action in every fourth state."""
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(S), size=(S, A))
    for s in range(S):
        for a in range(A):
            P[s, a, rng.choice(S, 20, replace=False)] = 0.0
    P /= P.sum(-1, keepdims=True)
    mask = np.ones((S, A), bool)
    mask[::4, 2] = False
    R = rng.uniform(size=(S, A))
    return jp.make_mdp(P, R, terminal_reward=rng.uniform(size=S), horizon=T, action_mask=mask)


@pytest.fixture(scope="module")
def problem():
    mdp = structured_model()
    release = jp.privatize(jax.random.key(1), mdp, jp.Dirichlet(K), support="nonzero")
    return mdp, release, jp.solve(release).policy


def numpy_counts(mdp, aware):
    mask = np.asarray(mdp.action_mask)
    sizes = (np.asarray(mdp.transitions) > 0).sum(-1) if aware else np.full(mask.shape, S)
    sizes = np.where(mask, sizes, 0)
    return (int(sizes.max()), int(sizes.sum()), int(mask.sum()))


def close(got, want, rtol):
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=0)


@pytest.mark.parametrize("aware", [False, True])
def test_counted_are_the_models_counts(problem, aware):
    mdp, release, _ = problem
    counts = jp.CertifiedSet(0.1, support_aware=aware).counted(release).counts
    assert isinstance(counts, jp.UnionCounts)
    assert tuple(counts) == numpy_counts(mdp, aware)  # the release keeps the true support


@pytest.mark.parametrize("mech", list(MECHANISMS))
@pytest.mark.parametrize("cls", [jp.ExactSet, jp.CertifiedSet])
@pytest.mark.parametrize("aware", [False, True])
def test_a_traced_model_with_counts_gets_the_eager_sets(problem, mech, cls, aware):
    """Without counts the traced model's set is wider (the masked action, the support);
    with them the jitted bounds are the eager ones."""
    _, release, policy = problem
    mechanism, uset = MECHANISMS[mech], cls(0.1, support_aware=aware)
    eager = jp.cost_of_privacy(release, policy, mechanism, uset)
    counted = uset.counted(release)
    assert jp.cost_of_privacy(release, policy, mechanism, counted).cost == eager.cost

    def user(u):
        return jax.jit(lambda m, p: jp.cost_of_privacy(m, p, mechanism, u))(release, policy)

    wide, got = user(uset), user(counted)
    # A traced support compiles its checked fill (another summation order than eagerly).
    close(got, eager, rtol=4 * np.finfo(np.float32).eps if aware else 0.0)
    if aware or cls is jp.CertifiedSet:  # the counts differ from the shapes'
        assert float(wide.cost) > float(eager.cost) * (1 + 1e-6)
        assert np.all(np.asarray(wide.lower) <= np.asarray(got.lower))
        assert np.all(np.asarray(wide.upper) >= np.asarray(got.upper))


@pytest.mark.parametrize("cls", [jp.PaperSet, jp.CertifiedSet])
def test_sparse_model_and_laplace_with_counts(problem, cls):
    """Successor lists of 10 (the support) and a masked action: Laplace's radius counts
    the rows and the largest row; with counts the jitted bounds are the eager ones."""
    _, release, policy = problem
    sparse = jp.to_sparse(release)
    mech, uset = jp.Laplace(0.05), cls(0.1, support_aware=True)
    counted = uset.counted(sparse)
    eager = jp.cost_of_privacy(sparse, policy, mech, uset)
    got = jax.jit(lambda m, p: jp.cost_of_privacy(m, p, mech, counted))(sparse, policy)
    close(got, eager, rtol=0.0)


def test_counts_below_the_models_are_refused_eagerly_and_replaced_in_a_trace(problem):
    _, release, policy = problem
    mech, uset = jp.Dirichlet(K), jp.CertifiedSet(0.1, support_aware=True)
    counted = uset.counted(release)
    largest, entries, rows = counted.counts
    few = dataclasses.replace(counted, counts=(largest, entries - 1, rows))
    with pytest.raises(ValueError, match=r"counts \(10, 819, 82\) are below this model's"):
        jp.cost_of_privacy(release, policy, mech, few)

    def jitted(u):
        return jax.jit(lambda m, p: jp.cost_of_privacy(m, p, mech, u))(release, policy)

    close(jitted(few), jitted(uset), rtol=0.0)  # the shapes' counts: never fewer
    # More than the model's: valid, wider, the same eagerly and traced.
    more = dataclasses.replace(counted, counts=(largest + 5, entries + 100, rows))
    eager_more = jp.cost_of_privacy(release, policy, mech, more)
    close(jitted(more), eager_more, rtol=4 * np.finfo(np.float32).eps)
    assert float(eager_more.cost) > float(jp.cost_of_privacy(release, policy, mech, uset).cost)


def test_vmap_over_releases_checks_each(problem):
    mdp, _, policy = problem
    mech, uset = jp.Dirichlet(K), jp.CertifiedSet(0.1, support_aware=True)
    releases = [jp.privatize(jax.random.key(i), mdp, mech, support="nonzero") for i in (1, 2)]
    counted = uset.counted(releases[0])
    stacked = jax.tree.map(lambda *x: jnp.stack(x), *releases)
    got = jax.vmap(lambda m: jp.cost_of_privacy(m, policy, mech, counted).cost)(stacked)
    want = [float(jp.cost_of_privacy(r, policy, mech, uset).cost) for r in releases]
    np.testing.assert_allclose(np.asarray(got), want, rtol=4 * np.finfo(np.float32).eps)


def test_synthesize_under_jit_with_counts(problem):
    """synthesize derives the support from P > 0 in the trace ("nonzero"): counted on a
    release (which records it), the jitted run gives the eager one."""
    mdp, release, _ = problem
    key, mech = jax.random.key(0), jp.Dirichlet(K)
    counted = jp.CertifiedSet(0.1, support_aware=True).counted(release)
    eager = jp.synthesize(key, mdp, mech, counted, support="nonzero")
    got = jax.jit(lambda m: jp.synthesize(key, m, mech, counted, support="nonzero"))(mdp)
    close(got.cost, eager.cost, rtol=4 * np.finfo(np.float32).eps)


def test_bad_counts_and_traced_models_are_refused(problem):
    mdp, release, _ = problem
    with pytest.raises(ValueError, match=r"counts.largest_row must be an int >= 1, got 0"):
        jp.CertifiedSet(0.1, counts=(0, 2, 3))
    with pytest.raises(ValueError, match=r"counts.largest_row must be an int >= 1, got 1.5"):
        jp.ExactSet(0.1, counts=(1.5, 2, 3))
    with pytest.raises(ValueError, match="a UnionCounts of three ints"):
        jp.ExactSet(0.1, counts=(1, 2))
    assert jp.ExactSet(0.1, counts=(1, 2, 3)).counts == jp.UnionCounts(1, 2, 3)
    with pytest.raises(ValueError, match="needs a concrete model"):
        jax.jit(lambda m: jp.CertifiedSet(0.1).counted(m).counts)(release)
    with pytest.raises(ValueError, match="this dense model records none"):
        jp.CertifiedSet(0.1, support_aware=True).counted(mdp)  # make_mdp without support=

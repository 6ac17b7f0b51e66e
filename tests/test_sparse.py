"""Sparse models (successor lists): validation, conversion, and dense = sparse everywhere."""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import GAMMA, T, lp_inner, np_backward_induction, random_arrays
from oracles import paper_params

import jaxprivmdp as jp
from jaxprivmdp.models._rows import Rows
from jaxprivmdp.planning import _kernel as _robust
from jaxprivmdp.planning._kernel import robust_backup
from jaxprivmdp.sets._boxes import row_box

S, A = 6, 3
KEY = jax.random.key(0)


def sparse_arrays(seed, *, masked=False):
    """A dense model with structural zeros (about half of each row) and its arrays."""
    P, R, RT, mask = random_arrays(seed, num_states=S, num_actions=A, masked=masked)
    rng = np.random.default_rng(seed + 100)
    zeros = rng.uniform(size=P.shape) < 0.5
    zeros[..., 0] = False  # every row keeps state 0
    P = np.where(zeros, 0.0, P)
    P[mask] /= P[mask].sum(-1, keepdims=True)
    return P, R, RT, mask


def pair(seed=0, *, horizon=T, masked=False):
    """The same model dense and sparse."""
    P, R, RT, mask = sparse_arrays(seed, masked=masked)
    kw = dict(action_mask=mask)
    if horizon is None:
        dense = jp.make_mdp(P, R, discount=GAMMA, **kw)
    else:
        dense = jp.make_mdp(P, R, terminal_reward=RT, horizon=horizon, discount=1.0, **kw)
    return dense, jp.to_sparse(dense)


def _close(a, b, atol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=atol, rtol=1e-5)


# ----------------------------------------------------------------------------- the container


def test_to_sparse_and_back():
    dense, sparse = pair(0, masked=True)
    assert isinstance(sparse, jp.SparseMDP) and sparse.next_states.dtype == jnp.int32
    assert sparse.max_successors < S
    back = jp.to_dense(sparse)
    mask = np.asarray(dense.action_mask)
    np.testing.assert_array_equal(
        np.asarray(back.transitions)[mask], np.asarray(dense.transitions)[mask]
    )
    # make_sparse_mdp accepts what to_sparse produced.
    again = jp.make_sparse_mdp(
        sparse.next_states,
        sparse.probs,
        sparse.rewards,
        terminal_reward=sparse.terminal_reward,
        horizon=sparse.horizon,
        action_mask=sparse.action_mask,
    )
    np.testing.assert_array_equal(again.probs, sparse.probs)


def _lists():
    idx = np.array([[[0, 1, -1]], [[1, 0, 2]], [[2, -1, -1]]])
    probs = np.array([[[0.5, 0.5, 0.0]], [[0.2, 0.3, 0.5]], [[1.0, 0.0, 0.0]]])
    return idx, probs, np.zeros((3, 1))


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda i, p: i.__setitem__((1, 0, 2), 3), r"row \(state 1, action 0\) lists state 3"),
        (lambda i, p: i.__setitem__((1, 0, 2), -2), "outside"),
        (lambda i, p: i.__setitem__((1, 0, 1), 1), r"lists state 1 twice"),
        (lambda i, p: p.__setitem__((0, 0, 2), 0.1), "on padding"),
        (lambda i, p: p.__setitem__((1, 0, 2), 0.4), r"row \(state 1, action 0\) sums to 0.9"),
        (lambda i, p: p.__setitem__((1, 0, 2), np.nan), "non-finite"),
        (lambda i, p: p.__setitem__((1, 0, 0), -0.1), "negative"),
    ],
)
def test_make_sparse_mdp_names_the_row(change, match):
    idx, probs, R = _lists()
    change(idx, probs)
    with pytest.raises(ValueError, match=match):
        jp.make_sparse_mdp(idx, probs, R, horizon=2)


def test_make_sparse_mdp_shapes_and_types():
    idx, probs, R = _lists()
    with pytest.raises(ValueError, match="next_states must be integers"):
        jp.make_sparse_mdp(idx.astype(float), probs, R, horizon=2)
    with pytest.raises(ValueError, match="probs must have the shape"):
        jp.make_sparse_mdp(idx, probs[..., :2], R, horizon=2)
    with pytest.raises(ValueError, match="rewards must have shape"):
        jp.make_sparse_mdp(idx, probs, np.zeros((3, 2)), horizon=2)
    m = jp.make_sparse_mdp(idx, probs, R, horizon=2)
    assert (m.num_states, m.num_actions, m.max_successors) == (3, 1, 3)


# ----------------------------------------------------------------------------- dense = sparse


@pytest.mark.parametrize("horizon", [T, None])
def test_solve_and_evaluate_agree(horizon):
    dense, sparse = pair(1, horizon=horizon, masked=True)
    sd, ss = jp.solve(dense), jp.solve(sparse)
    np.testing.assert_array_equal(sd.policy, ss.policy)
    _close(sd.values, ss.values)
    _close(jp.evaluate(dense, sd.policy), jp.evaluate(sparse, sd.policy))
    rng = np.random.default_rng(3)
    lead = (horizon,) if horizon else ()
    pi = rng.uniform(size=lead + (S, A)) * np.asarray(dense.action_mask)
    pi = (pi / pi.sum(-1, keepdims=True)).astype(np.float32)
    _close(jp.evaluate(dense, pi), jp.evaluate(sparse, pi))


@pytest.mark.integration
@pytest.mark.parametrize("horizon", [T, None])
@pytest.mark.parametrize("support_aware", [False, True])
def test_bounds_agree(horizon, support_aware):
    dense, sparse = pair(2, horizon=horizon, masked=True)
    private = jp.synthesize(KEY, sparse, jp.Dirichlet(8.0))
    p_sparse = dataclasses.replace(sparse, probs=private.private_transitions)
    p_dense = jp.to_dense(p_sparse)
    policy = private.policy
    for k in (1.0, 8.0, 200.0):
        bd = jp.cost_of_privacy(
            p_dense, policy, jp.Dirichlet(k), jp.PaperSet(0.1, support_aware=support_aware)
        )
        bs = jp.cost_of_privacy(
            p_sparse, policy, jp.Dirichlet(k), jp.PaperSet(0.1, support_aware=support_aware)
        )
        _close(bd.lower, bs.lower, atol=2e-5)
        _close(bd.upper, bs.upper, atol=2e-5)
        values = jp.evaluate(p_sparse, policy)
        assert np.all(np.asarray(bs.lower) <= np.asarray(values) + 1e-4)
        assert np.all(np.asarray(values) <= np.asarray(bs.upper) + 1e-4)


@pytest.mark.integration
def test_support_aware_is_tighter_and_default_is_the_papers():
    dense, sparse = pair(4)
    out = jp.synthesize(KEY, sparse, jp.Dirichlet(5.0))
    p_sparse = dataclasses.replace(sparse, probs=out.private_transitions)
    paper = jp.cost_of_privacy(p_sparse, out.policy, jp.Dirichlet(5.0))
    aware = jp.cost_of_privacy(
        p_sparse, out.policy, jp.Dirichlet(5.0), jp.PaperSet(0.1, support_aware=True)
    )
    _close(paper.cost, out.cost)  # synthesize's default is the paper's set
    assert float(aware.cost) < float(paper.cost)
    assert np.all(np.asarray(aware.lower) >= np.asarray(paper.lower) - 1e-5)


@functools.partial(jax.jit, static_argnames=("width", "pairwise"))
def support_aware_backup(rows, params, v_low, v_high, *, width, pairwise):
    """The support-aware box and backup as one program (eagerly: about 60 compilations of
    single operations). ``pairwise`` only keys the cache: the fill within rows is chosen
    when traced, from ``PAIRWISE_MAX_SUCCESSORS`` as the caller patched it."""
    del pairwise
    box = row_box(rows, params, support_aware=True)
    return robust_backup(rows, box, v_low, v_high, width=width, support_aware=True)


@pytest.mark.parametrize("pairwise", [True, False])
@pytest.mark.parametrize("alpha", [0.03, 0.2, 0.7, 1.5])
def test_support_aware_greedy_equals_the_lp_on_the_support(alpha, pairwise, monkeypatch):
    """The oracle: the paper's LP written over each row's support only (SciPy HiGHS).

    Both ways of filling within rows: pairwise comparisons (short lists) and a sort.
    """
    if not pairwise:
        monkeypatch.setattr(_robust, "PAIRWISE_MAX_SUCCESSORS", 0)
    rng = np.random.default_rng(int(alpha * 100))
    n, K = 9, 4
    idx = np.stack([rng.permutation(n)[:K] for _ in range(5)])[:, None]  # [5, 1, K]
    idx[0, 0, 3] = -1  # a padded row
    probs = rng.dirichlet(np.ones(K), size=(5, 1))
    probs[0, 0, 3] = 0.0
    probs[0, 0] /= probs[0, 0].sum()
    v_low = rng.normal(size=n)
    v_high = rng.normal(size=n)
    v_low[idx[1, 0, 0]] = v_low[idx[1, 0, 1]]  # a tie
    beta = 0.2
    rows = Rows(jnp.asarray(probs), jnp.asarray(idx))
    with jax.enable_x64(True):
        rows = Rows(jnp.asarray(probs, jnp.float64), jnp.asarray(idx, jnp.int32))
        params, v = paper_params(alpha, beta), (jnp.asarray(v_low), jnp.asarray(v_high))
        low, high = support_aware_backup(rows, params, *v, width=n, pairwise=pairwise)
    for r in range(5):
        keep = (idx[r, 0] >= 0) & (probs[r, 0] > 0)
        s = idx[r, 0][keep]
        p = probs[r, 0][keep]
        assert float(low[r, 0]) == pytest.approx(lp_inner(v_low[s], p, alpha, beta), abs=1e-7)
        want = lp_inner(v_high[s], p, alpha, beta, maximize=True)
        assert float(high[r, 0]) == pytest.approx(want, abs=1e-7)


@pytest.mark.integration
def test_mechanism_on_a_sparse_model_keeps_the_support():
    _, sparse = pair(5, masked=True)
    out = jp.synthesize(KEY, sparse, jp.Dirichlet(3.0, sampler="fast"))
    p_bar = np.asarray(out.private_transitions)
    support = (np.asarray(sparse.probs) > 0) & (np.asarray(sparse.next_states) >= 0)
    mask = np.asarray(sparse.action_mask)
    assert np.all(p_bar[~support] == 0)
    np.testing.assert_allclose(p_bar[mask].sum(-1), 1, atol=1e-5)
    with pytest.raises(ValueError, match="smoothing"):
        jp.synthesize(KEY, sparse, jp.Dirichlet(3.0), smoothing=0.01)


@pytest.mark.slow
def test_sweep_on_a_sparse_model_equals_synthesize():
    _, sparse = pair(6)
    res = jp.sweep(
        KEY,
        sparse,
        jp.Dirichlet.grid([2.0, 20.0], sampler="fast"),
        jp.PaperSet(0.1, support_aware=True),
        num_trials=2,
    )
    one = jp.synthesize(
        jp.sweep_key(KEY, 1, 1),
        sparse,
        jp.Dirichlet(20.0, sampler="fast"),
        jp.PaperSet(0.1, support_aware=True),
    )
    assert float(res.cost[1, 1]) == pytest.approx(float(one.cost), abs=1e-5)
    assert np.all(np.asarray(res.lower) <= np.asarray(res.private_value) + 1e-5)


# ----------------------------------------------------------------------------- gridworld


def test_gridworld_against_numpy_backward_induction():
    walls = np.zeros((4, 5), bool)
    walls[1, 1:4] = True
    g = jp.examples.gridworld(4, 5, slip=0.2, obstacles=walls, horizon=12, discount=1.0)
    assert isinstance(g, jp.SparseMDP)
    assert (g.num_states, g.num_actions, g.max_successors) == (20, 4, 3)
    dense = jp.to_dense(g)
    P = np.asarray(dense.transitions, np.float64)
    np.testing.assert_allclose(P.sum(-1), 1, atol=1e-6)
    free = ~walls.reshape(-1)
    assert np.all(P[free][:, :, ~free] == 0)  # no move enters a wall
    R = np.asarray(g.rewards, np.float64)
    mask = np.ones((20, 4), bool)
    _, V, _ = np_backward_induction(P, R, np.zeros(20), 1.0, mask, 12)
    sol = jp.solve(g)
    np.testing.assert_allclose(sol.values, V, atol=1e-4)
    # From the start, with a wall in the way, the goal is 7 moves away: about −7 to −9.
    assert -10 < float(sol.values[0, 0]) < -7


def test_gridworld_rows_and_errors():
    g = jp.examples.gridworld(3, 3, slip=0.0)
    assert g.horizon is None and float(g.discount) == pytest.approx(0.95)
    idx = np.asarray(g.next_states)
    assert idx[0, 0, 0] == 0 and np.all(idx[0, 0, 1:] == -1)  # up from a corner: stays
    assert idx[0, 1, 0] == 1  # right
    with pytest.raises(ValueError, match="height must be an int >= 1"):
        jp.examples.gridworld(0, 3)
    with pytest.raises(ValueError, match="slip"):
        jp.examples.gridworld(3, 3, slip=1.5)
    with pytest.raises(ValueError, match="outside the 3x3 map"):
        jp.examples.gridworld(3, 3, obstacles=[(3, 0)])
    with pytest.raises(ValueError, match="start"):
        jp.examples.gridworld(3, 3, obstacles=[(0, 0)])


@pytest.mark.integration
def test_mechanism_and_accounting_take_a_sparse_model():
    g = jp.examples.gridworld(4, 4, horizon=5, discount=1.0)
    private = jp.dirichlet_mechanism(KEY, g, jp.Dirichlet(5.0))
    assert isinstance(private, jp.SparseMDP)
    np.testing.assert_array_equal(private.next_states, g.next_states)
    assert np.all(np.asarray(private.probs)[np.asarray(g.next_states) < 0] == 0)
    dense = jp.to_dense(g)
    assert isinstance(
        jp.dirichlet_mechanism(KEY, dense, jp.Dirichlet(5.0), support="nonzero"), jp.TabularMDP
    )
    sparse_g = jp.privacy.mdp_guarantee(5.0, g, jp.privacy.Adjacency(0.1, 0.05), target_delta=0.001)
    dense_g = jp.privacy.mdp_guarantee(
        5.0, dense, jp.privacy.Adjacency(0.1, 0.05), target_delta=1e-3, support="nonzero"
    )
    assert sparse_g.epsilon == pytest.approx(dense_g.epsilon)
    assert sparse_g.num_rows == dense_g.num_rows


@pytest.mark.slow
def test_sparse_mechanism_marginals_monte_carlo():
    """P̄(s, a) ~ Dirichlet(k·p) over the support: entry means p, variances p(1−p)/(k+1)."""
    idx = np.array([[[2, 0, -1, 1]], [[1, -1, -1, -1]], [[0, 2, -1, -1]]])
    probs = np.array([[[0.5, 0.3, 0.0, 0.2]], [[1.0, 0, 0, 0]], [[0.9, 0.1, 0, 0]]])
    m = jp.make_sparse_mdp(idx, probs, np.zeros((3, 1)), horizon=1)
    k, n = 7.0, 20_000
    keys = jax.random.split(KEY, n)
    for sampler in ("jax", "fast"):
        mech = jp.Dirichlet(k, sampler=sampler)
        draws = jax.vmap(lambda key: jp.dirichlet_mechanism(key, m, mech).probs)(keys)  # noqa: B023
        x = np.asarray(draws, np.float64)  # [n, 3, 1, 4]
        assert np.all(x[:, idx < 0] == 0) and np.all(x[:, 1, 0, 0] == 1)
        var = probs * (1 - probs) / (k + 1)
        sigma = np.sqrt(var / n)
        assert np.all(np.abs(x.mean(0) - probs) <= 5 * sigma + 1e-7)
        np.testing.assert_allclose(x.var(0), var, rtol=0.06, atol=1e-7)

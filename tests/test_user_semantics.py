"""What a new user hits (issue 18): one count of private rows, sets under jit and vmap on
both model kinds, sizes checked before allocating, one rule for horizon and discount,
``mdp_guarantee`` of any model, and dense and sparse releases drawn from the same key."""

import jax
import numpy as np
import pytest

import jaxprivmdp as jp
from jaxprivmdp.experiments._frontier import frontier
from jaxprivmdp.models._dense import DEFAULT_DISCOUNT
from jaxprivmdp.models._support import host_mechanism_input, private_rows

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
        k, mdp, b=res.b, eta=res.eta, target_delta=1e-3, support="nonzero", adjacency="all"
    )
    assert g.num_rows == res.num_rows
    assert res.all_rows["dirichlet"][0, 0] == pytest.approx(g.epsilon, rel=1e-12)


# ------------------------------------------------------------ item 11: any kind of model


def test_mdp_guarantee_takes_a_dense_model_like_its_arrays():
    mdp = jp.examples.investment()
    kw = dict(b=0.1, eta=0.1, target_delta=1e-3, support="nonzero")
    for adjacency in ("row", "all"):
        of_model = jp.privacy.mdp_guarantee(10.0, mdp, adjacency=adjacency, **kw)
        of_arrays = jp.privacy.mdp_guarantee(
            10.0,
            np.asarray(mdp.transitions),
            action_mask=np.asarray(mdp.action_mask),
            adjacency=adjacency,
            **kw,
        )
        assert of_model.epsilon == of_arrays.epsilon and of_model.num_rows == 4
        of_sparse = jp.privacy.mdp_guarantee(
            10.0, jp.to_sparse(mdp), adjacency=adjacency, b=0.1, eta=0.1, target_delta=1e-3
        )
        assert of_sparse.epsilon == pytest.approx(of_model.epsilon, rel=1e-12)
    with pytest.raises(ValueError, match="own action_mask"):
        jp.privacy.mdp_guarantee(10.0, mdp, action_mask=mdp.action_mask, **kw)
    with pytest.raises(ValueError, match="zero entries"):  # as the mechanism refuses it
        jp.privacy.mdp_guarantee(10.0, mdp, b=0.1, eta=0.1, target_delta=1e-3)


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

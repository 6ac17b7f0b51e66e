"""The support of a set is public structure carried by the model, never read off a release.

Regressions: a release puts exact zeros where the true row is positive (a
projection, an underflowed gamma draw), so ``P̄ > 0`` must never be taken as the support.
"""

import dataclasses

import jax
import numpy as np
import pytest

import jaxprivmdp as jp


def _chain():
    """Three states; (0, 0) has a structural zero and a small entry; 2 is absorbing."""
    P = np.zeros((3, 2, 3))
    P[0, 0] = [0.0, 0.3, 0.7]
    P[0, 1] = [0.2, 0.2, 0.6]
    P[1, :, 1] = 1.0
    P[2, :, 2] = 1.0
    R = np.zeros((3, 2))
    return P, R


def test_releases_carry_the_support_they_were_privatized_over():
    P, R = _chain()
    mdp = jp.make_mdp(P, R, horizon=3, terminal_reward=[0.0, 0.0, 1.0])
    assert mdp.support is None
    rel = jp.dirichlet_mechanism(jax.random.key(0), mdp, jp.Dirichlet(5.0), support="nonzero")
    np.testing.assert_array_equal(rel.support, P > 0)
    rel = jp.privatize(jax.random.key(0), mdp, jp.Gaussian(0.3))
    assert np.all(np.asarray(rel.support))  # noise on every entry: the whole row
    rel = jp.privatize(jax.random.key(0), mdp, jp.Laplace(0.3), support="nonzero")
    np.testing.assert_array_equal(rel.support, P > 0)


def test_support_aware_bounds_refuse_a_dense_model_without_a_recorded_support():
    P, R = _chain()
    p_bar = np.asarray(
        jp.dirichlet_mechanism(jax.random.key(1), P, jp.Dirichlet(5.0), support="nonzero")
    )
    bare = jp.make_mdp(p_bar, R, horizon=3)
    policy = np.zeros((3, 3), np.int32)
    with pytest.raises(ValueError, match="public support"):
        jp.cost_of_privacy(bare, policy, jp.Dirichlet(5.0), jp.PaperSet(0.1, support_aware=True))
    with pytest.raises(ValueError, match="public support"):
        jp.robust_solve(bare, jp.Dirichlet(5.0), jp.PaperSet(0.1, support_aware=True))
    jp.cost_of_privacy(bare, policy, jp.Dirichlet(5.0))  # the whole simplex needs no support
    given = jp.make_mdp(p_bar, R, horizon=3, support=P > 0)
    b = jp.cost_of_privacy(given, policy, jp.Dirichlet(5.0), jp.PaperSet(0.1, support_aware=True))
    assert np.all(np.isfinite(b.lower))


def test_make_mdp_checks_the_support():
    P, R = _chain()
    with pytest.raises(ValueError, match="outside its support"):
        jp.make_mdp(P, R, horizon=2, support=np.zeros(P.shape, bool) | (P > 0.5))
    with pytest.raises(ValueError, match="shape"):
        jp.make_mdp(P, R, horizon=2, support=np.ones((3, 3), bool))
    with pytest.raises(ValueError, match="boolean"):
        jp.make_mdp(P, R, horizon=2, support=np.full(P.shape, 0.5))


def test_gaussian_projection_zero_is_not_taken_out_of_the_support():
    """The audit's reproduction: the projection zeroes the true 0.3 entry of s0's row, and
    the certified support-aware bounds were [0, 0] around a true value of 0.3."""
    P = np.zeros((3, 1, 3))
    P[0, 0] = [0.0, 0.3, 0.7]
    P[1, 0, 1] = P[2, 0, 2] = 1.0
    mdp = jp.make_mdp(P, np.zeros((3, 1)), horizon=1, terminal_reward=[0.0, 1.0, 0.0])
    zeroed = 0
    for seed in range(20):
        out = jp.synthesize(
            jax.random.key(seed), mdp, jp.Gaussian(0.3), jp.CertifiedSet(0.1, support_aware=True)
        )
        zeroed += float(out.private_transitions[0, 0, 1]) == 0.0
        assert float(out.lower[0, 0]) <= 0.3 <= float(out.upper[0, 0]), seed
    assert zeroed >= 3  # the releases that fooled the old sets are among these


def test_sparse_zero_slots_are_padding_and_match_the_dense_pattern():
    """A listed successor of probability 0 is padding: the sparse support is the dense
    model's nonzero pattern. That such a model's bounds equal the dense model's (every set,
    every mechanism, same key) is tests/test_validity.py's
    ``test_sparse_zero_slots_give_the_dense_numbers``."""
    P, R = _chain()
    idx = np.array(np.broadcast_to(np.arange(3), (3, 2, 3)))  # every state listed
    sparse = jp.make_sparse_mdp(idx, P, R, horizon=4, terminal_reward=[0.0, 0.0, 1.0])
    np.testing.assert_array_equal(np.asarray(sparse.next_states) >= 0, P > 0)


def test_sparse_support_keeps_listed_zero_entries_of_a_release():
    P, R = _chain()
    idx = np.array(np.broadcast_to(np.arange(3), (3, 2, 3)))
    rel = jp.make_sparse_mdp(idx, P, R, horizon=2, support=idx >= 0)
    np.testing.assert_array_equal(np.asarray(rel.next_states), idx)
    with pytest.raises(ValueError, match="outside its support"):
        jp.make_sparse_mdp(idx, P, R, horizon=2, support=P > 0.5)


@pytest.mark.integration
def test_conversions_keep_the_support():
    P, R = _chain()
    p_bar = np.array(P)
    p_bar[0, 0] = [0.0, 0.0, 1.0]  # a release that zeroed a supported entry
    rel = jp.make_mdp(p_bar, R, horizon=2, support=P > 0)
    sparse = jp.to_sparse(rel)
    np.testing.assert_array_equal(np.asarray(sparse.next_states[0, 0]) >= 0, [True, True, False])
    back = jp.to_dense(sparse)
    np.testing.assert_array_equal(back.support, P > 0)
    # A model without a recorded support converts by its nonzero pattern, as before.
    plain = dataclasses.replace(rel, support=None)
    np.testing.assert_array_equal(np.asarray(jp.to_sparse(plain).next_states[0, 0]), [2, -1, -1])

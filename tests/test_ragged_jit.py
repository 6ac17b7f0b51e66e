"""A RaggedMDP under ``jax.jit``: the bounds of every set and ``synthesize``.

A user's ``jax.jit(lambda m, p: jp.cost_of_privacy(m, p, jp.Dirichlet(k), uset))`` on a ragged
release gives the eager bounds (to 1e-5 relative), and they bracket the policy's value on
the true model (a NumPy linear solve of the transition lists). One set legitimately widens:
the certified set when support-aware counts its union bound's entries from the rows'
supports, which a traced model hides, so under jit it counts every slot of every bucket
(more entries, a smaller level per entry, wider boxes): still valid, never narrower.
"""

import jax
import numpy as np
import pytest

import jaxprivmdp as jp
from jaxprivmdp.models._ragged import transition_lists

pytestmark = pytest.mark.integration

K = 50.0


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield


@pytest.fixture(scope="module")
def case():
    """A small ragged model (buckets of 1, 2 and 8 successors), one release, its policy and
    the policy's value on the true model (NumPy: ``(I − γ P_π) v = r_π``)."""
    with jax.enable_x64(True):
        mdp = jp.examples.leader_like(40, 8, actions=2, restart=0.5, discount=0.9)
        release = jp.privatize(jax.random.key(1), mdp, jp.Dirichlet(K))
        policy = np.asarray(jp.solve(release).policy)
        return release, policy, _true_value(mdp, policy)


def _true_value(mdp, policy):
    """`[S]` a deterministic stationary policy's value on ``mdp``, from its lists (NumPy)."""
    rid, nxt, p = transition_lists(mdp)
    S, A = mdp.num_states, mdp.num_actions
    P = np.zeros((S * A, S))
    np.add.at(P, (rid, nxt), p)
    policy = np.asarray(policy)
    r = np.asarray(mdp.rewards)[np.arange(S), policy]
    return np.linalg.solve(np.eye(S) - float(mdp.discount) * P[np.arange(S) * A + policy], r)


def _check_bracket(bounds, true):
    assert np.all(np.asarray(bounds.lower) <= true + 1e-9)
    assert np.all(true <= np.asarray(bounds.upper) + 1e-9)


SETS = [
    pytest.param("paper", False, marks=pytest.mark.slow),
    ("paper", True),
    pytest.param("exact", False, marks=pytest.mark.slow),
    pytest.param("exact", True, marks=pytest.mark.slow),
    pytest.param("certified", False, marks=pytest.mark.slow),
    ("certified", True),
]


@pytest.mark.parametrize("bound, aware", SETS)
def test_cost_of_privacy_under_jit(case, bound, aware):
    release, policy, true = case
    sets = {"paper": jp.PaperSet, "exact": jp.ExactSet, "certified": jp.CertifiedSet}
    uset = sets[bound](0.1, support_aware=aware)

    def user(m, p):
        return jp.cost_of_privacy(m, p, jp.Dirichlet(K), uset)

    eager, jitted = user(release, policy), jax.jit(user)(release, policy)
    _check_bracket(eager, true)
    _check_bracket(jitted, true)
    lo, hi = np.asarray(jitted.lower), np.asarray(jitted.upper)
    if bound == "certified" and aware:  # the union bound counts the buckets' slots: wider
        _check_wider(jitted, eager)
    else:  # (atol: the goal state's value is 0 to within the stopping rule's ~1e-9)
        np.testing.assert_allclose(lo, eager.lower, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(hi, eager.upper, rtol=1e-5, atol=1e-7)


def _check_wider(jitted, eager):
    """Wider boxes: lower pessimistic and higher optimistic values (to the stopping rule's
    residual, ~1e-9 here, which the two runs reach after different numbers of sweeps), and
    wider overall."""
    lo, hi = np.asarray(jitted.lower), np.asarray(jitted.upper)
    assert np.all(lo <= np.asarray(eager.lower) + 1e-7)
    assert np.all(hi >= np.asarray(eager.upper) - 1e-7)
    assert np.sum(hi - lo) > np.sum(np.asarray(eager.upper) - eager.lower)


@pytest.mark.parametrize(
    "bound, robust",
    # Slow (16 s): jitted synthesize on padded models stays in the default run
    # (tests/test_jit_path.py); the ragged layout's eager synthesize in tests/test_ragged.py.
    [
        pytest.param("paper", False, marks=pytest.mark.slow),
        pytest.param("certified", True, marks=pytest.mark.slow),
    ],
)
def test_synthesize_under_jit(bound, robust):
    """``jax.jit`` of ``jp.synthesize`` with ``k`` traced (paper set); a certified set as an
    object closed over (its Beta tables are then built on the host from the concrete ``k``,
    as eagerly), with the robust policy."""
    mdp = jp.examples.leader_like(40, 8, actions=2, restart=0.5, discount=0.9)
    key = jax.random.key(3)
    if bound == "paper":
        eager = jp.synthesize(key, mdp, jp.Dirichlet(K), jp.PaperSet(0.1), robust=robust)
        jitted = jax.jit(
            lambda key, k: jp.synthesize(key, mdp, jp.Dirichlet(k), jp.PaperSet(0.1), robust=robust)
        )(key, K)
    else:
        mech, uset = jp.Dirichlet(K), jp.CertifiedSet(0.1, support_aware=True)
        eager = jp.synthesize(key, mdp, mech, uset, robust=robust)
        jitted = jax.jit(lambda key, m: jp.synthesize(key, m, mech, uset, robust=robust))(key, mdp)
    assert isinstance(jitted.private_transitions, tuple)  # one [n_b, K_b] per bucket
    for a, b in zip(jitted.private_transitions, eager.private_transitions, strict=True):
        np.testing.assert_array_equal(a, b)  # the same release
    np.testing.assert_array_equal(jitted.policy, eager.policy)
    if robust:
        np.testing.assert_array_equal(jitted.robust.policy, eager.robust.policy)
    if bound == "paper":
        np.testing.assert_allclose(jitted.lower, eager.lower, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(jitted.upper, eager.upper, rtol=1e-5, atol=1e-7)
    else:  # certified, support-aware: wider under jit (see the module)
        _check_wider(jitted, eager)
    _check_bracket(jitted, _true_value(mdp, eager.policy))

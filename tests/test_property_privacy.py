"""Privacy on PRISM properties (``jp.property_model``): the private policy of a step-bounded
property, its bounds with every set, and its true value.

Oracles from outside the code under test: a NumPy backward induction of the bounded-until
recursion straight from the labels (on the release and on the true rows), ``jp.check`` on
the release (its optimum is the private policy's value there), Monte Carlo simulation of the
private policy on the true model.
"""

import jax
import numpy as np
import pytest

import jaxprivmdp as jp

pytestmark = pytest.mark.integration

S, A, T = 6, 2, 4
GOAL = np.array([0, 0, 0, 1, 0, 1], bool)
SAFE = np.array([1, 1, 0, 1, 1, 1], bool)
LABELS = {"goal": GOAL, "safe": SAFE}
SETS = {
    "paper": jp.PaperSet(0.1),
    "paper-aware": jp.PaperSet(0.1, support_aware=True),
    "exact": jp.ExactSet(0.1),
    "exact-aware": jp.ExactSet(0.1, support_aware=True),
    "certified": jp.CertifiedSet(0.1),
    "certified-aware": jp.CertifiedSet(0.1, support_aware=True),
}
# (property, decided states that reach the target, decided states that fail)
PROPERTIES = {
    'Pmax=? [F<=T "goal"]': (GOAL, np.zeros(S, bool)),
    'Pmin=? ["safe" U<=T "goal"]': (GOAL, ~SAFE & ~GOAL),
}


def _model(sparse: bool):
    mdp = jp.examples.random_mdp(jax.random.key(1), num_states=S, num_actions=A, horizon=T)
    return jp.to_sparse(mdp) if sparse else mdp


def _dense_rows(mdp, probs=None) -> np.ndarray:
    """`[S, A, S]` float64 rows of a model (its own, or ``probs`` in its layout)."""
    if isinstance(mdp, jp.SparseMDP):
        probs = np.asarray(mdp.probs if probs is None else probs, np.float64)
        out = np.zeros((S, A, S))
        idx = np.asarray(mdp.next_states)
        s, a, j = np.nonzero(idx >= 0)
        np.add.at(out, (s, a, idx[s, a, j]), probs[s, a, j])
        return out
    return np.asarray(mdp.transitions if probs is None else probs, np.float64)


def _until_value(P, policy, target, fail) -> np.ndarray:
    """`[S]` Pr[¬fail U<=T target] under a `[T, S]` policy: NumPy backward induction."""
    v = target.astype(np.float64)
    for t in reversed(range(policy.shape[0])):
        v = np.where(target, 1.0, np.where(fail, 0.0, P[np.arange(S), policy[t]] @ v))
    return v


def _monte_carlo(P, policy, target, fail, n, seed=0) -> float:
    rng = np.random.default_rng(seed)
    s = np.zeros(n, int)
    for t in range(policy.shape[0]):
        live = ~target[s] & ~fail[s]
        rows = P[s, policy[t, s]]
        nxt = (rng.uniform(size=(n, 1)) > np.cumsum(rows, axis=1)).sum(1)
        s = np.where(live, np.minimum(nxt, S - 1), s)
    return float(target[s].mean())


@pytest.mark.parametrize("sparse", [False, pytest.param(True, marks=pytest.mark.slow)])
@pytest.mark.parametrize(
    "prop",
    [
        'Pmax=? [F<=3 "goal"]',
        'Pmin=? [F<=3 "goal"]',
        'Pmax=? ["safe" U<=T "goal"]',
        'Pmin=? [G<=2 "safe"]',
        'Pmax=? [X "goal"]',
        "Rmin=? [C<=3]",
        "Rmax=? [C<=T]",
    ],
)
def test_property_model_value_is_the_property(sparse, prop):
    with jax.enable_x64(True):
        mdp = _model(sparse)
        pm = jp.property_model(mdp, prop, labels=LABELS)
        got = pm.values(jp.solve(pm.model).values[0])
        want = jp.check(mdp, prop, labels=LABELS).values
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


# Two cases by default; every (model kind, property, set) in the slow pass.
_DEFAULT = {
    (False, 'Pmax=? [F<=T "goal"]', "certified-aware"),
    (True, 'Pmin=? ["safe" U<=T "goal"]', "exact"),
}
_CASES = [
    pytest.param(sp, prop, name, marks=() if (sp, prop, name) in _DEFAULT else pytest.mark.slow)
    for sp in (False, True)
    for prop in PROPERTIES
    for name in SETS
]


@pytest.mark.parametrize("sparse, prop, set_name", _CASES)
def test_private_policy_and_bounds_against_oracles(sparse, prop, set_name):
    target, fail = PROPERTIES[prop]
    with jax.enable_x64(True):
        mdp = _model(sparse)
        pm = jp.property_model(mdp, prop, labels=LABELS)
        res = jp.synthesize(jax.random.key(3), pm, jp.Dirichlet(50.0), SETS[set_name])
        policy = np.asarray(res.policy)
        release = _dense_rows(pm.model, res.private_transitions)
        # The decided states' rows are public self-loops, the others privatized.
        decided = target | fail
        loops = release[decided, policy[0, decided]]
        np.testing.assert_array_equal(loops, np.eye(S)[decided])
        assert not np.allclose(release[~decided], _dense_rows(mdp)[~decided])
        # The policy's value on the release: NumPy, and jp.check (π̄ is optimal there).
        private = _until_value(release, policy, target, fail)
        np.testing.assert_allclose(res.private_values[0], private, atol=1e-12)
        on_release = jp.make_mdp(
            release, np.zeros((S, A)), horizon=T, action_mask=np.asarray(pm.model.action_mask)
        )
        checked = jp.check(on_release, prop, labels=LABELS).values
        np.testing.assert_allclose(checked, private, atol=1e-12)
        # v̲ <= V̄ <= v̄ everywhere; the true value of π̄ inside the bounds at s0.
        assert np.all(res.lower <= res.upper)
        assert np.all(res.lower[0] <= private + 1e-12)
        assert np.all(private <= res.upper[0] + 1e-12)
        true = _until_value(_dense_rows(mdp), policy, target, fail)[0]
        assert res.lower[0, 0] <= true <= res.upper[0, 0]
        assert float(res.cost) == pytest.approx(res.upper[0, 0] - res.lower[0, 0])


@pytest.mark.slow
def test_true_value_by_monte_carlo_and_sweep():
    prop = 'Pmax=? [F<=T "goal"]'
    target, fail = PROPERTIES[prop]
    with jax.enable_x64(True):
        mdp = _model(False)
        pm = jp.property_model(mdp, prop, labels=LABELS)
        res = jp.sweep(
            jax.random.key(0), pm, jp.Dirichlet.grid([20.0], sampler="fast"), num_trials=2
        )
        assert float(res.optimal_value) == pytest.approx(
            float(jp.check(mdp, prop, labels=LABELS).value_at_initial), abs=1e-12
        )
        key = jp.sweep_key(jax.random.key(0), 0, 1)
        one = jp.synthesize(key, pm, jp.Dirichlet(20.0, sampler="fast"))
        policy = np.asarray(one.policy)
        true = _until_value(_dense_rows(mdp), policy, target, fail)[0]
        assert float(res.true_value[0, 1]) == pytest.approx(true, abs=1e-9)
        n = 40_000
        mc = _monte_carlo(_dense_rows(mdp), policy, target, fail, n)
        assert abs(mc - true) < 5 * np.sqrt(true * (1 - true) / n)
        assert np.all(res.lower <= res.private_value)
        assert np.all(res.private_value <= res.upper)


def test_min_property_reports_in_its_own_scale():
    """A Pmin's bounds are the negated, swapped bounds of the max of the negation, and every
    entry point agrees: synthesize, cost_of_privacy on the release, robust_solve, sweep."""
    prop = 'Pmin=? ["safe" U<=T "goal"]'
    with jax.enable_x64(True):
        mdp = _model(True)
        pm = jp.property_model(mdp, prop, labels=LABELS)
        mech, uset = jp.Gaussian(0.05), jp.ExactSet(0.1)
        res = jp.synthesize(jax.random.key(5), pm, mech, uset, robust=True)
        private = jp.property_model(
            jp.make_sparse_mdp(
                pm.model.next_states,
                res.private_transitions,
                mdp.rewards,
                horizon=T,
                action_mask=pm.model.action_mask,
            ),
            prop,
            labels=LABELS,
        )
        b = jp.cost_of_privacy(private, res.policy, mech, uset)
        np.testing.assert_allclose(b.lower, res.lower, atol=1e-12)
        np.testing.assert_allclose(b.upper, res.upper, atol=1e-12)
        robust = jp.robust_solve(private, mech, uset)
        # The robust policy of a minimization minimizes the upper bound.
        np.testing.assert_allclose(robust.values[0], res.robust.upper[0], atol=1e-12)
        assert res.robust.upper[0, 0] <= res.upper[0, 0] + 1e-12
        assert 0 <= float(res.private_values[0, 0]) <= 1


def test_frontier_counts_only_the_undecided_rows():
    with jax.enable_x64(True):
        mdp = _model(False)
        pm = jp.property_model(mdp, 'Pmax=? [F<=T "goal"]', labels=LABELS)
        out = jp.frontier(
            jax.random.key(0), pm, epsilons=[8.0], num_trials=2, mechanisms=(jp.Laplace,)
        )
        assert out.num_rows == int((~GOAL).sum()) * A
        assert out.optimal_value == pytest.approx(
            float(jp.check(mdp, 'Pmax=? [F<=T "goal"]', labels=LABELS).value_at_initial)
        )
        assert np.all(out.lower["laplace"] <= out.upper["laplace"])


@pytest.mark.slow
def test_under_jit():
    mdp = _model(False)
    pm = jp.property_model(mdp, 'Pmax=? [F<=T "goal"]', labels=LABELS)
    eager = jp.synthesize(jax.random.key(1), pm, jp.Dirichlet(30.0))
    jitted = jax.jit(lambda p: jp.synthesize(jax.random.key(1), p, jp.Dirichlet(30.0)))(pm)
    np.testing.assert_allclose(jitted.lower, eager.lower, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(jitted.policy, eager.policy)


def test_dtmc_property_value():
    P = np.array([[[0.5, 0.5, 0.0]], [[0.2, 0.3, 0.5]], [[0.0, 0.0, 1.0]]])
    dtmc = jp.make_mdp(P, np.zeros((3, 1)), horizon=3)
    labels = {"done": np.array([0, 0, 1], bool)}
    pm = jp.property_model(dtmc, 'P=? [F<=3 "done"]', labels=labels)
    # By hand: v3 = (0, 0, 1), v2 = (0, .5, 1), v1 = (.25, .65, 1), v0 = (.45, .745, 1).
    np.testing.assert_allclose(jp.solve(pm.model).values[0], [0.45, 0.745, 1.0], atol=1e-6)


@pytest.mark.slow
def test_dtmc_property_privatized():
    P = np.array([[[0.5, 0.5, 0.0]], [[0.2, 0.3, 0.5]], [[0.0, 0.0, 1.0]]])
    dtmc = jp.make_mdp(P, np.zeros((3, 1)), horizon=3)
    labels = {"done": np.array([0, 0, 1], bool)}
    pm = jp.property_model(dtmc, 'P=? [F<=3 "done"]', labels=labels)
    res = jp.synthesize(jax.random.key(0), pm, jp.Dirichlet(40.0), support="nonzero")
    assert res.lower[0, 0] <= res.private_values[0, 0] <= res.upper[0, 0]


@pytest.mark.parametrize(
    "prop, message",
    [
        ('Pmax=? [F "goal"]', "step-bounded"),
        ('Pmin=? ["safe" U "goal"]', "step-bounded"),
        ('R{"r"}min=? [F "goal"]', "step-bounded"),
        ('Pmax=? [F<=0 "goal"]', ">= 1"),
        ('P=? [F<=2 "goal"]', "DTMC"),
        ('Pmax=? [F<=2 "nowhere"]', "no label 'nowhere'"),
    ],
)
def test_refused_properties(prop, message):
    with pytest.raises(ValueError, match=message):
        jp.property_model(_model(False), prop, labels=LABELS)


def test_t_needs_a_horizon():
    mdp = jp.examples.random_mdp(jax.random.key(1), num_states=S, num_actions=A, horizon=None)
    with pytest.raises(ValueError, match="horizon"):
        jp.property_model(mdp, 'Pmax=? [F<=T "goal"]', labels=LABELS)
    pm = jp.property_model(mdp, 'Pmax=? [F<=T "goal"]', labels=LABELS, horizon=5)
    assert pm.model.horizon == 5 and float(pm.model.discount) == 1.0

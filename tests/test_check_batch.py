"""``jp.check`` on a batch of models (a leading axis, as ``jax.vmap`` over ``privatize``
returns): one precomputation and every loop shared when the supports agree, model by model
otherwise. Oracles: NumPy value iteration per model and ``check`` on each model alone."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from test_check_precision import build, in_mode
from test_topological import layered, reach_oracle

import jaxprivmdp as jp
import jaxprivmdp.properties._batch as batching


@pytest.fixture
def shared(monkeypatch):
    """Counts the calls of the shared (one precomputation) path."""
    calls = []
    for name in ("batch_probability", "batch_reward"):
        real = getattr(batching, name)
        spy = lambda *a, real=real, **k: calls.append(1) or real(*a, **k)  # noqa: E731
        monkeypatch.setattr(f"jaxprivmdp.properties._check.{name}", spy)
    return calls


def releases(mdp, n, seed=0):
    keys = jax.random.split(jax.random.key(seed), n)
    private = lambda k: jp.privatize(k, mdp, jp.Dirichlet(50.0), support="nonzero")  # noqa: E731
    return jax.vmap(private)(keys)


def dense_rows(model) -> np.ndarray:
    """`[S, A, S]` float64 rows of a dense or sparse model (the oracle's input)."""
    if isinstance(model, jp.TabularMDP):
        return np.asarray(model.transitions, np.float64)
    S, A = model.action_mask.shape
    P = np.zeros((S, A, S))
    nxt, probs = np.asarray(model.next_states), np.asarray(model.probs, np.float64)
    s, a, k = np.nonzero(nxt >= 0)
    np.add.at(P, (s, a, nxt[s, a, k]), probs[s, a, k])
    return P


def one(batch, i):
    return jax.tree_util.tree_map(lambda x: x[i], batch)


SLOW = pytest.mark.integration  # the unit tier keeps the chunked batch and the refusals


@SLOW  # every combination (3 s each); the unit tier keeps the chunked batch's test
@pytest.mark.parametrize("sparse", [True, pytest.param(False, marks=SLOW)])
@pytest.mark.parametrize("x64", [True, pytest.param(False, marks=SLOW)])
@pytest.mark.parametrize(
    "prop",
    [
        'Pmax=? [F "goal"]',
        pytest.param('Pmin=? [F "goal"]', marks=SLOW),
        pytest.param('Pmax=? [G !"goal"]', marks=SLOW),
    ],
)
def test_batch_contains_each_models_value(shared, sparse, x64, prop):
    rng = np.random.default_rng(7)
    P, mask = layered(rng, S=30, back=0.3)
    S = P.shape[0]
    goal = np.arange(S) == S - 2
    with in_mode(x64):
        mdp = build(P, np.zeros(mask.shape), sparse=sparse, x64=x64, action_mask=mask)
        batch = releases(mdp, 4)
        res = jp.check(batch, prop, labels={"goal": goal})
        assert len(shared) == 1
        alone = [jp.check(one(batch, i), prop, labels={"goal": goal}) for i in range(4)]
    assert np.shape(res.values) == (4, S) and np.shape(res.value_at_initial) == (4,)
    assert np.shape(res.converged) == np.shape(res.iterations) == np.shape(res.precision) == (4,)
    assert np.all(np.asarray(res.converged))
    for i in range(4):
        Pi = dense_rows(one(batch, i))
        Pi = Pi / np.where(Pi.sum(-1, keepdims=True) > 0, Pi.sum(-1, keepdims=True), 1)
        if "G" in prop:  # Pmax [G ¬goal] = 1 − Pmin [F goal]
            exact = 1 - reach_oracle(Pi, mask, goal, False)
        else:
            exact = reach_oracle(Pi, mask, goal, "max" in prop)
        lo = np.asarray(res.lower[i], np.float64)
        up = np.asarray(res.upper[i], np.float64)
        slack = 1e-12 if x64 else 1e-6
        assert np.all(lo <= exact + slack) and np.all(exact - slack <= up)
        np.testing.assert_allclose(res.values[i], alone[i].values, rtol=2e-6, atol=1e-7)
        np.testing.assert_array_equal(res.policy[i][~goal], alone[i].policy[~goal])


@SLOW
def test_batch_of_rewards_matches_a_linear_solve(shared):
    rng = np.random.default_rng(3)
    S = 25
    P = np.zeros((S, 1, S))
    for s in range(S - 1):
        nxt = rng.integers(max(s - 3, 0), S, size=3)
        nxt[0] = s + 1
        np.add.at(P[s, 0], nxt, rng.random(3) + 0.2)
        P[s, 0] /= P[s, 0].sum()
    P[S - 1, 0, S - 1] = 1
    R = rng.random((S, 1)) + 0.5
    R[S - 1] = 0
    with in_mode(True):
        batch = releases(build(P, R, sparse=True, x64=True), 3, seed=1)
        res = jp.check(batch, 'R=? [F "goal"]', labels={"goal": np.arange(S) == S - 1})
    assert len(shared) == 1
    for i in range(3):
        Pi = dense_rows(one(batch, i))[:, 0]
        Q = Pi[: S - 1, : S - 1] / Pi[: S - 1].sum(-1, keepdims=True)
        exact = np.r_[np.linalg.solve(np.eye(S - 1) - Q, R[: S - 1, 0]), 0]
        assert np.all(np.asarray(res.lower[i]) <= exact * (1 + 1e-12))
        assert np.all(exact * (1 - 1e-12) <= np.asarray(res.upper[i]))


@SLOW
def test_other_supports_and_bounded_properties_go_model_by_model(shared):
    """Two models whose supports differ, and a step-bounded property: each model checked
    alone (the same answers as ``check`` on it)."""
    rng = np.random.default_rng(5)
    P1, mask = layered(rng, S=20)
    P2, _ = layered(rng, S=20)
    S = 20
    goal = np.arange(S) == S - 2
    with in_mode(True):
        models = [
            build(P, np.zeros(mask.shape), sparse=True, x64=True, action_mask=mask)
            for P in (P1, P2)
        ]
        widest = max(m.max_successors for m in models)
        models = [
            jp.make_sparse_mdp(*_padded(m, widest), m.rewards, action_mask=mask) for m in models
        ]
        batch = jax.tree_util.tree_map(lambda *x: np.stack(x), *models)
        for prop in ('Pmax=? [F "goal"]', 'Pmax=? [F<=4 "goal"]'):
            res = jp.check(batch, prop, labels={"goal": goal})
            for i, m in enumerate(models):
                alone = jp.check(m, prop, labels={"goal": goal})
                np.testing.assert_array_equal(res.values[i], alone.values)
                np.testing.assert_array_equal(res.policy[i], alone.policy)
    assert not shared


def _padded(model, k):
    nxt = np.full((*model.next_states.shape[:2], k), -1, np.int32)
    probs = np.zeros(nxt.shape)
    width = model.next_states.shape[-1]
    nxt[..., :width] = np.asarray(model.next_states)
    probs[..., :width] = np.asarray(model.probs)
    return nxt, probs


@pytest.mark.integration
def test_a_batch_under_jit_is_refused():
    rng = np.random.default_rng(1)
    P, mask = layered(rng, S=12)
    goal = np.arange(12) == 10
    mdp = build(P, np.zeros(mask.shape), sparse=True, x64=False, action_mask=mask)
    batch = releases(mdp, 2)
    with pytest.raises(ValueError, match="batch of models"):
        jax.jit(lambda b: jp.check(b, 'Pmax=? [F "goal"]', labels={"goal": goal}).values)(batch)


def test_check_all_refuses_a_batch():
    rng = np.random.default_rng(1)
    P, mask = layered(rng, S=12)
    goal = np.arange(12) == 10
    mdp = build(P, np.zeros(mask.shape), sparse=True, x64=False, action_mask=mask)
    with pytest.raises(ValueError, match="check_all takes one model, got a batch"):
        jp.check_all(releases(mdp, 2), 'P>=0.5 [F "goal"]', labels={"goal": goal})


@pytest.mark.integration
def test_a_batch_too_large_for_one_pass_is_split(monkeypatch, shared):
    """Padded rows over the memory budget: the batch goes in chunks, the same answers."""
    import jaxprivmdp.properties._topological as topological

    rng = np.random.default_rng(7)
    P, mask = layered(rng, S=30, back=0.3)
    goal = np.arange(30) == 28
    with in_mode(True):
        batch = releases(build(P, np.zeros(mask.shape), sparse=True, x64=True, action_mask=mask), 5)
        whole = jp.check(batch, 'Pmax=? [F "goal"]', labels={"goal": goal})
        monkeypatch.setattr(topological, "MAX_BATCH_SLOTS", 30 * 2 * 3 * 2)  # 2 models a chunk
        split = jp.check(batch, 'Pmax=? [F "goal"]', labels={"goal": goal})
    assert len(shared) == 2
    np.testing.assert_array_equal(split.lower, whole.lower)
    np.testing.assert_array_equal(split.upper, whole.upper)


def test_policy_iteration_starts_from_the_last_releases_policy(monkeypatch, shared):
    """With the compiled pass off, each release after the first starts policy iteration
    from the policy found for the one before it; every bound still holds (NumPy oracle)."""
    import jaxprivmdp.properties._guess as guess

    monkeypatch.setattr(guess, "SWEEP", False)
    starts = []
    real = guess._policy_iteration

    def spy(quo, sign, estimate, start=None):
        starts.append(start)
        return real(quo, sign, estimate, start)

    monkeypatch.setattr(guess, "_policy_iteration", spy)
    rng = np.random.default_rng(5)
    P, mask = layered(rng, S=30, back=0.3)
    S = P.shape[0]
    goal = np.arange(S) == S - 2
    with in_mode(True):
        batch = releases(build(P, np.zeros(mask.shape), sparse=True, x64=True, action_mask=mask), 4)
        res = jp.check(batch, 'Pmax=? [F "goal"]', labels={"goal": goal})
    assert len(shared) == 1 and len(starts) >= 4
    assert starts[0] is None and all(s is not None for s in starts[1:4])
    for i in range(4):
        Pi = dense_rows(one(batch, i))
        Pi = Pi / np.where(Pi.sum(-1, keepdims=True) > 0, Pi.sum(-1, keepdims=True), 1)
        exact = reach_oracle(Pi, mask, goal, True)
        assert np.all(np.asarray(res.lower[i]) <= exact + 1e-12)
        assert np.all(exact - 1e-12 <= np.asarray(res.upper[i]))
    assert np.all(np.asarray(res.converged))


@pytest.fixture
def swept(monkeypatch):
    """Records which releases the batch's compiled pass settled (``swept_releases``)."""
    import jaxprivmdp.properties._releases as released

    seen = []
    real = released.swept_releases

    def spy(*args):
        seen.append(real(*args))
        return seen[-1]

    monkeypatch.setattr(batching, "swept_releases", spy)
    return seen


@pytest.mark.parametrize(
    "sparse, threads, x64",
    [
        (True, 1, True),
        pytest.param(False, 1, True, marks=SLOW),
        pytest.param(True, 4, False, marks=SLOW),
    ],
)
def test_releases_the_compiled_pass_settles_match_each_models_check_bit_for_bit(
    monkeypatch, swept, sparse, threads, x64
):
    """The batch's one compiled call per release runs one model's steps in the same order:
    the same bounds, values and policies, bit for bit, as ``check`` on each alone, whether
    one thread takes the releases or several share them, float32 models as float64 ones."""
    import jaxprivmdp.properties._releases as released

    monkeypatch.setattr(released, "THREADS", threads)
    monkeypatch.setattr(released, "THREADED_WORK", 0)
    rng = np.random.default_rng(3)
    P, mask = layered(rng, S=40, back=0.0)  # (no cycles: the pass settles every release)
    goal = np.arange(40) == 38
    with in_mode(x64):
        batch = releases(
            build(P, np.zeros(mask.shape), sparse=sparse, x64=x64, action_mask=mask), 6
        )
        res = jp.check(batch, 'Pmax=? [F "goal"]', labels={"goal": goal})
        alone = [
            jp.check(one(batch, i), 'Pmax=? [F "goal"]', labels={"goal": goal}) for i in range(6)
        ]
    assert len(swept) == 1 and swept[0].all()
    for i, single in enumerate(alone):
        for field in ("lower", "upper", "values", "error_bound", "policy", "precision"):
            np.testing.assert_array_equal(getattr(res, field)[i], getattr(single, field))
        assert int(res.iterations[i]) == 0 and bool(res.converged[i])


def test_a_release_the_pass_cannot_settle_goes_the_way_of_one_model(swept):
    """A cycle of 200 states, each moving on with probability ``q`` and leaving otherwise
    (state 0 to the goal, the others to a sink): the compiled pass settles the release
    with ``q = 1/2`` and gives up on the one with ``q = 1 − 1e-7`` (its sweeps would take
    millions of rounds), which goes the way of one model (policy iteration's solve). Both
    values are the closed form ``(1 − q) / (1 − q^200)``, bit for bit each model's own."""
    n = 200

    def cycle(q):
        P = np.zeros((n + 2, 1, n + 2))
        for s in range(n):
            P[s, 0, (s + 1) % n] = q
            P[s, 0, n if s == 0 else n + 1] = 1 - q
        P[n, 0, n] = P[n + 1, 0, n + 1] = 1
        return jp.make_mdp(P, np.zeros((n + 2, 1)), dtype=np.float64)

    qs = [0.5, 1 - 1e-7]
    goal = np.arange(n + 2) == n
    with in_mode(True):
        models = [cycle(q) for q in qs]
        batch = jax.tree_util.tree_map(lambda *x: jax.numpy.stack(x), *models)
        res = jp.check(batch, 'P=? [F "goal"]', labels={"goal": goal})
        alone = [jp.check(m, 'P=? [F "goal"]', labels={"goal": goal}) for m in models]
    np.testing.assert_array_equal(swept[0], [True, False])
    for i, q in enumerate(qs):
        exact = (1 - q) / (1 - q**n)
        assert float(res.lower[i][0]) <= exact * (1 + 1e-9)
        assert exact * (1 - 1e-9) <= float(res.upper[i][0])
        np.testing.assert_array_equal(res.lower[i], alone[i].lower)
        np.testing.assert_array_equal(res.upper[i], alone[i].upper)
        assert bool(res.converged[i])


def test_the_batchs_threads_are_one_a_core_or_as_the_environment_says():
    from jaxprivmdp.properties._releases import _threads

    assert _threads(None) >= 1 and _threads("") == _threads(None)
    assert _threads("3") == 3
    for bad in ("0", "-2", "two", "1.5"):
        with pytest.raises(ValueError, match="JAXPRIVMDP_THREADS must be a positive integer"):
            _threads(bad)

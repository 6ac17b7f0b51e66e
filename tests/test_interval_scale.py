"""What large interval models take: the verified guess of their probabilities
(``properties/_interval_guess.py``: strategy iteration with linear solves, kept only where it
verifies) against the game oracle of ``test_interval_check.py`` (NumPy value iteration over the
rows' vertices), and the kernel filling rows in blocks of states (``STATE_BLOCK``)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_interval_check import SC, Game, leaky_go, oracle_reach, random_model

import jaxprivmdp as jp
from jaxprivmdp.models import _interval_expect as kernel
from jaxprivmdp.properties import _interval_check as ic
from jaxprivmdp.properties import _interval_graph as graph
from jaxprivmdp.properties import _interval_guess as ig
from jaxprivmdp.properties import _interval_iteration as ii


@pytest.fixture
def guess_at_once(monkeypatch):
    """The guess tried after one backup (small models: not before 1,024), every outcome
    recorded."""
    monkeypatch.setattr(ii, "FIRST_CHUNK", 1)
    monkeypatch.setattr(ii, "GUESS_AFTER_SMALL", 1)
    outcomes = []
    real = ic.guess_bounds

    def recorded(*args, **kwargs):
        out = real(*args, **kwargs)
        outcomes.append(tuple(b is not None for b in out))
        return out

    monkeypatch.setattr(ic, "guess_bounds", recorded)
    return outcomes


def slow_chain(n=40, p_goal=0.02, p_trap=0.01, width=0.005):
    """A ring of ``n`` states, each stepping on with most of its mass, a little to the goal
    (state n) and the trap (n + 1), boxes of ``± width``; a second action jumps two states on
    with other leaks. About 1/(p_goal + p_trap) backups per e-fold: hundreds for tol 1e-6."""
    S = n + 2
    lo, up = np.zeros((S, 2, S)), np.zeros((S, 2, S))
    for s in range(n):
        for a, (step, g, t) in enumerate([(1, p_goal, p_trap), (2, p_trap, p_goal / 2)]):
            p = np.zeros(S)
            p[(s + step) % n], p[n], p[n + 1] = 1 - g - t, g, t
            lo[s, a] = np.maximum(p - width, 0) * (p > 0)
            up[s, a] = np.minimum(p + width, 1) * (p > 0)
    for s in (n, n + 1):
        lo[s, :, s] = up[s, :, s] = 1.0
    goal = np.zeros(S, bool)
    goal[n] = True
    return lo, up, {"goal": goal}


def _cases():
    """Every pair and dtype; one in the unit tier."""
    for pair in ("maxmin", "minmin", "maxmax", "minmax"):
        for dtype in (np.float32, np.float64):
            unit = (pair, dtype) == ("maxmin", np.float64)
            marks = () if unit else (pytest.mark.integration,)
            yield pytest.param(dtype, pair, marks=marks, id=f"{pair}-{dtype.__name__}")


@pytest.mark.parametrize("dtype, pair", list(_cases()))
def test_slow_chain_within_the_oracle(dtype, pair, guess_at_once, request):
    lo, up, labels = slow_chain()
    S = lo.shape[0]
    game = Game(lo, up, np.ones((S, 2), bool), np.zeros((S, 2)))
    want = oracle_reach(game, labels["goal"], np.zeros(S, bool), pair[:3], pair[3:])
    with jax.enable_x64(dtype == np.float64):
        m = jp.make_interval_mdp(lo, up, np.zeros((S, 2)), dtype=dtype)
        # The unit case checks the dense model; the others its sparse twin too (1.5 s more).
        unit = request.node.get_closest_marker("integration") is None
        for model in (m,) if unit else (m, jp.to_sparse(m, max_successors=4)):
            res = jp.check(model, f'P{pair}=? [F "goal"]', labels=labels)
            assert bool(res.converged)
            lower, upper = np.asarray(res.lower, np.float64), np.asarray(res.upper, np.float64)
            assert np.all(lower <= want + 1e-12) and np.all(want <= upper + 1e-12), pair
            assert np.all(upper - lower <= 2e-6 * np.maximum(want, 1e-12) + 1e-7)
    assert guess_at_once, "the guess was never tried"
    if pair in ("maxmin", "minmin"):  # both bounds verified: no further iteration needed
        assert all(o == (True, True) for o in guess_at_once), guess_at_once
        assert int(res.iterations) <= 2
    else:  # nature maximizes: the lower bound is the iteration's
        assert all(not o[0] for o in guess_at_once), guess_at_once


@pytest.mark.integration
@pytest.mark.parametrize("seed", range(6))
def test_random_models_within_the_oracle(seed, guess_at_once):
    """Every quantifier pair on small random models (self-loops, cut entries, a trap), the
    guess tried after one backup: the oracle inside every state's interval."""
    S, A = 6, 2
    lo, up, mask, rewards, labels = random_model(seed, S, A)
    game = Game(lo, up, mask, rewards)
    with jax.enable_x64(True):
        m = jp.make_interval_mdp(lo, up, rewards, action_mask=mask, dtype=np.float64)
        for pol in ("max", "min"):
            for nat in ("max", "min"):
                want = oracle_reach(game, labels["goal"], np.zeros(S, bool), pol, nat)
                res = jp.check(m, f'P{pol}{nat}=? [F "goal"]', labels=labels)
                lower, upper = np.asarray(res.lower), np.asarray(res.upper)
                assert np.all(lower <= want + 1e-9) and np.all(want <= upper + 1e-9), (pol, nat)
                assert bool(res.converged)


def test_lower_candidate_refused_where_the_policy_could_stay():
    """``leaky_go``: s0 may stay forever (value 0 that way) or go (Pmaxmin = 1/3). With the
    policy held to "stay", ``l = 1`` on s0 passes ``l <= B_σ(l)``; the lower candidate must
    be refused because nature (minimizing) can keep the play on s0 under that policy."""
    lo, up, labels = leaky_go()
    with jax.enable_x64(True):
        m = jp.make_interval_mdp(lo, up, np.zeros((SC, 2)), dtype=np.float64)
        wide = ic._float64(m)
        e = graph.edges(wide.lower, wide.upper, wide.next_states, wide.action_mask)
        goal = labels["goal"]
        fixed = np.arange(SC) > 0  # s0 undecided, the rest absorbing (goal 1, others 0)
        p = ic._problem(wide, np.zeros((SC, 2)), fixed, goal.astype(float), ("max", "min"),
                        1.0, np)  # fmt: skip
        p = jax.tree_util.tree_map(jnp.asarray, p)
        stay = np.zeros(SC, np.int32)
        too_high = np.where(goal, 1.0, 0.0)
        too_high[0] = 1.0
        onehot = np.eye(2, dtype=bool)[stay]
        held = p._replace(usable=jnp.asarray(onehot))
        assert bool(np.all(ii.verified_below(held, jnp.asarray(too_high))))  # the trap
        assert not ig._below(p, e, too_high, stay, ~np.asarray(fixed))
        go = np.ones(SC, np.int32)
        right = np.where(goal, 1.0, 0.0)
        right[0] = 1 / 3 - 1e-9
        assert ig._below(p, e, right, go, ~np.asarray(fixed))
        right[0] = 1 / 3 + 1e-9  # above the value: l <= B(l) fails
        assert not ig._below(p, e, right, go, ~np.asarray(fixed))


@pytest.mark.parametrize(
    "K",
    [4, pytest.param(20, marks=pytest.mark.integration)],  # the pairwise fill, sorted rows
)
def test_kernel_in_blocks_of_states_equals_one_piece(K, monkeypatch):
    """The blocked kernel (``lax.map`` over 5-state batches, 37 states: a remainder) gives the
    one-piece kernel's numbers, eagerly and under jit: the same up to the order of a row's
    sums (XLA may sum a batch's rows otherwise: a few ulps, within ``fill_margin``)."""
    rng = np.random.default_rng(K)
    S, A = 37, 2
    ns = rng.integers(-1, S, (S, A, K)).astype(np.int32)
    ns[..., 0] = rng.integers(0, S, (S, A))
    p = rng.dirichlet(np.ones(K), (S, A)) * (ns >= 0)
    lo, up = np.maximum(p - 0.1, 0) * (ns >= 0), np.minimum(p + 0.1, 1) * (ns >= 0)
    up[..., 0] = 1.0  # every row's polytope non-empty
    v = rng.uniform(size=(2, S))
    args = tuple(jnp.asarray(a) for a in (lo, up, ns))

    def all_three():
        return (
            kernel.interval_expect(*args, jnp.asarray(v), -1, jnp, with_scale=True),
            kernel.interval_excess(*args, jnp.asarray(v[0]), jnp.asarray(v[1]), 1, jnp),
            kernel.nature_choice(*args, jnp.asarray(v[0]), -1, jnp),
        )

    # Eagerly, the one-piece kernel is about 100 single-operation compilations (5 s): the
    # unit case compiles it as one program (a new function: STATE_BLOCK is read when traced).
    whole = all_three() if K > 16 else jax.jit(lambda: all_three())()
    monkeypatch.setattr(kernel, "STATE_BLOCK", 5)
    for blocked in (jax.jit(all_three)(),) + ((all_three(),) if K > 16 else ()):
        for a, b in zip(
            jax.tree_util.tree_leaves(whole), jax.tree_util.tree_leaves(blocked), strict=True
        ):
            assert a.shape == b.shape
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=4e-7, atol=1e-7)

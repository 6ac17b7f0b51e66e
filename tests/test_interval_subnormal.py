"""``jp.check`` on interval models whose values lie below ``finfo(float64).tiny`` (or just
above it), built from normal inputs, against exact values computed here with
``fractions.Fraction`` on the float64 inputs (never with the library).

XLA flushes results below ``tiny`` to zero on CPU, so a backup widened only relatively
(``(1 ± m) · backup``) reports ``[0, 0]`` for a value of ``2^-1060``, or ``[4 tiny, 4 tiny]``
for one of ``4.5 tiny``: every reported ``[lower, upper]`` here must contain the exact value,
and the unbounded checks must still converge (a gap within ``gap_floor`` counts as met).
"""

from fractions import Fraction

import jax
import numpy as np
import pytest

import jaxprivmdp as jp

TINY = float(np.finfo(np.float64).tiny)


def contains(res, state, exact: Fraction):
    """Whether the reported float64 ``[lower, upper]`` of ``state`` contains ``exact``."""
    lo, up = float(res.lower[state]), float(res.upper[state])
    return Fraction(lo) <= exact <= Fraction(up)


def chain(k, next_lo, next_hi):
    """States ``0 .. k-1`` in a chain, each to the next with probability in ``[next_lo,
    next_hi]`` (state ``k - 1`` to the goal ``k``), else to the sink ``k + 1``; one action
    (an interval DTMC), sparse rows of two entries."""
    S = k + 2
    ns = np.full((S, 1, 2), -1)
    lo, up = np.zeros((S, 1, 2)), np.zeros((S, 1, 2))
    for s in range(k):
        ns[s, 0] = [s + 1, k + 1]
        lo[s, 0] = [next_lo, 1 - next_hi]
        up[s, 0] = [next_hi, 1 - next_lo]
    for s in (k, k + 1):
        ns[s, 0, 0], lo[s, 0, 0], up[s, 0, 0] = s, 1.0, 1.0
    return lo, up, ns, {"goal": np.arange(S) == k}


@pytest.mark.parametrize("exact_rows", [False, True])
def test_probability_below_tiny(exact_rows):
    """Pmax, Pmin of reaching the goal along 530 steps of probability in [1/4, 1/2] (or
    exactly 1/4, a point model): ``2^-530`` and ``2^-1060`` (subnormal), or ``2^-1060``
    both; and ``G``, their complements."""
    k = 530
    next_hi = 0.25 if exact_rows else 0.5
    lo, up, ns, labels = chain(k, 0.25, next_hi)
    with jax.enable_x64(True):
        m = jp.make_interval_mdp(lo, up, np.zeros((k + 2, 1)), next_states=ns, dtype=np.float64)
        exact = {"max": Fraction(next_hi) ** k, "min": Fraction(1, 4) ** k}
        for q in ("max", "min"):
            res = jp.check(m, f'P{q}=? [F "goal"]', labels=labels)
            assert contains(res, 0, exact[q]), (q, float(res.lower[0]), float(res.upper[0]))
            assert bool(res.converged), (q, float(res.precision))
            flip = {"max": "min", "min": "max"}[q]
            res = jp.check(m, f'P{flip}=? [G !"goal"]', labels=labels)
            assert contains(res, 0, 1 - exact[q]), (flip, float(res.lower[0]))


def test_probability_below_tiny_two_quantifiers():
    """An interval MDP: the policy picks in every state a step in [1/4, 1/2] or one of
    exactly 3/8: ``(3/8)^530`` (normal) for Pmaxmin and Pminmax, ``2^-1060`` (subnormal) for
    Pminmin, ``2^-530`` for Pmaxmax."""
    k = 530
    lo1, up1, ns, labels = chain(k, 0.25, 0.5)
    lo2, up2, _, _ = chain(k, 0.375, 0.375)
    lo, up = np.concatenate([lo1, lo2], axis=1), np.concatenate([up1, up2], axis=1)
    ns = np.concatenate([ns, ns], axis=1)
    mask = np.ones((k + 2, 2), bool)
    with jax.enable_x64(True):
        m = jp.make_interval_mdp(lo, up, np.zeros((k + 2, 2)), next_states=ns,
                                 action_mask=mask, dtype=np.float64)  # fmt: skip
        steps = {"maxmin": Fraction(3, 8), "minmax": Fraction(3, 8), "minmin": Fraction(1, 4),
                 "maxmax": Fraction(1, 2)}  # fmt: skip
        for q, step in steps.items():
            exact = step**k
            res = jp.check(m, f'P{q}=? [F "goal"]', labels=labels)
            assert contains(res, 0, exact), (q, float(res.lower[0]), float(res.upper[0]))
            assert bool(res.converged), (q, float(res.precision))


def rare_reward(exact_rows):
    """s0 (no reward) reaches s1 with probability in ``[2^-34, 2^-33]`` (or exactly
    ``2^-33``), else the goal; s1 pays ``1e-300`` and goes to the goal."""
    hi = 2.0**-33
    low = hi if exact_rows else hi / 2
    lo, up = np.zeros((3, 1, 3)), np.zeros((3, 1, 3))
    lo[0, 0, 1:], up[0, 0, 1:] = [low, 1 - hi], [hi, 1 - low]
    lo[1, 0, 2] = up[1, 0, 2] = 1.0
    lo[2, 0, 2] = up[2, 0, 2] = 1.0
    rewards = np.array([[0.0], [1e-300], [0.0]])
    exact = {"max": Fraction(hi) * Fraction(1e-300), "min": Fraction(low) * Fraction(1e-300)}
    return lo, up, rewards, exact


@pytest.mark.parametrize("exact_rows", [False, True])
def test_reward_below_tiny(exact_rows):
    """A reward of 1e-300 reached with probability about 1e-10: about 1e-310."""
    lo, up, rewards, exact = rare_reward(exact_rows)
    labels = {"goal": np.arange(3) == 2}
    with jax.enable_x64(True):
        m = jp.make_interval_mdp(lo, up, rewards, dtype=np.float64)
        for q in ("max", "min"):
            res = jp.check(m, f'R{q}=? [F "goal"]', labels=labels)
            assert contains(res, 0, exact[q]), (q, float(res.lower[0]), float(res.upper[0]))
            assert contains(res, 1, Fraction(1e-300)), q
            assert bool(res.converged), (q, float(res.precision))
            res = jp.check(m, f"R{q}=? [C]")  # the goal pays nothing: the same total
            assert contains(res, 0, exact[q]), (q, float(res.lower[0]), float(res.upper[0]))
            assert bool(res.converged), (q, float(res.precision))


@pytest.mark.parametrize("self_loop", [0.25, 1 / 3])
def test_reward_just_above_tiny_in_a_loop(self_loop):
    """A reward of ``3 tiny`` with a self-loop of probability ``p``, else the goal: ``3 tiny
    / (1 − p)`` (4 tiny, or 4.5 tiny for 1/3, whose flushed backups stall at 4 tiny). A point
    model (``lower == upper``) where the row sums to exactly 1, else the loop's probability
    in ``[p, p]`` and the exit's in ``[0, 1]``."""
    exact_rows = self_loop == 0.25
    lo, up = np.zeros((2, 1, 2)), np.zeros((2, 1, 2))
    lo[0, 0] = [self_loop, 1 - self_loop if exact_rows else 0.0]
    up[0, 0] = [self_loop, 1 - self_loop if exact_rows else 1.0]
    lo[1, 0, 1] = up[1, 0, 1] = 1.0
    rewards = np.array([[3 * TINY], [0.0]])
    exact = Fraction(rewards[0, 0]) / (1 - Fraction(self_loop))
    labels = {"goal": np.arange(2) == 1}
    with jax.enable_x64(True):
        m = jp.make_interval_mdp(lo, up, rewards, dtype=np.float64)
        for prop in ('Rmax=? [F "goal"]', 'Rmin=? [F "goal"]', "Rmax=? [C]", "Rmin=? [C]"):
            res = jp.check(m, prop) if "[C]" in prop else jp.check(m, prop, labels=labels)
            assert contains(res, 0, exact), (prop, float(res.lower[0]), float(res.upper[0]))
            assert bool(res.converged), (prop, float(res.precision))


def test_bounded_complement_below_eps():
    """``G<=2`` as ``1 −`` an ``F<=2`` of about 1e-20: the complements of its bounds both
    round to 1, yet the value ``1 − 1e-20`` is below 1 (the interval must not be [1, 1])."""
    ns = np.array([[[1, 3]], [[2, 3]], [[2, -1]], [[3, -1]]])
    lo = np.array([[[1e-10, 0.0]], [[1e-10, 0.0]], [[1.0, 0]], [[1.0, 0]]])
    up = np.array([[[1e-10, 1.0]], [[1e-10, 1.0]], [[1.0, 0]], [[1.0, 0]]])
    labels = {"goal": np.arange(4) == 2}
    with jax.enable_x64(True):
        m = jp.make_interval_mdp(lo, up, np.zeros((4, 1)), next_states=ns, dtype=np.float64)
        for q in ("min", "max"):
            res = jp.check(m, f'P{q}=? [G<=2 !"goal"]', labels=labels)
            assert contains(res, 0, 1 - Fraction(1e-10) ** 2), (q, float(res.lower[0]))


def test_ordinary_model_unchanged():
    """Models far above ``tiny``: ``test_interval_check``'s geometric loop (exit in [1/4,
    1/2], else stay), then two states that loop into each other and a sink: the answers and
    iteration counts of the checker before the floor, bit for bit."""
    got = {}
    for name, (lo, up, rewards, mask) in ORDINARY.items():
        labels = {"goal": np.arange(lo.shape[0]) == 1}
        with jax.enable_x64(True):
            m = jp.make_interval_mdp(lo, up, rewards, action_mask=mask, dtype=np.float64)
            for q in ("minmax", "maxmin"):
                for prop in (f'R{q}=? [F "goal"]', f'P{q}=? [F "goal"]', f"R{q}=? [C]",
                             f'P{q}=? [G !"goal"]'):  # fmt: skip
                    if "[C]" in prop and name == "loop":
                        continue  # (an infinite total: the goal's self-loop pays)
                    res = jp.check(m, prop) if "[C]" in prop else jp.check(m, prop, labels=labels)
                    got[name, prop] = (float(res.lower[0]), float(res.upper[0]),
                                       int(res.iterations), bool(res.converged))  # fmt: skip
    assert got.keys() == EXPECTED_ORDINARY.keys()
    for key, (lo, up, it, conv) in EXPECTED_ORDINARY.items():
        # (bit for bit under the tests' XLA build; another optimization level moves the
        # last ulps, and with them the iteration count by one at most)
        assert got[key][:2] == pytest.approx((lo, up), rel=1e-14, abs=0), key
        assert abs(got[key][2] - it) <= 1 and got[key][3] == conv, (key, got[key])


def _ordinary():
    loop_lo, loop_up = np.zeros((3, 2, 3)), np.zeros((3, 2, 3))
    loop_lo[0, :, :2], loop_up[0, :, :2] = [0.5, 0.25], [0.75, 0.5]
    for s in range(1, 3):
        loop_lo[s, :, s] = loop_up[s, :, s] = 1.0
    loop_mask = np.eye(2, dtype=bool)[np.zeros(3, int)]
    loop_mask[0, 1] = True
    # 0 and 2 loop into each other; 1 the goal, 3 a sink (both absorbing, no reward)
    lo, up = np.zeros((4, 2, 4)), np.zeros((4, 2, 4))
    lo[0, 0], up[0, 0] = [0.2, 0.1, 0.0, 0.2], [0.6, 0.3, 0.0, 0.5]
    lo[0, 1], up[0, 1] = [0.0, 0.0, 0.5, 0.1], [0.0, 0.0, 0.9, 0.5]
    lo[2, 0], up[2, 0] = [0.3, 0.1, 0.0, 0.0], [0.7, 0.4, 0.3, 0.0]
    lo[2, 1], up[2, 1] = [0.25, 0.25, 0.25, 0.25], [0.25, 0.25, 0.25, 0.25]
    for s in (1, 3):
        lo[s, :, s] = up[s, :, s] = 1.0
    rewards = np.array([[1.0, 2.0], [0.0, 0.0], [0.5, 3.0], [0.0, 0.0]])
    return {
        "loop": (loop_lo, loop_up, np.ones((3, 2)), loop_mask),
        "pair": (lo, up, rewards, np.ones((4, 2), bool)),
    }


ORDINARY = _ordinary()


# The checker's answers before the floor, under the tests' XLA build (optimization level
# 0, tests/conftest.py): the same bit for bit after it.
EXPECTED_ORDINARY = {
    ("loop", 'Rminmax=? [F "goal"]'): (3.9999999999999316, 4.000000062562432, 126, True),
    ("loop", 'Pminmax=? [F "goal"]'): (1.0, 1.0, 0, True),
    ("loop", 'Pminmax=? [G !"goal"]'): (0.0, 0.0, 0, True),
    ("loop", 'Rmaxmin=? [F "goal"]'): (1.9999999999999831, 2.000000031281233, 53, True),
    ("loop", 'Pmaxmin=? [F "goal"]'): (1.0, 1.0, 0, True),
    ("loop", 'Pmaxmin=? [G !"goal"]'): (0.0, 0.0, 0, True),
    ("pair", 'Rminmax=? [F "goal"]'): (np.inf, np.inf, 0, True),
    ("pair", 'Pminmax=? [F "goal"]'): (0.4285711446374825, 0.4285717298217418, 30, True),
    ("pair", "Rminmax=? [C]"): (2.49999999999996, 2.500000039107103, 73, True),
    ("pair", 'Pminmax=? [G !"goal"]'): (0.7999993832911347, 0.8000001176198459, 21, True),
    ("pair", 'Rmaxmin=? [F "goal"]'): (np.inf, np.inf, 0, True),
    ("pair", 'Pmaxmin=? [F "goal"]'): (0.1999999411900779, 0.20000030835483645, 22, True),
    ("pair", "Rmaxmin=? [C]"): (4.79999999999993, 4.800000075087429, 55, True),
    ("pair", 'Pmaxmin=? [G !"goal"]'): (0.5714280820167734, 0.57142903270824, 29, True),
}


@pytest.mark.parametrize("prop", ["Rmaxmax=? [C<=1]", "Rminmin=? [C<=2]"])
def test_negative_rewards_are_refused_for_every_reward_property(prop):
    """The interval checker's backups are widened for non-negative rewards only (a negative
    reward of ``R [C<=k]`` was reported with ``lower > upper``)."""
    P = np.ones((1, 1, 1))
    m = jp.make_interval_mdp(P, P, -np.ones((1, 1)))
    with pytest.raises(ValueError, match="non-negative rewards"):
        jp.check(m, prop)

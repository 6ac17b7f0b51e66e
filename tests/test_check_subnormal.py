"""``check``'s bounds hold where values fall below the smallest normal number ``tiny``.

Relative widening ``(1 ± m) · backup`` covers rounding only above ``tiny``: below it IEEE
rounding is absolute, and XLA on CPU flushes subnormal results to zero. The oracle is exact
rational arithmetic (:class:`fractions.Fraction`) on the stored numbers, each row divided by
its exact sum (the distribution a row stands for), sharing no code with the library.
"""

from fractions import Fraction

import jax
import numpy as np
import pytest
from test_check_batch import shared  # noqa: F401 (a fixture)
from test_check_precision import build as build_model

import jaxprivmdp.properties._unbounded as unbounded
from jaxprivmdp.models import make_mdp
from jaxprivmdp.properties import check

GOAL = {"goal": np.array([False, False, True, False])}


def exact_row(row):
    """The stored row as the distribution it stands for: each entry over the exact sum."""
    row = [Fraction(float(x)) for x in row]
    total = sum(row)
    return [x / total for x in row]


def build(P, R, dtype, sparse):
    return build_model(P, R, sparse=sparse, x64=dtype == np.float64)


def chain(p, q):
    """0 -(a0: p)-> 1 -(q)-> 2 (goal); the rest of each row, and action 1, to 3 (a sink)."""
    P = np.zeros((4, 2, 4))
    P[0, 0, 1], P[0, 0, 3], P[0, 1, 3] = p, 1 - p, 1
    P[1, :, 2], P[1, :, 3] = q, 1 - q
    P[2, :, 2] = P[3, :, 3] = 1
    return P


def chain_value(P, dtype):
    """``Pmax`` from state 0 of :func:`chain`'s model, exactly, of the rows as stored."""
    stored = np.asarray(P, dtype)
    return exact_row(stored[0, 0])[1] * exact_row(stored[1, 0])[2]


def loop(p, r):
    """0 -(a0: p)-> 1, else the goal 2; 1 earns ``r`` a step, stays w.p. 1/3, else the goal."""
    P = np.zeros((4, 2, 4))
    P[0, 0, 1], P[0, 0, 2], P[0, 1, 2] = p, 1 - p, 1
    P[1, :, 1], P[1, :, 2] = 1 / 3, 2 / 3
    P[2, :, 2] = P[3, :, 3] = 1
    R = np.zeros((4, 2))
    R[1] = r
    return P, R


def loop_value(P, R, dtype):
    """``Rmax [F goal]`` from state 0 of :func:`loop`'s model, exactly."""
    stored = np.asarray(P, dtype)
    stay = exact_row(stored[1, 0])[1]
    v1 = Fraction(float(np.asarray(R, dtype)[1, 0])) / (1 - stay)
    return exact_row(stored[0, 0])[1] * v1


def holds(res, exact, state=0):
    lo, up = float(res.lower[state]), float(res.upper[state])
    assert Fraction(lo) <= exact <= Fraction(up), (lo, up, float(exact))
    assert bool(res.converged)


NO_GUESS = {"guess_bounds": lambda *a, **k: (None, None)}
# The checker's routes through an unbounded property: as chosen, with no verified guess (the
# components' device passes), over all states (no components' order).
ROUTES = {"default": {}, "no-guess": NO_GUESS, "all-states": {**NO_GUESS, "fits": lambda g: False}}


@pytest.fixture(params=list(ROUTES))
def route(request, monkeypatch):
    """Each of :data:`ROUTES` (a test narrows them with ``indirect`` parametrization)."""
    for name, fn in ROUTES[request.param].items():
        monkeypatch.setattr(unbounded, name, fn)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("p", [1e-200, 1e-160])
def test_a_probability_below_tiny(route, sparse, p):
    """``Pmax`` = p · q, below float64's ``tiny`` (1e-400 rounds to 0): never ``[0, 0]``."""
    P = chain(p, p)
    with jax.enable_x64(True):
        mdp = build(P, np.zeros((4, 2)), np.float64, sparse)
        res = check(mdp, 'Pmax=? [F "goal"]', labels=GOAL)
    exact = chain_value(P, np.float64)
    holds(res, exact)
    assert float(res.upper[0]) > 0
    assert float(res.upper[0]) <= 1e-290  # the gap floor, not a useless bound


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("p", [1e-30, 1e-40])
def test_a_reward_in_the_subnormal_range(route, sparse, p):
    """``Rmax`` = p · r / (1 − 1/3) about 1.5e-310 or 1.5e-320 (subnormal: 3 digits)."""
    P, R = loop(p, 1e-280)
    with jax.enable_x64(True):
        mdp = build(P, R, np.float64, sparse)
        res = check(mdp, 'Rmax=? [F "goal"]', labels=GOAL)
        low = check(mdp, 'Rmin=? [F "goal"]', labels=GOAL)
    holds(res, loop_value(P, R, np.float64))
    holds(low, Fraction(0))
    # state 1 (1.5e-280) is above the gap floor (1e-292): still relatively tight
    v1 = Fraction(1e-280) / (1 - exact_row(P[1, 0])[1])
    holds(res, v1, state=1)
    assert float(res.upper[1] - res.lower[1]) <= 2e-6 * float(v1)


def test_float32_values_below_float32_tiny():
    """A float32 model whose value (1e-40) is below float32's ``tiny``: checked in float64,
    narrowed outward (to normal float32 numbers: see the last test)."""
    P = chain(1e-20, 1e-20)
    mdp = make_mdp(P, np.zeros((4, 2)), dtype=np.float32)
    res = check(mdp, 'Pmax=? [F "goal"]', labels=GOAL)
    holds(res, chain_value(P, np.float32))


@pytest.mark.parametrize("sparse", [False, True])
def test_a_bounded_probability_below_tiny(sparse):
    P = chain(1e-200, 1e-200)
    with jax.enable_x64(True):
        mdp = build(P, np.zeros((4, 2)), np.float64, sparse)
        res = check(mdp, 'Pmax=? [F<=2 "goal"]', labels=GOAL)
    holds(res, chain_value(P, np.float64))
    assert float(res.upper[0]) > 0


def test_a_bounded_probability_below_tiny_under_jit():
    """Traced, the check runs in the model's dtype (float32), where 1e-20 · 1e-20 flushes."""
    P = chain(1e-20, 1e-20)
    mdp = make_mdp(P, np.zeros((4, 2)), dtype=np.float32)

    @jax.jit
    def run(m):
        res = check(m, 'Pmax=? [F<=2 "goal"]', labels=GOAL)
        return res.lower, res.upper

    lo, up = run(mdp)
    exact = chain_value(P, np.float32)
    assert Fraction(float(lo[0])) <= exact <= Fraction(float(up[0]))
    assert float(up[0]) > 0


@pytest.mark.parametrize("x64", [False, True])
def test_zeros_of_a_bounded_property_stay_exact(x64):
    """A state whose every term is an exact 0 (the sink) gets no error at all: the absolute
    term is added only where a term is not known to be 0."""
    P = chain(1e-20, 0.5)
    with jax.enable_x64(x64):
        mdp = make_mdp(P, np.zeros((4, 2)), dtype=np.float64 if x64 else np.float32)
        res = check(mdp, 'Pmax=? [F<=3 "goal"]', labels=GOAL)
    assert float(res.lower[3]) == float(res.upper[3]) == 0
    assert float(res.error_bound[3]) == 0
    holds(res, chain_value(P, np.float64 if x64 else np.float32))


@pytest.mark.parametrize("route", ["default", "no-guess"], indirect=True)
def test_a_batch_below_tiny(route, shared):  # noqa: F811 (the fixture)
    """A batch (one precomputation, every loop shared) of models of one support."""
    Ps = [chain(p, p) for p in (1e-200, 1e-160, 0.5)]
    with jax.enable_x64(True):
        models = [build(P, np.zeros((4, 2)), np.float64, True) for P in Ps]
        batch = jax.tree_util.tree_map(lambda *x: jax.numpy.stack(x), *models)
        res = check(batch, 'Pmax=? [F "goal"]', labels=GOAL)
    assert shared  # the shared path ran
    for i, P in enumerate(Ps):
        one = jax.tree_util.tree_map(lambda x, i=i: x[i], res)
        holds(one, chain_value(P, np.float64))


def bad_once(p):
    """0 reaches ``bad`` (1) w.p. ``p``, else the sink 2; both absorbing: ``P [G !bad]``
    from 0 is ``1 − p``, below 1."""
    P = np.zeros((3, 1, 3))
    P[0, 0, 1], P[0, 0, 2] = p, 1 - p
    P[1, 0, 1] = P[2, 0, 2] = 1
    return P, {"bad": np.array([False, True, False])}


@pytest.mark.parametrize("prop", ['P=? [G<=3 !"bad"]', 'P=? [G !"bad"]'])
@pytest.mark.parametrize("x64", [False, True])
def test_a_complement_below_one_is_never_exactly_one(prop, x64):
    """``G`` is ``1 − F``: with ``F`` below ``eps / 2`` both complements round to 1, which
    must not read as an exact 1."""
    P, labels = bad_once(1e-20)
    dtype = np.float64 if x64 else np.float32
    with jax.enable_x64(x64):
        res = check(make_mdp(P, np.zeros((3, 1)), dtype=dtype), prop, labels=labels)
    exact = 1 - exact_row(np.asarray(P, dtype)[0, 0])[1]
    holds(res, exact)
    assert float(res.lower[0]) < 1 and float(res.error_bound[0]) > 0


def test_a_complement_under_jit():
    P, labels = bad_once(2e-8)  # float32: 1 − 2e-8 rounds to 1
    mdp = make_mdp(P, np.zeros((3, 1)), dtype=np.float32)
    lo, up = jax.jit(lambda m: check(m, 'P=? [G<=3 !"bad"]', labels=labels)[6:8])(mdp)
    exact = 1 - exact_row(np.asarray(P, np.float32)[0, 0])[1]
    assert Fraction(float(lo[0])) <= exact <= Fraction(float(up[0])) and float(lo[0]) < 1


def test_a_probability_that_normalizes_below_tiny_is_refused():
    """A row summing to just above 1 divides an entry of ``tiny`` below ``tiny``."""
    P = chain(0.5, 0.5)
    tiny = np.finfo(np.float64).tiny
    P[0, 0, 1:4] = [tiny, 0.5, 0.5 + 2**-52]
    P[0, 0, 0] = 0
    with jax.enable_x64(True):
        mdp = make_mdp(P, np.zeros((4, 2)))
        with pytest.raises(ValueError, match="divided by its row's sum"):
            check(mdp, 'Pmax=? [F<=2 "goal"]', labels=GOAL)


def test_a_visiting_bound_of_subnormal_return_probabilities():
    """The visiting-time bound divides by probabilities of never returning: 1e-20 · 1e-300
    lies in the subnormal range, whose rounding is absolute (the bound must stay above)."""
    P = np.zeros((4, 1, 4))
    P[0, 0, 1], P[0, 0, 0] = 1e-20, 1 - 1e-20  # 0 -> 1 rarely, else stays
    P[1, 0, 2], P[1, 0, 0] = 1.02e-300, 1 - 1.02e-300  # 1 -> goal rarely, else back to 0
    P[2, 0, 2] = P[3, 0, 3] = 1
    R = np.zeros((4, 1))
    R[0] = 1e-300
    with jax.enable_x64(True):
        res = check(make_mdp(P, R), 'R=? [F "goal"]', labels=GOAL)
    stay, leave = (exact_row(P[0, 0])[i] for i in (0, 1))
    back, on = (exact_row(P[1, 0])[i] for i in (0, 2))
    # v0 = r + stay v0 + leave v1, v1 = back v0: v0 = r / (1 - stay - leave back)
    v0 = Fraction(1e-300) / (1 - stay - leave * back)
    assert Fraction(float(res.lower[0])) <= v0 <= Fraction(float(res.upper[0]))
    assert on > 0


def test_float32_bounds_stay_normal_for_jax():
    """A float32 answer below float32's ``tiny``: its bounds are rounded outward to normal
    numbers (JAX reads subnormal ones as 0)."""
    P = chain(1e-20, 1e-20)
    res = check(make_mdp(P, np.zeros((4, 2)), dtype=np.float32), 'Pmax=? [F "goal"]', labels=GOAL)
    tiny = np.finfo(np.float32).tiny
    assert float(res.lower[0]) == 0 and float(res.upper[0]) >= tiny
    assert bool(res.upper[0] > 0) and bool(res.error_bound[0] > 0)  # (in JAX)


def test_one_convergence_rule():
    """The iteration's test and ``precision <= tol`` agree near the gap floor (a gap met by
    ``tol · s + floor`` but by neither test alone stopped the iteration unconverged)."""
    from jaxprivmdp.properties._precision import gap_floor, relative_width

    floor, tol = gap_floor(np.float64), 1e-6
    for mid in (5e-287, 1e-280, 1e-300, 1.0):
        for gap in (0.5 * floor, 1.5 * floor, 2 * tol * mid, 0.5 * tol * mid):
            lo, up = np.array([mid - gap / 2]), np.array([mid + gap / 2])
            met = bool(unbounded.meets_tol(lo[None], up[None], tol)[0])
            assert met == bool(relative_width(lo, up, np) <= tol), (mid, gap)

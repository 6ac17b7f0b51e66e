"""The vectorized ``mdp_guarantee`` against the per-row loop it replaced.

The oracle below is the previous implementation: a Python loop over the privatized rows, a
dict per row, ``compose`` for ``adjacency="all"``. The results must agree to the last bit.
"""

import math
from fractions import Fraction

import jax
import numpy as np
import pytest

import jaxprivmdp as jp
from jaxprivmdp._checks import ETA_RELATIVE_TOLERANCE
from jaxprivmdp.models._support import host_mechanism_input, private_rows
from jaxprivmdp.models.examples import gridworld
from jaxprivmdp.privacy import mdp_guarantee
from jaxprivmdp.privacy._mdp import compose
from jaxprivmdp.privacy._row import Guarantee, guarantee


def _loop_oracle(k, transitions, *, b, eta, target_delta, support, smoothing, adjacency):
    inp = host_mechanism_input(transitions, support=support, smoothing=smoothing)
    if eta is None and smoothing is not None:
        eta = smoothing
    P, supp = inp.rows, np.asarray(inp.support, bool)
    rows = []
    for s, a in zip(*np.nonzero(private_rows(inp)), strict=True):
        entries = P[s, a][supp[s, a]]
        n, row_min = entries.size, float(entries.min())
        if eta is not None and row_min < eta * (1 - ETA_RELATIVE_TOLERANCE):
            raise ValueError("below eta")
        row_b = b if smoothing is None else (1.0 - n * smoothing) * b
        rows.append(((int(s), int(a)), n, row_b, row_min if eta is None else eta))
    row_delta = target_delta
    if adjacency == "all":  # the largest float d with len(rows) * d <= target_delta exactly
        row_delta = target_delta / max(len(rows), 1)
        while Fraction(row_delta) * len(rows) > Fraction(target_delta):
            row_delta = math.nextafter(row_delta, 0.0)
    per_row = {}
    for key, n, row_b, row_eta in rows:
        if row_b <= 0:
            per_row[key] = Guarantee(0.0, 0.0, math.nan, k, 0.0, row_eta, n, math.nan)
        else:
            per_row[key] = guarantee(k, b=row_b, eta=row_eta, n=n, target_delta=row_delta)
    if not per_row:
        return 0.0, 0.0, per_row
    if adjacency == "row":
        return (
            max(g.epsilon for g in per_row.values()),
            max(g.delta for g in per_row.values()),
            per_row,
        )
    c = compose(per_row.values())
    return c.epsilon, c.delta, per_row


def _same(g, h):
    # Bitwise equality of two Guarantees, NaN == NaN.
    return all((x == y) or (x != x and y != y) for x, y in zip(g, h, strict=True))


CASES = [
    ("grid", dict(b=0.1, eta=None, support=None, smoothing=None)),
    ("grid", dict(b=0.1, eta=0.01, support=None, smoothing=None)),
    ("random", dict(b=0.2, eta=None, support="nonzero", smoothing=None)),
    ("random", dict(b=0.2, eta=None, support=None, smoothing=0.02)),
    ("random", dict(b=0.2, eta=1 / 6, support=None, smoothing=1 / 6)),  # data-free rows
]


def _as_model(model):
    """An array of rows as a float64 model (the accounting reads its rows on the host)."""
    if not isinstance(model, np.ndarray):
        return model
    with jax.enable_x64(True):
        zeros = np.zeros(model.shape[:2])
        return jp.make_mdp(model, zeros, horizon=1, dtype=np.float64)


def _model(kind):
    if kind == "grid":
        return gridworld(4, 5)
    rng = np.random.default_rng(3)
    P = rng.random((6, 3, 6)) * (rng.random((6, 3, 6)) < 0.6)
    P[..., 0] += 0.05
    P[1, 2] = np.eye(6)[4]  # one deterministic row, not privatized
    return P / P.sum(-1, keepdims=True)


@pytest.mark.parametrize("adjacency", ["row", "all"])
@pytest.mark.parametrize("kind, opts", CASES)
def test_equals_the_per_row_loop(kind, opts, adjacency):
    model = _model(kind)
    adj = jp.privacy.Adjacency(opts["b"], opts["eta"], scope=adjacency)
    extra = dict(support=opts["support"], smoothing=opts["smoothing"])
    got = mdp_guarantee(7.0, _as_model(model), adj, target_delta=1e-3, **extra)
    eps, dlt, per_row = _loop_oracle(7.0, model, target_delta=1e-3, adjacency=adjacency, **opts)
    assert (got.epsilon, got.delta) == (eps, dlt)  # bit for bit
    assert got.num_rows == len(per_row) == len(got.per_row)
    assert list(got.per_row) == list(per_row)  # the same rows in the same order
    assert all(_same(got.per_row[key], g) for key, g in per_row.items())
    assert f"{len(per_row)} rows" in repr(got)


def test_lookup_of_rows_not_privatized():
    got = mdp_guarantee(
        7.0,
        _as_model(_model("random")),
        jp.privacy.Adjacency(0.2),
        support="nonzero",
        target_delta=0.001,
    )
    assert (1, 2) not in got.per_row and (99, 0) not in got.per_row and (0, -1) not in got.per_row
    with pytest.raises(KeyError):
        got.per_row[(1, 2)]


def test_eta_violation_names_the_first_row():
    P = _model("random")
    with pytest.raises(ValueError, match=r"\(state 0, action 0\).*below eta"):
        mdp_guarantee(
            7.0, _as_model(P), jp.privacy.Adjacency(0.2, 0.1), support="nonzero", target_delta=1e-3
        )


def test_distinct_tuples_against_a_set():
    from jaxprivmdp.privacy._mdp import _distinct

    rng = np.random.default_rng(0)
    cols = (rng.integers(2, 5, 500), np.full(500, 0.1), rng.choice([0.01, 0.02, 0.5], 500))
    first, which = _distinct(*cols)
    tuples = list(zip(*(c.tolist() for c in cols), strict=True))
    assert len(first) == len(set(tuples))
    for c in cols:
        np.testing.assert_array_equal(c[first[which]], c)
    assert all(tuples.index(tuples[f]) == f for f in first)  # the first row of each tuple


def test_composed_sums_are_rounded_up_and_meet_the_target():
    # 1.2 * 10^5 rows each meeting target/n: a float sum rounds (here below the exact sum); the
    # reported ε and δ are the exact sums rounded up, and δ never exceeds the target.
    model = gridworld(100, 300)
    got = mdp_guarantee(7.0, model, jp.privacy.Adjacency(0.1, scope="all"), target_delta=0.001)
    per_row = got.per_row
    exact_eps = sum((Fraction(per_row[key].epsilon) for key in per_row), Fraction())
    exact_dlt = sum((Fraction(per_row[key].delta) for key in per_row), Fraction())
    assert Fraction(got.epsilon) >= exact_eps and Fraction(got.delta) >= exact_dlt
    assert math.nextafter(got.epsilon, 0.0) < exact_eps  # the smallest such float
    assert got.delta <= 1e-3

"""The host's compiled loops (``properties._kernels``): compiled without Numba's on-disk
cache where Numba cannot write one (a read-only install with no writable home); the strongly
connected components against SciPy's."""

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

import jaxprivmdp.properties._kernels as kernels
import jaxprivmdp.properties._sweep_kernels as sweep_kernels


def test_a_kernel_compiles_without_a_writable_cache(monkeypatch):
    real = kernels.numba.njit

    def njit(*args, **options):  # (Numba's own lazy imports call it with a function too)
        if options.get("cache"):
            raise RuntimeError("cannot cache function 'f': no locator available for file")
        return real(*args, **options)

    monkeypatch.setattr(kernels.numba, "njit", njit)

    @kernels.compiled()
    def total(x):
        out = 0.0
        for v in x:
            out += v
        return out

    assert total(np.arange(4.0)) == 6.0


@pytest.mark.parametrize("seed", range(40))
def test_strong_components_agree_with_scipy(seed):
    """The same partition as ``scipy.sparse.csgraph`` (self-loops, repeated edges, isolated
    nodes included), labelled successors first: every edge to the same or a lower label."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 80))
    E = int(rng.integers(0, 3 * n))
    src, dst = rng.integers(0, n, E), rng.integers(0, n, E)
    if seed % 4 == 0:  # a long cycle through every node: one component, deep recursion
        src, dst = np.r_[src, np.arange(n)], np.r_[dst, (np.arange(n) + 1) % n]
    count, label, finish = kernels.strong_components(n, src, dst)
    graph = csr_matrix((np.ones(src.size), (src, dst)), shape=(n, n))
    expected, theirs = connected_components(graph, directed=True, connection="strong")
    assert count == expected and sorted(set(label.tolist())) == list(range(count))
    assert len(set(zip(label.tolist(), theirs.tolist(), strict=True))) == count
    assert np.all(label[dst] <= label[src])
    # ``finish``: the postorder of a recursive depth-first search that takes the roots in
    # order and each node's edges in the order given.
    adjacency = [[] for _ in range(n)]
    for a, b in zip(src.tolist(), dst.tolist(), strict=True):
        adjacency[a].append(b)
    seen, postorder = [False] * n, []

    def visit(v):
        seen[v] = True
        for w in adjacency[v]:
            if not seen[w]:
                visit(w)
        postorder.append(v)

    for root in range(n):
        if not seen[root]:
            visit(root)
    np.testing.assert_array_equal(finish, np.argsort(postorder))


def _numpy_backups(order, problem, sign, v):
    """Each class's optimum (``sign``) over its pairs in ``ok`` of ``inflow + Σ p v``,
    ``−sign · inf`` where it has none: plain NumPy over the kernel's arrays."""
    _, _, cls_ptr, cls_pairs, pair_ptr, e_col = order
    ok, e_prob, inflow = problem
    out = np.full(cls_ptr.size - 1, -sign * np.inf)
    for k in range(out.size):
        vals = [
            inflow[p]
            + np.dot(e_prob[pair_ptr[p] : pair_ptr[p + 1]], v[e_col[pair_ptr[p] : pair_ptr[p + 1]]])
            for p in cls_pairs[cls_ptr[k] : cls_ptr[k + 1]]
            if ok[p]
        ]
        if vals:
            out[k] = sign * max(sign * x for x in vals)
    return out


@pytest.mark.parametrize("seed", range(30))
def test_verify_pass_agrees_with_numpy_backups(seed):
    """``verify_pass`` accepts a candidate exactly where NumPy's widened backups do (far
    from the boundary: candidates moved by 1e-3 of a value either side of the fixed point,
    one class at a time), for max and min, with classes lacking a usable pair."""
    rng = np.random.default_rng(seed)
    n, A = int(rng.integers(1, 12)), int(rng.integers(1, 4))
    cls_ptr = np.arange(n + 1, dtype=np.int64) * A
    cls_pairs = np.arange(n * A, dtype=np.int64)
    counts = rng.integers(0, 4, n * A)
    pair_ptr = np.r_[0, np.cumsum(counts)].astype(np.int64)
    e_col = rng.integers(0, n, pair_ptr[-1]).astype(np.int64)
    e_prob = rng.random(pair_ptr[-1]) * 0.2
    inflow = rng.random(n * A)
    ok = rng.random(n * A) < 0.8
    order = (np.zeros(1, np.int64), np.zeros(0, np.int64), cls_ptr, cls_pairs, pair_ptr, e_col)
    problem = (ok, e_prob, inflow)
    for sign in (1.0, -1.0):
        v = rng.random(n)
        for _ in range(30):  # near the fixed point (a contraction: every row sums below 0.8)
            v = np.where(np.isfinite(w := _numpy_backups(order, problem, sign, v)), w, 0.0)
        for eps, k in [(0.0, None)] + [(d, int(rng.integers(n))) for d in (1e-3, -1e-3) * 3]:
            upper = v * (1 + 1e-3)
            lower = v * (1 - 1e-3)
            if k is not None:
                upper[k] -= 2 * eps * v[k] + 3e-3 * abs(v[k]) * (eps > 0)
                lower[k] += 2 * eps * v[k] - 3e-3 * abs(v[k]) * (eps < 0)
            m, a = 1e-12, 1e-300
            b_up = _numpy_backups(order, problem, sign, upper)
            b_lo = _numpy_backups(order, problem, sign, lower)
            want_up = bool(np.all(b_up * (1 + m) + a <= upper))
            want_lo = bool(np.all(lower >= 0) and np.all(b_lo * (1 - m) - a >= lower))
            got = sweep_kernels.verify_pass(order, problem, sign, m, a, lower, upper)
            assert got == (want_lo, want_up), (seed, sign, eps, k)


@pytest.mark.parametrize("seed", range(10))
def test_ties_pass_matches_numpy_bit_for_bit(seed):
    """The compiled tie test sums each pair's backup as ``np.bincount`` does (the same bits
    as NumPy's whole-array form it replaced), pairs of no class untouched."""
    from jaxprivmdp.properties._sweep_guess import ties_pass

    rng = np.random.default_rng(seed)
    n, pairs = int(rng.integers(1, 20)), int(rng.integers(1, 60))
    counts = rng.integers(0, 5, pairs)
    pair_ptr = np.r_[0, np.cumsum(counts)].astype(np.int64)
    e_pair = np.repeat(np.arange(pairs), counts)
    e_col = rng.integers(0, n, e_pair.size).astype(np.int64)
    e_prob, inflow = rng.random(e_pair.size) / 5, rng.random(pairs) * 10.0 ** rng.integers(-3, 3)
    pair_class = np.where(rng.random(pairs) < 0.8, rng.integers(0, n, pairs), -1)
    ok = (rng.random(pairs) < 0.8) & (pair_class >= 0)
    for sign in (1.0, -1.0):
        x = rng.random(n) * 3
        q = inflow + np.bincount(e_pair, weights=e_prob * x[e_col], minlength=pairs)
        want_reward = np.where(pair_class >= 0, x[np.maximum(pair_class, 0)], 0)
        slack = float(rng.choice([1e-6, 0.3, 2.0])) / 4
        want_tied = ok & (sign * (want_reward - q) <= slack * np.abs(q))
        tied, reward = np.zeros(pairs, bool), np.zeros(pairs)
        ties_pass(
            (pair_ptr, e_col), (ok, e_prob, inflow), pair_class, x, (sign, slack), tied, reward
        )
        np.testing.assert_array_equal(tied, want_tied)
        assert reward.tobytes() == want_reward.tobytes()
        assert 0 < want_tied.sum() < pairs or slack < 1e-3  # (both outcomes occur)


@pytest.mark.parametrize("seed", range(12))
def test_dense_solve_matches_numpy_and_refuses_an_improper_policy(seed):
    """``_solved`` (elimination without pivoting, each row's work bounded by its last
    nonzero): ``I − P`` of a proper policy (a few entries a row, each row losing some
    probability) solved as NumPy's LAPACK solves it; with a closed class (rows that lose
    nothing and lead only among themselves: a singular system) it says False."""
    rng = np.random.default_rng(seed)
    m = int(rng.integers(2, 130))
    P = np.zeros((m, m))
    for i in range(m):
        succ = rng.integers(0, m, int(rng.integers(1, 5)))
        P[i, succ] += rng.random(succ.size)
        P[i] *= (1 - 0.3 * rng.random() ** 3) / P[i].sum()  # (a self-loop may get most)
    b = rng.random(m)
    got = b.copy()
    assert sweep_kernels._solved(np.eye(m) - P, got)
    np.testing.assert_allclose(got, np.linalg.solve(np.eye(m) - P, b), rtol=1e-9)
    closed = rng.choice(m, size=min(m, int(rng.integers(1, 4))), replace=False)
    P[closed] = 0
    P[np.ix_(closed, closed)] = rng.random((closed.size, closed.size)) + 0.1
    P[closed] /= P[closed].sum(axis=1, keepdims=True)
    assert not sweep_kernels._solved(np.eye(m) - P, b.copy())


def _numpy_greedy_and_near(pair, succ, prob, inside, rewards, v, err, S, A, minimize, slack):
    """``extract_policy``'s whole-array form (as it was written before the kernel)."""
    q = rewards.copy()
    e = inside[pair]
    with np.errstate(invalid="ignore"):
        q += np.bincount(pair[e], weights=prob[e] * v[succ[e]], minlength=S * A)
        spread = np.bincount(pair[e], weights=prob[e] * err[succ[e]], minlength=S * A)
        q, inside2 = q.reshape(S, A), inside.reshape(S, A)
        spread = spread.reshape(S, A) + slack * np.abs(q)
        if minimize:
            q = np.where(inside2, q, np.inf)
            greedy = np.argmin(q, axis=1)
            near = q - spread <= np.min(q + spread, axis=1, keepdims=True)
        else:
            q = np.where(inside2, q, -np.inf)
            greedy = np.argmax(q, axis=1)
            near = q + spread >= np.max(q - spread, axis=1, keepdims=True)
    return greedy, (near & inside2).reshape(-1)


@pytest.mark.parametrize("seed", range(16))
def test_greedy_and_near_match_numpy_bit_for_bit(seed):
    """``_policy._greedy_and_near`` against the NumPy form it replaced: ties (values on a
    coarse grid), infinite and NaN values, pairs with no edges, states with no pair inside."""
    from jaxprivmdp.properties import _policy

    rng = np.random.default_rng(seed)
    S, A = int(rng.integers(1, 40)), int(rng.integers(1, 6))
    counts = rng.integers(0, 4, S * A)
    pair = np.repeat(np.arange(S * A), counts)
    succ = rng.integers(0, S, pair.size)
    prob = rng.integers(1, 4, pair.size) / 4.0
    inside = rng.random(S * A) < 0.8
    rewards = rng.integers(0, 3, S * A).astype(np.float64)
    v = rng.integers(0, 5, S) / 4.0
    err = rng.integers(0, 3, S) / 64.0
    if seed % 4 == 1:
        v[rng.integers(0, S, 2)] = np.inf
    if seed % 4 == 2:
        v[rng.integers(0, S)] = np.nan
    for minimize in (True, False):
        want = _numpy_greedy_and_near(pair, succ, prob, inside, rewards, v, err, S, A,
                                      minimize, 1e-15)  # fmt: skip
        greedy, near = np.empty(S, np.int64), np.empty(S * A, bool)
        options = (A, minimize, 1e-15)
        _policy._greedy_and_near((pair, succ, prob), inside, rewards, (v, err), options,
                                 greedy, near)  # fmt: skip
        np.testing.assert_array_equal(greedy, want[0])
        np.testing.assert_array_equal(near, want[1])


@pytest.mark.parametrize("seed", range(8))
def test_row_reductions_match_numpy(seed):
    """``_graph``'s column-at-a-time reductions of `[S, A]` arrays against NumPy's own."""
    from jaxprivmdp.properties import _graph

    rng = np.random.default_rng(seed)
    S, A = int(rng.integers(1, 50)), int(rng.integers(1, 6))
    x = rng.random((S, A)) < rng.random()
    np.testing.assert_array_equal(_graph.row_any(x), x.any(axis=1))
    np.testing.assert_array_equal(_graph.row_first(x), np.argmax(x, axis=1))
    assert _graph.one_per_row(x) == bool(np.all(x.sum(axis=1) == 1))
    one = np.zeros((S, A), bool)
    one[np.arange(S), rng.integers(0, A, S)] = True
    assert _graph.one_per_row(one)
    values = rng.integers(-3, 3, (S, A)).astype(np.float64)
    values[rng.random((S, A)) < 0.1] = np.inf
    values[rng.random((S, A)) < 0.05] = np.nan
    np.testing.assert_array_equal(_graph.row_max(values), values.max(axis=1))


@pytest.mark.parametrize("seed", range(10))
def test_weigh_row_matches_the_graphs_numpy_weights_bit_for_bit(seed):
    """A batch release's row sums, shares and largest row error (``_graph.weigh_row``, in
    the batch's compiled pass) against the NumPy form a model's graph computes."""
    from jaxprivmdp.properties._graph import weigh_row

    rng = np.random.default_rng(seed)
    pairs, E = int(rng.integers(1, 30)), int(rng.integers(1, 200))
    pair = np.sort(rng.integers(0, pairs, E))
    p = rng.uniform(0, 1, E)
    allowed = rng.uniform(size=pairs) < 0.7
    shares = np.empty(E)
    error = weigh_row(pair, p, allowed, np.empty(pairs), shares)
    sums = np.bincount(pair, weights=p, minlength=pairs)
    np.testing.assert_array_equal(shares, p / sums[pair])
    assert error == np.max(np.abs(sums[allowed] - 1), initial=0)


@pytest.mark.parametrize("seed", range(10))
def test_candidates_match_the_numpy_formula_bit_for_bit(seed):
    """The guess's candidates ``x ∓ κ y`` (``_sweep_kernels.candidates``, loops) against
    the NumPy formula they replaced, and refused where ``x <= 0`` or ``y < x`` somewhere."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    x = rng.uniform(1e-12, 1.0, n) * 10.0 ** rng.integers(-12, 1, n)
    y = x * (1 + rng.exponential(50.0, n))
    fit, lower, upper = sweep_kernels.candidates(x, y, 1e-6)
    kappa = 1e-6 / 2 / np.max(y / x)
    assert fit
    np.testing.assert_array_equal(lower, x - kappa * y)
    np.testing.assert_array_equal(upper, x + kappa * y)
    i = int(rng.integers(n))
    for bad_x, bad_y in ((0.0, y[i]), (-x[i], y[i]), (np.nan, y[i]), (x[i], 0.5 * x[i])):
        x2, y2 = x.copy(), y.copy()
        x2[i], y2[i] = bad_x, bad_y
        assert not sweep_kernels.candidates(x2, y2, 1e-6)[0]


def test_equal_masks():
    a = np.array([True, False, True])
    assert kernels._equal(a, a.copy())
    assert not kernels._equal(a, np.array([True, True, True]))
    assert kernels._equal(np.zeros(0, bool), np.zeros(0, bool))

"""The privacy accounting of a RaggedMDP, bucket by bucket (never padded to the longest row).

``privacy.mdp_guarantee``, ``frontier``'s accounting, the CLI's ``privacy``/``privatize`` and
``dirichlet_mechanism`` on ragged models. Oracles: the padded layout of the same model
(``jp.to_padded``: the same numbers bit for bit, compared with ``==``), and a plain NumPy
count of each row's listed successors and smallest entry from the transition lists the
test built, with the per-row guarantee ``privacy.guarantee`` and the compositions written
out here (max; an exact sum rounded up).
"""

import json
import math
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxprivmdp as jp
from jaxprivmdp.cli import main
from jaxprivmdp.experiments._frontier import problem_rows, public_eta
from jaxprivmdp.models._ragged import transition_lists
from jaxprivmdp.properties._reward import as_problem

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield


def _lists(seed, S=30, A=3):
    """Random transition lists: degrees 1 to 20 (most short, a few long), some actions masked
    (no transitions), some entries tiny; and the action mask."""
    rng = np.random.default_rng(seed)
    mask = rng.random((S, A)) < 0.8
    mask[:, 0] = True
    rid, nxt, p = [], [], []
    for row in np.flatnonzero(mask.reshape(-1)):
        n = int(rng.choice([1, 1, 2, 3, 4, 7, 20], p=[0.3, 0.1, 0.2, 0.15, 0.1, 0.1, 0.05]))
        q = rng.dirichlet(np.full(n, 2.0))
        q[0] += 1e-3  # no entry below 1e-3 / n: a public eta of 1e-5 covers them all
        rid += [row] * n
        nxt += list(rng.choice(S, n, replace=False))
        p += list(q / q.sum())
    return np.array(rid), np.array(nxt), np.array(p), mask


def _random(seed, dtype=None):
    rid, nxt, p, mask = _lists(seed)
    S, A = mask.shape
    rewards = np.random.default_rng(seed).random((S, A))
    order = np.random.default_rng(seed + 1).permutation(rid.size)  # any order is accepted
    return jp.make_ragged_mdp(
        rid[order], nxt[order], p[order], rewards, action_mask=mask, discount=0.9, dtype=dtype
    )


MODELS = {
    "leader": lambda: jp.examples.leader_like(600, 256, actions=2, restart=0.5),
    "leader-one-action": lambda: jp.examples.leader_like(40, 8),
    "leader-deterministic": lambda: jp.examples.leader_like(40, 1),  # no private row
    "random": lambda: _random(0),
    "random-float32": lambda: _random(1, dtype=jnp.float32),
    "grid": lambda: jp.to_ragged(jp.examples.gridworld(5, 4)),
}


def _same(a, b):
    """Two MDPGuarantees equal bit for bit, row by row."""
    assert (a.epsilon, a.delta, a.num_rows, a.adjacency) == (
        b.epsilon,
        b.delta,
        b.num_rows,
        b.adjacency,
    )
    assert list(a.per_row) == list(b.per_row)
    if a.per_row:
        np.testing.assert_array_equal(a.per_row.epsilons(), b.per_row.epsilons())
        np.testing.assert_array_equal(a.per_row.deltas(), b.per_row.deltas())


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("adjacency", ["row", "all"])
def test_mdp_guarantee_equals_the_padded_layouts(name, adjacency):
    mdp = MODELS[name]()
    padded = jp.to_padded(mdp)
    for eta in (None, 1e-5):
        adj = jp.privacy.Adjacency(0.1, eta, scope=adjacency)
        got = jp.privacy.mdp_guarantee(100.0, mdp, adj, target_delta=1e-3)
        _same(got, jp.privacy.mdp_guarantee(100.0, padded, adj, target_delta=1e-3))
        # support="nonzero" says what a ragged model's lists already are
        nonzero = jp.privacy.mdp_guarantee(100.0, mdp, adj, target_delta=1e-3, support="nonzero")
        _same(got, nonzero)


def _oracle(rid, nxt, p, mask, k, *, b, eta, target_delta, adjacency):
    """``(ε, δ, rows)`` from the lists: per row its count and smallest positive entry."""
    keep = p > 0
    rid, p = rid[keep], p[keep]
    count = np.bincount(rid, minlength=mask.size)
    smallest = np.full(mask.size, np.inf)
    np.minimum.at(smallest, rid, p)
    rows = np.flatnonzero(mask.reshape(-1) & (count >= 2))
    R = rows.size
    if R == 0:
        return 0.0, 0.0, []
    d = target_delta
    if adjacency == "all":  # each row meets d with R·d <= target_delta exactly
        d = target_delta / R
        while Fraction(d) * R > Fraction(target_delta):
            d = math.nextafter(d, 0.0)
    gs = [
        jp.privacy.guarantee(
            k,
            jp.privacy.Adjacency(b, smallest[r] if eta is None else eta),
            n=int(count[r]),
            target_delta=d,
        )
        for r in rows
    ]
    ids = [divmod(int(r), mask.shape[1]) for r in rows]
    if adjacency == "row":
        return max(g.epsilon for g in gs), max(g.delta for g in gs), ids
    eps = sum((Fraction(g.epsilon) for g in gs), Fraction())
    up = float(eps) if Fraction(float(eps)) >= eps else math.nextafter(float(eps), math.inf)
    return up, sum(g.delta for g in gs), ids


@pytest.mark.parametrize("adjacency", ["row", "all"])
@pytest.mark.parametrize("eta", [None, 1e-5])
def test_mdp_guarantee_matches_a_numpy_count_of_the_lists(adjacency, eta):
    rid, nxt, p, mask = _lists(2)
    rewards = np.zeros(mask.shape)
    mdp = jp.make_ragged_mdp(rid, nxt, p, rewards, action_mask=mask, discount=0.9)
    kw = dict(b=0.1, eta=eta, target_delta=1e-3, adjacency=adjacency)
    adj = jp.privacy.Adjacency(0.1, eta, scope=adjacency)
    got = jp.privacy.mdp_guarantee(100.0, mdp, adj, target_delta=1e-3)
    eps, delta, ids = _oracle(rid, nxt, p, mask, 100.0, **kw)
    assert list(got.per_row) == ids and got.num_rows == len(ids) > 10
    assert got.epsilon == eps
    np.testing.assert_allclose(got.delta, delta, rtol=1e-12)
    assert got.delta <= 1e-3


def test_the_storm_sized_leader_model_without_padding():
    """Storm's leader4_8 shape (12,400 states, one row of 4,096 successors): one private row,
    read from its bucket; the padded layout would hold 50.8 M slots."""
    mdp = jp.examples.leader_like()
    rid, nxt, p = transition_lists(mdp)
    mask = np.asarray(mdp.action_mask)
    for adjacency in ("row", "all"):
        kw = dict(b=0.1, eta=None, target_delta=1e-3, adjacency=adjacency)
        adj = jp.privacy.Adjacency(0.1, scope=adjacency)
        got = jp.privacy.mdp_guarantee(50.0, mdp, adj, target_delta=1e-3)
        eps, delta, ids = _oracle(rid, nxt, p.astype(np.float64), mask, 50.0, **kw)
        assert ids == [(0, 0)] and list(got.per_row) == ids
        assert (got.epsilon, got.delta) == (eps, delta)


def test_bad_input_is_refused_as_for_the_padded_layout():
    mdp = _random(3)
    padded = jp.to_padded(mdp)
    kw = dict(target_delta=1e-3)
    messages = []
    for m in (mdp, padded):
        with pytest.raises(ValueError, match="below eta") as e:
            jp.privacy.mdp_guarantee(100.0, m, jp.privacy.Adjacency(0.1, 0.2), **kw)
        messages.append(str(e.value))
    assert messages[0] == messages[1]  # the same first row named
    adj = jp.privacy.Adjacency(0.1)
    with pytest.raises(ValueError, match="smoothing"):
        jp.privacy.mdp_guarantee(100.0, mdp, adj, smoothing=0.01, **kw)
    with pytest.raises(TypeError, match="the model's own mask"):
        jp.privacy.mdp_guarantee(100.0, mdp, adj, action_mask=np.ones((30, 3), bool), **kw)


# --------------------------------------------------------------------------- frontier


def _goal(mdp):
    goal = np.zeros(mdp.num_states, bool)
    goal[-1] = True
    return {"goal": goal}


@pytest.mark.parametrize(
    "name",
    # leader (6 s) slow: mdp_guarantee's test of the same equality keeps it in the default run.
    [pytest.param("leader", marks=pytest.mark.slow), "random", "random-float32", "grid"],
)
def test_frontier_accounting_equals_the_padded_layouts(name):
    """The frontier's private rows, their largest size and its public eta, ragged and
    padded, also of a property model (its decided states' rows are self-loops)."""
    mdp = MODELS[name]()
    padded = jp.to_padded(mdp)
    assert public_eta(mdp) == public_eta(padded)
    problems = [(mdp, padded)]
    if name == "leader":
        prop = 'Pmax=? [F<=20 "goal"]'
        problems.append(tuple(jp.property_model(m, prop, labels=_goal(m)) for m in problems[0]))
    for a, b in problems:
        ra, rb = problem_rows(*as_problem(a), None), problem_rows(*as_problem(b), None)
        for x, y in zip(ra[:4], rb[:4], strict=True):
            np.testing.assert_array_equal(x, y)
        assert ra.shape == rb.shape and ra.dimension == rb.dimension


@pytest.mark.slow
def test_frontier_equals_the_padded_layouts():
    """The whole frontier: its accounting equal bit for bit; its values from other draws
    (a ragged release draws bucket by bucket), so only their sanity is compared."""
    mdp = jp.examples.leader_like(40, 8, actions=2, restart=0.5, discount=0.9)
    kw = dict(epsilons=[50.0, 400.0], mechanisms=(jp.Dirichlet, jp.Laplace), num_trials=2)
    a = jp.frontier(jax.random.key(0), mdp, **kw)
    b = jp.frontier(jax.random.key(0), jp.to_padded(mdp), **kw)
    assert (a.num_rows, a.n, a.eta, a.optimal_value) == (b.num_rows, b.n, b.eta, b.optimal_value)
    for field in ("parameter", "all_rows", "reachable", "floor"):
        for m in ("dirichlet", "laplace"):
            np.testing.assert_array_equal(getattr(a, field)[m], getattr(b, field)[m])
    for m in ("dirichlet", "laplace"):
        ok = a.reachable[m]
        assert np.all(a.lower[m][ok] <= a.upper[m][ok])
        assert np.all(a.true_value[m][ok] <= a.optimal_value + 1e-9)


# --------------------------------------------------------------------------- command line


def _files(tmp_path):
    mdp = jp.examples.leader_like(60, 16, actions=2, restart=0.5, discount=0.9)
    ragged = jp.save_mdp(tmp_path / "ragged.npz", mdp)
    padded = jp.save_mdp(tmp_path / "padded.npz", jp.to_padded(mdp))
    assert isinstance(jp.load_mdp(ragged), jp.RaggedMDP)
    assert isinstance(jp.load_mdp(padded), jp.SparseMDP)
    return mdp, ragged, padded


def test_command_line_privacy_of_a_ragged_file(tmp_path):
    mdp, ragged, padded = _files(tmp_path)
    out = {}
    for name, path in (("ragged", ragged), ("padded", padded)):
        args = ["privacy", "--mdp", str(path), "--k", "10", "100", "--eta", "1e-3"]
        args += ["--adjacency", "all", "--out", str(tmp_path / name)]
        assert main(args) == 0
        out[name] = json.loads((tmp_path / name / "privacy.json").read_text())["guarantees"]
    assert out["ragged"] == out["padded"]
    g = jp.privacy.mdp_guarantee(
        100.0, mdp, jp.privacy.Adjacency(0.1, 0.001, scope="all"), target_delta=0.001
    )
    assert out["ragged"][1]["epsilon"] == g.epsilon and out["ragged"][1]["rows"] == g.num_rows


FLAGS = [
    ["--mechanism", "gaussian", "--sigma", "0.05"],
    ["--mechanism", "laplace", "--epsilon", "8"],
    pytest.param(["--k", "50"], marks=pytest.mark.slow),  # compiles the gamma sampler
]


@pytest.mark.parametrize("flags", FLAGS)
def test_command_line_privatize_a_ragged_file(tmp_path, capsys, flags):
    mdp, ragged, padded = _files(tmp_path)
    common = ["--eta", "1e-3", "--adjacency", "all", "--dtype", "float64"]
    said = []
    for name, path in (("ragged", ragged), ("padded", padded)):
        rel = tmp_path / f"{name}-release.npz"
        assert main(["privatize", "--mdp", str(path), *flags, *common, "--out", str(rel)]) == 0
        said.append(capsys.readouterr().out.splitlines()[-1])
        meta = np.load(rel)
        assert float(meta["epsilon"]) <= (8.0 if "--epsilon" in flags else np.inf)
    assert said[0] == said[1]  # the same rows, parameter and guarantee
    release = jp.load_mdp(tmp_path / "ragged-release.npz")
    assert isinstance(release, jp.RaggedMDP) and release.initial_state == mdp.initial_state
    for b, c in zip(release.buckets, mdp.buckets, strict=True):  # the same lists
        np.testing.assert_array_equal(b.rows, c.rows)
        np.testing.assert_array_equal(b.next_states, c.next_states)
        np.testing.assert_allclose(np.asarray(b.probs).sum(-1), 1, atol=1e-9)
    assert not np.array_equal(release.buckets[-1].probs, mdp.buckets[-1].probs)


def test_command_line_on_a_storm_file_that_loads_ragged(tmp_path):
    mdp = jp.examples.leader_like(200, 64, actions=1)
    rid, nxt, p = transition_lists(mdp)
    lines = [f"{r} 0 {t} {q!r}" for r, t, q in zip(rid, nxt, p.tolist(), strict=True)]
    tra = tmp_path / "leader.tra"
    tra.write_text("mdp\n" + "\n".join(lines) + "\n")
    with pytest.warns(UserWarning, match="no reward file"):
        assert isinstance(jp.load_mdp(tra, discount=0.9), jp.RaggedMDP)
    out = tmp_path / "p"
    args = ["privacy", "--mdp", str(tra), "--discount", "0.9", "--k", "20", "--eta", "1e-3"]
    assert main([*args, "--out", str(out)]) == 0
    (row,) = json.loads((out / "privacy.json").read_text())["guarantees"]
    g = jp.privacy.mdp_guarantee(20.0, mdp, jp.privacy.Adjacency(0.1, 0.001), target_delta=0.001)
    assert row["rows"] == 1 and row["epsilon"] == g.epsilon


# --------------------------------------------------------------------------- the mechanism


@pytest.mark.parametrize("sampler", ["jax", pytest.param("fast", marks=pytest.mark.slow)])
def test_dirichlet_mechanism_of_a_ragged_model_is_privatize(sampler):
    """The same release as ``jp.privatize`` (bucket by bucket, the same draws; one compiled
    program for both); its distribution is the padded layout's (below)."""
    rid = [0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 3, 3, 4, 5]  # rows of 2, 4 and 1 successors
    nxt = [1, 2, 0, 2, 3, 4, 3, 4, 0, 1, 4, 5, 4, 5]
    p = [0.3, 0.7, 0.1, 0.2, 0.3, 0.4, 0.5, 0.5, 0.25, 0.25, 0.25, 0.25, 1, 1]
    mdp = jp.make_ragged_mdp(rid, nxt, p, np.zeros((6, 1)), discount=0.9)
    key = jax.random.key(7)
    got = jp.dirichlet_mechanism(key, mdp, jp.Dirichlet(30.0, sampler=sampler))
    want = jp.privatize(key, mdp, jp.Dirichlet(30.0, sampler))
    assert isinstance(got, jp.RaggedMDP)
    for b, c in zip(got.buckets, want.buckets, strict=True):
        np.testing.assert_array_equal(b.probs, c.probs)
        np.testing.assert_array_equal(b.next_states, c.next_states)
    np.testing.assert_array_equal(got.buckets[0].probs, 1.0)  # one-successor rows
    assert not np.allclose(got.buckets[2].probs, mdp.buckets[2].probs)
    with pytest.raises(ValueError, match="smoothing"):
        jp.dirichlet_mechanism(key, mdp, jp.Dirichlet(30.0), smoothing=0.01)


@pytest.mark.slow
def test_dirichlet_mechanism_has_the_padded_distribution():
    """Many draws of one long and one short row, ragged vs padded: two-sample KS tests, and
    the means against the Dirichlet's ``p`` (standard error ``sqrt(p(1-p)/((k+1) N))``)."""
    from scipy.stats import ks_2samp

    mdp = jp.examples.leader_like(40, 8, actions=2, restart=0.5, discount=0.9)
    padded = jp.to_padded(mdp)
    k, N = 20.0, 2000
    keys = jax.random.split(jax.random.key(11), N)
    draw = jax.jit(
        jax.vmap(lambda key, m: jp.dirichlet_mechanism(key, m, jp.Dirichlet(k)), (0, None))
    )
    ragged_out, padded_out = draw(keys, mdp), draw(keys, padded).probs
    long_row = ragged_out.buckets[-1]  # state 0's fan-out row, 8 successors
    two = ragged_out.buckets[1]  # rows with 2 successors
    s, a = divmod(int(two.rows[0, 0]), 2)
    p_two = np.asarray(mdp.buckets[1].probs[0])
    pairs = [(long_row.probs[:, 0, j], padded_out[:, 0, 0, j], 1 / 8) for j in (0, 7)]
    pairs += [(two.probs[:, 0, j], padded_out[:, s, a, j], p_two[j]) for j in (0, 1)]
    for got, want, p in pairs:
        got, want = np.asarray(got), np.asarray(want)
        assert ks_2samp(got, want).pvalue > 1e-4
        se = math.sqrt(p * (1 - p) / ((k + 1) * N))
        assert abs(got.mean() - p) < 5 * se and abs(want.mean() - p) < 5 * se

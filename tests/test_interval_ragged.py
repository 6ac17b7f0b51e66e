"""The ragged layout of interval models (:class:`jp.RaggedIntervalMDP`): conversions, files,
validation, memory, and checking without padding.

The oracle is the padded layout of the same model (``jp.to_padded``), itself checked against
independent oracles in ``test_interval_check.py``: a ragged check must give its bounds and
policy, whatever the buckets.
"""

import jax
import numpy as np
import pytest

import jaxprivmdp as jp
from jaxprivmdp.models.core import (
    interval_of_point,
    ragged_interval_from_lists,
    validate_model_fields,
)

S, A, WIDE = 30, 2, 24  # state 1's action 0 has WIDE successors, the other rows 1 to 4


def skewed(seed, dtype=None, masked=True):
    """A padded `[S, A, WIDE]` interval model with one wide row, and its labels."""
    rng = np.random.default_rng(seed)
    ns = np.full((S, A, WIDE), -1)
    lo, hi = np.zeros((S, A, WIDE)), np.zeros((S, A, WIDE))
    mask = np.ones((S, A), bool)
    if masked:
        mask[3, 1] = mask[7, 0] = False
    for s in range(S):
        for a in np.flatnonzero(mask[s]):
            if s >= S - 2:  # two traps, absorbing
                ns[s, a, 0], lo[s, a, 0], hi[s, a, 0] = s, 1, 1
                continue
            k = WIDE if (s, a) == (1, 0) else int(rng.integers(1, 5))
            p = rng.dirichlet(np.ones(k))
            ns[s, a, :k] = rng.choice(S - 2, k, replace=False)
            ns[s, a, 0] = S - 2 + a if rng.random() < 0.6 else ns[s, a, 0]  # a trap
            lo[s, a, :k] = np.clip(p - rng.uniform(0, 0.15, k), 0, 1)
            hi[s, a, :k] = np.clip(p + rng.uniform(0, 0.15, k), 0, 1)
    rewards = np.where(mask, rng.uniform(0.5, 2, (S, A)), 0.0)
    model = jp.make_interval_mdp(
        lo, hi, rewards, next_states=ns, action_mask=mask, discount=0.9, dtype=dtype
    )
    states = np.arange(S)
    labels = {"goal": (states % 7 == 0) & (states < S - 2), "safe": states % 5 != 1}
    return model, labels


def same(a, b, fields=("lower", "upper", "next_states", "rewards", "action_mask")):
    for name in fields:
        x, y = np.asarray(getattr(a, name)), np.asarray(getattr(b, name))
        assert x.dtype == y.dtype, name
        np.testing.assert_array_equal(x, y, err_msg=name)


def transitions(model):
    return int((np.asarray(model.next_states) >= 0).sum())


@pytest.mark.integration
def test_conversions_round_trip_exactly_and_memory_is_linear():
    padded, _ = skewed(0)
    ragged = jp.to_ragged(padded)
    assert isinstance(ragged, jp.RaggedIntervalMDP)
    same(jp.to_padded(ragged), padded)
    same(jp.to_sparse(ragged), padded)
    same(jp.to_dense(ragged), jp.to_dense(padded))
    dense = jp.to_dense(padded)  # its lists: the entries with upper > 0, in state order
    same(jp.to_padded(jp.to_ragged(dense)), jp.to_sparse(dense))
    wider = jp.to_padded(ragged, max_successors=WIDE + 3)
    assert wider.lower.shape == (S, A, WIDE + 3)
    with pytest.raises(ValueError, match="more than max_successors = 5"):
        jp.to_padded(ragged, max_successors=5)
    rows, n = S * A, transitions(padded)
    assert ragged.num_slots < 2 * n + rows < padded.lower.size / 3
    assert ragged.max_successors == WIDE  # the widest bucket cut to the longest row
    assert [b.next_states.shape[1] for b in ragged.buckets] == [1, 2, 4, WIDE]
    for b in ragged.buckets:
        assert np.all(np.diff(np.asarray(b.rows)) > 0)


@pytest.mark.integration
def test_point_models_become_ragged_interval_models_and_wrong_kinds_are_refused():
    point = jp.examples.leader_like(num_states=40, fanout=20, actions=2, restart=0.3)
    imdp = interval_of_point(point)
    assert isinstance(imdp, jp.RaggedIntervalMDP) and imdp.num_slots <= point.num_slots
    same(jp.to_padded(imdp), interval_of_point(jp.to_padded(point)))
    public = jp.interval_model(point)  # no mechanism: l = u, the buckets kept
    assert isinstance(public, jp.RaggedIntervalMDP)
    same(jp.to_padded(public), jp.interval_model(jp.to_padded(point)))
    padded = skewed(1)[0]
    with pytest.raises(ValueError, match="SparseMDP or an IntervalMDP, got RaggedIntervalMDP"):
        jp.to_ragged(jp.to_ragged(padded))
    with pytest.raises(ValueError, match="RaggedMDP or a RaggedIntervalMDP, got IntervalMDP"):
        jp.to_padded(padded)
    with pytest.raises(ValueError, match="is a RaggedIntervalMDP .*jp.check"):
        jp.solve(jp.to_ragged(padded))


PROPERTIES = [
    'Pmaxmin=? [F "goal"]',
    'Pminmax=? [F "goal"]',
    'Pmaxmin=? ["safe" U "goal"]',
    'Pminmax=? [G "safe"]',
    'Rminmax=? [F "goal"]',
    'Rmaxmin=? [F "goal"]',
    'Pmaxmin=? [F<=4 "goal"]',
    'Pminmax=? ["safe" U<=3 "goal"]',
    "Rmaxmin=? [C<=3]",
    "Rminmax=? [C]",
]


def compare(prop, x64, seed=2):
    """The ragged check equals the padded one: bounds and policy, eagerly (and under
    ``jax.jit`` for a step-bounded property, within the model dtype's rounding)."""
    with jax.enable_x64(x64):
        padded, labels = skewed(seed, dtype=np.float64 if x64 else np.float32)
        ragged = jp.to_ragged(padded)
        want = jp.check(padded, prop, labels=labels)
        got = jp.check(ragged, prop, labels=labels)
        # The same backups but for rounding: the padded rows are sorted (the wide row makes
        # them long), the ragged blocks' short rows are filled by comparisons.
        rtol = 1e-12 if x64 else 2 * float(np.finfo(np.float32).eps)
        for name in ("lower", "upper", "values"):
            np.testing.assert_allclose(getattr(got, name), getattr(want, name), rtol, 0, name)
        np.testing.assert_array_equal(got.policy, want.policy)
        assert bool(got.converged) == bool(want.converged)
        if "<=" not in prop:
            return want
        checked = jax.jit(lambda m: jp.check(m, prop, labels=labels))
        want, got = checked(padded), checked(ragged)
        eps = float(np.finfo(want.lower.dtype).eps)
        for name in ("lower", "upper"):
            np.testing.assert_allclose(getattr(got, name), getattr(want, name), 4 * eps, 4 * eps)
        np.testing.assert_array_equal(got.policy, want.policy)
        return want


@pytest.mark.integration
def test_ragged_check_equals_the_padded_check():
    res = compare(PROPERTIES[0], x64=False)
    inner = np.asarray(res.values)[: S - 2]
    assert np.sum((inner > 0.01) & (inner < 0.99)) > S / 2  # values strictly inside


@pytest.mark.integration
@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("prop", PROPERTIES)
def test_every_property_equals_the_padded_check(prop, x64):
    compare(prop, x64, seed=3)


def test_nature_choice_per_bucket():
    padded, _ = skewed(4)
    ragged = jp.to_ragged(padded)
    values = np.random.default_rng(4).random(S).astype(np.float32)
    choice = jax.jit(lambda m, v: jp.nature_choice(m, v, nature="min"))  # (also under jit)
    want = np.asarray(choice(padded, values))
    got = choice(ragged, values)
    assert isinstance(got, tuple) and len(got) == len(ragged.buckets)
    for x, b in zip(got, ragged.buckets, strict=True):
        assert x.shape == b.lower.shape
        s, a = np.divmod(np.asarray(b.rows), A)
        np.testing.assert_allclose(x, want[s, a, : x.shape[1]], 1e-6, 1e-7)
        assert np.all((x >= b.lower) & (x <= b.upper))
        np.testing.assert_allclose(np.asarray(x).sum(-1), 1, 1e-6)


def write_skewed(tmp_path, seed):
    padded, labels = skewed(seed, masked=False)  # (a file numbers each state's choices 0..)
    path = tmp_path / "m.tra"
    jp.save_mdp(path, jp.to_ragged(padded), labels=labels, reward_name="cost")
    return padded, labels, path


def test_files_round_trip(tmp_path):
    padded, labels, path = write_skewed(tmp_path, 5)
    assert path.read_text() == (jp.save_mdp(tmp_path / "p.tra", padded) and
                                (tmp_path / "p.tra").read_text())  # fmt: skip
    back = jp.load_mdp(path, discount=0.9)  # "auto": the rows are skewed
    assert isinstance(back, jp.RaggedIntervalMDP)
    same(jp.to_padded(back), padded)
    same(jp.load_mdp(path, discount=0.9, layout="padded"), padded)
    assert jp.load_labels(path)["goal"].tolist() == labels["goal"].tolist()
    even = tmp_path / "even.tra"  # rows of equal length: "auto" pads, "ragged" does not
    even.write_text("2 3 4\n0 0 1 [0.5,1]\n0 0 0 [0,0.5]\n0 1 0 [1,1]\n1 0 1 1\n")
    assert isinstance(jp.load_mdp(even, rewards=[]), jp.IntervalMDP)
    ragged = jp.load_mdp(even, rewards=[], layout="ragged")
    assert isinstance(ragged, jp.RaggedIntervalMDP)
    same(jp.to_padded(ragged), jp.load_mdp(even, rewards=[]))


def lists(**change):
    """Transition lists of a 3-state, 1-action model, with ``change`` applied."""
    good = dict(
        row_ids=np.array([0, 0, 1, 2]),
        next_states=np.array([1, 2, 2, 2]),
        lower=np.array([0.2, 0.3, 1.0, 1.0]),
        upper=np.array([0.6, 0.9, 1.0, 1.0]),
    )
    for name, (i, value) in change.items():
        good[name] = good[name].astype(type(value))
        good[name][i] = value
    fields = validate_model_fields(3, 1, np.zeros((3, 1)), None, None, 0.9, 0, np.float32)
    mask = np.ones((3, 1), bool)
    return ragged_interval_from_lists(*good.values(), mask, fields)


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(lower=(0, 0.7)), r"row \(state 0, action 0\), next state 1: lower bound 0.7 "
         "exceeds its upper bound 0.6"),
        (dict(lower=(0, -0.1)), r"row \(state 0, action 0\), next state 1: lower bound -0.1 is"),
        (dict(upper=(2, 1.5)), r"row \(state 1, action 0\), next state 2: upper bound 1.5"),
        (dict(upper=(1, 0.35)), r"row \(state 0, action 0\): its upper bounds sum to 0.95 <"),
        (dict(lower=(1, 0.9)), r"row \(state 0, action 0\): its lower bounds sum to 1.1 > 1"),
        (dict(next_states=(1, 1)), r"row \(state 0, action 0\) lists state 1 twice"),
        (dict(next_states=(3, 3)), r"next_states\[3\] = 3 is outside \[0, 3\)"),
        (dict(upper=(0, np.nan)), r"upper has a non-finite entry nan at index \(0,\)"),
    ],
)  # fmt: skip
def test_validation_names_the_row(change, message):
    assert isinstance(lists(), jp.RaggedIntervalMDP)
    with pytest.raises(ValueError, match=message):
        lists(**change)


def test_loader_errors_name_the_line(tmp_path):
    bad = tmp_path / "bad.tra"
    bad.write_text("2 2 3\n0 0 1 [0.1,0.3]\n0 0 0 [0.1,0.3]\n1 0 1 1\n")
    with pytest.raises(ValueError, match="line 2: the choice 0 of state 0 has upper bounds sum"):
        jp.load_mdp(bad, rewards=[], layout="ragged")


@pytest.mark.integration
def test_a_leader_like_model_is_checked_without_padding():
    # One row of 2,048 successors among 6,000: padded, 12.3 M slots of each bound.
    point = jp.examples.leader_like(num_states=3000, fanout=2048, actions=2, restart=0.3)
    imdp = interval_of_point(point)  # l = u: the point model's values (its own checker)
    rows = 3000 * 2
    assert imdp.num_slots < 2 * int(point.num_slots) + rows < rows * 2048 / 500
    goal = {"goal": np.arange(3000) == 2999}
    for robust, plain in (("Pmaxmin", "Pmax"), ("Rminmax", "Rmin")):
        got = jp.check(imdp, f'{robust}=? [F "goal"]', labels=goal)
        want = jp.check(point, f'{plain}=? [F "goal"]', labels=goal)
        assert bool(got.converged)
        np.testing.assert_allclose(got.values, want.values, 2e-6)

"""``jp.load_prism``'s fast paths give what the general ones give, bit for bit.

Storm's matrix comes as CSR arrays (rows grouped by state, in order): their rows are taken
as they are instead of found from the flat transitions, the archive is read in one piece,
labels come from the bit vectors' words, and a loader's fresh arrays are not copied again.
Each is checked here against the path every other input takes; the validation fast paths
(rows already sorted) still refuse what they refused.
"""

import io
import logging
import tarfile

import jax
import numpy as np
import prism_fixtures as fx
import pytest

import jaxprivmdp as jp
from jaxprivmdp.io import _prism_source, _tar, _transitions
from jaxprivmdp.models import core as models

SOURCES = {
    "die": fx.die_program,
    "two_dice": fx.two_dice_program,
    "leader": lambda: fx.leader_program(4),
    "gamble": lambda: fx.GAMBLE_PRISM,
}


def _storm(tmp_path, source):
    stormpy = pytest.importorskip("stormpy")
    path = tmp_path / "m.prism"
    path.write_text(SOURCES[source]())
    built, _ = _prism_source._build(stormpy, path, None)
    return stormpy, path, built


def _leaves_equal(a, b):
    assert type(a) is type(b)
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb, strict=True):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x, y)  # bit for bit: no tolerance


@pytest.mark.prism
@pytest.mark.parametrize("source", list(SOURCES))
@pytest.mark.parametrize("layout", ["padded", "ragged"])
def test_csr_rows_and_model_are_those_found_from_the_transitions(tmp_path, source, layout):
    stormpy, path, built = _storm(tmp_path, source)
    kind = _prism_source._kind(path, built)
    csr = _prism_source._csr(stormpy, path, built)
    fast = _prism_source._explicit(path, built, kind, csr)
    assert "rows" in vars(fast)  # given by the CSR arrays, not found
    slow = _transitions.Explicit(
        path,
        "storm",
        kind,
        fast.num_states,
        fast.src,
        fast.choice,
        fast.tgt,
        fast.prob,
        fast.line,
    )
    given, found = fast.rows, slow.rows
    assert given.A == found.A and given.order is None and found.order is None
    for x, y in ((given.starts, found.starts), (given.pairs, found.pairs)):
        assert x.dtype == y.dtype
        np.testing.assert_array_equal(x, y)
    models_ = []
    for ex in (fast, slow):
        lay = _transitions.make_layout(ex, layout)
        rewards = np.zeros(lay.mask.shape)
        models_.append(_transitions.layout_model(lay, rewards, dtype=np.float32))
    _leaves_equal(*models_)
    # and the general constructor of the same padded arrays
    if layout == "padded":
        lay = _transitions.make_layout(slow, layout)
        model = jp.make_sparse_mdp(
            lay.next_states,
            lay.probs,
            np.zeros(lay.mask.shape),
            action_mask=lay.mask,
            dtype=np.float32,
        )
        _leaves_equal(models_[0], model)


@pytest.mark.prism
@pytest.mark.parametrize("source", list(SOURCES))
def test_labels_from_words_are_the_set_bits(tmp_path, source):
    _, _, built = _storm(tmp_path, source)
    labels = _prism_source._labels(built, built.nr_states)
    for name in built.labeling.get_labels():
        want = np.zeros(built.nr_states, bool)
        want[list(built.labeling.get_states(name))] = True
        np.testing.assert_array_equal(labels[name], want)


@pytest.mark.prism
@pytest.mark.parametrize("n", [1, 63, 64, 65, 200])
def test_bit_vector_words(n):
    pytest.importorskip("stormpy")
    from stormpy.developer.storage import BitVector

    rng = np.random.default_rng(n)
    want = rng.random(n) < 0.4
    bits = BitVector(n, False)
    for i in np.flatnonzero(want):
        bits.set(int(i), True)
    got = _prism_source._bits(bits, n)
    assert got.dtype == bool
    np.testing.assert_array_equal(got, want)


def test_tar_members_read_in_one_piece(tmp_path):
    """Plain members; long names and pax headers go through ``tarfile``: the same bytes."""
    members = {"a.bin": bytes(range(200)) * 7, "dir/b.bin": b"\x01" * 513}
    members["x" * 120 + ".bin"] = b"long name"
    path = tmp_path / "t.tar"
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    for names in (["a.bin", "dir/b.bin"], list(members)):
        got = _tar.read_tar(path, names)
        assert set(got) == set(names)
        for name in names:
            assert got[name].dtype == np.uint8 and got[name].tobytes() == members[name]
    plain = tmp_path / "plain.tar"
    with tarfile.open(plain, "w", format=tarfile.USTAR_FORMAT) as archive:
        for name in ("a.bin", "dir/b.bin"):
            info = tarfile.TarInfo(name)
            info.size = len(members[name])
            archive.addfile(info, io.BytesIO(members[name]))
    got = _tar.read_tar(plain, ["a.bin", "dir/b.bin", "absent"])
    assert {n: v.tobytes() for n, v in got.items()} == {
        n: members[n] for n in ("a.bin", "dir/b.bin")
    }


def test_scratch_folder_only_with_room(monkeypatch):
    assert _prism_source._scratch(1 << 62) is None

    def missing(folder):
        raise OSError("no such folder")

    monkeypatch.setattr(_prism_source.os, "statvfs", missing)
    assert _prism_source._scratch(1) is None


def _lists(rng, S=30, A=2, K=4):
    rows, nxt, p = [], [], []
    for r in range(S * A):
        succ = np.sort(rng.choice(S, size=rng.integers(1, K + 1), replace=False))
        w = rng.random(succ.size)
        rows += [r] * succ.size
        nxt += succ.tolist()
        p += (w / w.sum()).tolist()
    return np.asarray(rows), np.asarray(nxt), np.asarray(p)


def test_ragged_sorted_lists_are_the_shuffled_ones():
    """Rows in order skip the sort: the model of the rows in another order (each row's
    entries in theirs) is the same, bit for bit."""
    rng = np.random.default_rng(0)
    rid, nxt, p = _lists(rng)
    rewards = np.zeros((30, 2))
    starts = np.flatnonzero(np.diff(rid, prepend=-1))
    blocks = np.split(np.arange(rid.size), starts[1:])
    perm = np.concatenate([blocks[i] for i in rng.permutation(len(blocks))])
    _leaves_equal(
        jp.make_ragged_mdp(rid, nxt, p, rewards),
        jp.make_ragged_mdp(rid[perm], nxt[perm], p[perm], rewards),
    )


@pytest.mark.parametrize("sorted_rows", [True, False])
def test_ragged_duplicates_still_refused(sorted_rows):
    rid = np.array([0, 0, 0, 1])
    nxt = np.array([1, 1, 2, 0]) if sorted_rows else np.array([1, 2, 1, 0])
    p = np.array([0.25, 0.25, 0.5, 1.0])
    with pytest.raises(ValueError, match=r"row \(state 0, action 0\) lists state 1 twice"):
        jp.make_ragged_mdp(rid, nxt, p, np.zeros((3, 1)))


def test_ragged_input_arrays_untouched():
    rng = np.random.default_rng(1)
    rid, nxt, p = _lists(rng)
    copies = [x.copy() for x in (rid, nxt, p)]
    jp.make_ragged_mdp(rid, nxt, p, np.zeros((30, 2)))
    for x, y in zip((rid, nxt, p), copies, strict=True):
        np.testing.assert_array_equal(x, y)


def _padded(rng, S=20, A=2, K=3):
    nxt = np.full((S, A, K), -1, np.int32)
    probs = np.zeros((S, A, K))
    for s in range(S):
        for a in range(A):
            k = rng.integers(1, K + 1)
            nxt[s, a, :k] = np.sort(rng.choice(S, size=k, replace=False))
            w = rng.random(k)
            probs[s, a, :k] = w / w.sum()
    return nxt, probs, np.ones((S, A), bool)


def test_owned_sparse_model_is_the_copied_one_and_checks_alike():
    rng = np.random.default_rng(2)
    nxt, probs, mask = _padded(rng)
    probs[0, 0, 1:] = 0.0  # a zero slot: stored as padding by both
    probs[0, 0, 0] = 1.0
    rewards = rng.random(mask.shape)
    want = jp.make_sparse_mdp(nxt, probs, rewards, action_mask=mask, dtype=np.float32)
    got = models.sparse_mdp_of_owned(
        nxt.copy(), probs.copy(), rewards, action_mask=mask.copy(), dtype=np.float32
    )
    _leaves_equal(want, got)
    bad = probs.copy()
    bad[3, 1, 0] += 0.01
    with pytest.raises(ValueError, match=r"row \(state 3, action 1\) sums to"):
        models.sparse_mdp_of_owned(nxt.copy(), bad, rewards, action_mask=mask.copy())


def test_new_shapes_compile_nothing(caplog):
    """Building a model moves its arrays to the device without compiling a conversion for
    each new shape (that cost a first load tens of ms)."""
    rng = np.random.default_rng(3)
    nxt, probs, mask = _padded(rng, S=23, A=3, K=2)
    rid, lists_nxt, lists_p = _lists(rng, S=37, A=3, K=5)
    with jax.log_compiles(), caplog.at_level(logging.WARNING):
        jp.make_sparse_mdp(nxt, probs, np.zeros((23, 3)), action_mask=mask)
        jp.make_ragged_mdp(rid, lists_nxt, lists_p, np.zeros((37, 3)))
    compiled = [r.getMessage() for r in caplog.records if "Compiling" in r.getMessage()]
    assert not [m for m in compiled if "[23" in m or "[37" in m or "[111" in m], compiled

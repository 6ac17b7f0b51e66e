"""Reading untrusted ``.npz`` files and writing outputs atomically (``jaxprivmdp.io._files``)."""

import io
import os
import stat
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxprivmdp.cli._mdp_files import load_npz_mdp
from jaxprivmdp.io import _files as _io

P = np.array([[[0.5, 0.5], [1.0, 0.0]], [[0.25, 0.75], [0.0, 1.0]]])  # [S=2, A=2, S=2]
R = np.array([[1.0, 0.0], [0.0, 1.0]])


def _npz_bytes(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _member(array_or_bytes) -> bytes:
    if isinstance(array_or_bytes, bytes):
        return array_or_bytes
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.asarray(array_or_bytes), allow_pickle=True)
    return buf.getvalue()


def _zip(path, members: dict) -> None:
    """Writes members verbatim (no checks, unlike np.savez): arrays or raw bytes."""
    with zipfile.ZipFile(path, "w") as zf:
        for name, content in members.items():
            zf.writestr(name, _member(content))


def _zip_dupes(path, members) -> None:
    with zipfile.ZipFile(path, "w") as zf:
        for name, content in members:
            zf.writestr(name, _member(content))


def _read(path):
    return _io.read_npz(
        path,
        required=("transitions", "rewards"),
        optional=("terminal_reward", "action_mask"),
        ignored=("k", "adjacency"),
    )


def _header(shape, dtype="<f8") -> bytes:
    buf = io.BytesIO()
    header = {"descr": dtype, "fortran_order": False, "shape": shape}
    np.lib.format.write_array_header_1_0(buf, header)  # magic string included
    return buf.getvalue()


def test_reads_the_arrays_and_allows_release_metadata(tmp_path):
    path = tmp_path / "m.npz"
    np.savez(path, transitions=P, rewards=R, k=10.0, adjacency="row")
    arrays = _read(path)
    assert set(arrays) == {"transitions", "rewards"}  # metadata is checked, not returned
    np.testing.assert_array_equal(arrays["transitions"], P)


@pytest.mark.parametrize("kind", ["missing", "folder", "npy", "not a zip", "empty"])
def test_bad_paths_name_the_flag_and_the_file(tmp_path, kind):
    path = tmp_path / "input.npz"
    if kind == "folder":
        path.mkdir()
    elif kind == "npy":
        path = tmp_path / "input.npy"
        np.save(path, P)
    elif kind == "not a zip":
        path.write_text("transitions,rewards\n")
    elif kind == "empty":
        path.write_bytes(b"")
    with pytest.raises(ValueError) as e:
        _io.read_npz(path, required=("transitions",), flag="--mdp")
    msg = str(e.value)
    assert msg.startswith("--mdp") and str(path) in msg and "\n" not in msg


def test_a_huge_declared_shape_is_refused_before_allocating(tmp_path, monkeypatch):
    path = tmp_path / "bomb.npz"
    # The header promises 8 TB; the member holds 16 bytes of data.
    _zip(path, {"transitions.npy": _header((10**12,)) + bytes(16), "rewards.npy": R})

    def no_loading(*args, **kwargs):
        raise AssertionError("read_array must not run on a refused file")

    monkeypatch.setattr(np.lib.format, "read_array", no_loading)
    with pytest.raises(ValueError, match=r"'transitions' .* declares 8000000000000 bytes"):
        _read(path)


def test_arrays_larger_than_half_the_memory_are_refused(tmp_path, monkeypatch):
    path = tmp_path / "m.npz"
    np.savez(path, transitions=P, rewards=R)
    monkeypatch.setattr(_io, "_physical_memory", lambda: 100)
    with pytest.raises(ValueError, match="more than half of this machine's memory"):
        _read(path)


def test_pickled_arrays_are_refused_without_suggesting_pickle(tmp_path):
    path = tmp_path / "evil.npz"
    _zip(path, {"transitions.npy": np.array([{"a": 1}, None], dtype=object), "rewards.npy": R})
    with pytest.raises(ValueError) as e:
        _read(path)
    msg = str(e.value)
    assert str(path) in msg and "'transitions'" in msg and "only numeric arrays" in msg
    advice = msg.replace(str(path), "").lower()
    assert "pickle" not in advice and "unsafe" not in advice and "trust" not in advice


def test_complex_arrays_are_refused_and_named(tmp_path):
    path = tmp_path / "c.npz"
    np.savez(path, transitions=P.astype(complex), rewards=R)
    with pytest.raises(ValueError, match=r"'transitions' \(complex128.*imaginary part"):
        _read(path)


@pytest.mark.parametrize("value", [np.array(["a", "b"]), np.zeros(2, dtype=[("x", "<f8")])])
def test_non_numeric_arrays_are_refused(tmp_path, value):
    path = tmp_path / "s.npz"
    np.savez(path, transitions=P, rewards=value)
    with pytest.raises(ValueError, match="'rewards' .* only numeric arrays are read"):
        _read(path)


def test_unknown_and_duplicate_members_are_refused(tmp_path):
    path = tmp_path / "u.npz"
    np.savez(path, transitions=P, rewards=R, policy=R)
    with pytest.raises(ValueError, match=r"unknown array\(s\) \['policy.npy'\]"):
        _read(path)
    with pytest.warns(UserWarning, match="Duplicate name"):  # zipfile itself only warns
        _zip_dupes(path, [("transitions.npy", P), ("rewards.npy", R), ("rewards.npy", R)])
    with pytest.raises(ValueError, match="'rewards' is stored twice"):
        _read(path)


def test_float16_is_read_and_named_when_the_mdp_is_refused(tmp_path):
    path = tmp_path / "half.npz"
    np.savez(path, transitions=P.astype(np.float16), rewards=R.astype(np.float16))
    mdp = load_npz_mdp(path, horizon=2, discount=1.0, initial_state=0, dtype=None)
    np.testing.assert_allclose(np.asarray(mdp.transitions), P)
    # 1/3 in float16 is 0.33325: the rows sum to 0.99976, off by more than float32 allows.
    np.savez(path, transitions=np.full((3, 1, 3), 1 / 3, np.float16), rewards=np.zeros((3, 1)))
    with pytest.raises(ValueError, match=r"--mdp .*sum.*\(note: transitions stored as float16\)"):
        load_npz_mdp(path, horizon=2, discount=1.0, initial_state=0, dtype=None)


# --------------------------------------------------------------------------- property test

_NAMES = st.sampled_from(["transitions", "rewards", "terminal_reward", "action_mask", "k"])
_DTYPES = st.sampled_from(["<f8", "<f4", "<f2", ">f8", "<i8", "|u1", "|b1", "<c16", "|O"])
_SHAPES = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)
# Names a zip archive can hold: zipfile cuts a name at NUL, and "/" makes a folder.
_MEMBER_NAMES = st.text(
    st.characters(blacklist_characters="\x00/", blacklist_categories=("Cs",)),
    min_size=1,
    max_size=8,
)


@st.composite
def _random_arrays(draw):
    """Random members: names, shapes, dtypes (objects and complex included), values."""
    members = {}
    for _ in range(draw(st.integers(0, 4))):
        name = draw(_NAMES | _MEMBER_NAMES)
        dtype = np.dtype(draw(_DTYPES))
        shape = draw(_SHAPES)
        if dtype.hasobject:
            value = np.empty(shape, dtype)
        else:
            values = draw(st.lists(st.floats(-2, 2), min_size=0, max_size=64))
            flat = np.resize(np.asarray(values or [0.5]), int(np.prod(shape)))
            value = flat.reshape(shape).astype(dtype)
        members[name + ".npy"] = value
    return members


@st.composite
def _malformed_npz(draw):
    """``(file bytes, must_fail)``: files no loader should take, and random arrays."""
    good = _npz_bytes(transitions=P, rewards=R)
    kind = draw(st.sampled_from(["arrays", "truncated", "header", "data", "bytes", "bomb"]))
    if kind == "arrays":  # may by chance be a valid MDP
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            for name, value in draw(_random_arrays()).items():
                zf.writestr(name, _member(value))
        return buf.getvalue(), False
    if kind == "truncated":  # the end of central directory is the last thing in the file
        return good[: draw(st.integers(0, len(good) - 1))], True
    if kind == "header":  # garbage after the magic, in place of the header dict
        junk = draw(st.binary(min_size=0, max_size=200))
        return _zip_bytes(
            {"transitions.npy": np.lib.format.magic(1, 0) + junk, "rewards.npy": R}
        ), True
    if kind == "data":  # any byte changed; the CRC or the zip structure notices
        pos = draw(st.integers(0, len(good) - 1))
        flip = draw(st.integers(1, 255))
        return good[:pos] + bytes([good[pos] ^ flip]) + good[pos + 1 :], False
    if kind == "bomb":
        shape = draw(st.lists(st.integers(0, 10**9), min_size=1, max_size=3).map(tuple))
        data = draw(st.binary(max_size=64))
        member = _header(shape, draw(_DTYPES.filter(lambda d: d != "|O"))) + data
        return _zip_bytes({"transitions.npy": member, "rewards.npy": R}), False
    return draw(st.binary(max_size=300)), True


def _zip_bytes(members: dict) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, content in members.items():
            zf.writestr(name, _member(content))
    return buf.getvalue()


@settings(
    max_examples=50,
    deadline=None,
    derandomize=True,  # the same examples in every CI run
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(case=_malformed_npz())
def test_malformed_files_only_ever_raise_value_error(tmp_path, case):
    content, must_fail = case
    path = tmp_path / "fuzz.npz"
    path.write_bytes(content)
    try:
        load_npz_mdp(path, horizon=2, discount=1.0, initial_state=0, dtype=None)
    except ValueError as e:
        msg = str(e)
        assert msg.startswith("--mdp") and "\n" not in msg and "allow_pickle" not in msg
    else:
        assert not must_fail, "a malformed file was accepted"


# --------------------------------------------------------------------------- atomic writes


def test_atomic_outputs_rename_together_on_success(tmp_path):
    a, b = tmp_path / "out" / "a.json", tmp_path / "out" / "b.png"
    with _io.atomic_outputs() as stage:
        ta, tb = stage(a), stage(b)
        assert ta.parent == a.parent and tb.suffix == ".png"  # matplotlib reads the suffix
        ta.write_text("A")
        tb.write_text("B")
        assert not a.exists() and not b.exists()  # nothing is visible before the end
    assert a.read_text() == "A" and b.read_text() == "B"
    assert sorted(p.name for p in a.parent.iterdir()) == ["a.json", "b.png"]
    # Ordinary permissions (mkstemp's are owner-only).
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(a.stat().st_mode) == 0o666 & ~umask


@pytest.mark.parametrize("exc", [OSError("disk full"), KeyboardInterrupt()])
def test_a_failed_write_leaves_the_old_files_and_no_temporaries(tmp_path, exc):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("old")
    with pytest.raises(type(exc)):
        with _io.atomic_outputs() as stage:
            stage(a).write_text("new, complete")
            stage(b).write_text("new, partial")
            raise exc
    assert a.read_text() == "old" and not b.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["a.csv"]


def test_atomic_path_replaces_one_file(tmp_path):
    path = tmp_path / "x.npz"
    with _io.atomic_path(path) as tmp, tmp.open("wb") as f:
        np.savez(f, a=np.arange(3))
    np.testing.assert_array_equal(np.load(path)["a"], np.arange(3))


# --------------------------------------------------------------------------- output checks


def test_output_file_checks(tmp_path, monkeypatch):
    src = tmp_path / "in.npz"
    src.write_bytes(b"x")
    check = _io.check_output_file
    for out in (src, tmp_path / "." / "in.npz"):
        with pytest.raises(ValueError, match="--out .* is the input file"):
            check(out, flag="--out", force=True, inputs=[src])
    with pytest.raises(ValueError, match="exists; pass --force"):
        check(src, flag="--out", force=False)
    with pytest.raises(ValueError, match="is a folder"):
        check(tmp_path, flag="--out", force=True)
    with pytest.raises(ValueError, match="is a file, so"):
        check(src / "sub" / "out.npz", flag="--out", force=False)
    check(tmp_path / "new" / "deeper" / "out.npz", flag="--out", force=False)  # fine
    monkeypatch.setattr(os, "access", lambda *a, **k: False)  # root may write anywhere
    with pytest.raises(ValueError, match=f"--out: '{tmp_path}' is not writable"):
        check(tmp_path / "new" / "out.npz", flag="--out", force=False)


def test_output_folder_checks(tmp_path):
    src = tmp_path / "sweep.csv"
    src.write_bytes(b"x")
    check = _io.check_output_folder
    with pytest.raises(ValueError, match="--out: .* is a file; give a folder"):
        check(src, flag="--out", names=("a",))
    with pytest.raises(ValueError, match="would overwrite the input file"):
        check(tmp_path, flag="--out", names=("sweep.csv",), inputs=[src])
    (tmp_path / "sweep.png").mkdir()
    with pytest.raises(ValueError, match="is a folder, where a file would be written"):
        check(tmp_path, flag="--out", names=("sweep.png",))
    check(tmp_path / "fresh", flag="--out", names=("sweep.png",), inputs=[None, src])

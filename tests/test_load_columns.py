"""The vectorized reader of explicit files (``io/_columns``, ``io/_decimals``): the same numbers
as the line-by-line reader, bit for bit, or None (and then the line-by-line reader decides).

Oracles: Python's ``float`` and ``int`` on each field, and the line-by-line reader itself.
"""

import math
import random
import warnings

import numpy as np
import prism_fixtures as fx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxprivmdp as jp
from jaxprivmdp.io import _columns, _decimals, _rewards, _transitions

PAD = _columns.PAD


def _convert(fields: list[str]):
    """``decimal_column`` on the fields laid out one per line, as a block is."""
    text = "".join(f + "\n" for f in fields).encode()
    b = np.zeros(len(text) + 2 * PAD, np.uint8)
    b[PAD:-PAD] = np.frombuffer(text, np.uint8)
    lengths = np.array([len(f) for f in fields])
    e = PAD + np.cumsum(lengths + 1) - 1
    return _decimals.decimal_column(b, e - lengths, e)


def _same(got, fields):
    want = np.array([float(f) for f in fields])
    assert got is not None
    equal = (got == want) & (np.signbit(got) == np.signbit(want))
    bad = np.flatnonzero(~equal)
    assert not bad.size, [(fields[i], got[i], want[i]) for i in bad[:5]]


HARD = [
    "9007199254740993",  # 2^53 + 1: a tie, to even
    "9007199254740995",
    "4503599627370496.5",
    "0.1",
    "0.30000000000000004",
    "1.000000000000000111022302462515654042",  # just above the midpoint above 1
    "1.000000000000000111022302462515654",  # just below
    "2.2250738585072011e-308",
    "5e-324",
    "1e-400",
    "1e400",
    "1.7976931348623157e308",
    "18446744073709551615",
    "1152921504606846977",
    "0.000000000000000000001",
    "-0.0",
    "+.5",
    "1.",
    ".5e-3",
    "00000000000000000000001.5",
    "0.16272744065985467",
    "0.9999999999999999",
    "0.99999999999999999",
]


def test_hard_decimals_round_as_python():
    _same(_convert(HARD), HARD)
    # A field longer than MAX_CHARS is left to the line-by-line reader.
    assert _convert(["1." + "0" * _decimals.MAX_CHARS]) is None


def test_random_decimals_round_as_python():
    rng = random.Random(0)
    fields = []
    for _ in range(20_000):
        x = rng.random()
        fields += [repr(x), repr(x * 10 ** rng.randint(-30, 30)), f"{x:.{rng.randint(1, 22)}f}"]
        fields.append(f"{x:.{rng.randint(1, 18)}e}")
        fields.append(str(rng.randint(0, 10 ** rng.randint(1, 21))))
    _same(_convert(fields), fields)


_digits = st.text("0123456789", max_size=22)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["", "-", "+"]),
            _digits,
            st.sampled_from(["", "."]),
            _digits,
            st.sampled_from(["", "e", "E"]),
            st.sampled_from(["", "-", "+"]),
            st.text("0123456789", min_size=1, max_size=4),
        ).map(
            lambda t: (
                t[0] + t[1] + t[2] + (t[3] if t[2] else "") + (t[4] + t[5] + t[6] if t[4] else "")
            )
        ),
        min_size=1,
        max_size=30,
    )
)
def test_decimal_fields_match_float_or_refuse(fields):
    """A column of fields: converted as ``float`` converts each, or None where one is no
    decimal number (hypothesis)."""
    fields = [f for f in fields if f and len(f) <= _decimals.MAX_CHARS]
    if not fields:
        return
    got = _convert(fields)
    try:
        [float(f) for f in fields]
    except ValueError:
        assert got is None
        return
    _same(got, fields)


@pytest.mark.parametrize(
    "field", ["+", "-", ".", "e5", "1e", "1e+", "1.2.3", "1e5e5", "1-2", "1_0", "inf", "nan", "2/5"]
)
def test_not_a_decimal_is_refused(field):
    assert _convert(["0.5", field]) is None


# --------------------------------------------------------------------------- whole files


def _both(path):
    """The fast reader's transitions and the line-by-line reader's."""
    ex = _transitions.read_transitions(path)
    lines = _transitions.data_lines(path)
    next(lines)
    slow = _transitions._read_body(path, lines, ex.flavor, ex.kind)
    return ex, slow


def _assert_same(path):
    ex, slow = _both(path)
    for name, a, b in zip(("src", "choice", "tgt", "prob", "line"), _fields(ex), slow, strict=True):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype.kind == b.dtype.kind, name  # int32 or int64 indices, float64 values
        np.testing.assert_array_equal(a, b, err_msg=name)


def _fields(ex):
    return ex.src, ex.choice, ex.tgt, ex.prob, np.asarray(ex.line)


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of a few hundred bytes, converted 3 rows at a time: many block and slice
    boundaries in a small file."""
    monkeypatch.setattr(_columns, "BLOCK", 256)
    monkeypatch.setattr(_columns, "SLICE", 3)


def _random_mdp_text(rng, S=60, extra=""):
    lines = []
    for s in range(S):
        for c in range(rng.randint(1, 3)):
            targets = sorted(rng.sample(range(S), rng.randint(1, 4)))
            w = [rng.random() + 0.01 for _ in targets]
            for t, x in zip(targets, w, strict=True):
                act = f" a{c}" if extra == "actions" else ""
                lines.append(f"{s} {c} {t} {x / sum(w)!r}{act}")
    n_choices = len({tuple(line.split()[:2]) for line in lines})
    return f"{S} {n_choices} {len(lines)}", lines


@pytest.mark.parametrize(
    "variant",
    ["plain", "actions", "crlf", "tabs", "blank lines", "spaces", "no final newline", "comment"],
)
def test_variants_read_as_line_by_line(tmp_path, small_blocks, variant):
    rng = random.Random(1)
    header, lines = _random_mdp_text(rng, extra="actions" if variant == "actions" else "")
    if variant == "tabs":
        lines = [line.replace(" ", "\t", 1) for line in lines]
    if variant == "blank lines":
        lines = [x for line in lines for x in (line, "") if rng.random() < 0.5 or x]
    if variant == "spaces":
        lines = ["  " + line.replace(" ", "   ") + " " for line in lines]
    if variant == "comment":
        lines.insert(len(lines) // 2, "# a comment in the body")
    newline = "\r\n" if variant == "crlf" else "\n"
    text = "# Transitions (MDP)" + newline + header + newline + newline.join(lines)
    if variant != "no final newline":
        text += newline
    path = tmp_path / "m.tra"
    path.write_bytes(text.encode())
    _assert_same(path)


def test_dtmc_and_storm_read_as_line_by_line(tmp_path, small_blocks):
    for write in (fx.write_prism, fx.write_storm):
        for model in (fx.knuth_yao_die(), fx.gamble()):
            path = write(model, tmp_path / f"{write.__name__}_{model.kind}")
            _assert_same(path)


def test_the_fast_path_is_taken(tmp_path, monkeypatch):
    """The plain form never reaches the line-by-line reader."""
    rng = random.Random(2)
    header, lines = _random_mdp_text(rng, extra="actions")
    path = tmp_path / "m.tra"
    path.write_text(header + "\n" + "\n".join(lines) + "\n")

    def refuse(*args):
        raise AssertionError("line by line")

    monkeypatch.setattr(_transitions, "_read_body", refuse)
    ex = _transitions.read_transitions(path)
    assert ex.src.size == len(lines)


@pytest.mark.parametrize(
    "line, message",
    [
        ("5 0 3 0.5x", r"line 30002: '0.5x' is not a number"),
        ("5 0 3 2/5/7", r"line 30002: '2/5/7' is not a number"),
        ("5 0 3.0 0.5", r"line 30002: '3.0' is not an integer"),
        ("5 0 -3 0.5", r"line 30002: a state or choice is out of range"),
        ("5 0 3", r"line 30002: expected 'source choice target probability"),
        ("5 0 3 0.5 a b", r"line 30002: expected 'source choice target probability"),
    ],
)
def test_errors_deep_in_a_large_file_name_the_line(tmp_path, monkeypatch, line, message):
    """A bad line among 40,000 good ones, many blocks in: the line-by-line reader's message."""
    monkeypatch.setattr(_columns, "BLOCK", 1 << 12)
    monkeypatch.setattr(_columns, "SLICE", 50)  # the bad line inside a slice of a block
    S = 10_000
    body = [f"{s} 0 {(s + k) % S} 0.25" for s in range(S) for k in range(4)]
    body.insert(30_000, line)
    path = tmp_path / "m.tra"
    path.write_text(f"{S} {S} {len(body)}\n" + "\n".join(body) + "\n")
    with pytest.raises(ValueError, match=message):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            jp.load_mdp(path)


def test_unsorted_files_give_the_same_model(tmp_path):
    """Lines in any order: the same rows as in order (the slots follow the file)."""
    rng = random.Random(3)
    header, lines = _random_mdp_text(rng)
    S = int(header.split()[0])
    ordered, shuffled = tmp_path / "a.tra", tmp_path / "b.tra"
    ordered.write_text(header + "\n" + "\n".join(lines) + "\n")
    mixed = lines[:]
    rng.shuffle(mixed)
    shuffled.write_text(header + "\n" + "\n".join(mixed) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b = jp.load_mdp(ordered), jp.load_mdp(shuffled)
    assert a.next_states.shape[:2] == b.next_states.shape[:2] == (S, 3)
    for s in range(S):
        for c in range(3):
            pa = dict(zip(np.asarray(a.next_states[s, c]), np.asarray(a.probs[s, c]), strict=True))
            pb = dict(zip(np.asarray(b.next_states[s, c]), np.asarray(b.probs[s, c]), strict=True))
            pa.pop(-1, None), pb.pop(-1, None)
            assert pa == pb
    assert math.isclose(float(a.probs.sum()), float(b.probs.sum()), rel_tol=1e-6)


def _line_by_line(monkeypatch):
    """Every reader takes its line-by-line path."""
    for module in (_transitions, _rewards):
        monkeypatch.setattr(module, "read_columns", lambda *a, **k: None)


@pytest.mark.parametrize("fmt", ["prism", "prism-dev", "storm"])
@pytest.mark.parametrize("make", [fx.knuth_yao_die, fx.gamble], ids=["dtmc", "mdp"])
def test_reward_files_read_as_line_by_line(tmp_path, monkeypatch, fmt, make):
    model = make()
    if fmt == "storm":
        tra = fx.write_storm(model, tmp_path)
    else:
        tra = fx.write_prism(model, tmp_path, dev_headers=fmt == "prism-dev")
    fast = [np.asarray(jp.load_mdp(tra, reward_structure=r.name).rewards) for r in model.rewards]
    _line_by_line(monkeypatch)
    slow = [np.asarray(jp.load_mdp(tra, reward_structure=r.name).rewards) for r in model.rewards]
    for a, b in zip(fast, slow, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "body, message",
    [
        ("2 0.5\n9 1.5\n", r"line 4: state 9 is out of range"),
        ("2 0.5\n", r"the header declares 2 rewards, the body has 1"),
        ("2 0.5\n2 0.25\n", None),  # listed twice: the last one counts
    ],
)
def test_state_reward_files_the_same_either_way(tmp_path, monkeypatch, body, message):
    tra = fx.write_prism(fx.gamble(), tmp_path, parts=("tra", "lab"))
    srew = tmp_path / "extra.srew"
    srew.write_text("# State rewards\n5 2\n" + body)
    results = []
    for _ in range(2):  # the vectorized reader, then line by line
        if message is None:
            results.append(np.asarray(jp.load_mdp(tra, rewards=srew).rewards))
        else:
            with pytest.raises(ValueError, match=message):
                jp.load_mdp(tra, rewards=srew)
        _line_by_line(monkeypatch)
    if message is None:
        np.testing.assert_array_equal(results[0], results[1])
        assert results[0][2, 0] == 0.25


@pytest.mark.parametrize(
    "body",
    [
        "0: 0 2\n2: 2\n3: 3 2\n",
        "0: 0\n\n4: 2 3\n4: 0\n",  # a blank line; a state listed twice
        "0: 0\n3:\n",  # a state without labels
        "0: 0\n3 : 2\n",  # (line by line: a space before the colon)
        "0: 0\n3: 2\r\n",  # (line by line: \r\n)
        "0: 0\n1: 9\n",  # no label has index 9
        "0: 0\n7: 2\n",  # state 7 is out of range
        "0: 0\n2:3\n",  # (line by line)
        "0: 0\nx: 2\n",  # expected 'state: label ...'
    ],
)
def test_label_files_read_as_line_by_line(tmp_path, monkeypatch, body):
    from jaxprivmdp.io import _labels

    lab = tmp_path / "m.lab"
    lab.write_bytes(('0="init" 1="deadlock" 2="goal" 3="odd"\n' + body).encode())
    outcomes = []
    for _ in range(2):  # the vectorized reader, then line by line
        try:
            labels = jp.load_labels(lab, num_states=5)
            outcomes.append({k: np.flatnonzero(v).tolist() for k, v in labels.items()})
        except ValueError as e:
            outcomes.append(str(e))
        monkeypatch.setattr(_labels, "_read_prism_labels_in_arrays", lambda path: None)
    assert outcomes[0] == outcomes[1]


def test_a_large_label_file_is_read_in_arrays(tmp_path, monkeypatch):
    from jaxprivmdp.io import _labels

    S = 50_000
    lines = ['0="init" 1="deadlock" 2="even"', "0: 0 2"]
    lines += [f"{s}: 2" for s in range(2, S, 2)]
    (tmp_path / "m.lab").write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(_labels, "data_lines", None)  # would fail if used
    labels = jp.load_labels(tmp_path / "m.lab", num_states=S)
    assert labels["even"].sum() == S // 2 and np.flatnonzero(labels["init"]).tolist() == [0]

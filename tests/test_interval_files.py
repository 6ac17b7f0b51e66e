"""PRISM's explicit files of interval models (``s c t [lower,upper]``), read by ``load_mdp``
and written by ``save_mdp``; interval PRISM sources through ``load_prism``.

The files here are written by this test's own few lines (never copied from PRISM), from
random interval models; Storm, where installed, reads the same models (as DRN files, which
it reads with interval values) and builds interval sources, as the independent oracle.
"""

import jax
import numpy as np
import pytest

import jaxprivmdp as jp


def random_imdp(seed, S=5, A=3, K=3, masked=True):
    """Dense float64 bounds `[S, A, S]` around a random distribution per row, a mask, and
    rewards; bounds are arbitrary floats (all 17 digits matter)."""
    rng = np.random.default_rng(seed)
    lo, hi = np.zeros((S, A, S)), np.zeros((S, A, S))
    mask = np.ones((S, A), bool)
    if masked:
        mask[1, A - 1] = mask[3, 1:] = False
    for s in range(S):
        for a in range(A):
            if not mask[s, a]:
                continue
            targets = rng.choice(S, size=rng.integers(1, K + 1), replace=False)
            p = rng.dirichlet(np.ones(targets.size))
            lo[s, a, targets] = np.clip(p - rng.uniform(0, 0.2, targets.size), 0, 1)
            hi[s, a, targets] = np.clip(p + rng.uniform(0, 0.2, targets.size), 0, 1)
    r = np.where(mask, rng.uniform(0, 5, (S, A)), 0.0)
    return lo, hi, mask, r


def write_tra(path, lo, hi, mask, *, comment=False):
    """PRISM's interval ``.tra`` of dense bounds (entries with ``upper > 0``)."""
    S, A, _ = lo.shape
    dtmc = A == 1
    lines = []
    for s in range(S):
        for c, a in enumerate(np.flatnonzero(mask[s])):
            for t in np.flatnonzero(hi[s, a] > 0):
                head = f"{s} {t}" if dtmc else f"{s} {c} {t}"
                lines.append(f"{head} [{float(lo[s, a, t])!r},{float(hi[s, a, t])!r}]")
    counts = f"{S} {len(lines)}" if dtmc else f"{S} {int(mask.sum())} {len(lines)}"
    top = [f"# Transitions ({'IDTMC' if dtmc else 'IMDP'})"] if comment else []
    path.write_text("\n".join([*top, counts, *lines]) + "\n")
    return path


def as_dense(m):
    """`(lower, upper)` `[S, A, S]` float64 of a loaded interval model."""
    with jax.enable_x64(m.lower.dtype == np.float64):
        d = jp.to_dense(m)
    return np.asarray(d.lower, np.float64), np.asarray(d.upper, np.float64)


def load64(path, **kw):
    with jax.enable_x64(True):
        return jp.load_mdp(path, dtype=np.float64, **kw)


@pytest.mark.integration
def test_reads_an_imdp_file_bit_for_bit(tmp_path):
    lo, hi, mask, r = random_imdp(0)
    path = write_tra(tmp_path / "m.tra", lo, hi, mask)
    S = lo.shape[0]
    # PRISM MDP rewards are per choice: the choice's value on each of its transitions.
    trew = [
        f"{s} {c} {t} {float(r[s, a])!r}"
        for s in range(S)
        for c, a in enumerate(np.flatnonzero(mask[s]))
        for t in np.flatnonzero(hi[s, a] > 0)
    ]
    (tmp_path / "m.trew").write_text(f"{S} {int(mask.sum())} {len(trew)}\n" + "\n".join(trew))
    (tmp_path / "m.lab").write_text('0="init" 1="deadlock" 2="goal"\n2: 0\n4: 2\n')
    with jax.enable_x64(True):
        m = jp.load_mdp(path, dtype=np.float64, discount=0.9)
        assert isinstance(m, jp.IntervalMDP) and m.is_sparse and m.initial_state == 2
        got_lo, got_hi = as_dense(m)
    np.testing.assert_array_equal(np.asarray(m.action_mask), mask)  # choices 0..n-1 in order
    # Masked actions have their rows renumbered: compare row by row through the mask.
    for s in range(S):
        allowed = np.flatnonzero(mask[s])
        np.testing.assert_array_equal(got_lo[s, : allowed.size], lo[s, allowed])
        np.testing.assert_array_equal(got_hi[s, : allowed.size], hi[s, allowed])
        np.testing.assert_array_equal(np.asarray(m.rewards)[s, : allowed.size], r[s, allowed])
    labels = jp.load_labels(path)
    assert labels["goal"].tolist() == [False] * 4 + [True] and labels["init"][2]


def unmasked(seed, **kw):
    lo, hi, mask, r = random_imdp(seed, masked=False, **kw)
    return lo, hi, mask, r


@pytest.mark.integration
@pytest.mark.parametrize("x64", [False, True])
def test_save_load_round_trip_is_exact(tmp_path, x64):
    lo, hi, mask, r = unmasked(1)
    with jax.enable_x64(x64):
        dtype = np.float64 if x64 else np.float32
        model = jp.make_interval_mdp(lo, hi, r, discount=0.9, initial_state=3, dtype=dtype)
        labels = {"goal": np.arange(5) == 4}
        jp.save_mdp(tmp_path / "a.tra", model, labels=labels, reward_name="cost")
        back = jp.load_mdp(tmp_path / "a.tra", discount=0.9, dtype=dtype)
        again = tmp_path / "b.tra"
        jp.save_mdp(again, back, labels=jp.load_labels(tmp_path / "a.tra"), reward_name="cost")
        twice = jp.load_mdp(again, discount=0.9, dtype=dtype)
        dense_back = jp.to_dense(back)
    for suffix in (".tra", ".lab", ".srew", ".trew"):  # the files themselves are identical
        assert (tmp_path / f"a{suffix}").read_text() == (tmp_path / f"b{suffix}").read_text()
    for name in ("lower", "upper", "rewards", "action_mask"):
        np.testing.assert_array_equal(getattr(dense_back, name), getattr(model, name))
        np.testing.assert_array_equal(getattr(twice, name), getattr(back, name))
        assert getattr(back, name).dtype == getattr(model, name).dtype
    np.testing.assert_array_equal(twice.next_states, back.next_states)
    assert back.initial_state == 3 and back.is_sparse
    assert "[" in (tmp_path / "a.tra").read_text().splitlines()[1]


def test_float32_bounds_round_outward_and_survive_the_file(tmp_path):
    # 0.1 is no float32: its bounds are rounded outward once, then written exactly.
    (tmp_path / "m.tra").write_text("2 2 3\n0 0 1 [0.1,0.9]\n0 0 0 [0.1,0.9]\n1 0 1 1\n")
    m = jp.load_mdp(tmp_path / "m.tra", rewards=[], horizon=2)
    assert m.lower.dtype == np.float32
    assert float(m.lower[0, 0, 0]) < 0.1 and float(m.upper[0, 0, 0]) > 0.9
    jp.save_mdp(tmp_path / "n.tra", m)
    n = jp.load_mdp(tmp_path / "n.tra", rewards=[], horizon=2)
    np.testing.assert_array_equal(n.lower, m.lower)
    np.testing.assert_array_equal(n.upper, m.upper)


@pytest.mark.integration
def test_dense_bounds_are_written_as_successor_lists(tmp_path):
    lo, hi, mask, r = unmasked(2, S=6, K=2)
    with jax.enable_x64(True):
        model = jp.make_interval_mdp(lo, hi, r, horizon=3, dtype=np.float64)
        jp.save_mdp(tmp_path / "m.tra", model)
        back = jp.load_mdp(tmp_path / "m.tra", horizon=3, dtype=np.float64)
    assert back.next_states.shape[2] <= 2  # the longest row, not S
    got_lo, got_hi = as_dense(back)
    np.testing.assert_array_equal(got_lo, lo)
    np.testing.assert_array_equal(got_hi, hi)
    header = (tmp_path / "m.tra").read_text().splitlines()[0].split()
    assert header == ["6", "18", str(int((hi > 0).sum()))]


@pytest.mark.integration
@pytest.mark.parametrize("comment", [False, True])
def test_interval_dtmc_files(tmp_path, comment):
    lo, hi, mask, r = unmasked(3, A=1)
    path = write_tra(tmp_path / "c.tra", lo, hi, mask, comment=comment)
    assert len(path.read_text().splitlines()[comment].split()) == 2  # "S T"
    (tmp_path / "c.srew").write_text("5 2\n0 1.5\n3 2\n")
    m = load64(path, horizon=4)
    assert m.num_actions == 1
    got_lo, got_hi = as_dense(m)
    np.testing.assert_array_equal(got_lo, lo)
    np.testing.assert_array_equal(got_hi, hi)
    np.testing.assert_array_equal(np.asarray(m.rewards)[:, 0], [1.5, 0, 0, 2, 0])
    with jax.enable_x64(True):
        jp.save_mdp(tmp_path / "d.tra", m)
    lines = (tmp_path / "d.tra").read_text().splitlines()
    assert len(lines[0].split()) == 2 and len(lines[1].split()) == 3  # "s t [l,u]"
    assert (tmp_path / "d.srew").read_text().splitlines()[2:] == ["5 2", "0 1.5", "3 2.0"]


@pytest.mark.integration
def test_points_blanks_and_deadlocks(tmp_path):
    # A number is the interval [p, p]; "[0.2, 0.8]" with a blank is one interval.
    (tmp_path / "m.tra").write_text("3 2 3\n0 0 1 [0.2, 0.8] go\n0 0 2 0.5\n1 0 2 [1,1]\n")
    with pytest.raises(ValueError, match="state 2 has no transition .deadlock."):
        load64(tmp_path / "m.tra", rewards=[], horizon=1)
    m = load64(tmp_path / "m.tra", rewards=[], horizon=1, deadlocks="self-loop")
    got_lo, got_hi = as_dense(m)
    np.testing.assert_array_equal(got_lo[:, 0], [[0, 0.2, 0.5], [0, 0, 1], [0, 0, 1]])
    np.testing.assert_array_equal(got_hi[:, 0], [[0, 0.8, 0.5], [0, 0, 1], [0, 0, 1]])
    assert jp.load_labels(tmp_path / "m.tra")["deadlock"].tolist() == [False, False, True]
    ragged = load64(tmp_path / "m.tra", rewards=[], horizon=1, layout="ragged",
                    deadlocks="self-loop")  # fmt: skip
    assert isinstance(ragged, jp.RaggedIntervalMDP)
    with jax.enable_x64(True):
        padded = jp.to_padded(ragged)
    np.testing.assert_array_equal(as_dense(padded)[1], got_hi)


@pytest.mark.parametrize(
    ("tra", "match"),
    [
        ("2 2 3\n0 0 1 [0.6,0.3]\n0 0 0 [0.4,0.7]\n1 0 1 1\n", "line 2: .* lower bound exceeds"),
        ("2 2 3\n0 0 1 [0.2,0.9]\n0 0 0 [0.4,0.7\n1 0 1 1\n", r"line 3: expected an interval"),
        ("2 2 3\n0 0 1 [0.2,0.9]\n0 0 0 0.4,0.7]\n1 0 1 1\n", r"line 3: expected an interval"),
        ("2 2 3\n0 0 1 [0.2,0.9]\n0 0 0 [0.4,1.5]\n1 0 1 1\n", r"line 3: .* lie in \[0, 1\]"),
        ("2 2 3\n0 0 1 [0.2,0.9]\n0 0 0 [-0.1,1]\n1 0 1 1\n", r"line 3: .* lie in \[0, 1\]"),
        ("2 2 3\n0 0 1 [0.2,0.9]\n0 0 0 [0.1,x]\n1 0 1 1\n", r"line 3: 'x' is not a number"),
        (
            "2 2 3\n0 0 1 [0.7,0.9]\n0 0 0 [0.4,0.7]\n1 0 1 1\n",
            r"line 2: the choice 0 of state 0 has lower bounds sum to 1.1 > 1: no distribution",
        ),
        (
            "2 2 3\n0 0 1 [0.1,0.3]\n0 0 0 [0.4,0.6]\n1 0 1 1\n",
            r"line 2: .* upper bounds sum to 0.9 < 1",
        ),
        ("2 3\n0 1 [0.1,0.9]\n1 0 [0.2,0.3]\n0 0 [0.7,1]\n", r"line 3: the state 1 has upper"),
        ("2 2 2\n0 0 1 [0.2,1] a b\n1 0 1 1\n", r"line 2: expected 'source choice target \["),
        ("# Transitions (IMDP)\n2 2\n0 1 [0,1]\n1 0 1\n", "is not that of the MDP"),
        ("2 2 3\n0 0 1 [0.5,1]\n0 0 9 [0,1]\n1 0 1 1\n", "line 3: a state or choice is out of"),
        ("2 2 4\n0 0 1 [0.5,1]\n1 0 1 1\n", "the header declares 4 transitions, the body has 2"),
    ],
)
def test_malformed_interval_files_name_the_line(tmp_path, tra, match):
    (tmp_path / "m.tra").write_text(tra)
    with pytest.raises(ValueError, match=match):
        jp.load_mdp(tmp_path / "m.tra", rewards=[], horizon=1)


@pytest.mark.parametrize("variant", ["plain", "actions", "crlf", "blank lines", "points"])
def test_the_vectorized_reader_reads_what_the_line_reader_reads(tmp_path, variant):
    from jaxprivmdp.io import _interval_files

    lo, hi, mask, _ = random_imdp(7, S=40, A=3)
    path = write_tra(tmp_path / "m.tra", lo, hi, mask)
    lines = path.read_text().splitlines()
    if variant == "actions":
        lines = [f"{x} act{i % 3}" if i and i % 2 else x for i, x in enumerate(lines)]
    if variant == "blank lines":
        lines = lines[:5] + ["", "   "] + lines[5:] + [""]
    if variant == "points":  # a plain number: only the line reader takes it
        s, c, t, _ = lines[3].split()
        lines[3] = f"{s} {c} {t} {float(lo[int(s), 0, int(t)])!r}"
    end = "\r\n" if variant == "crlf" else "\n"
    path.write_text(end.join(lines) + end)
    fast = _interval_files._body_in_columns(path, True)
    if variant == "points":
        assert fast is None
        return
    rows = _interval_files.data_lines(path)
    next(rows)
    slow = _interval_files._body_lines(path, rows, True)
    for got, want in zip(fast, slow, strict=True):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_a_dtmc_reward_that_depends_on_nature_is_refused(tmp_path):
    (tmp_path / "m.tra").write_text("2 3\n0 1 [0.2,0.9]\n0 0 [0.1,0.8]\n1 1 1\n")
    (tmp_path / "m.trew").write_text("2 1\n0 1 5\n")
    with pytest.raises(ValueError, match="state 0 lies between 1 and 4.5 as nature picks"):
        load64(tmp_path / "m.tra", horizon=1)
    (tmp_path / "m.trew").write_text("2 1\n1 1 5\n")  # a point row: its reward is known
    assert float(load64(tmp_path / "m.tra", horizon=1).rewards[1, 0]) == 5


def test_save_refuses_other_formats_for_interval_models(tmp_path):
    lo, hi, mask, r = unmasked(4)
    model = jp.make_interval_mdp(lo, hi, r, horizon=2)
    for name in ("m.npz", "m.drn"):
        with pytest.raises(ValueError, match="interval model is written as PRISM's explicit"):
            jp.save_mdp(tmp_path / name, model)
    assert not list(tmp_path.iterdir())
    jp.save_mdp(tmp_path / "m.tra", model, metadata={"beta": 0.1})
    assert '"layout": "IntervalMDP"' in (tmp_path / "m.tra.json").read_text()


def test_a_loaded_interval_model_is_a_pytree_under_jit(tmp_path):
    lo, hi, mask, r = unmasked(5)
    write_tra(tmp_path / "m.tra", lo, hi, mask)
    m = jp.load_mdp(tmp_path / "m.tra", rewards=[], horizon=2)
    width = jax.jit(lambda m: (m.upper - m.lower).sum())(m)
    np.testing.assert_allclose(width, (hi - lo).sum(), rtol=1e-5)


@pytest.mark.integration  # (privatize and interval_model compile: ~3 s each)
@pytest.mark.parametrize("layout", ["sparse", "dense"])
def test_a_release_as_an_interval_model_survives_the_files(tmp_path, layout):
    mdp = jp.examples.gridworld(3, 3)
    mdp = jp.to_dense(mdp) if layout == "dense" else mdp
    release = jp.privatize(jax.random.key(0), mdp, jp.Dirichlet(50.0), support="nonzero")
    imdp = jp.interval_model(release, jp.Dirichlet(50.0), jp.CertifiedSet(0.1))
    jp.save_mdp(tmp_path / "release.tra", imdp)
    back = jp.load_mdp(tmp_path / "release.tra", horizon=imdp.horizon)
    for name in ("lower", "upper", "rewards", "action_mask"):
        np.testing.assert_array_equal(
            getattr(jp.to_dense(back), name), getattr(jp.to_dense(imdp), name)
        )


# ---------------------------------------------------------------------------- Storm's oracle


def drn_text(lo, hi, mask):
    """The same model as a DRN file with interval values (Storm reads ``[l,u]``)."""
    S = lo.shape[0]
    out = ["@type: MDP", "@value_type: double-interval", "@parameters", "", "@reward_models", ""]
    out += ["@nr_states", str(S), "@nr_choices", str(int(mask.sum())), "@model"]
    for s in range(S):
        out.append(f"state {s}")
        for c, a in enumerate(np.flatnonzero(mask[s])):
            out.append(f"\taction {c}")
            for t in np.flatnonzero(hi[s, a] > 0):
                out.append(f"\t\t{t} : [{float(lo[s, a, t])!r},{float(hi[s, a, t])!r}]")
    return "\n".join(out) + "\n"


def storm_bounds(stormpy, built, shape):
    """Storm's interval matrix as dense `(lower, upper)` `[S, A, S]` float64."""
    lo, hi = np.zeros(shape), np.zeros(shape)
    groups = list(built.transition_matrix.get_row_group_start(s) for s in range(shape[0]))
    for s, start in enumerate(groups):
        end = groups[s + 1] if s + 1 < shape[0] else built.transition_matrix.nr_rows
        for c, row in enumerate(range(start, end)):
            for e in built.transition_matrix.get_row(row):
                lo[s, c, e.column], hi[s, c, e.column] = e.value.lower(), e.value.upper()
    return lo, hi


@pytest.mark.prism
def test_storm_reads_the_same_bounds(tmp_path):
    stormpy = pytest.importorskip("stormpy")
    lo, hi, mask, _ = random_imdp(6, S=7, A=2, masked=False)
    (tmp_path / "m.drn").write_text(drn_text(lo, hi, mask))
    storm = storm_bounds(
        stormpy, stormpy.build_model_from_drn[stormpy.Interval](tmp_path / "m.drn"), lo.shape
    )
    # Our reader on the test's .tra, and our writer's .tra read back: Storm's numbers.
    m = load64(write_tra(tmp_path / "m.tra", lo, hi, mask), rewards=[], horizon=1)
    with jax.enable_x64(True):
        jp.save_mdp(tmp_path / "w.tra", m)
    for path in (tmp_path / "m.tra", tmp_path / "w.tra"):
        got = as_dense(load64(path, rewards=[], horizon=1))
        np.testing.assert_array_equal(got[0], storm[0])
        np.testing.assert_array_equal(got[1], storm[1])


IMDP_SOURCE = """
mdp
module m
  s : [0..3] init 0;
  [a] s=0 -> [0.1, 0.3] : (s'=1) + [0.7, 0.9] : (s'=2);
  [b] s=0 -> [0.5, 0.5] : (s'=3) + [0.2, 0.6] : (s'=0);
  [] s>0 -> 1 : (s'=s);
endmodule
label "goal" = s=1;
rewards "r"
  [a] true : 2;
  s=2 : 1;
endrewards
"""


@pytest.mark.prism
def test_load_prism_builds_interval_sources(tmp_path):
    stormpy = pytest.importorskip("stormpy")
    (tmp_path / "i.prism").write_text(IMDP_SOURCE)
    with jax.enable_x64(True):
        built = jp.load_prism(tmp_path / "i.prism", dtype=np.float64, horizon=3)
        got = as_dense(built.model)
        dense = jp.load_prism(tmp_path / "i.prism", dtype=np.float64, horizon=3, dense=True)
    assert isinstance(built.model, jp.IntervalMDP) and built.model.is_sparse
    program = stormpy.parse_prism_program(str(tmp_path / "i.prism"), prism_compatibility=True)
    options = stormpy.BuilderOptions(build_full=True)
    storm = storm_bounds(
        stormpy, stormpy.build_model[stormpy.Interval](program, options=options), got[0].shape
    )
    np.testing.assert_array_equal(got[0], storm[0])
    np.testing.assert_array_equal(got[1], storm[1])
    np.testing.assert_array_equal(dense.model.lower, storm[0])
    assert got[0][0, 0, 1] == 0.1 and got[1][0, 0, 2] == 0.9
    np.testing.assert_array_equal(built.model.rewards, [[2, 0], [0, 0], [1, 0], [0, 0]])
    assert built.labels["goal"].tolist() == [False, True, False, False]
    # The same model through the files: save, load.
    with jax.enable_x64(True):
        jp.save_mdp(tmp_path / "i.tra", built.model, labels=built.labels)
        back = jp.load_mdp(tmp_path / "i.tra", dtype=np.float64, horizon=3)
    np.testing.assert_array_equal(as_dense(back)[0], got[0])


@pytest.mark.prism
def test_load_prism_interval_dtmc_and_its_limits(tmp_path):
    pytest.importorskip("stormpy")
    source = IMDP_SOURCE.replace("mdp\n", "dtmc\n", 1).replace("[b] s=0", "[b] s=9")
    (tmp_path / "c.prism").write_text(source.replace("[0..3]", "[0..9]").replace("s>0", "s>0&s<4"))
    c = jp.load_prism(tmp_path / "c.prism", deadlocks="self-loop", horizon=2)
    assert isinstance(c.model, jp.IntervalMDP) and c.model.num_actions == 1
    # Two reward items of one action add up, as for point sources.
    bad = IMDP_SOURCE.replace("[a] true : 2;", "[a] true : 2;\n  [a] s=0 : 1;")
    (tmp_path / "b.prism").write_text(bad)
    assert jp.load_prism(tmp_path / "b.prism", horizon=1).model.rewards[0, 0] == 3

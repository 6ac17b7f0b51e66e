"""Boolean queries, filters, state variables and several properties: ``jp.check_all``,
``jp.load_variables`` (PRISM's .sta) and ``jp.load_properties`` (.props), against values
computed by hand on a four-state game."""

import dataclasses
import re

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxprivmdp as jp
from jaxprivmdp.properties.core import parse_query

# 0: "safe" -> goal .8 / fail .2, "risky" -> 1 .5 / goal .5; 1: "back" -> 0, "gamble" ->
# goal .3 / fail .7; 2 (goal), 3 (fail) stay. By hand: Pmin[F goal] = (.65, .3, 1, 0),
# Pmax[F goal] = (1, 1, 1, 0); expected steps to goal|fail (reward 1 in 0 and 1):
# Rmin = (1, 1, 0, 0), Rmax = (3, 4, 0, 0) (risky then back: V0 = 1 + V1/2, V1 = 1 + V0).
PMIN, PMAX = np.array([0.65, 0.3, 1, 0]), np.array([1.0, 1, 1, 0])
RMIN, RMAX = np.array([1.0, 1, 0, 0]), np.array([3.0, 4, 0, 0])
LABELS = {"goal": np.array([0, 0, 1, 0], bool), "fail": np.array([0, 0, 0, 1], bool)}
VARIABLES = {"s": np.arange(4), "x": np.array([3, 1, 2, 0]), "done": np.array([0, 0, 1, 1])}


def game(dtype, sparse=False):
    P = np.zeros((4, 2, 4))
    P[0, 0, [2, 3]] = 0.8, 0.2
    P[0, 1, [1, 2]] = 0.5, 0.5
    P[1, 0, 0] = 1
    P[1, 1, [2, 3]] = 0.3, 0.7
    P[2, :, 2] = P[3, :, 3] = 1
    R = np.zeros((4, 2))
    R[:2] = 1
    mask = np.array([[1, 1], [1, 1], [1, 0], [1, 0]], bool)
    mdp = jp.make_mdp(P, R, horizon=4, action_mask=mask, dtype=dtype)
    return jp.to_sparse(mdp) if sparse else mdp


@pytest.fixture(params=["float32", "float64"])
def dtype(request):
    if request.param == "float64":
        with jax.enable_x64(True):
            yield request.param
    else:
        yield request.param


def run(mdp, props):
    return jp.check_all(mdp, props, labels=LABELS, variables=VARIABLES)


@pytest.mark.parametrize("sparse", [False, True])
def test_boolean_queries_follow_prisms_for_all_schedulers_semantics(dtype, sparse):
    mdp = game(dtype, sparse)
    props = [
        'P>=0.5 [F "goal"]',  # every scheduler: Pmin >= .5
        'P<0.5 [F "goal"]',  # every scheduler: Pmax < .5
        'Pmax>=0.9 [F "goal"]',  # Storm's explicit optimum
        'Pmin<0.2 [F "goal"]',
        'R<=2 [F "goal" | "fail"]',  # Rmax <= 2
        'R>=0.5 [F "goal" | "fail"]',  # Rmin >= 0.5
        'Rmax>3.5 [F "goal" | "fail"]',
        'P>=0.9 [F<=2 "goal"]',  # bounded: Pmin within 2 steps
    ]
    want = [
        PMIN >= 0.5,
        PMAX < 0.5,
        PMAX >= 0.9,
        PMIN < 0.2,
        RMAX <= 2,
        RMIN >= 0.5,
        RMAX > 3.5,
        np.array([0.65, 0.3, 1, 0]) >= 0.9,
    ]
    for prop, res, w in zip(props, run(mdp, props), want, strict=True):
        assert isinstance(res, jp.QueryResult), prop
        np.testing.assert_array_equal(res.satisfied, w, err_msg=prop)
        assert bool(res.verdict_at_initial) == w[0], prop
        assert bool(np.all(res.decided)), prop
        assert isinstance(res.result, jp.CheckResult)


def test_a_boolean_query_on_a_dtmc_compares_its_value():
    P = np.zeros((3, 1, 3))
    P[0, 0] = 0.25, 0.25, 0.5
    P[1, 0, 1] = P[2, 0, 2] = 1
    mdp = jp.make_mdp(P, np.zeros((3, 1)), horizon=2)
    (res,) = jp.check_all(mdp, 'P>0.6 [F "a"]', labels={"a": np.array([0, 0, 1], bool)})
    np.testing.assert_allclose(res.result.values, [2 / 3, 0, 1], rtol=1e-5)
    np.testing.assert_array_equal(res.satisfied, [True, False, True])


def test_a_threshold_within_the_error_is_undecided_and_a_close_one_is_iterated(dtype):
    mdp = game(dtype)
    (on, close) = run(mdp, ['P>=0.3 [F "goal"]', 'P>=0.6500001 [F "goal"]'])
    # Pmin in state 1 is 0.3: no precision separates it from the threshold.
    decided = np.asarray(on.decided)
    assert not decided[1] and decided[[0, 2, 3]].all()
    lower, upper = np.asarray(on.result.lower), np.asarray(on.result.upper)
    assert lower[1] <= 0.3 <= upper[1]
    if dtype == "float64":  # 1e-7 from 0.65, in the first interval: a finer check decides
        assert bool(close.decided[0]) and not bool(close.satisfied[0])
        assert float(close.result.upper[0]) < 0.6500001


def test_filters_against_numpy(dtype):
    mdp = game(dtype, sparse=True)
    props = [
        'filter(forall, P>=0.3 [F "goal"], s<3)',
        'filter(exists, P<0.5 [F "goal"])',
        'filter(count, Pmax>=0.9 [F "goal"])',
        'filter(min, Pmin=? [F "goal"], s<=1)',
        'filter(max, Pmin=? [F "goal"], !"goal")',
        'filter(sum, Pmin=? [F "goal"])',
        'filter(avg, Pmin=? [F "goal"], x>=1)',
        'filter(range, Rmax=? [F "goal" | "fail"])',
        'filter(argmax, Pmin=? [F "goal"], s<2)',
        'filter(argmin, Rmax=? [F "goal" | "fail"])',
        'filter(state, Pmin=? [F "goal"], s=1)',
        'filter(first, Pmin=? [F "goal"], x<3)',
        'filter(print, Pmin=? [F "goal"])',
        "filter(forall, done => s>=2)",
        'filter(state, Pmax>=0.9 [F "goal"], "init")',
    ]
    res = run(mdp, props)
    values = [np.asarray(r.value) for r in res]
    assert values[0] == True  # noqa: E712 (a numpy bool)
    assert not bool(res[0].decided)  # state 1 is undecided and no state fails
    assert values[1] == True and bool(res[1].decided)  # noqa: E712 (state 3 witnesses it)
    assert values[2] == 3
    np.testing.assert_allclose(values[3], PMIN[:2].min(), rtol=1e-5)
    np.testing.assert_allclose(values[4], PMIN[[0, 1, 3]].max(), rtol=1e-5)
    np.testing.assert_allclose(values[5], PMIN.sum(), rtol=1e-5)
    np.testing.assert_allclose(values[6], PMIN[VARIABLES["x"] >= 1].mean(), rtol=1e-5)
    np.testing.assert_allclose(values[7], [0, 4], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(values[8], [True, False, False, False])
    np.testing.assert_array_equal(values[9], [False, False, True, True])
    np.testing.assert_allclose(values[10], 0.3, rtol=1e-5)
    np.testing.assert_allclose(values[11], 0.3, rtol=1e-5)  # x = (3, 1, ...): state 1
    np.testing.assert_allclose(values[12], PMIN, rtol=1e-5, atol=1e-7)
    assert values[13] == True and values[14] == True  # noqa: E712
    np.testing.assert_array_equal(res[3].states, [True, True, False, False])
    assert float(res[3].error_bound) >= 0 and isinstance(res[13].result, jax.Array)


@pytest.mark.parametrize(
    "prop, match",
    [
        ('filter(max, Pmin=? [F "goal"], false)', "states are empty.* at position 0"),
        ('filter(state, Pmin=? [F "goal"])', "exactly one state in the filter, got 4"),
        ('filter(forall, Pmin=? [F "goal"])', r"needs a truth"),
        ('filter(min, P>=0.5 [F "goal"])', r"needs a numerical property"),
        ('filter(mean, Pmin=? [F "goal"])', "unknown filter operator 'mean'.* at position 7"),
        ('filter(min, filter(max, "goal"))', "nested filters.* at position 12"),
        ('filter(min, Pmin=? [F "goal"]', r"expected '\)' closing.* at the end"),
        ('P>=1.5 [F "goal"]', r"must lie in \[0, 1\].* at position 3"),
        ('P=0.5 [F "goal"]', "a bound is >=, >, <= or <.* at position 1"),
        ('P>= [F "goal"]', "expected a number.* at position 4"),
        ("Pmax=? [F z=2]", "no state variable 'z'.* at position 10"),
        ("Pmax=? [F goal]", 'no state variable .goal.*written in quotes: "goal"'),
        ("Pmax=? [F x>2.5]", "integers.* at position 12"),
    ],
)
def test_errors_name_the_position(prop, match):
    with pytest.raises(ValueError, match=match):
        run(game("float32"), prop)


def test_state_variable_atoms_against_numpy():
    mdp = game("float32")
    s, x = VARIABLES["s"], VARIABLES["x"]
    res = run(
        mdp,
        'Pmin=? [F s=2]; Pmin=? [F "goal"]; filter(print, x>1 & s<2); '
        "filter(print, x+1=s | x!=s-1 & x>=s); filter(print, done); filter(print, x<s)",
    )
    np.testing.assert_array_equal(res[0].values, res[1].values)
    np.testing.assert_array_equal(res[2].value, (x > 1) & (s < 2))
    np.testing.assert_array_equal(res[3].value, (x + 1 == s) | ((x != s - 1) & (x >= s)))
    np.testing.assert_array_equal(res[4].value, VARIABLES["done"] != 0)
    np.testing.assert_array_equal(res[5].value, x < s)
    # jp.check takes the variables too
    got = jp.check(mdp, "Pmin=? [F s=2]", variables=VARIABLES)
    np.testing.assert_allclose(got.values, PMIN, rtol=1e-5)


def test_several_properties_names_and_split():
    mdp = game("float32")
    labels = {**LABELS, "x;y": LABELS["fail"]}
    res = jp.check_all(mdp, '"a": Pmax=? [F "goal"]; P>=0.5 [F "x;y" | "goal"]', labels=labels)
    np.testing.assert_array_equal(res[1].satisfied, [True, True, True, True])
    assert isinstance(res[0], jp.CheckResult) and isinstance(res[1], jp.QueryResult)
    with pytest.raises(ValueError, match="empty property"):
        run(mdp, 'Pmax=? [F "goal"];; Pmin=? [F "goal"]')
    with pytest.raises(ValueError, match="non-empty"):
        run(mdp, [])


def test_load_variables(tmp_path):
    (tmp_path / "m.sta").write_text("(x,b,s)\n1:(-2,true,1)\n0:(5,false,0)\n\n2:(0,false,2)\n")
    got = jp.load_variables(tmp_path / "m.tra", num_states=3)  # the .sta beside it
    assert list(got) == ["x", "b", "s"]
    np.testing.assert_array_equal(got["x"], [5, -2, 0])
    np.testing.assert_array_equal(got["b"], [0, 1, 0])
    assert got["s"].dtype == np.int64


@pytest.mark.parametrize(
    "text, match",
    [
        ("", "is empty"),
        ("x,y\n0:(1,2)\n", "line 1: expected the variables' names"),
        ("(x,x)\n0:(1,2)\n", "line 1: variable 'x' is named twice"),
        ("(x,2y)\n0:(1,2)\n", "line 1: '2y' is not a variable name"),
        ("(x,y)\n0:(1,2)\n0:(1,3)\n", "line 3: state 0 is listed twice .first at line 2"),
        ("(x,y)\n0:(1,2)\n2:(1,3)\n", "no line for state 1"),
        ("(x,y)\n0:(1,2,3)\n", "line 2: 3 values for 2 variables"),
        ("(x,y)\n0:(1,0.5)\n", "line 2: '0.5' is neither an integer nor true/false"),
        ("(x,y)\n0 (1,2)\n", "line 2: expected 'state:"),
        ("(x,y)\n0:(1,2)\n1:(1,2)\n5:(1,2)\n", "line 4: state 5 is not a state of the model"),
    ],
)
def test_load_variables_errors_name_file_and_line(tmp_path, text, match):
    path = tmp_path / "m.sta"
    path.write_text(text)
    with pytest.raises(ValueError, match=match) as info:
        jp.load_variables(path, num_states=2 if "5:" in text else None)
    assert "m.sta" in str(info.value)


def test_load_properties(tmp_path):
    path = tmp_path / "m.props"
    path.write_text(
        "// a comment\nconst int K = 2;\nconst double p = 0.5; const N;\n"
        '"reach": P>=p [F<=K "goal"]; Pmax=? [F<=N "K"]  // K in a label stays\n\n'
        'filter(max, Pmin=? [F "goal"], s<K)\n'
    )
    props = jp.load_properties(path, constants={"N": 3})
    assert props == [
        '"reach": P>=0.5 [F<=2 "goal"]',
        'Pmax=? [F<=3 "K"]',
        'filter(max, Pmin=? [F "goal"], s<2)',
    ]
    res = jp.check_all(game("float32"), props[:1] + props[2:], labels=LABELS, variables=VARIABLES)
    np.testing.assert_array_equal(res[0].satisfied, [True, False, True, False])
    np.testing.assert_allclose(res[1].value, 0.65, rtol=1e-5)


@pytest.mark.parametrize(
    "text, match",
    [
        ('const int N;\nP=? [F<=N "a"]\n', "line 1: constant 'N' has no value"),
        ("const int N = 2.5;\n", "line 1: int 'N' = '2.5' is not a number"),
        ("const int N = 1;\nconst int N = 2;\n", "line 2: constant 'N' declared twice"),
        ('label "a" = x=1;\n', "line 1: label declarations are not supported"),
        ("// nothing\n", "has no property"),
    ],
)
def test_load_properties_errors_name_file_and_line(tmp_path, text, match):
    path = tmp_path / "m.props"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        jp.load_properties(path)


QUERY_TOKENS = [
    "filter(",
    "forall",
    "max",
    "state",
    ",",
    ")",
    "P",
    "Pmin",
    "R",
    ">=",
    "<",
    "=?",
    "0.5",
    "2",
    "[",
    "]",
    "F",
    "U",
    "<=",
    '"goal"',
    "s",
    "x",
    "=",
    "!=",
    "+",
    "-",
    "&",
    "!",
    '"n":',
    ";",
    " ",
]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(QUERY_TOKENS), max_size=16).map("".join))
def test_query_parser_fuzz_only_one_line_value_errors(text):
    """Whatever the string, a query parses or raises a one-line ValueError naming a position
    inside it (hypothesis)."""
    try:
        parse_query(text)
    except ValueError as e:
        msg = str(e)
        assert "\n" not in msg
        if text.strip():
            where = re.search(r" at (position (\d+) \(|the end$)", msg)
            assert where, msg
            if where.group(2) is not None:
                assert 0 <= int(where.group(2)) < len(text), msg


def test_a_props_file_and_a_string_split_alike(tmp_path):
    """One rule for where a property ends: a ';' in a quoted label never splits it."""
    from jaxprivmdp.properties.core import split_properties

    text = 'P>=0.5 [F "x;y" | "goal"]; "n": Pmax=? [F "goal"]'
    path = tmp_path / "m.props"
    path.write_text(text + ";\n")
    assert (
        jp.load_properties(path)
        == split_properties(text)
        == [
            'P>=0.5 [F "x;y" | "goal"]',
            '"n": Pmax=? [F "goal"]',
        ]
    )


@pytest.mark.parametrize("prop", ['"reach":  P>=0.5 [F "goal"]  ', '  P>=0.5 [F "goal"]'])
def test_a_query_knows_where_its_text_starts(prop):
    query = parse_query(prop)
    assert query.body.text[query.start :].strip() == query.text == 'P>=0.5 [F "goal"]'
    res = run(game("float32"), [prop])[0]
    np.testing.assert_array_equal(res.satisfied, PMIN >= 0.5)
    np.testing.assert_allclose(res.result.values, PMIN, rtol=1e-5)


def test_load_properties_refuses_a_constant_the_file_does_not_declare(tmp_path):
    path = tmp_path / "m.props"
    path.write_text('const int N;\nP=? [F<=N "a"]\n')
    with pytest.raises(ValueError, match="--const NAME=VALUE"):
        jp.load_properties(path)
    with pytest.raises(ValueError, match=r"m.props' declares no constant 'M' .*its constants: N\)"):
        jp.load_properties(path, constants={"N": 2, "M": 3})


def test_check_all_on_a_ragged_model():
    dense = game("float32")
    ragged = jp.to_ragged(jp.to_sparse(dense))
    assert isinstance(ragged, jp.RaggedMDP)
    props = ['P>=0.5 [F "goal"]', 'Rmax=? [F "goal" | "fail"]', "filter(min, Pmin=? [F s=2])"]
    got, want = run(ragged, props), run(dense, props)
    np.testing.assert_array_equal(got[0].satisfied, want[0].satisfied)
    np.testing.assert_allclose(got[1].values, RMAX, rtol=1e-5)
    np.testing.assert_allclose(got[2].value, want[2].value, rtol=1e-6)


def test_traced_variables_alone_make_a_step_bounded_check_traced():
    """Under jax.jit with concrete labels, traced ``variables`` must take the traced path of a
    step-bounded property (as traced labels do), not be refused as for an unbounded one."""
    mdp = game("float32")

    @jax.jit
    def value(variables):
        return jp.check(mdp, "Pmin=? [F<=2 s=2]", labels=LABELS, variables=variables).values

    want = jp.check(mdp, "Pmin=? [F<=2 s=2]", labels=LABELS, variables=VARIABLES).values
    np.testing.assert_allclose(value({"s": np.arange(4)}), want, rtol=1e-6)


def test_property_model_takes_state_variables_as_check_does():
    """``s=1`` over ``variables=`` is the label ``s == 1``: the same privacy problem."""
    from jaxprivmdp.models import examples

    m = examples.investment()
    s = np.arange(m.num_states)
    by_var = jp.property_model(m, "Pmax=? [F<=3 s=1]", variables={"s": s})
    by_label = jp.property_model(m, 'Pmax=? [F<=3 "g"]', labels={"g": s == 1})
    # The same problem: the same transformed model (its structure and every array) and
    # direction; only ``text``, the query as given, differs. Whatever synthesize computes
    # from them is the same (compiling synthesize for this model costs 2-3 s).
    assert by_var.text != by_label.text and by_var.minimize == by_label.minimize
    a, b = (dataclasses.replace(p, text="") for p in (by_var, by_label))
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(x, y)

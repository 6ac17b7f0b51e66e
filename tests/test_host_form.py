"""A model's host form (float64 copy and graph) kept between checks while the model lives
(``properties._host_form``): reused only for the same immutable arrays, never stale, never
keeping a model alive."""

import gc

import jax
import numpy as np
import pytest

import jaxprivmdp.properties._host_form as host_form
from jaxprivmdp.models import make_mdp
from jaxprivmdp.properties import check


def chain(p: float):
    """0 -> goal with probability ``p``, else -> fail (both absorbing)."""
    P = np.zeros((3, 1, 3))
    P[0, 0, 1], P[0, 0, 2] = p, 1 - p
    P[1, 0, 1] = P[2, 0, 2] = 1
    return make_mdp(P, np.zeros((3, 1)))


LABELS = {"goal": np.array([False, True, False])}


def counted(monkeypatch):
    """Counts the conversions and graphs built."""
    calls = {"wide": 0, "graph": 0}
    as_float64, graph = host_form.as_float64, host_form.Graph

    def wide(m):
        calls["wide"] += 1
        return as_float64(m)

    def build(m):
        calls["graph"] += 1
        return graph(m)

    monkeypatch.setattr(host_form, "as_float64", wide)
    monkeypatch.setattr(host_form, "Graph", build)
    return calls


def test_a_second_check_of_a_model_reuses_its_host_form(monkeypatch):
    calls = counted(monkeypatch)
    mdp = chain(0.25)
    first = check(mdp, 'P=? [F "goal"]', labels=LABELS)
    second = check(mdp, 'P=? [F "goal"]', labels=LABELS)
    other = check(mdp, 'P=? [G !"goal"]', labels=LABELS)
    assert calls == {"wide": 1, "graph": 1}
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert float(first.value_at_initial) == 0.25 and float(other.value_at_initial) == 0.75


def test_another_model_of_the_same_shape_gets_its_own(monkeypatch):
    calls = counted(monkeypatch)
    assert float(check(chain(0.25), 'P=? [F "goal"]', labels=LABELS).value_at_initial) == 0.25
    assert float(check(chain(0.5), 'P=? [F "goal"]', labels=LABELS).value_at_initial) == 0.5
    assert calls == {"wide": 2, "graph": 2}


def test_numpy_arrays_changed_in_place_are_read_again(monkeypatch):
    calls = counted(monkeypatch)
    mdp = jax.tree_util.tree_map(np.array, chain(0.25))  # NumPy leaves: mutable
    assert float(check(mdp, 'P=? [F "goal"]', labels=LABELS).value_at_initial) == 0.25
    probs = next(x for x in jax.tree_util.tree_leaves(mdp) if x.ndim == 3)
    probs[0, 0, 1], probs[0, 0, 2] = 0.5, 0.5
    assert float(check(mdp, 'P=? [F "goal"]', labels=LABELS).value_at_initial) == 0.5
    assert calls == {"wide": 2, "graph": 2}


def test_the_host_form_goes_with_the_model():
    mdp = chain(0.25)
    check(mdp, 'P=? [F "goal"]', labels=LABELS)
    ids = {id(x) for x in jax.tree_util.tree_leaves(mdp)}
    assert any(ids <= set(key[1]) for key in host_form._KEPT)
    del mdp
    gc.collect()
    assert not any(ids <= set(key[1]) for key in host_form._KEPT)


def test_only_the_last_few_models_are_kept():
    models = [chain(p) for p in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6)]
    for m, p in zip(models, (0.1, 0.2, 0.3, 0.4, 0.5, 0.6), strict=True):
        value = float(check(m, 'P=? [F "goal"]', labels=LABELS).value_at_initial)
        assert value == pytest.approx(p, rel=1e-6)
    assert len(host_form._KEPT) <= host_form.KEPT_MODELS
    # the earliest was let go: checking it again converts it again, with the same answer
    again = float(check(models[0], 'P=? [F "goal"]', labels=LABELS).value_at_initial)
    assert again == pytest.approx(0.1, rel=1e-6)


def test_a_deleted_array_is_refused_as_without_the_cache():
    mdp = chain(0.25)
    check(mdp, 'P=? [F "goal"]', labels=LABELS)
    jax.tree_util.tree_leaves(mdp)[0].delete()
    with pytest.raises(RuntimeError, match="deleted"):
        check(mdp, 'P=? [F "goal"]', labels=LABELS)


def test_a_batch_is_kept_as_one_entry_and_its_graph_built_once(monkeypatch):
    calls = counted(monkeypatch)
    batch = jax.tree_util.tree_map(lambda a, b: jax.numpy.stack([a, b]), chain(0.25), chain(0.5))
    first = check(batch, 'P=? [F "goal"]', labels=LABELS)
    second = check(batch, 'Pmax=? [F "goal"]', labels=LABELS)
    assert calls == {"wide": 1, "graph": 1}
    np.testing.assert_allclose(np.asarray(first.value_at_initial), [0.25, 0.5], rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(first.values), np.asarray(second.values))
    ids = {id(x) for x in jax.tree_util.tree_leaves(batch)}
    del batch
    gc.collect()
    assert not any(ids <= set(key[1]) for key in host_form._KEPT)

"""A concrete model's host form for :func:`jaxprivmdp.check`, kept while the model lives.

A check converts the model first: a float64 NumPy copy with its rows read as distributions
(:func:`~jaxprivmdp.properties._precision.as_float64`) and the graph of its positive
entries (:class:`~jaxprivmdp.properties._graph.Graph`): some 6 ms of a 45 ms check on
wlan's 61,000 states, a fifth of a 2 ms check on 800. Storm's model holds its sparse matrix
between checks; here a model whose arrays are all JAX arrays (immutable) keeps its host form
for the next check of any property, keyed by the identity of those arrays and dropped as
soon as one of them is garbage collected (weak references: the cache never keeps a model's
memory alive beyond the model), or deleted, or when ``KEPT_MODELS`` more recently checked
models are kept (the host form takes some 65 bytes a transition, about 6x a float32 sparse
model: many large models alive at once keep only the last few). A batch of models (the
releases of a sweep: :func:`host_batch`) is kept the same way, as one entry: its models'
float64 copies and its first model's graph (the batch shares it). A model with a NumPy
array, which its owner may change in place, is converted at every check.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict

import jax

from ..models.core import Model
from ._batch import Batch, batch_form, same_support
from ._graph import Graph
from ._precision import as_float64

# The most models whose host form is kept (the most recently checked).
KEPT_MODELS = 4
# key (tree structure, each leaf's identity) -> [weak references to the leaves, the host
# form (a batch: host_batch's pair), graph, the model it is the graph of (a batch: its first)],
# least recently checked first
_KEPT: OrderedDict = OrderedDict()
# id(the graphed model) -> the same entry, for graph_of (it lives as long as its entry)
_BY_WIDE: dict = {}


def _drop(key) -> None:
    entry = _KEPT.pop(key, None)
    if entry is not None:
        _BY_WIDE.pop(id(entry[3]), None)


def host_model(mdp: Model) -> Model:
    """:func:`as_float64` of ``mdp``, the same object as at its last check where every array
    of ``mdp`` is a JAX array and none has changed identity since."""
    return _kept(mdp, as_float64, lambda wide: wide)


def host_batch(batch: Model) -> tuple[Batch, bool]:
    """``(form, shared)``: the :class:`~jaxprivmdp.properties._batch.Batch` of ``batch`` (a
    leading axis on every array) made :func:`as_float64` (one pass for all), the same object
    as at its last check as for :func:`host_model`, and whether its models share one
    support (:func:`same_support`)."""

    def convert(m):
        form = batch_form(as_float64(m))
        return form, same_support(form.models)

    return _kept(batch, convert, lambda out: out[0].models[0])


def _kept(mdp: Model, convert, graphed):
    """``convert(mdp)``, kept while the arrays of ``mdp`` live (see the module), with the
    graph of ``graphed(convert(mdp))`` for :func:`graph_of`."""
    leaves, tree = jax.tree_util.tree_flatten(mdp)
    immutable = all(isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer) for x in leaves)
    if not leaves or not immutable:
        return convert(mdp)
    key = (tree, tuple(id(x) for x in leaves))
    entry = _KEPT.get(key)
    live = not any(x.is_deleted() for x in leaves)  # (a deleted array raises, as before)
    if entry is not None and live and all(r() is x for r, x in zip(entry[0], leaves, strict=True)):
        _KEPT.move_to_end(key)
        return entry[1]
    _drop(key)
    out = convert(mdp)
    refs = [weakref.ref(x, lambda _, key=key: _drop(key)) for x in leaves]
    _KEPT[key] = entry = [refs, out, None, graphed(out)]
    _BY_WIDE[id(entry[3])] = entry
    while len(_KEPT) > KEPT_MODELS:
        _drop(next(iter(_KEPT)))
    return out


def graph_of(wide: Model) -> Graph:
    """``Graph(wide)``, built once for a ``wide`` kept by :func:`host_model` (or the first
    model of a batch kept by :func:`host_batch`)."""
    entry = _BY_WIDE.get(id(wide))
    if entry is None or entry[3] is not wide:
        return Graph(wide)
    if entry[2] is None:
        entry[2] = Graph(wide)
    return entry[2]

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
from ._batch import same_support, unstack
from ._graph import Graph
from ._precision import as_float64

# The most models whose host form is kept (the most recently checked).
KEPT_MODELS = 4
# key (tree structure, each leaf's identity) -> [weak references to the leaves, wide (a batch:
# host_batch's pair), graph (a batch: its first model's)], least recently checked first
_KEPT: OrderedDict = OrderedDict()
# id(wide) -> the same entry, for graph_of (a kept wide lives as long as its entry)
_BY_WIDE: dict = {}


def _graphed(entry) -> Model:
    """The model of an entry whose graph :func:`graph_of` keeps (a batch's first)."""
    return entry[1][0][0] if isinstance(entry[1], tuple) else entry[1]


def _drop(key) -> None:
    entry = _KEPT.pop(key, None)
    if entry is not None:
        _BY_WIDE.pop(id(_graphed(entry)), None)


def host_model(mdp: Model) -> Model:
    """:func:`as_float64` of ``mdp``, the same object as at its last check where every array
    of ``mdp`` is a JAX array and none has changed identity since."""
    return _kept(mdp, as_float64)


def host_batch(batch: Model) -> tuple[list[Model], bool]:
    """``(models, shared)``: the models of ``batch`` (a leading axis on every array), each
    :func:`as_float64` (one pass for all), the same objects as at its last check as for
    :func:`host_model`, and whether they share one support (:func:`same_support`)."""

    def convert(m):
        models = unstack(as_float64(m))
        return models, same_support(models)

    return _kept(batch, convert)


def _kept(mdp: Model, convert):
    """``convert(mdp)``, kept while the arrays of ``mdp`` live (see the module)."""
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
    wide = convert(mdp)
    refs = [weakref.ref(x, lambda _, key=key: _drop(key)) for x in leaves]
    _KEPT[key] = entry = [refs, wide, None]
    _BY_WIDE[id(_graphed(entry))] = entry
    while len(_KEPT) > KEPT_MODELS:
        _drop(next(iter(_KEPT)))
    return wide


def graph_of(wide: Model) -> Graph:
    """``Graph(wide)``, built once for a ``wide`` kept by :func:`host_model` (or the first
    model of a batch kept by :func:`host_batch`)."""
    entry = _BY_WIDE.get(id(wide))
    if entry is None or _graphed(entry) is not wide:
        return Graph(wide)
    if entry[2] is None:
        entry[2] = Graph(wide)
    return entry[2]

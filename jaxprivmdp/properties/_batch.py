"""One unbounded property over a batch of models of one support.

The releases of a sweep share the true model's support, action mask and rewards: only their
probabilities differ. The graph precomputation (:mod:`jaxprivmdp.properties._graph`) reads
the support alone, so it runs once, and so does the quotient's structure and the compiled
pass's order. Each release is then settled, where it can be, by one compiled call
(:mod:`jaxprivmdp.properties._releases`: its weights, the pass's candidate and its
verification, bit for bit one model's); the releases it cannot settle run the topological
passes (:mod:`jaxprivmdp.properties._topological`) together (the models a trailing axis),
after and between verified guesses model by model
(:func:`jaxprivmdp.properties._unbounded.ordered`, the same steps as for one model), or
one model's iteration where those cannot run. Each model keeps its own starting upper bound
(the visiting-time bound reads the probabilities) and rounding margin.
:func:`jaxprivmdp.check` routes a batched model here (:func:`same_support` true and an
unbounded property), and checks any other batch model by model.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np

from ..models.core import Model, RaggedMDP, transition_rows
from ._graph import Graph
from ._releases import THREADS, in_threads, swept_releases
from ._topological import batch_size
from ._unbounded import (
    Precomputed,
    answer,
    iterate,
    margins,
    ordered,
    probability_problem,
    reward_problem,
)


def is_batch(mdp) -> bool:
    """Whether ``mdp`` carries a leading batch axis (`[n, S, A]` rewards), as
    ``jax.vmap(lambda key: jp.privatize(key, mdp, mech))(keys)`` returns."""
    return np.ndim(getattr(mdp, "rewards", np.zeros((1, 1)))) == 3


class Batch(NamedTuple):
    """A batch's host form: its models one by one (:func:`unstack`) and their transition
    entries as one `[n, X]` array (each model's rows, flattened: the models' arrays are
    views of it)."""

    models: list
    entries: np.ndarray


def batch_form(mdp) -> Batch:
    """The :class:`Batch` of a batched dense or sparse model on the host (a ragged one's
    ``entries`` are None: a batch of one support is never ragged)."""
    models = unstack(mdp)
    rows = None if isinstance(mdp, RaggedMDP) else transition_rows(mdp)
    entries = None if rows is None else np.asarray(rows.probs).reshape(len(models), -1)
    return Batch(models, entries)


def unstack(mdp) -> list[Model]:
    """The models of a batch, one by one (host arrays: no device call per slice)."""
    n = np.shape(mdp.rewards)[0]
    host = jax.tree_util.tree_map(np.asarray, mdp)
    return [jax.tree_util.tree_map(lambda x, i=i: x[i], host) for i in range(n)]


def _pattern(mdp: Model):
    """What the precomputation reads: the positive entries (and where they lead), the
    action mask and the rewards."""
    rows = transition_rows(mdp)
    out = [np.asarray(rows.probs) > 0, np.asarray(mdp.action_mask), np.asarray(mdp.rewards)]
    if rows.next_states is not None:
        out.append(np.asarray(rows.next_states))
    return out


def same_support(models: list[Model]) -> bool:
    """Whether every model of a dense or sparse batch has the first's support, action mask,
    rewards and initial state (then one precomputation serves them all)."""
    if isinstance(models[0], RaggedMDP) or any(type(m) is not type(models[0]) for m in models):
        return False
    first = _pattern(models[0])
    return all(
        m.initial_state == models[0].initial_state
        and all(np.array_equal(a, b) for a, b in zip(_pattern(m), first, strict=True))
        for m in models[1:]
    )


def _graph(g: Graph, batch: Batch, i: int) -> Graph:
    """Model ``i``'s graph: ``g`` (the first's) for ``i = 0``, else ``g`` with model
    ``i``'s entries (the same edges in the same order, read at ``g.at``)."""
    return g if i == 0 else g.release(batch.entries[i, g.at])


def batch_probability(g: Graph, batch: Batch, target, avoid, minimize, tol, max_iterations):
    """``P{min,max} [¬avoid U target]`` on every model (``g``: the first's graph)."""
    pre = probability_problem(g, target, avoid, minimize)
    return _solve(g, batch, pre, minimize, (tol, max_iterations))


def batch_reward(g: Graph, batch: Batch, target, minimize, tol, max_iterations):
    """``R{min,max} [F target]`` on every model (their rewards are the first's)."""
    pre = reward_problem(g, np.asarray(batch.models[0].rewards, np.float64), target, minimize)
    return _solve(g, batch, pre, minimize, (tol, max_iterations))


def _solve(g: Graph, batch: Batch, pre: Precomputed, minimize, limits):
    """Batched ``(lower, upper, policy, iterations, converged)``: `[n, S]`, `[n, S]`,
    `[n, S]`, `[n]`, `[n]`. Each release's compiled pass first
    (:func:`~jaxprivmdp.properties._releases.swept_releases`), then the shared passes of
    :func:`ordered` for the releases it did not settle, in chunks whose padded rows fit a
    memory budget, and model by model (:func:`iterate`) where those cannot run; each step
    in threads where the batch is large (:func:`~jaxprivmdp.properties._releases.in_threads`).
    A model's graph is made where it is read (a release's answer on a DTMC reads none)."""
    tol, max_iterations = limits
    models = batch.models
    n, S = len(models), g.S
    lower, upper = np.empty((n, S)), np.empty((n, S))
    it, met = np.zeros(n, np.int64), np.zeros(n, bool)
    policy = np.empty((n, S), np.int32)
    shared = pre.maybe.any() and (pre.upper is not None or pre.visit is not None)
    todo = np.arange(n)
    if shared:
        fixed = np.asarray(pre.fixed_value, np.float64)
        lower[:] = np.where(pre.maybe, 0.0, fixed)
        upper[:] = np.where(pre.maybe, np.inf if pre.upper is None else pre.upper, fixed)
        done = swept_releases(g, batch, pre, minimize, tol, (lower, upper))
        met[done], todo = True, np.flatnonzero(~done)
    settled = np.ones(n, bool)
    size = max(1, batch_size(g) // THREADS)  # (the threads' chunks share the memory budget)

    def rest(part: slice) -> None:  # (a slice of the releases left: its own rows)
        left = todo[part]
        chunks = [left[i : i + size] for i in range(0, left.size, size)] if shared else []
        for chunk in chunks:
            graphs = [_graph(g, batch, i) for i in chunk]
            widths = [margins(models[i], h) for i, h in zip(chunk, graphs, strict=True)]
            out = ordered(graphs, [pre] * chunk.size, minimize, tol, max_iterations, widths)
            if out is None:  # no shared passes: model by model
                break
            lower[chunk], upper[chunk], it[chunk], met[chunk] = out
            left = left[chunk.size :]
        for i in left:
            settled[i] = False
            lower[i], upper[i], policy[i], it[i], met[i] = iterate(
                _graph(g, batch, i), models[i], pre, minimize, tol, max_iterations
            )

    in_threads(rest, todo.size, todo.size * g.pair.size)  # (SuperLU releases the GIL too)
    chosen = np.flatnonzero(settled)

    def answers(part: slice) -> None:  # (each model's own rows: the threads share nothing)
        for i in chosen[part]:
            lo, up = lower[i], upper[i]
            h = g if g.deterministic else _graph(g, batch, i)  # (a DTMC's policy: no values)
            new_lo, new_up, policy[i] = answer(h, pre, lo, up, minimize)
            if new_lo is not lo or new_up is not up:  # (infinite states: new rows)
                lower[i], upper[i] = new_lo, new_up

    in_threads(answers, chosen.size, chosen.size * g.pair.size)
    return lower, upper, policy, it, met

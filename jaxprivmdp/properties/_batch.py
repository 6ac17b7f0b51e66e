"""One unbounded property over a batch of models of one support, as one vmapped computation.

The releases of a sweep share the true model's support, action mask and rewards: only their
probabilities differ. The graph precomputation (:mod:`jaxprivmdp.properties._graph`) reads
the support alone, so it runs once; each model keeps its own starting upper bound (the
visiting-time bound reads the probabilities) and its rounding margin (the largest of the
batch is used: a wider margin is as sound). The topological passes
(:mod:`jaxprivmdp.properties._topological`) then run for all models in each loop (the
models a trailing axis), after and between verified guesses
(:mod:`jaxprivmdp.properties._guess`, on the host, model by model, for the models not yet
converged): :func:`jaxprivmdp.properties._unbounded.ordered`, the same steps as for one
model. :func:`jaxprivmdp.check` routes a batched model
here (:func:`same_support` true and an unbounded property), and checks any other batch model
by model.
"""

from __future__ import annotations

import jax
import numpy as np

from ..models.core import Model, RaggedMDP, transition_rows
from ._graph import Graph
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


def _reweighted(g: Graph, mdp: Model) -> Graph:
    """``g`` with the probabilities of ``mdp`` (a dense or sparse model of ``g``'s support):
    the same edges in the same order, read at ``g.at`` (their positions in the rows)."""
    assert g.at is not None  # (same_support refuses ragged models: their rows vary)
    return g.reweighted(np.asarray(transition_rows(mdp).probs, np.float64).reshape(-1)[g.at])


def batch_probability(g: Graph, models, target, avoid, minimize, tol, max_iterations):
    """``P{min,max} [¬avoid U target]`` on every model (``g``: the first's graph)."""
    pre = probability_problem(g, target, avoid, minimize)
    graphs = [g] + [_reweighted(g, m) for m in models[1:]]
    return _solve(graphs, models, [pre] * len(models), minimize, tol, max_iterations)


def batch_reward(g: Graph, models, target, minimize, tol, max_iterations):
    """``R{min,max} [F target]`` on every model (their rewards are the first's)."""
    pre = reward_problem(g, np.asarray(models[0].rewards, np.float64), target, minimize)
    graphs = [g] + [_reweighted(g, m) for m in models[1:]]
    return _solve(graphs, models, [pre] * len(models), minimize, tol, max_iterations)


def _solve(graphs, models, pres: list[Precomputed], minimize, tol, max_iterations):
    """Batched ``(lower, upper, policy, iterations, converged)``: `[n, S]`, `[n, S]`,
    `[n, S]`, `[n]`, `[n]`."""
    pre = pres[0]
    widths = [margins(m, h) for m, h in zip(models, graphs, strict=True)]
    bounded = pre.maybe.any() and (pre.upper is not None or pre.visit is not None)
    out = None
    if bounded:  # chunks whose padded rows fit a memory budget
        size, limits = batch_size(graphs[0]), (tol, max_iterations)
        chunks = [slice(i, i + size) for i in range(0, len(models), size)]
        parts = [ordered(graphs[c], pres[c], minimize, *limits, widths[c]) for c in chunks]
        if len(parts) == 1:
            out = parts[0]
        elif all(p is not None for p in parts):
            out = tuple(np.concatenate(x) for x in zip(*parts, strict=True))
    if out is None:  # nothing to iterate, or no shared passes: model by model
        outs = [
            iterate(h, m, p, minimize, tol, max_iterations)
            for h, m, p in zip(graphs, models, pres, strict=True)
        ]
        return tuple(np.stack(x) for x in zip(*outs, strict=True))
    lower, upper, it, met = out
    policy = np.empty(lower.shape, np.int32)
    for i, (h, p) in enumerate(zip(graphs, pres, strict=True)):
        lo, up = lower[i], upper[i]
        new_lo, new_up, policy[i] = answer(h, p, lo, up, minimize)
        if new_lo is not lo or new_up is not up:  # (infinite states: new rows)
            lower[i], upper[i] = new_lo, new_up
    return lower, upper, policy, it, met

"""One backward pass that keeps one stage: a policy, its values and bounds, in `[S]` memory.

For a finite horizon, :func:`synthesize` and :func:`sweep` computed ``π̄`` (`[T, S]`), its
values, its bounds ``v̲``, ``v̄`` and its value on the true MDP (`[T + 1, S]` each) in
separate passes, to keep stage 0 at ``s0`` in the end: a 1000×1000 map with ``T = 2000``
needs tens of GB. :func:`stage_pass` runs them as one reverse ``lax.scan`` whose carry holds
the next stage's vectors only, ``(V_{t+1}, v̲_{t+1}, v̄_{t+1}, V^π_{t+1} on each model)``,
and keeps stage ``t``'s `[S]` rows (and the cost at ``s0``, always stage 0's).

Each stage's arithmetic is that of the separate passes: the decision is ``greedy(q_fn(V))``
(:func:`solve`'s tie-breaking, or the robust policy's backup), the bounds step is
:func:`bounds_stage` (the same outward rounding) and each evaluation is
:func:`policy_backup`, so the results equal the full results' stage-``t`` rows bit for bit.
With a :class:`CheckedWidth` the whole pass is recomputed over all ``S`` entries when any
fill of any stage reached past the width (the rule of :func:`bounds_core`).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from ..models.core import Model, transition_rows
from ..sets.core import SetParams, row_box
from ._bellman import Progress, greedy
from ._bounds import bounds_stage, policy_boxes
from ._evaluation import policy_backup
from ._robust_policy import robust_q
from ._width import CheckedWidth, at_width


class StageResult(NamedTuple):
    """What :func:`stage_pass` keeps of stage ``t``.

    Attributes:
      policy: `[S]` int32 the decision rule ``π_t``.
      values: `[S]` ``V_t`` of the decision's backup (``V̄_t`` of :func:`solve` on the model).
      evaluations: one `[S]` ``V^π_t`` per model in ``evaluate_on``.
      lower: `[S]` ``v̲_t``, the lower bound (None without a set).
      upper: `[S]` ``v̄_t``, the upper bound (None without a set).
      cost: scalar ``v̄_0(s0) − v̲_0(s0)`` (None without a set).
    """

    policy: jax.Array
    values: jax.Array
    evaluations: tuple
    lower: jax.Array | None
    upper: jax.Array | None
    cost: jax.Array | None


class SetArgs(NamedTuple):
    """The bounds' set: its parameters and the static ``width``, ``support_aware``."""

    params: SetParams
    width: int | CheckedWidth
    support_aware: bool


def _pass(mdp: Model, q_fn, boxes, width, set_args, models, stage, progress):
    """One reverse scan over the stages; ``(StageResult, complete)``."""
    T, rt = mdp.horizon, mdp.terminal_reward
    bounded = boxes is not None

    def step(carry, t):
        (v, values, evals), complete, kept = carry
        policy, v = greedy(q_fn(v))
        if bounded:
            used = boxes(policy)
            values, done = bounds_stage(mdp, used, values, width, set_args.support_aware)
            complete = complete & done
        evals = tuple(policy_backup(m, e, policy) for m, e in zip(models, evals, strict=True))
        now = (policy, v, values, evals)
        kept = jax.tree.map(lambda new, old: jnp.where(t == stage, new, old), now, kept)
        if progress is not None:
            jax.debug.callback(progress, T - t, T, jnp.zeros((), rt.dtype))
        return ((v, values, evals), complete, kept), None

    values = (rt, rt) if bounded else None
    evals = tuple(m.terminal_reward for m in models)
    start = (rt, values, evals)
    kept = (jnp.zeros(mdp.num_states, jnp.int32), *start)
    init = (start, jnp.asarray(True), kept)
    ((_, last, _), complete, kept), _ = jax.lax.scan(step, init, jnp.arange(T), reverse=True)
    policy, v, values, evals = kept
    low = high = cost = None
    if bounded:
        (low, high), s0 = values, mdp.initial_state
        cost = last[1][s0] - last[0][s0]
    return StageResult(policy, v, evals, low, high, cost), complete


def stage_pass(
    mdp: Model,
    q_fn,
    set_args: SetArgs | None = None,
    evaluate_on: tuple = (),
    stage: jax.Array | int = 0,
    progress: Progress | None = None,
) -> StageResult:
    """The greedy policy of ``q_fn`` by backward induction on the finite-horizon ``mdp``,
    its bounds over ``set_args``'s set and its values on the models ``evaluate_on`` (same
    horizon, states and actions), keeping stage ``stage`` only (see the module).

    ``q_fn`` maps `[S]` next-stage values to `[S, A]` action values (:func:`q_values`, or
    a robust backup); ``stage`` an int leaf in ``[0, T)`` (not static); ``progress`` a
    :class:`Progress` called after every stage (None: no callback in the program). Pure,
    jit/vmap-friendly.
    """
    boxes = width = None
    if set_args is not None:
        boxes = policy_boxes(mdp, set_args.params, set_args.support_aware)
        width = set_args.width

    def run(entries):
        return _pass(mdp, q_fn, boxes, entries, set_args, evaluate_on, stage, progress)

    # The decisions do not depend on the width: a recomputation over all S entries changes
    # only the bounds.
    return at_width(run, width, mdp.num_states)


def robust_q_fn(mdp: Model, set_args: SetArgs):
    """The robust policy's backup (:func:`robust_solve`'s ``q_fn``) as a ``q_fn``."""
    support_aware = set_args.support_aware
    box = row_box(transition_rows(mdp), set_args.params, support_aware=support_aware)

    def q_fn(v):
        return robust_q(mdp, box, v, set_args.width, support_aware)

    return q_fn

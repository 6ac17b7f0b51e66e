"""Algorithm 1 with its bounds: one run (``synthesize``) and batched sweeps (``sweep``)."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec
from jax.typing import ArrayLike

from ._bounds import bounds_core
from ._mdp import TabularMDP, check_count, check_range
from ._mechanism import Sampler, Support, check_key, prepare_mechanism_input, privatize
from ._planning import check_iterations, default_tolerance, evaluate, solve
from ._robust import concentration_radius, fill_width, host_radius


class Synthesis(NamedTuple):
    """One run of Algorithm 1 and its cost-of-privacy bounds.

    Attributes:
      private_transitions: `[S, A, S]` ``P̄`` (the only output that touches the data).
      policy: `[T, S]` / `[S]` the policy ``π̄`` synthesized on the privatized MDP.
      private_values: `[T + 1, S]` / `[S]` ``V̄^π̄``, its value on the privatized MDP (exact:
        backward induction, or a linear solve for an infinite horizon).
      pessimistic: ``v̲``, same shape (Theorem 1 / 2).
      optimistic: ``v̄``, same shape.
      cost: scalar ``v̄(s0) − v̲(s0)``.
      converged: infinite horizon: whether value iteration met its tolerance (if not, the
        policy may not be ε-optimal; the bounds stay valid). Always True for a finite horizon.
    """

    private_transitions: jax.Array
    policy: jax.Array
    private_values: jax.Array
    pessimistic: jax.Array
    optimistic: jax.Array
    cost: jax.Array
    converged: jax.Array


class SweepResult(NamedTuple):
    """Algorithm 1 over a grid of ``k`` and many trials, at the initial state ``s0``.

    Attributes:
      private_value: `[K, N]` ``V̄^π̄(s0)``, the value on the privatized MDP.
      true_value: `[K, N]` ``V^π̄(s0)``, the private policy evaluated on the true MDP: what
        the agent really gets (needs the true MDP: simulation only).
      pessimistic: `[K, N]` ``v̲(s0)``.
      optimistic: `[K, N]` ``v̄(s0)``.
      cost: `[K, N]` ``v̄(s0) − v̲(s0)``.
      optimal_value: scalar ``V*(s0)``, the non-private optimum (for an infinite horizon: the
        exact value of the ε-optimal policy that value iteration returns).
      ks: `[K]` the grid of ``k``.
      converged: `[K, N]` bool, infinite horizon: whether value iteration (synthesis) and the
        bound iterations met their tolerance; always True for a finite horizon.
    """

    private_value: jax.Array
    true_value: jax.Array
    pessimistic: jax.Array
    optimistic: jax.Array
    cost: jax.Array
    optimal_value: jax.Array
    ks: jax.Array
    converged: jax.Array


def _run(key, k, mdp, rows, support, beta, tol, *, sampler, width, max_iterations):
    """Algorithm 1 and both bounds for one key and one ``k``; pure, vmap-friendly."""
    p_bar = privatize(key, rows, k, support, mdp.action_mask, sampler)
    private = dataclasses.replace(mdp, transitions=p_bar)
    sol = solve(private, max_iterations=max_iterations, tol=tol)
    if not mdp.is_finite_horizon:
        # Value iteration's values are within tol/2 of V̄*; report the policy's exact value.
        sol = sol._replace(values=evaluate(private, sol.policy))
    alpha = concentration_radius(k, beta)
    b = bounds_core(
        private, sol.policy, alpha, beta, tol, width=width, max_iterations=max_iterations
    )
    return p_bar, sol, b


def _resolve(mdp, support, smoothing, beta, ks):
    if not isinstance(mdp, TabularMDP):
        raise ValueError(f"expected a TabularMDP from make_mdp, got {type(mdp).__name__}")
    check_range("beta", beta, low=0.0, high=1.0, low_open=True, high_open=True, scalar=True)
    check_range("k", ks, low=0.0, low_open=True)
    inp = prepare_mechanism_input(
        np.asarray(mdp.transitions),
        action_mask=np.asarray(mdp.action_mask),
        support=support,
        smoothing=smoothing,
        dtype=mdp.transitions.dtype,
    )
    dtype = mdp.rewards.dtype
    alphas = host_radius(ks, beta)
    return (
        jnp.asarray(inp.rows, dtype),
        jnp.asarray(inp.support),
        fill_width(alphas, mdp.num_states),
    )


def synthesize(
    key: jax.Array,
    mdp: TabularMDP,
    *,
    k: ArrayLike,
    beta: ArrayLike = 0.1,
    support: Support = None,
    smoothing: float | None = None,
    sampler: Sampler = "fast",
    max_iterations: int = 10_000,
) -> Synthesis:
    """Algorithm 1 (privatize, synthesize, evaluate) plus the cost-of-privacy bounds.

    1. ``P̄(s, a) ~ Dirichlet(k · P(s, a))`` for every allowed row (:func:`dirichlet_mechanism`).
    2. ``π̄``, ``V̄^π̄``: an optimal policy of the privatized MDP and its value (:func:`solve`).
    3. ``v̲``, ``v̄``: its pessimistic and optimistic values (:func:`cost_of_privacy`).
    Steps 2-3 are post-processing of ``P̄``, so the output is as private as ``P̄``.

    Args:
      key: PRNG key (use :func:`secure_key` for a real release).
      mdp: the true MDP from :func:`make_mdp`.
      k: the mechanism's parameter ``k > 0``.
      beta: ``β`` in ``(0, 1)`` for the bounds.
      support: ``None`` or ``"nonzero"``, see :func:`dirichlet_mechanism`.
      smoothing: optional ``η``, see :func:`dirichlet_mechanism`. The mechanism then
        privatizes the smoothed rows ``p̃ = (1 − Sη) p + η``, so ``P̄`` concentrates around
        ``p̃``, not ``P``: the bounds (Lemma 1, Theorem 1) are about the smoothed MDP, whose
        rows are up to ``(S − 1)η`` away from the true ones in ℓ∞.
      sampler: ``"fast"`` or ``"jax"`` gamma sampler (same distribution), see
        :func:`dirichlet_mechanism`.
      max_iterations: infinite horizon: guard on iterations.

    Returns:
      :class:`Synthesis`.

    Raises:
      ValueError: for ``k <= 0``, ``beta`` outside ``(0, 1)`` or rows with zeros (see
        ``support``).

    References:
      Gohari, Hale, Topcu, CDC 2020, Algorithm 1, Theorems 1 and 2.
    """
    check_range("k", k, low=0.0, low_open=True, scalar=True)
    check_iterations(None, max_iterations)
    rows, supp, width = _resolve(mdp, support, smoothing, beta, k)
    dtype = mdp.rewards.dtype
    p_bar, sol, b = _run_jit(
        check_key(key),
        jnp.asarray(k, dtype),
        mdp,
        rows,
        supp,
        jnp.asarray(beta, dtype),
        default_tolerance(mdp),
        sampler=sampler,
        width=width,
        max_iterations=int(max_iterations),
    )
    converged = sol.converged & b.converged
    return Synthesis(p_bar, sol.policy, sol.values, b.pessimistic, b.optimistic, b.cost, converged)


_STATIC = ("sampler", "width", "max_iterations")
_run_jit = jax.jit(_run, static_argnames=_STATIC)


def _at_s0(mdp: TabularMDP, values: jax.Array) -> jax.Array:
    return values[0, mdp.initial_state] if mdp.is_finite_horizon else values[mdp.initial_state]


@functools.partial(jax.jit, static_argnames=_STATIC + ("devices", "vector_width"))
def _sweep_chunk(keys, ks, mdp, rows, support, beta, tol, *, devices, vector_width, **static):
    """Runs a chunk of (key, k) pairs, sharded over ``devices`` along the batch axis.

    On each device the runs go through ``lax.map`` in vmapped groups of ``vector_width``: the
    compiled per-group program is the same whatever the chunk size or device count, so each
    run's result is bitwise independent of both (XLA may round differently for different
    batch shapes). It also bounds the working memory to ``vector_width`` runs.
    """

    def one(pair):
        key, k = pair
        _, sol, b = _run(key, k, mdp, rows, support, beta, tol, **static)
        true_values = evaluate(mdp, sol.policy)
        return jnp.stack(
            [
                _at_s0(mdp, sol.values),
                _at_s0(mdp, true_values),
                _at_s0(mdp, b.pessimistic),
                _at_s0(mdp, b.optimistic),
                b.cost,
                (sol.converged & b.converged).astype(b.cost.dtype),
            ]
        )

    def batched(keys, ks):
        return jax.lax.map(one, (keys, ks), batch_size=vector_width)

    if len(devices) == 1:
        return batched(keys, ks)
    mesh = jax.sharding.Mesh(np.asarray(devices), ("batch",))
    spec = PartitionSpec("batch")
    # Each shard runs independent (key, k) pairs: nothing is communicated, so the
    # varying-axes type check (which the loops' replicated carries would trip) is off.
    sharded = jax.shard_map(
        batched, mesh=mesh, in_specs=(spec, spec), out_specs=spec, check_vma=False
    )
    return sharded(keys, ks)


def default_vector_width(mdp: TabularMDP, sampler: Sampler, budget_bytes: float = 2**30) -> int:
    """Runs vectorized together: a power of two ``<= 16`` whose working set fits the budget.

    Measured working sets (``benchmarks/bench_memory.py``): about 16 `[S, A, S]` arrays per
    run with the ``"fast"`` sampler and 48 with ``"jax"``. Groups of 8–32 runs measured
    fastest on CPU for the paper's Example 2 (vmapping all 512 runs at once was 2.3x slower).
    """
    S, A = mdp.num_states, mdp.num_actions
    arrays = 16 if sampler == "fast" else 48
    per_run = arrays * S * A * S * mdp.rewards.dtype.itemsize
    fit = max(1, int(budget_bytes // per_run))
    return min(16, 1 << (fit.bit_length() - 1))


def default_batch_size(total: int, group: int) -> int:
    """Runs per compiled call: ``total`` rounded up to a power-of-two number of groups, <= 256.

    Powers of two keep the number of distinct compiled chunk shapes small (a new trial count
    or grid of ``k`` recompiles only when it crosses a power of two below 256 runs) while a
    small sweep is padded by less than 2x.
    """
    groups = max(1, math.ceil(min(total, MAX_BATCH_SIZE) / group))
    return group * (1 << (groups - 1).bit_length())


MAX_BATCH_SIZE = 256


def sweep(
    key: jax.Array,
    mdp: TabularMDP,
    *,
    ks: Sequence[float] | ArrayLike,
    num_trials: int = 50,
    beta: ArrayLike = 0.1,
    support: Support = None,
    smoothing: float | None = None,
    batch_size: int | None = None,
    vector_width: int | None = None,
    sampler: Sampler = "fast",
    devices: Sequence[jax.Device] | None = None,
    max_iterations: int = 10_000,
    progress: Callable[[int, int], None] | None = None,
) -> SweepResult:
    """Algorithm 1 and its bounds for every (k, trial), in one jit-compiled computation.

    Every (k, trial) pair gets its own key ``jax.random.split(key, (K, N))[i, j]``, so results
    do not depend on ``batch_size`` or on the number of devices (bitwise), and entry
    ``[i, j]`` equals ``synthesize(keys[i, j], mdp, k=ks[i], ...)`` up to floating-point
    rounding. The pairs run in chunks of ``batch_size`` (the last chunk is padded); each chunk
    is sharded over ``devices`` with ``jax.shard_map`` and, on each device, runs in vmapped
    groups of ``vector_width``. The chunk shape, not ``K`` or ``N``, fixes the compiled
    program: a new grid of ``k`` or a new trial count does not recompile.

    Args:
      key: PRNG key.
      mdp: the true MDP.
      ks: `[K]` values of ``k > 0``.
      num_trials: ``N``, independent runs per ``k``.
      beta: ``β`` in ``(0, 1)``.
      support: ``None`` or ``"nonzero"``, see :func:`dirichlet_mechanism`.
      smoothing: optional ``η``, see :func:`dirichlet_mechanism` and :func:`synthesize`.
      batch_size: runs per compiled call (progress is reported after each); rounded up to a
        multiple of ``vector_width`` times the device count. Default
        :func:`default_batch_size`: at most 256, a power of two of groups, so sweeps of
        similar size share one compilation. Pass a fixed value to never recompile.
      vector_width: runs vectorized together on a device; the working memory is about
        ``vector_width`` runs. Default :func:`default_vector_width` (16, or fewer for large
        MDPs so that a group fits in about 1 GiB). Results are bitwise identical for any
        ``batch_size`` and device count at a fixed ``vector_width``; another
        ``vector_width`` compiles differently and may change results at the level of
        floating-point rounding (seen: up to ~40 float32 ulps after 50 stages).
      sampler: ``"fast"`` or ``"jax"``, see :func:`dirichlet_mechanism`.
      devices: devices to shard each chunk over (default: all of ``jax.devices()``).
      max_iterations: infinite horizon: guard on iterations.
      progress: optional callback ``progress(done, total)`` after each chunk.

    Returns:
      :class:`SweepResult` with `[K, N]` fields.

    Raises:
      ValueError: for an empty or non-positive ``ks``, ``num_trials < 1``, ``batch_size < 1``,
        ``beta`` outside ``(0, 1)``, or rows with zeros (see ``support``).
    """
    try:
        ks_np = np.atleast_1d(np.asarray(ks, dtype=float))
    except (TypeError, ValueError):
        raise ValueError(f"ks must be a 1-D sequence of numbers, got {ks!r}") from None
    if ks_np.ndim != 1 or ks_np.size == 0:
        raise ValueError(f"ks must be a non-empty 1-D sequence, got shape {ks_np.shape}")
    check_count("num_trials", num_trials)
    check_iterations(None, max_iterations)
    key = check_key(key)
    rows, supp, width = _resolve(mdp, support, smoothing, beta, ks_np)
    devices = tuple(devices) if devices is not None else tuple(jax.devices())
    num_devices = len(devices)
    if num_devices == 0:
        raise ValueError("devices must list at least one device")
    for name, value in (("batch_size", batch_size), ("vector_width", vector_width)):
        if value is not None:
            check_count(name, value)
    vector_width = int(vector_width or default_vector_width(mdp, sampler))
    group = vector_width * num_devices
    K, N = ks_np.size, int(num_trials)
    if batch_size is None:
        batch_size = default_batch_size(K * N, group)
    batch_size = group * math.ceil(int(batch_size) / group)

    dtype = mdp.rewards.dtype
    keys = jax.random.split(key, (K, N)).reshape(-1)
    k_flat = jnp.repeat(jnp.asarray(ks_np, dtype), N)
    total = K * N
    num_chunks = math.ceil(total / batch_size)
    pad = num_chunks * batch_size - total
    keys = jnp.concatenate([keys, jnp.repeat(keys[-1:], pad)])
    k_flat = jnp.concatenate([k_flat, jnp.repeat(k_flat[-1:], pad)])
    static = dict(
        sampler=sampler,
        width=width,
        max_iterations=int(max_iterations),
        devices=devices,
        vector_width=vector_width,
    )
    beta_arr = jnp.asarray(beta, dtype)
    tol = default_tolerance(mdp)
    outs = []
    for c in range(num_chunks):
        sl = slice(c * batch_size, (c + 1) * batch_size)
        out = _sweep_chunk(keys[sl], k_flat[sl], mdp, rows, supp, beta_arr, tol, **static)
        outs.append(out)
        if progress is not None:
            jax.block_until_ready(out)
            progress(min((c + 1) * batch_size, total), total)
    out = jnp.concatenate(outs)[:total].reshape(K, N, 6)
    optimal = _at_s0(mdp, evaluate(mdp, solve(mdp, max_iterations=max_iterations).policy))
    return SweepResult(
        private_value=out[..., 0],
        true_value=out[..., 1],
        pessimistic=out[..., 2],
        optimistic=out[..., 3],
        cost=out[..., 4],
        optimal_value=optimal,
        ks=jnp.asarray(ks_np, dtype),
        converged=out[..., 5] > 0,
    )

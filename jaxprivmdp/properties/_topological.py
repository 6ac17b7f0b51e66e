"""Topological interval iteration: the strongly connected components, solved in order.

Interval iteration over all states needs about one iteration per step of the model's
longest chain: thousands on models such as brp or zeroconf, whose states are mostly
acyclic. Storm and PRISM solve the strongly connected components (SCCs) of the unfixed
states one after the other, successors first, so that an acyclic part takes one pass and a
slow chain converges component by component. This module does the same on the device:

- :func:`schedule` (host): the SCCs of the unfixed states under every allowed pair (a
  collapsed end component lies inside one), in an order where each component's successors
  come first (Tarjan's completion order: :func:`~jaxprivmdp.properties._kernels.strong_components`).
  Consecutive components are packed into windows of ``WIDTH`` states; a larger component is
  alone in a window of the next width ``WIDTH · 4^j`` (at most ``S``: one slowly mixing
  component is iterated as a whole, as interval iteration over all states would; splitting
  it into windows swept in turn, block Gauss-Seidel, was measured slower: more loop steps
  for little faster convergence). The rows of the unfixed states are laid out once in that
  order, padded to ``[S, A, D]`` (``D`` the model's longest successor list), so every
  property of one model runs the same compiled programs.
- :func:`sweep` (device): for each window in turn, interval iteration of its states only
  (``lax.while_loop``), the others read from the current bounds, until the window's bounds
  stop changing (a window without a cycle is then exact up to rounding), meet a relative
  width ``r + ε`` (a window with a cycle: ``r`` the widest already solved, ``ε = tol / (2
  (C + 1))`` with ``C`` the windows holding a cycle, so the widths add up to at most
  ``tol / 2`` along any chain), or ran their cap: the window's components plus the pass's
  cap. A large slow component is thus left, after the cap, to the verified guess of
  :mod:`jaxprivmdp.properties._guess`; passes go on from the bounds
  (:func:`jaxprivmdp.properties._unbounded.ordered`).
- :class:`Topological`: one schedule on the device for ``n`` models of one support (their
  probabilities a trailing axis: every loop serves them all), run pass after pass.

Every update is the backup of :func:`jaxprivmdp.properties._iteration.interval_iteration`
(same widening, same end-component maximum, the lower bound only rises and the upper only
falls), applied to a subset of states: from valid bounds it gives valid bounds in any
order, so the bounds hold whatever a cap cut short, and convergence is tested on the whole
result (``upper − lower <= tol (upper + lower)`` in every state).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ._graph import Graph
from ._kernels import strong_components
from ._precision import gap_floor, to_device, underflow

# States per window: small enough that a window of a chain costs little per iteration, large
# enough that a model of many tiny components needs few windows (each a few loop steps).
WIDTH = 256


# The padded rows `[S, A, D]` may hold at most this many times the transitions (plus one
# slot per pair): a model with a few very long rows is iterated in its own (ragged) layout.
MAX_PADDING = 8


# Probabilities the padded rows of a batch may hold at once (float64: 2 GB), host and device.
MAX_BATCH_SLOTS = 2.5e8


def fits(g: Graph) -> bool:
    """Whether the rows of ``g`` padded to its longest successor list stay within
    ``MAX_PADDING`` times its transitions (plus a slot per pair)."""
    return g.S * g.A * max(g.degree, 1) <= MAX_PADDING * g.pair.size + g.S * g.A


def batch_size(g: Graph) -> int:
    """How many models of ``g``'s support one :class:`Topological` takes at once (their
    padded rows within ``MAX_BATCH_SLOTS``; at least one)."""
    return max(1, int(MAX_BATCH_SLOTS // (g.S * g.A * max(g.degree, 1))))


class Rows(NamedTuple):
    """The unfixed states' rows in topological order (a pytree; positions ``>= N`` are
    padding: state ``S``, no usable pair).

    Attributes:
      state: `[S]` int32 the state at each position.
      succ: `[S, A, D]` int32 successors (``S``, whose value is 0, in unused slots).
      prob: `[S, A, D, m]` float64 probabilities of ``m`` models of one support (the
        models', not renormalized).
      reward: `[S, A]` float64; usable: `[S, A]` bool.
      group: `[S]` int32 the position of the first state of the end component a state's
        optimum is shared with (its own position elsewhere).
    """

    state: jax.Array
    succ: jax.Array
    prob: jax.Array
    reward: jax.Array
    usable: jax.Array
    group: jax.Array


class Windows(NamedTuple):
    """The window table of :func:`sweep` (`[windows]` each).

    Attributes:
      start, count: each window's first position and its number of states.
      cap: its components (a window iterates at most that many times plus the pass's cap).
      loops: whether it holds a cycle (then it may stop at the relative width ``r + ε``).
    """

    start: np.ndarray
    count: np.ndarray
    cap: np.ndarray
    loops: np.ndarray


class Schedule(NamedTuple):
    """:func:`schedule`'s answer: ``rows`` (host arrays for :class:`Rows`), ``windows``
    (:class:`Windows`) and ``widths`` (`[windows]` each window's width)."""

    rows: Rows
    windows: Windows
    widths: np.ndarray


def _components(g: Graph, maybe: np.ndarray):
    """The SCCs of ``maybe`` under the allowed pairs: ``(count, labels, (a, b))``, every
    component labelled after its successors (:func:`strong_components`), ``a → b`` the edges
    inside ``maybe``."""
    src = g.pair // g.A
    e = g.allowed[g.pair] & maybe[src] & maybe[g.succ]
    a, b = src[e], g.succ[e]
    count, label, _ = strong_components(g.S, a, b)
    return count, label, (a, b)


def _windows(sizes, cyclic, width: int, total: int) -> tuple:
    """Consecutive components (in order) packed into windows of ``width`` states; a larger
    one alone in a window of ``width · 4^j`` (at most ``total``). Returns ``(Windows,
    widths)``."""
    rows, widths = [], []  # (start, count, cap, loops) per window
    pos, i, n = 0, 0, sizes.size
    ends = np.cumsum(sizes)
    while i < n:
        if sizes[i] > width:
            j, w = i + 1, width
            while w < sizes[i]:
                w *= 4
        else:  # as many whole components as fit
            j, w = int(np.searchsorted(ends, pos + width, side="right")), width
        count = int(ends[j - 1] - pos)
        rows.append((pos, count, j - i, bool(cyclic[i:j].any())))
        widths.append(min(w, total))
        pos, i = pos + count, j
    cols = [np.asarray(c) for c in zip(*rows, strict=True)] if rows else [np.zeros(0)] * 4
    table = Windows(*(c.astype(bool if k == 3 else np.int32) for k, c in enumerate(cols)))
    return table, np.asarray(widths, np.int32)


def schedule(g: Graph, pre, width: int = WIDTH, raw=None) -> Schedule:
    """The windows of :func:`sweep` for the precomputation ``pre`` (its ``maybe``,
    ``usable``, ``rewards``, ``group``); ``raw``: `[n, E]` the edges' probabilities of
    ``n`` models of ``g``'s support (default: ``g.raw``, one model): `[S, A, D, n]` rows."""
    S, A = g.S, g.A
    maybe = pre.maybe
    count, label, (a, b) = _components(g, maybe)
    src = g.pair // A
    states = np.flatnonzero(maybe)
    states = states[np.argsort(label[states], kind="stable")]
    n = states.size
    comp = label[states]
    sizes = np.bincount(comp, minlength=count)
    self_loop = np.zeros(S, bool)
    self_loop[a[a == b]] = True
    loops = np.zeros(count, bool)
    loops[comp] = self_loop[states]
    windows, widths = _windows(sizes, (sizes > 1) | loops, width, S)

    pos = np.full(S + 1, S, np.int64)  # position of each state (S: none)
    pos[states] = np.arange(n)
    e = np.flatnonzero(maybe[src] & pre.usable.reshape(-1)[g.pair])
    e = e[np.argsort(g.pair[e], kind="stable")]
    first = np.searchsorted(g.pair[e], g.pair[e], side="left")
    slot = np.arange(e.size) - first
    D = max(int(g.degree), 1)
    succ = np.full((S, A, D), S, np.int32)
    raw = g.raw[None] if raw is None else raw
    prob = np.zeros((S, A, D, raw.shape[0]))
    p, q = pos[src[e]], g.pair[e] % A
    succ[p, q, slot] = g.succ[e]
    prob[p, q, slot] = raw[:, e].T
    reward = np.zeros((S, A))
    usable = np.zeros((S, A), bool)
    reward[:n] = pre.rewards[states]
    usable[:n] = pre.usable[states]
    group = np.arange(S, dtype=np.int64)
    lead = np.where(pre.group[states] >= 0, pre.group[states], states)
    first_pos = np.full(S, S, np.int64)
    np.minimum.at(first_pos, lead, np.arange(n))
    group[:n] = first_pos[lead]
    state = np.full(S, S, np.int32)
    state[:n] = states
    rows = Rows(state, succ, prob, reward, usable, group.astype(np.int32))
    return Schedule(rows, windows, widths)


class _Carry(NamedTuple):
    lower: jax.Array  # [S + 1, n] (the models last: rows gathered and written whole)
    upper: jax.Array  # [S + 1, n] (apart: a slice of one array would be copied each step)
    widest: jax.Array  # [n] the widest relative width of the windows solved so far
    iterations: jax.Array
    capped: jax.Array  # [n] a window stopped at its cap


@functools.partial(jax.jit, static_argnames=("width",))
def sweep(rows: Rows, bounds, widest, windows, n, stop, sign, margin, eps, *, width: int):
    """Interval iteration window by window (see the module) over the first ``n`` windows
    of ``windows`` (:class:`Windows`, device arrays), from ``bounds`` `[m, 2, S + 1]` (lower,
    upper of ``m`` models of one support, whose probabilities ``rows.prob`` `[S, A, D, m]`
    holds; index ``S`` is 0) and ``widest`` `[m]` (the widest relative width solved so far);
    ``stop``: the pass's cap (iterations of a window beyond its components); ``margin``
    `[2]`: the relative and absolute widening of a backup (as
    :func:`~jaxprivmdp.properties._iteration.interval_iteration`'s). The models
    share every loop: a window iterates until each model met its width or stopped moving
    (more backups of a model that did are harmless: its bounds only tighten).

    Returns ``(bounds, widest, iterations, capped)``: the bounds, the widest relative width
    after these windows, the iterations run over all windows and `[m]` whether a window
    stopped at its cap for that model."""
    total = rows.state.shape[0]
    low = jnp.asarray(-jnp.inf, rows.prob.dtype)
    widen = (1 - margin[0], 1 + margin[0])
    floor = gap_floor(rows.prob.dtype)
    local = jnp.arange(width)

    def visit(w, c: _Carry):
        start, count = windows.start[w], windows.count[w]
        first = jnp.minimum(start, total - width)  # a slice never runs past the end
        at = lambda x: lax.dynamic_slice_in_dim(x, first, width)  # noqa: E731
        state, succ, prob, reward, usable = (at(x) for x in rows[:5])
        valid = (local >= start - first) & (local < start - first + count)
        group = jnp.where(valid, at(rows.group) - first, local)
        state = jnp.where(valid, state, c.lower.shape[0] - 1)
        loose = jnp.where(windows.loops[w], c.widest + eps, -1.0)[None]  # no cycle: exact
        valid = valid[:, None]

        def backup(v):  # `[W, m]` the window's backup of one bound of each model
            q = sign * (reward[..., None] + jnp.sum(prob * v[succ], axis=2))
            best = jnp.max(jnp.where(usable[..., None], q, low), axis=1)
            return sign * jax.ops.segment_max(best, group, num_segments=width)[group]

        def body(inner):
            lo, up, it, _, _ = inner
            old_lo, old_up = lo[state], up[state]
            new_lo = backup(lo) * widen[0] - margin[1]
            new_up = backup(up) * widen[1] + margin[1]
            new_lo = jnp.where(valid, jnp.maximum(old_lo, new_lo), old_lo)
            new_up = jnp.where(valid, jnp.minimum(old_up, new_up), old_up)
            gap = new_up - new_lo
            met = jnp.all((gap <= loose * (new_up + new_lo)) | (gap <= floor), axis=0)
            still = jnp.all((new_lo == old_lo) & (new_up == old_up), axis=0)
            return lo.at[state].set(new_lo), up.at[state].set(new_up), it + 1, met, still

        def cond(inner):
            return ~jnp.all(inner[3] | inner[4]) & (inner[2] < windows.cap[w] + stop)

        no = jnp.zeros(c.lower.shape[1], bool)
        start_inner = (c.lower, c.upper, jnp.zeros((), jnp.int32), no, no)
        lower, upper, it, met, still = lax.while_loop(cond, body, start_inner)
        lo, up = lower[state], upper[state]
        ratio = (up - lo) / jnp.where(up > 0, up + lo, 1)
        gap = jnp.max(jnp.where(valid & (up - lo > floor), ratio, 0), axis=0)
        widest = jnp.maximum(c.widest, gap)
        return _Carry(lower, upper, widest, c.iterations + it, c.capped | ~(met | still))

    m = bounds.shape[0]
    no = jnp.zeros(m, bool)
    init = _Carry(bounds[:, 0].T, bounds[:, 1].T, widest, jnp.zeros((), jnp.int32), no)
    out = lax.fori_loop(0, n, visit, init)
    bounds = jnp.stack([out.lower.T, out.upper.T], axis=1)
    return bounds, out.widest, out.iterations, out.capped


def _padded(x: np.ndarray) -> np.ndarray:
    """``x`` padded with zeros to a power of two (a few compiled shapes for any count)."""
    out = np.zeros(1 << max(int(x.size - 1).bit_length(), 0), x.dtype)
    out[: x.size] = x
    return out


class Topological:
    """The schedule of one precomputation on the device, swept pass after pass, for ``n``
    models of ``g``'s support (``raw`` `[n, E]`: their edges' probabilities; ``n = 1``: one
    model) at once: the models are a trailing axis of every loop."""

    def __init__(self, g: Graph, pre, minimize, margin, tol, raw):
        plan = schedule(g, pre, WIDTH, raw)  # WIDTH read here: a test narrows it
        self.S = g.S
        self.loops = int(plan.windows.loops.sum())
        with jax.enable_x64(True):
            self.rows = Rows(*(jnp.asarray(x) for x in plan.rows))
            self.parts = []  # runs of windows of one width: (width, n, table)
            cut = np.flatnonzero(np.diff(plan.widths)) + 1
            for part in np.split(np.arange(plan.widths.size), cut):
                if part.size:
                    table = Windows(*(jnp.asarray(_padded(x[part])) for x in plan.windows))
                    self.parts.append((int(plan.widths[part[0]]), part.size, table))
            self.scalars = (
                jnp.asarray(-1.0 if minimize else 1.0),
                jnp.asarray([margin, underflow(plan.rows.prob.shape[2], np.float64)]),
                jnp.asarray(tol / (2 * (self.loops + 1)), jnp.float64),
            )

    def run(self, lower, upper, stop: int):
        """One pass over every window from ``(lower, upper)`` (`[n, S]` float64, valid):
        ``(lower, upper, iterations, capped)`` on the host (``capped`` `[n]`)."""
        n = lower.shape[0]
        b = np.zeros((n, 2, self.S + 1))
        b[:, 0, : self.S], b[:, 1, : self.S] = to_device(lower, upper)
        iterations, capped = 0, np.zeros(n, bool)
        stop = min(stop, 2**30)  # a window's cap (its components + stop) stays an int32
        with jax.enable_x64(True):
            out, widest = jnp.asarray(b), jnp.zeros(n)
            for width, count, table in self.parts:
                out, widest, it, cap = sweep(
                    self.rows,
                    out,
                    widest,
                    table,
                    jnp.asarray(count, jnp.int32),
                    jnp.asarray(stop, jnp.int32),
                    *self.scalars,
                    width=width,
                )
                iterations += int(it)
                capped |= np.asarray(cap)
            out = np.array(out)  # writable: the caller tightens rows in place
        return out[:, 0, : self.S], out[:, 1, : self.S], iterations, capped

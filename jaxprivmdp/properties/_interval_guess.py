"""Verified starting bounds for the robust interval iteration of a probability: guessed by
strategy iteration with sparse solves, then verified (as :mod:`._guess` does for point
models).

Interval iteration shrinks ``[lower, upper]`` by the game's mixing rate per step: on a random
10⁶-state interval MDP in which the policy steers away from traps, about 0.98 per step, so
hundreds of backups of both bounds. Here a candidate comes from a fixed pair of stationary
strategies instead, the policy's ``σ`` and nature's distributions ``x`` (each the best
response to the last values), whose chain's values ``v`` one linear solve gives (host,
float64, :class:`~jaxprivmdp.properties._solve.PolicySolver`: a direct LU in a topological
order where it fills little, GMRES elsewhere); a few rounds of improving both and solving
again, then ``y`` solves the same system with reward ``v`` (the values summed along the
chain's paths), and the candidates are ``v ± κ y``. Under the fixed strategies ``B(v ± κ y) =
v ± κ (y − v)``: a slack of ``κ v`` per state, the same fraction of every value, which the
rounding of a float64 backup does not reach for ``κ ~ tol / (expected steps)``.

Nothing here is trusted: the caller keeps a candidate only if it is verified,

- the upper one as a pre-fixpoint, ``B(u) <= u`` (:func:`._interval_iteration.verified`:
  above the least fixed point, the value, whatever the model's end components);
- the lower one as ``l <= B_σ(l)``, the policy's side fixed to ``σ`` where it maximizes,
  nature minimizing (:func:`._interval_iteration.verified_below`), *and* no set of the
  undecided states with ``l > 0`` in which the minimizing side(s) could keep the play forever
  (:func:`_leaves`). Then ``l`` is below the value of ``σ`` against the worst nature, hence
  below the game's value: where ``d = l − v_σ`` is largest and positive, ``l <= B_σ(l)``
  and ``v_σ = x* · v_σ`` (nature's best ``x*``) give ``d(s) <= x* · d``, so ``x*`` keeps the
  play where ``d`` is largest: such a set. Where nature maximizes the probability (``Pmaxmax``,
  ``Pminmax``) the lower candidate would need nature's side fixed to ``x``, a distribution
  computed with rounding: not attempted (the iteration gives the lower bound).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.linalg import LinearOperator, bicgstab

from ..models.core import nature_choice, row_entries
from . import _interval_graph as graph
from ._interval_iteration import Problem, q_values, verified, verified_below
from ._precision import gap_floor, to_device
from ._solve import PolicySolver, one_blas_thread

_ROUNDS = 16
# A switch must gain more than the solves' noise (about 1e-13 relative), or the iteration
# cycles among tied strategies; the rounds stop when the values move less than _SETTLED
# (relative): far below the candidates' slack (tol / the expected steps), and the candidates
# are verified anyway.
_SWITCH, _SETTLED = 1e-10, 1e-11
# BiCGSTAB: the relative residual a solve must reach, and its steps; while the policy still
# switches, a loose solve does (modified policy iteration: the next round corrects it).
_KRYLOV_RTOL, _LOOSE_RTOL, _KRYLOV_STEPS = 1e-12, 1e-8, 200


def _responses(p: Problem, v):
    """``(x, q)``: nature's distribution in every row against ``v`` `[S]` (`[S, A, N]`, the
    rows' own order; a ragged model's per block) and the rows' values ``r + Σ x v`` `[S,
    A]` (NumPy). Two programs, one after the other: their fills' temporaries never coexist."""
    q = np.asarray(_q_values(p, v[None])[0])
    return _nature(p, v), q


_q_values = jax.jit(q_values)


@jax.jit
def _nature(p: Problem, v):
    return nature_choice(p.lower, p.upper, p.next_states, v, p.nature_sign, jnp)


class _Chain:
    """The undecided states' linear systems ``(I − P_{σ,x}) v = b`` for the strategies
    ``(σ, x)`` of one problem, on the host: BiCGSTAB from the last solution first (a few
    dozen steps where the chain mixes fast, as on models with successors drawn at random),
    else :class:`PolicySolver` (built on first need: its ordering costs seconds on 10⁶
    states), whose direct LU serves the slowly mixing, structured models."""

    def __init__(self, p: Problem, e: graph.Edges, undecided: np.ndarray):
        S, A = e.allowed.shape
        self.p, self.e, self.S, self.A, self.undecided = p, e, S, A, undecided
        self.col = np.where(undecided, np.cumsum(undecided) - 1, -1)
        self.states = np.flatnonzero(undecided)
        self.fixed_value = np.where(undecided, 0.0, np.asarray(p.fixed_value, np.float64))
        self.solver, self.start = None, {}

    def system(self, sigma: np.ndarray, x: np.ndarray):
        """``(solve, b)``: ``solve(rhs, key)`` -> `[n]` or None, and the chain's ``b``."""
        states = self.states
        # (any layout: a ragged model's x comes per block)
        i, t, w = row_entries(x, self.p.next_states, states * self.A + sigma[states])
        inner = self.undecided[t]
        rewards = np.asarray(self.p.rewards, np.float64)[states, sigma[states]]
        b = rewards + np.bincount(i[~inner], weights=w[~inner] * self.fixed_value[t[~inner]],
                                  minlength=states.size)  # fmt: skip
        rows, cols, probs = i[inner], self.col[t[inner]], w[inner]
        n = states.size  # (rows ascending: a CSR without a sort)
        ptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n))])
        P = csr_matrix((probs, cols, ptr), shape=(n, n))
        del rows, cols, probs  # (P holds the entries; a fallback reads them back)
        m = LinearOperator((n, n), matvec=lambda v: v - P @ v, dtype=np.float64)
        factored = []

        def solve(rhs, key, rtol=_KRYLOV_RTOL):
            out = _krylov(m, rhs, self.start.get(key), rtol)
            if out is None:
                if not factored:
                    entries = P.tocoo()
                    factored.append(self._solver().factor(entries.row, entries.col, entries.data))
                out = None if factored[0] is None else factored[0](rhs, key)
            if out is not None:
                self.start[key] = out
            return out

        return solve, b

    def _solver(self) -> PolicySolver:
        if self.solver is None:
            e, A, undecided = self.e, self.A, self.undecided
            src = e.row // A
            usable = np.asarray(self.p.usable).reshape(-1)
            inner = undecided[src] & undecided[e.target] & usable[e.row]
            self.solver = PolicySolver(self.states.size, self.col[src[inner]],
                                       self.col[e.target[inner]])  # fmt: skip
        return self.solver

    def full(self, v: np.ndarray, fill=None) -> np.ndarray:
        """`[S]` from the unknowns' `[n]` (fixed states at their values, or ``fill``)."""
        out = self.fixed_value.copy() if fill is None else np.full(self.S, fill, np.float64)
        out[self.states] = v
        return out


@one_blas_thread
def _krylov(m, b, start, rtol):
    """BiCGSTAB for ``m v = b`` from ``start``, kept if its relative residual reaches
    ``rtol`` (not monotone: checked at the end), else None."""
    norm = float(np.linalg.norm(b))
    if norm == 0:
        return np.zeros_like(b)
    v, _ = bicgstab(m, b, start, rtol=rtol / 10, atol=0.0, maxiter=_KRYLOV_STEPS)
    ok = np.all(np.isfinite(v)) and np.linalg.norm(b - m @ v) <= rtol * norm
    return v if ok else None


def _improve(p: Problem, sigma, q):
    """``σ`` switched, where an allowed action beats it by more than the solves' noise, to
    the best one; ``(σ, switched)``."""
    sign = float(p.policy_sign)
    usable = np.asarray(p.usable)
    score = np.where(usable, sign * q, -np.inf)
    best = np.argmax(score, axis=1)
    current = np.take_along_axis(score, sigma[:, None], 1)[:, 0]
    top = score[np.arange(sigma.size), best]
    better = top - current > _SWITCH * np.abs(current) + 1e-300
    return np.where(better, best, sigma), bool(np.any(better))


def _leaves(e: graph.Edges, p: Problem, sigma, states) -> bool:
    """Whether the minimizing side(s) cannot keep the play in ``states`` forever: the
    policy held to ``σ`` where it maximizes, nature opposing the exit (every state of
    ``states`` in the attractor of the rest)."""
    S, A = e.allowed.shape
    allowed = e.allowed
    if float(p.policy_sign) > 0:
        allowed = np.zeros_like(e.allowed)
        allowed[np.arange(S), sigma] = e.allowed[np.arange(S), sigma]
        keep = allowed.reshape(-1)[e.row]
        order, _ = e.by_target  # the kept entries keep their order by successor (no sort)
        renumber = np.cumsum(keep) - 1
        order = renumber[order[keep[order]]]
        target = e.target[keep]
        ptr = np.concatenate([[0], np.cumsum(np.bincount(target, minlength=S))])
        e = e._replace(row=e.row[keep], target=target, lo=e.lo[keep], up=e.up[keep],
                       allowed=allowed, by_target=(order, ptr))  # fmt: skip
    reached, _ = graph.positive(e, ~states, states, False, False)
    return bool(np.all(reached[states]))


def guess_bounds(p: Problem, e: graph.Edges, lo, sigma, tol, complement=False):
    """``(lower, upper)`` `[S]` verified bounds on a probability (either None where its
    candidate failed), whose relative width meets ``tol / 2`` where the guess was exact to
    float64's precision (relative to ``1 −`` the values with ``complement``).

    ``p``: the problem (probabilities: rewards 0); ``lo``: the iteration's lower bound, which
    picks nature's first distributions; ``sigma`` `[S]`: the policy's first actions (one
    that makes progress where values tie: a stationary policy that stays among undecided
    states makes the system singular)."""
    undecided = ~np.asarray(p.fixed)
    if not undecided.any():
        return None, None
    chain = _Chain(p, e, undecided)
    v, last, tight = np.asarray(lo, np.float64), None, False
    for _ in range(_ROUNDS):
        x, q = _responses(p, jnp.asarray(v))
        sigma, switched = _improve(p, sigma, q) if last is not None else (sigma, True)
        solve, b = chain.system(sigma, x)
        new = solve(b, "v", _KRYLOV_RTOL if tight else _LOOSE_RTOL)
        if new is None or not np.all(np.isfinite(new)):
            break  # (an improper σ, or a solve that failed: the last chain's values)
        new = chain.full(new)
        moved = np.max(np.abs(new - v)) if last is not None else np.inf
        last, v = solve, new
        if tight and not switched and moved <= _SETTLED * np.max(np.abs(v)):
            break
        tight = not switched  # solved loosely while the policy still switches
    if last is None:
        return None, None
    y = last(v[undecided], "y")  # (the last chain's: v is its solution)
    if y is None or not np.all(np.isfinite(y)):
        return None, None
    y = chain.full(y, fill=0.0)
    size = (1 - v) if complement else v
    if np.any(size[undecided] <= 0) or np.any(y[undecided] < 0):
        return None, None
    # κ from the states above gap_floor (below it, the floor's lift meets tol anyway); the
    # candidates as the device reads them (:func:`to_device`), which is what is verified
    lift = gap_floor(np.float64) / 4
    wide = undecided & (size >= gap_floor(np.float64))
    ratio = float(np.max(y[wide] / size[wide], initial=0.0))
    kappa = tol / 2 / ratio if ratio > 0 else tol / 2
    fixed = np.asarray(p.fixed_value, np.float64)
    upper = np.where(undecided, np.minimum(v + kappa * y + lift, 1.0), fixed)
    lower = np.where(undecided, np.maximum(v - kappa * y - lift, 0.0), fixed)
    lower, upper = to_device(lower, upper)
    upper = upper if bool(np.all(verified(p, jnp.asarray(upper)))) else None
    lower = lower if _below(p, e, lower, sigma, undecided) else None
    return lower, upper


def _below(p: Problem, e, lower, sigma, undecided) -> bool:
    """Whether ``lower`` is verified below the value (the module's docstring)."""
    if float(p.nature_sign) > 0:
        return False
    held = p
    if float(p.policy_sign) > 0:
        onehot = np.zeros(np.asarray(p.usable).shape, bool)
        onehot[np.arange(sigma.size), sigma] = True
        held = p._replace(usable=jnp.asarray(onehot & np.asarray(p.usable)))
    if not bool(np.all(verified_below(held, jnp.asarray(lower)))):
        return False
    return _leaves(e, p, sigma, undecided & (lower > 0))

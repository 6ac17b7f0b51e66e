"""Policy files: a policy as a CSV table, and the chain it induces as a PRISM DTMC.

**Table** (``policy.csv``): header ``stage,state,action`` and one line per stage ``t < T``
and state (finite horizon), or ``state,action`` and one line per state (infinite horizon).
:func:`read_policy` reads it back strictly: every (stage, state) exactly once, integers only.

**Chain** (PRISM's explicit format, ``.tra`` ``.lab`` ``.srew``): the Markov chain the policy
induces on the model, so that PRISM, Storm or :func:`jaxprivmdp.check` can model-check it.

- Infinite horizon: the ``S`` states, ``P(s, π(s), t)`` (zero entries omitted), state reward
  ``r(s, π(s))``; labels ``init`` (``s0``) and ``deadlock`` (none). Undiscounted, as PRISM's
  rewards are: the discount is in the JSON beside it.
- Finite horizon ``T``: the policy depends on the stage, so the chain is unrolled: state
  ``t·S + s`` is ``s`` at stage ``t`` (``t = 0 .. T``), then one absorbing state ``done``
  after stage ``T``. Its state rewards are ``γ^t r(s, π_t(s))`` and ``γ^T R_T(s)`` at stage
  ``T``, so ``R=? [F "done"]`` is the policy's value at ``s0`` (``init``).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np


def write_policy(path: Path, policy: np.ndarray) -> None:
    """The table of a `[T, S]` or `[S]` deterministic policy (see the module)."""
    policy = np.asarray(policy)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        if policy.ndim == 2:
            w.writerow(["stage", "state", "action"])
            T, S = policy.shape
            for t in range(T):
                w.writerows((t, s, int(policy[t, s])) for s in range(S))
        else:
            w.writerow(["state", "action"])
            w.writerows((s, int(a)) for s, a in enumerate(policy))


def read_policy(path: Path, flag: str = "--policy") -> np.ndarray:
    """A policy table: `[T, S]` (with a ``stage`` column) or `[S]` int32.

    Raises:
      ValueError: one line naming ``flag``, the file and the line: no such file, another
        header, a field that is not a non-negative integer, a (stage, state) missing or
        given twice.
    """
    where = f"{flag} {str(path)!r}"
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{where}: cannot read it ({e})") from None
    lines = text.splitlines()
    header = lines[0].replace(" ", "") if lines else ""
    if header not in ("stage,state,action", "state,action"):
        raise ValueError(
            f"{where}: line 1 must be 'stage,state,action' or 'state,action', got {header!r}"
        )
    width = header.count(",") + 1
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split(",")
        if len(fields) != width or not all(x.strip().isdigit() for x in fields):
            raise ValueError(
                f"{where}: line {number}: expected {width} integers >= 0, got {line!r}"
            )
        rows.append([int(x) for x in fields])
    if not rows:
        raise ValueError(f"{where}: no policy lines")
    table = np.array(rows, np.int64)
    keys, actions = table[:, :-1], table[:, -1]
    shape = tuple(int(n) for n in keys.max(axis=0) + 1)
    policy = np.full(shape, -1, np.int64)
    seen = np.zeros(shape, bool)
    for i, key in enumerate(map(tuple, keys)):
        if seen[key]:
            raise ValueError(
                f"{where}: line {i + 2}: {'stage/state' if width == 3 else 'state'} "
                f"{key} is given twice"
            )
        seen[key] = True
        policy[key] = actions[i]
    if not seen.all():
        missing = tuple(int(x) for x in np.argwhere(~seen)[0])
        raise ValueError(
            f"{where}: no line for {'(stage, state)' if width == 3 else 'state'} "
            f"{missing if width == 3 else missing[0]}"
        )
    if policy.max() >= 2**31:
        raise ValueError(f"{where}: action {policy.max()} is out of range")
    return policy.astype(np.int32)


# --------------------------------------------------------------------------- the chain


def _policy_rows(mdp, policy: np.ndarray):
    """``(targets [S, K], probs [S, K])`` of ``P(s, π(s), ·)`` for a `[S]` decision rule."""
    from ..models import RaggedMDP, SparseMDP, to_padded

    S = mdp.num_states
    if isinstance(mdp, RaggedMDP):  # O(S·A·K) here: the chain export only
        mdp = to_padded(mdp)
    if isinstance(mdp, SparseMDP):
        nxt = np.asarray(mdp.next_states)[np.arange(S), policy]
        return nxt, np.asarray(mdp.probs, np.float64)[np.arange(S), policy]
    probs = np.asarray(mdp.transitions, np.float64)[np.arange(S), policy]
    return np.broadcast_to(np.arange(S), (S, S)), probs


def _chain(mdp, policy: np.ndarray):
    """``(num_states, src, dst, prob, rewards, init, done)`` of the induced chain."""
    S = mdp.num_states
    rewards = np.asarray(mdp.rewards, np.float64)
    if policy.ndim == 1:
        dst, prob = _policy_rows(mdp, policy)
        src = np.broadcast_to(np.arange(S)[:, None], dst.shape)
        keep = (prob > 0) & (dst >= 0)
        return S, src[keep], dst[keep], prob[keep], rewards[np.arange(S), policy], None
    T = policy.shape[0]
    gamma = float(mdp.discount)
    srcs, dsts, probs, state_rewards = [], [], [], []
    for t in range(T):
        dst, prob = _policy_rows(mdp, policy[t])
        src = np.broadcast_to(np.arange(S)[:, None], dst.shape)
        keep = (prob > 0) & (dst >= 0)
        srcs.append(t * S + src[keep])
        dsts.append((t + 1) * S + dst[keep])
        probs.append(prob[keep])
        state_rewards.append(gamma**t * rewards[np.arange(S), policy[t]])
    done = (T + 1) * S
    srcs += [T * S + np.arange(S), np.array([done])]  # stage T -> done, done loops
    dsts += [np.full(S, done), np.array([done])]
    probs += [np.ones(S), np.ones(1)]
    state_rewards += [gamma**T * np.asarray(mdp.terminal_reward, np.float64), np.zeros(1)]
    return (
        done + 1,
        np.concatenate(srcs),
        np.concatenate(dsts),
        np.concatenate(probs),
        np.concatenate(state_rewards),
        done,
    )


def write_chain(stem: Path, mdp, policy, stage) -> list[Path]:
    """``stem.tra``, ``stem.lab`` and ``stem.srew``: the chain ``policy`` induces on ``mdp``
    (see the module), written through ``stage`` (:func:`jaxprivmdp.io._files.atomic_outputs`).
    """
    n, src, dst, prob, rewards, done = _chain(mdp, np.asarray(policy))
    order = np.lexsort((dst, src))
    src, dst, prob = src[order], dst[order], prob[order]
    paths = [stem.with_suffix(s) for s in (".tra", ".lab", ".srew")]
    entries = zip(src.tolist(), dst.tolist(), prob.tolist(), strict=True)
    lines = [f"{n} {src.size}"] + [f"{a} {b} {p!r}" for a, b, p in entries]
    stage(paths[0]).write_text("\n".join(lines) + "\n")
    labels = ['0="init" 1="deadlock"' + (' 2="done"' if done is not None else "")]
    init = mdp.initial_state
    labels.append(f"{init}: 0")
    if done is not None:
        labels.append(f"{done}: 2")
    stage(paths[1]).write_text("\n".join(labels) + "\n")
    nonzero = np.flatnonzero(rewards)
    values = rewards[nonzero].tolist()  # Python floats: repr is the shortest exact form
    entries = zip(nonzero.tolist(), values, strict=True)
    lines = [f"{n} {nonzero.size}"] + [f"{s} {r!r}" for s, r in entries]
    stage(paths[2]).write_text("\n".join(lines) + "\n")
    return paths

"""Explicit model files as PRISM and Storm write or read them, from small models made here.

Nothing here comes from PRISM's or Storm's sources or test files: the writers follow the
formats as their documentation describes them (PRISM's manual, appendix "Explicit Model
Files" and "Exporting The Model"; Storm's documentation of its explicit input format), and
the models are textbook ones (Knuth and Yao's die from fair coin flips) or made up.

A model holds exact probabilities and rewards (:class:`fractions.Fraction`), so that
:func:`exact_values` gives the exact optimal finite-horizon values as an oracle that shares no
code with the loader.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction as F
from pathlib import Path


@dataclasses.dataclass
class Choice:
    dist: list[tuple[int, F]]  # (target, probability), targets ascending
    action: str | None = None


@dataclasses.dataclass
class Rewards:
    name: str | None
    state: dict[int, F] = dataclasses.field(default_factory=dict)
    # MDP: one reward per choice {(s, c): r} (PRISM's action rewards); DTMC: {(s, t): r}.
    transition: dict[tuple[int, int], F] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Model:
    kind: str  # "dtmc" | "mdp"
    choices: list[list[Choice]]  # per state (a DTMC has one choice per state)
    labels: dict[str, set[int]]  # in order; "init" and "deadlock" first, as PRISM writes
    rewards: list[Rewards]

    @property
    def num_states(self) -> int:
        return len(self.choices)

    def transition_reward(self, rew: Rewards, s: int, c: int, t: int) -> F:
        if self.kind == "mdp":
            return rew.transition.get((s, c), F(0))
        return rew.transition.get((s, t), F(0))


# ----------------------------------------------------------------------------- models


def knuth_yao_die() -> Model:
    """Knuth and Yao's fair die from a fair coin (DTMC, 13 states).

    States 0-6 flip a coin; 7-12 are the faces one to six (absorbing). Structures: "flips"
    (state reward 1 in 0-6: expected number of flips 11/3) and "six" (transition reward 1
    on the step into face six: its probability 1/6).
    """
    h = F(1, 2)
    succ = {0: (1, 2), 1: (3, 4), 2: (5, 6), 3: (1, 7), 4: (8, 9), 5: (10, 11), 6: (2, 12)}
    choices = [[Choice(sorted([(a, h), (b, h)]))] for a, b in (succ[s] for s in range(7))]
    choices += [[Choice([(s, F(1))])] for s in range(7, 13)]
    faces = ["one", "two", "three", "four", "five", "six"]
    labels = {"init": {0}, "deadlock": set()}
    labels.update({face: {7 + i} for i, face in enumerate(faces)})
    labels["done"] = set(range(7, 13))
    flips = Rewards("flips", state={s: F(1) for s in range(7)})
    six = Rewards("six", transition={(6, 12): F(1)})
    return Model("dtmc", choices, labels, [flips, six])


def gamble() -> Model:
    """A made-up 5-state MDP with named actions, thirds, state and transition rewards.

    0: "safe" (to 4, reward 1) or "risky" (to 1 w.p. 1/3, to 2 w.p. 2/3); 1: "collect" (to 4,
    reward 4) or "stay"; 2: "retry" (back to 0 or to 3, reward 1/5) or "quit" (to 4); 3: "wait"
    (to 0 w.p. 1/4, else 3); 4: absorbing. Structure "gain": state reward 1/2 in 0 and the
    choice rewards above; structure "cost": state reward 1 in 2 and 3.
    """
    third = F(1, 3)
    choices = [
        [Choice([(4, F(1))], "safe"), Choice([(1, third), (2, 1 - third)], "risky")],
        [Choice([(4, F(1))], "collect"), Choice([(1, F(1))], "stay")],
        [Choice([(0, F(1, 2)), (3, F(1, 2))], "retry"), Choice([(4, F(1))], "quit")],
        [Choice([(0, F(1, 4)), (3, F(3, 4))], "wait")],
        [Choice([(4, F(1))], "loop")],
    ]
    labels = {"init": {0}, "deadlock": set(), "won": {1}, "end": {4}}
    gain = Rewards(
        "gain", state={0: F(1, 2)}, transition={(0, 0): F(1), (1, 0): F(4), (2, 0): F(1, 5)}
    )
    cost = Rewards("cost", state={2: F(1), 3: F(1)})
    return Model("mdp", choices, labels, [gain, cost])


def exact_values(model: Model, structure: int, horizon: int) -> list[F]:
    """Exact max expected total reward over ``horizon`` steps, per state (no terminal)."""
    rew = model.rewards[structure]
    v = [F(0)] * model.num_states
    for _ in range(horizon):
        v = [
            max(
                rew.state.get(s, F(0))
                + sum(p * (model.transition_reward(rew, s, c, t) + v[t]) for t, p in ch.dist)
                for c, ch in enumerate(choices)
            )
            for s, choices in enumerate(model.choices)
        ]
    return v


def expected_rewards(model: Model, structure: int) -> list[list[F]]:
    """Exact expected one-step reward of each (state, choice)."""
    rew = model.rewards[structure]
    return [
        [
            rew.state.get(s, F(0))
            + sum(p * model.transition_reward(rew, s, c, t) for t, p in ch.dist)
            for c, ch in enumerate(choices)
        ]
        for s, choices in enumerate(model.choices)
    ]


# ----------------------------------------------------------------------------- PRISM


def _num(x: F, exact: bool) -> str:
    if exact:
        return str(x)  # "2/5", "1", "-1/5"
    return repr(float(x))


def write_prism(
    model: Model,
    folder: Path,
    stem: str = "model",
    *,
    reward_headers: bool = True,
    dev_headers: bool = False,
    rows: bool = False,
    exact: bool = False,
    actions: bool = True,
    parts: tuple[str, ...] = ("tra", "srew", "trew", "lab"),
) -> Path:
    """The files of ``prism model.prism -exportmodel model.tra,srew,trew,lab``.

    ``reward_headers``: PRISM ≥ 4.8's ``# Reward structure "name"`` / ``# State rewards``
    comments; ``dev_headers``: the development version's ``# Transitions (MDP)`` and ``#
    Labels``; ``rows``: ``-exportmodel ...:rows``; ``exact``: ``-exact`` (rationals);
    ``actions``: action names on the transitions. Several reward structures go to
    ``model1.srew``, ``model2.srew``, ... as PRISM names them.
    """
    folder.mkdir(parents=True, exist_ok=True)
    mdp = model.kind == "mdp"
    S = model.num_states
    n_choices = sum(len(c) for c in model.choices)
    n_trans = sum(len(ch.dist) for c in model.choices for ch in c)
    num = lambda x: _num(x, exact)  # noqa: E731
    if "tra" in parts:
        # The rows format has no header comment (PRISM writes those in plain format only).
        out = [f"# Transitions ({model.kind.upper()})"] if dev_headers and not rows else []
        out.append(f"{S} {n_choices} {n_trans}" if mdp else f"{S} {n_trans}")
        for s, choices in enumerate(model.choices):
            for c, ch in enumerate(choices):
                act = f" {ch.action}" if actions and ch.action else ""
                if rows:
                    out.append(f"{s}" + "".join(f" {num(p)}:{t}" for t, p in ch.dist) + act)
                    continue
                for t, p in ch.dist:
                    out.append(f"{s} {c} {t} {num(p)}{act}" if mdp else f"{s} {t} {num(p)}{act}")
        (folder / f"{stem}.tra").write_text("\n".join(out) + "\n")
    for i, rew in enumerate(model.rewards):
        suffix = str(i + 1) if len(model.rewards) > 1 else ""
        head = []
        if reward_headers:
            head = ["# Reward structure" + (f' "{rew.name}"' if rew.name else "")]
        if "srew" in parts:
            nonzero = sorted((s, r) for s, r in rew.state.items() if r != 0)
            out = head + (["# State rewards"] if reward_headers else [])
            out.append(f"{S} {len(nonzero)}")
            out += [f"{s} {num(r)}" for s, r in nonzero]
            (folder / f"{stem}{suffix}.srew").write_text("\n".join(out) + "\n")
        if "trew" in parts:
            body = []
            count = 0
            for s, choices in enumerate(model.choices):
                for c, ch in enumerate(choices):
                    pairs = [(t, model.transition_reward(rew, s, c, t)) for t, _ in ch.dist]
                    pairs = [(t, r) for t, r in pairs if r != 0]
                    count += len(pairs)
                    if rows:
                        body.append(f"{s}" + "".join(f" {num(r)}:{t}" for t, r in pairs))
                    elif mdp:
                        body += [f"{s} {c} {t} {num(r)}" for t, r in pairs]
                    else:
                        body += [f"{s} {t} {num(r)}" for t, r in pairs]
            out = head + ["# Transition rewards"] if reward_headers and not rows else []
            out.append(f"{S} {n_choices} {count}" if mdp else f"{S} {count}")
            (folder / f"{stem}{suffix}.trew").write_text("\n".join(out + body) + "\n")
    if "lab" in parts:
        out = ["# Labels"] if dev_headers else []
        names = list(model.labels)
        out.append(" ".join(f'{i}="{name}"' for i, name in enumerate(names)))
        for s in range(S):
            which = [str(i) for i, name in enumerate(names) if s in model.labels[name]]
            if which:
                out.append(f"{s}: " + " ".join(which))
        (folder / f"{stem}.lab").write_text("\n".join(out) + "\n")
    return folder / f"{stem}.tra"


# ----------------------------------------------------------------------------- Storm


def write_storm(model: Model, folder: Path, stem: str = "model") -> Path:
    """Storm's explicit input: ``model.tra`` (first line ``dtmc``/``mdp``), ``model.lab``
    (``#DECLARATION`` ... ``#END``), and per reward structure ``model.NAME.state.rew`` and
    ``model.NAME.trans.rew`` without header (Storm's ``--staterew``/``--transrew`` files;
    one unnamed structure: ``model.state.rew``, ``model.trans.rew``)."""
    folder.mkdir(parents=True, exist_ok=True)
    mdp = model.kind == "mdp"
    out = [model.kind]
    for s, choices in enumerate(model.choices):
        for c, ch in enumerate(choices):
            for t, p in ch.dist:
                out.append(f"{s} {c} {t} {float(p)!r}" if mdp else f"{s} {t} {float(p)!r}")
    (folder / f"{stem}.tra").write_text("\n".join(out) + "\n")
    out = ["#DECLARATION", " ".join(model.labels), "#END"]
    for s in range(model.num_states):
        which = [name for name, states in model.labels.items() if s in states]
        if which:
            out.append(f"{s} " + " ".join(which))
    (folder / f"{stem}.lab").write_text("\n".join(out) + "\n")
    for rew in model.rewards:
        middle = f".{rew.name}" if len(model.rewards) > 1 else ""
        state = [f"{s} {float(r)!r}" for s, r in sorted(rew.state.items()) if r != 0]
        if state:
            (folder / f"{stem}{middle}.state.rew").write_text("\n".join(state) + "\n")
        trans = []
        for s, choices in enumerate(model.choices):
            for c, ch in enumerate(choices):
                for t, _ in ch.dist:
                    r = model.transition_reward(rew, s, c, t)
                    if r != 0:
                        trans.append(
                            f"{s} {c} {t} {float(r)!r}" if mdp else f"{s} {t} {float(r)!r}"
                        )
        if trans:
            (folder / f"{stem}{middle}.trans.rew").write_text("\n".join(trans) + "\n")
    return folder / f"{stem}.tra"


# ----------------------------------------------------------------------------- case studies
#
# Published PRISM/Storm results reproduced by tests/test_prism_acceptance.py, on models whose
# state spaces are built here from the protocols' definitions (and, for stormpy, on PRISM
# programs written here from the same definitions).

# Knuth and Yao's die: the coin flips of states 0-6 (pairs of successors); 7-12 are the faces.
_KY = {0: (1, 2), 1: (3, 4), 2: (5, 6), 3: (1, 7), 4: (8, 9), 5: (10, 11), 6: (2, 12)}


def _explore(initial, moves) -> tuple[list, list]:
    """Breadth-first: the reachable states (``initial`` first) and each one's choices
    ``[(action, [(probability, state index)])]`` from ``moves(state)``."""
    index, states, choices = {initial: 0}, [initial], []
    for state in states:  # grows while it is read
        out = []
        for action, dist in moves(state):
            targets = []
            for p, nxt in dist:
                if nxt not in index:
                    index[nxt] = len(states)
                    states.append(nxt)
                targets.append((p, index[nxt]))
            out.append((action, targets))
        choices.append(out)
    return states, choices


def _model(kind, states, choices, labels, rewards) -> Model:
    """A :class:`Model` from explored choices (probabilities of one target summed)."""
    table = []
    for out in choices:
        row = []
        for action, targets in out:
            dist: dict[int, F] = {}
            for p, t in targets:
                dist[t] = dist.get(t, F(0)) + p
            row.append(Choice(sorted(dist.items()), action))
        table.append(row)
    named = {"init": {0}, "deadlock": set()}
    named.update({name: {i for i, s in enumerate(states) if holds(s)} for name, holds in labels})
    return Model(kind, table, named, rewards(table))


def two_dice() -> Model:
    """Two Knuth-Yao dice, each thrown by fair coin flips; a scheduler picks which die flips
    next (an MDP; a single self-loop "done" once both show a face).

    Labels ``sum2`` ... ``sum12`` (both done, faces summing to k) and ``done``; structure
    "flips": 1 per coin flip. Published: P[F sum2] = 1/36 for every scheduler, expected
    flips 22/3 (11/3 per die).
    """
    half = F(1, 2)

    def moves(state):
        a, b = state
        if a >= 7 and b >= 7:
            return [("done", [(F(1), state)])]
        out = []
        if a < 7:
            out.append(("first", [(half, (t, b)) for t in _KY[a]]))
        if b < 7:
            out.append(("second", [(half, (a, t)) for t in _KY[b]]))
        return out

    states, choices = _explore((0, 0), moves)

    def total(k):
        return lambda s: s[0] >= 7 and s[1] >= 7 and (s[0] - 6) + (s[1] - 6) == k

    labels = [(f"sum{k}", total(k)) for k in range(2, 13)]
    labels.append(("done", lambda s: s[0] >= 7 and s[1] >= 7))

    def flips(table):
        reward = {(s, c): F(1) for s, row in enumerate(table) for c, ch in enumerate(row)}
        return [Rewards("flips", transition={k: v for k, v in reward.items() if _flip(table, k)})]

    return _model("mdp", states, choices, labels, flips)


def _flip(table, key) -> bool:
    s, c = key
    return table[s][c].action in ("first", "second")


# The asynchronous leader election of Itai and Rodeh (1990), in the form of PRISM's case study
# of it: N processes in a ring; an active process picks a random bit and sends it to its
# successor, becomes inactive if it picked 0 and its predecessor 1, then sends a counter round
# the ring to learn whether it is the only active one (leader) or must pick again. Inactive
# processes relay. Messages are synchronous hand-overs between neighbours, in any order a
# scheduler picks. A process: (counter, phase, bit, received, sent); phase 0 picks, 1 waits
# for its predecessor's bit, 2 active, 3 inactive, 4 leader; received/sent: 0 nothing, 1 the
# bit, 2 the counter.


def _send_bit(proc):
    c, phase, bit, got, sent = proc
    if sent == 0 and (phase == 1 or phase == 2 or (phase == 3 and got > 0)):
        return (c, phase, bit if phase == 1 else 0, got, 1)
    return None


def _receive_bit(proc, their_bit):
    c, phase, bit, got, sent = proc
    if got != 0:
        return None
    if phase == 1:
        return (c, 3 if (bit, their_bit) == (0, 1) else 2, bit, 1, sent)
    if phase == 3:
        return (c, 3, their_bit, 1, sent)  # relays the bit it received
    return None


def _send_counter(proc):
    c, phase, bit, got, sent = proc
    if phase == 2 and sent == 1 and got == 1:
        return (c, 2, bit, 1, 2)
    if sent == 1 and got == 2 and phase in (2, 3):
        return (0, 0 if phase == 2 else 3, 0, 0, 0)  # a new round (inactive: reset)
    return None


def _receive_counter(proc, their_count, n):
    c, phase, bit, got, sent = proc
    if got != 1:
        return None
    if phase == 2 and sent < 2:
        return (c, 2, bit, 2, sent)
    if phase == 2:  # its own counter has gone round: alone (leader) or pick again
        return (0, 4 if their_count == n - 1 else 0, 0, 0, 0)
    if phase == 3 and their_count < n - 1:
        return (their_count + 1, 3, bit, 2, sent)
    return None


def leader_election(n: int = 4) -> Model:
    """Itai and Rodeh's asynchronous leader election in a ring of ``n`` processes (an MDP).

    Label ``elected`` (some process is leader); structure "rounds": 1 per counter handed
    from process 1 to process 2. Published for n = 4 (PRISM's case study; Storm's tests):
    Pmin = Pmax [F<=25 elected] = 1/16, Rmin = Rmax [F elected] = 30/7.
    """
    half = F(1, 2)

    def moves(state):
        out = []
        for i, proc in enumerate(state):
            if proc[1] == 0:
                picks = [(half, proc[:1] + (1, b) + proc[3:]) for b in (0, 1)]
                out.append((f"pick{i + 1}", [(p, _replace(state, i, q)) for p, q in picks]))
        for i, proc in enumerate(state):
            j = (i + 1) % n
            for name, send, receive in (
                ("p", _send_bit(proc), _receive_bit(state[j], proc[2])),
                ("c", _send_counter(proc), _receive_counter(state[j], proc[0], n)),
            ):
                if send is not None and receive is not None:
                    nxt = _replace(_replace(state, i, send), j, receive)
                    out.append((f"{name}{i + 1}{j + 1}", [(F(1), nxt)]))
        if all(proc[1] in (3, 4) for proc in state):
            out.append(("done", [(F(1), state)]))
        return out

    states, choices = _explore(((0, 0, 0, 0, 0),) * n, moves)
    labels = [("elected", lambda s: any(proc[1] == 4 for proc in s))]

    def rounds(table):
        transition = {
            (s, c): F(1)
            for s, row in enumerate(table)
            for c, ch in enumerate(row)
            if ch.action == "c12"
        }
        return [Rewards("rounds", transition=transition)]

    return _model("mdp", states, choices, labels, rounds)


def _replace(state, i, proc):
    return state[:i] + (proc,) + state[i + 1 :]


# ----------------------------------------------------------------------------- PRISM programs
#
# The same models in PRISM's language, written here (with the generators' state encodings),
# for Storm to build: tests/test_prism_acceptance.py compares what it builds with the
# generators above.


def _ky_commands(var: str) -> list[str]:
    """Knuth and Yao's coin flips of one die, ``var`` in 0..12 (12 = face six)."""
    return [f"  [] {var}={s} -> 0.5:({var}'={a}) + 0.5:({var}'={b});" for s, (a, b) in _KY.items()]


def die_program() -> str:
    """:func:`knuth_yao_die` (its labels and its "flips" structure) as a PRISM DTMC."""
    faces = ["one", "two", "three", "four", "five", "six"]
    return "\n".join(
        ["dtmc", "", "module die", "  s : [0..12] init 0;", *_ky_commands("s")]
        + ["  [] s>=7 -> true;", "endmodule", "", 'rewards "flips"', "  s<7 : 1;", "endrewards"]
        + [f'label "{face}" = s={7 + i};' for i, face in enumerate(faces)]
        + ['label "done" = s>=7;', ""]
    )


def two_dice_program() -> str:
    """:func:`two_dice` as a PRISM MDP (the self-loop once both are done in ``first``)."""
    lines = ["mdp", "", "module first", "  a : [0..12] init 0;", *_ky_commands("a")]
    lines += ["  [] a>=7 & b>=7 -> true;", "endmodule", "", "module second"]
    lines += ["  b : [0..12] init 0;", *_ky_commands("b"), "endmodule", ""]
    lines += ['rewards "flips"', "  [] a<7 | b<7 : 1;", "endrewards"]
    lines += [f'label "sum{k}" = a>=7 & b>=7 & a+b-12={k};' for k in range(2, 13)]
    return "\n".join([*lines, 'label "done" = a>=7 & b>=7;', ""])


def leader_program(n: int = 4) -> str:
    """:func:`leader_election` as a PRISM MDP: one module per process, the hand-overs of a
    bit (``bit_i_j``) and of the counter (``cnt_i_j``) synchronize sender and receiver."""
    lines = ["mdp", "", f"const int N = {n};", ""]
    for i in range(1, n + 1):
        j, h = i % n + 1, (i - 2) % n + 1  # successor, predecessor
        c, ph, b, got, sent = (f"{v}{i}" for v in ("c", "ph", "b", "got", "sent"))
        reset = f"({c}'=0) & ({b}'=0) & ({got}'=0) & ({sent}'=0)"
        lines += [
            f"module process{i}",
            f"  {c} : [0..N-1] init 0;",
            f"  {ph} : [0..4] init 0;",
            f"  {b} : [0..1] init 0;",
            f"  {got} : [0..2] init 0;",
            f"  {sent} : [0..2] init 0;",
            f"  [] {ph}=0 -> 0.5:({ph}'=1) & ({b}'=0) + 0.5:({ph}'=1) & ({b}'=1);",
            f"  [bit_{i}_{j}] {sent}=0 & ({ph}=1 | {ph}=2 | ({ph}=3 & {got}>0)) -> "
            f"({sent}'=1) & ({b}'=({ph}=1 ? {b} : 0));",
            f"  [bit_{h}_{i}] {got}=0 & {ph}=1 -> ({ph}'=({b}=0 & b{h}=1 ? 3 : 2)) & ({got}'=1);",
            f"  [bit_{h}_{i}] {got}=0 & {ph}=3 -> ({b}'=b{h}) & ({got}'=1);",
            f"  [cnt_{i}_{j}] {ph}=2 & {sent}=1 & {got}=1 -> ({sent}'=2);",
            f"  [cnt_{i}_{j}] {sent}=1 & {got}=2 & ({ph}=2 | {ph}=3) -> "
            f"({ph}'=({ph}=2 ? 0 : 3)) & {reset};",
            f"  [cnt_{h}_{i}] {got}=1 & {ph}=2 & {sent}<2 -> ({got}'=2);",
            f"  [cnt_{h}_{i}] {got}=1 & {ph}=2 & {sent}=2 -> ({ph}'=(c{h}=N-1 ? 4 : 0)) & {reset};",
            f"  [cnt_{h}_{i}] {got}=1 & {ph}=3 & c{h}<N-1 -> ({c}'=c{h}+1) & ({got}'=2);",
            f"  [done] {ph}=3 | {ph}=4 -> true;",
            "endmodule",
            "",
        ]
    lines += ['rewards "rounds"', "  [cnt_1_2] true : 1;", "endrewards"]
    elected = " | ".join(f"ph{i}=4" for i in range(1, n + 1))
    return "\n".join([*lines, f'label "elected" = {elected};', ""])


# The gamble model of gamble() as a PRISM source (actions named, two reward structures),
# for the tests that build it with Storm.
GAMBLE_PRISM = """mdp
module gamble
  s : [0..4] init 0;
  [safe] s=0 -> (s'=4);
  [risky] s=0 -> 1/3:(s'=1) + 2/3:(s'=2);
  [collect] s=1 -> (s'=4);
  [stay] s=1 -> (s'=1);
  [retry] s=2 -> 1/2:(s'=0) + 1/2:(s'=3);
  [quit] s=2 -> (s'=4);
  [wait] s=3 -> 1/4:(s'=0) + 3/4:(s'=3);
  [loop] s=4 -> (s'=4);
endmodule
rewards "gain"
  s=0 : 1/2;
  [safe] true : 1;
  [collect] true : 4;
  [retry] true : 1/5;
endrewards
rewards "cost"
  s=2 | s=3 : 1;
endrewards
label "won" = s=1;
label "end" = s=4;
"""

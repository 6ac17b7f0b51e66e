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

"""PRISM sources for ``bench_check.py``: families of the kinds the QVBS holds, written here.

Nothing is copied from the QVBS or PRISM's case studies (their licences vary): each source is
a small protocol of the same kind, written from its textbook description, generated as a
string with its size parameters, so that Storm builds 10³ to 10⁶ states:

- ``consensus``: a shared-coin randomized consensus (Aspnes and Herlihy's scheme): ``N``
  processes flip coins and move a shared counter in ``[0, 2(K+1)N]`` until it leaves the
  middle band; an MDP (the interleaving is the scheduler's). Slow chains: the counter's
  random walk.
- ``brp``: a bounded retransmission protocol: ``N`` chunks, each resent at most ``MAX``
  times over a lossy channel and a lossy acknowledgement channel; a DTMC.
- ``crowds``: anonymous routing through a crowd (Reiter and Rubin): ``RUNS`` runs, each
  forwarded among ``M`` honest members with probability ``PF`` until delivered, a
  corrupt member recording whom it saw; a DTMC whose states count the observations.
- ``csma``: ``N`` stations on a shared channel with binary exponential backoff (collisions up
  to ``K``); an MDP (the interleaving).
- ``zeroconf``: address configuration: pick an address (in use with probability ``q``),
  send ``K`` probes, each answered (if in use) unless lost, waiting ``W`` ticks for a reply;
  the scheduler may probe early. Long timer chains: many iterations.
- ``wlan``: two stations' backoff over ``W``-tick slots with a ``time`` reward: the expected
  time until both have sent; an MDP.
"""

from __future__ import annotations

from typing import NamedTuple


class Case(NamedTuple):
    """One (model, property) of the benchmark."""

    family: str
    constants: str  # Storm's "N=3,K=2"
    prop: str
    reward: str | None  # the reward structure an R property reads (its name in the source)

    @property
    def name(self) -> str:
        return f"{self.family}[{self.constants}] {self.prop}"


def consensus_source(n: int) -> str:
    lines = [
        "mdp",
        f"const int N = {n};",
        "const int K;",
        "const int range = 2*(K+1)*N;",
        "const int left = N;",
        "const int right = 2*(K+1)*N - N;",
        "global counter : [0..range] init (K+1)*N;",
    ]
    for i in range(1, n + 1):
        pc, coin = f"pc{i}", f"coin{i}"
        lines += [
            f"module process{i}",
            f"  {pc} : [0..3] init 0;",  # 0 flip, 1 write, 2 check, 3 decided
            f"  {coin} : [0..1] init 0;",
            f"  [] {pc}=0 -> 0.5:({coin}'=0)&({pc}'=1) + 0.5:({coin}'=1)&({pc}'=1);",
            f"  [] {pc}=1 & {coin}=0 -> (counter'=max(0,counter-1))&({pc}'=2)&({coin}'=0);",
            f"  [] {pc}=1 & {coin}=1 -> (counter'=min(range,counter+1))&({pc}'=2)&({coin}'=0);",
            f"  [] {pc}=2 & counter<=left -> ({pc}'=3)&({coin}'=0);",
            f"  [] {pc}=2 & counter>=right -> ({pc}'=3)&({coin}'=1);",
            f"  [] {pc}=2 & counter>left & counter<right -> ({pc}'=0);",
            f"  [done] {pc}=3 -> true;",
            "endmodule",
        ]
    done = " & ".join(f"pc{i}=3" for i in range(1, n + 1))
    agree = " & ".join(f"coin{i}=1" for i in range(1, n + 1))
    lines += [
        'rewards "steps"',
        f"  [] !({done}) : 1;",
        "endrewards",
        f'label "finished" = {done};',
        f'label "all_coins_equal_1" = {agree};',
    ]
    return "\n".join(lines) + "\n"


def _brp() -> str:
    return """dtmc
const int N;
const int MAX;
const double pL = 0.02;
const double pK = 0.01;
module sender
  i : [0..N] init 0;       // chunks delivered
  r : [0..MAX] init 0;     // retransmissions of the current chunk
  s : [0..5] init 0;       // 0 send, 1 frame in K, 2 ack in L, 3 timeout, 4 done, 5 failed
  [] s=0 -> (s'=1);
  [] s=1 -> (1-pK):(s'=2) + pK:(s'=3);
  [] s=2 -> (1-pL):(s'=(i+1=N ? 4 : 0))&(i'=i+1)&(r'=0) + pL:(s'=3);
  [] s=3 & r<MAX -> (s'=0)&(r'=r+1);
  [] s=3 & r=MAX -> (s'=5);
  [] s>=4 -> true;
endmodule
rewards "time"
  s<4 : 1;
endrewards
label "success" = s=4;
label "failure" = s=5;
"""


def crowds_source(m: int) -> str:
    """``m`` honest members besides the sender; member 0 is the sender."""
    seen = [f"seen{j}" for j in range(m + 1)]
    lines = [
        "dtmc",
        "const int RUNS;",
        "const double PF = 0.8;",
        "const double badC = 0.09;",
        "module crowds",
        "  run : [0..RUNS] init 0;",
        "  phase : [0..3] init 0;",  # 0 new run, 1 first hop, 2 forwarding, 3 all runs done
        *(f"  {v} : [0..RUNS] init 0;" for v in seen),
        "  [] phase=0 & run<RUNS -> (phase'=1)&(run'=run+1);",
        "  [] phase=0 & run=RUNS -> (phase'=3);",
        # the sender hands the message to a random member: corrupt (badC) sees the sender
        "  [] phase=1 -> badC:(seen0'=min(RUNS,seen0+1))&(phase'=0) + (1-badC):(phase'=2);",
    ]
    # an honest member forwards (PF) to a member that may be corrupt, which then sees one of
    # the honest ones uniformly, or delivers (1-PF)
    share = f"PF*badC/{m + 1}"
    hits = " + ".join(f"{share}:({v}'=min(RUNS,{v}+1))&(phase'=0)" for v in seen)
    lines += [
        f"  [] phase=2 -> {hits} + PF*(1-badC):(phase'=2) + (1-PF):(phase'=0);",
        "  [] phase=3 -> true;",
        "endmodule",
        'label "observe0Greater1" = phase=3 & seen0>1;',
        'label "done" = phase=3;',
    ]
    return "\n".join(lines) + "\n"


KMAX = 8  # the largest K a csma source supports


def csma_source(n: int) -> str:
    """``n`` stations; after the ``c``-th collision a station backs off uniformly over
    ``2^min(c, K)`` slots (binary exponential backoff); it gives up after ``K + 1``."""
    lines = ["mdp", "const int K;", "global ch : [0..2] init 0;"]  # stations sending (2: collision)
    for i in range(1, n + 1):
        s, c, b = f"s{i}", f"c{i}", f"b{i}"
        lines += [
            f"module station{i}",
            f"  {s} : [0..4] init 0;",  # 0 sense, 1 sending, 2 backoff, 3 sent, 4 gave up
            f"  {c} : [0..K] init 0;",
            f"  {b} : [0..pow(2,K)-1] init 0;",
            f"  [] {s}=0 & ch<2 -> ({s}'=1)&(ch'=ch+1);",
            f"  [] {s}=1 & ch=1 -> ({s}'=3)&(ch'=0);",
            f"  [] {s}=1 & ch=2 & {c}=K -> ({s}'=4)&(ch'=1);",
            f"  [] {s}=2 & {b}>0 -> ({b}'={b}-1);",
            f"  [] {s}=2 & {b}=0 -> ({s}'=0);",
            f"  [done] {s}>=3 -> true;",
        ]
        for v in range(KMAX):  # the (v+1)-th collision: back off over 2^(v+1) slots
            w = 2 ** (v + 1)
            draws = " + ".join(
                f"1/{w}:({s}'=2)&(ch'=1)&({c}'={v + 1})&({b}'={x})" for x in range(w)
            )
            lines.append(f"  [] {s}=1 & ch=2 & {c}={v} & {c}<K -> {draws};")
        lines += ["endmodule"]
    every = " & ".join(f"s{i}=3" for i in range(1, n + 1))
    some = " | ".join(f"s{i}=4" for i in range(1, n + 1))
    finished = " & ".join(f"s{i}>=3" for i in range(1, n + 1))
    lines += [
        'rewards "time"',
        f"  [] !({finished}) : 1;",
        "endrewards",
        f'label "all_delivered" = {every};',
        f'label "some_gave_up" = {some};',
        f'label "finished" = {finished};',
    ]
    return "\n".join(lines) + "\n"


def _zeroconf() -> str:
    return """mdp
const int K;
const int W;
const double q = 1000/65024;
const double lost = 0.1;
module host
  phase : [0..4] init 0;   // 0 choose, 1 probe, 2 wait, 3 configured, 4 error
  used : bool init false;
  k : [0..K] init 0;
  t : [0..W] init 0;
  [] phase=0 -> q:(used'=true)&(phase'=1)&(k'=0)&(t'=0)
              + (1-q):(used'=false)&(phase'=1)&(k'=0)&(t'=0);
  [] phase=1 & k<K -> (phase'=2)&(k'=k+1)&(t'=0);
  [] phase=1 & k=K -> (phase'=(used ? 4 : 3));
  [wait] phase=2 & t<W & used -> 1/W*(1-lost):(phase'=0) + (1-1/W*(1-lost)):(t'=t+1);
  [wait] phase=2 & t<W & !used -> (t'=t+1);
  [early] phase=2 & t>=W/2 -> (phase'=1);
  [] phase=2 & t=W -> (phase'=1);
  [] phase>=3 -> true;
endmodule
rewards "time"
  [wait] true : 1;
  [early] true : 1;
endrewards
label "error" = phase=4;
label "configured" = phase=3;
label "done" = phase>=3;
"""


def _wlan() -> str:
    return """mdp
const int W;
const int MAXB = 3;
global ch : [0..2] init 0;
module station1
  s1 : [0..4] init 0;       // 0 wait DIFS, 1 backoff, 2 sending, 3 sent
  b1 : [0..MAXB] init 0;    // backoff exponent
  x1 : [0..W] init 0;       // ticks in the current slot
  w1 : [0..7] init 0;       // backoff slots left
  [tick] s1=0 & x1<W -> (x1'=x1+1);
  [tick] s1=0 & x1=W -> (s1'=1)&(x1'=0);
  [tick] s1=1 & w1>0 & x1<W -> (x1'=x1+1);
  [tick] s1=1 & w1>0 & x1=W -> (w1'=w1-1)&(x1'=0);
  [] s1=1 & w1=0 & ch<2 -> (s1'=2)&(ch'=ch+1)&(x1'=0);
  [tick] s1=2 & x1<W -> (x1'=x1+1);
  [] s1=2 & x1=W & ch=1 -> (s1'=3)&(ch'=0);
  [] s1=2 & x1=W & ch=2 -> 1/2:(s1'=1)&(ch'=ch-1)&(x1'=0)&(b1'=min(MAXB,b1+1))&(w1'=0)
                         + 1/2:(s1'=1)&(ch'=ch-1)&(x1'=0)&(b1'=min(MAXB,b1+1))&(w1'=min(7,2*b1+1));
  [tick] s1=3 -> true;
endmodule
module station2 = station1[s1=s2, b1=b2, x1=x2, w1=w2] endmodule
rewards "time"
  [tick] true : 1;
endrewards
label "both_sent" = s1=3 & s2=3;
"""


def family_source(family: str, constants: str) -> tuple[str, str]:
    """The source and the constants Storm instantiates, for one case."""
    values = dict(kv.split("=") for kv in constants.split(","))
    if family == "consensus":
        n = int(values.pop("N"))
        return consensus_source(n), ",".join(f"{k}={v}" for k, v in values.items())
    if family == "csma":
        n = int(values.pop("N"))
        return csma_source(n), ",".join(f"{k}={v}" for k, v in values.items())
    if family == "crowds":
        m = int(values.pop("M"))
        return crowds_source(m), ",".join(f"{k}={v}" for k, v in values.items())
    return globals()[f"_{family}"](), constants

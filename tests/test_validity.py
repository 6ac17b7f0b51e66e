"""Validity of what the library certifies, by Monte Carlo over releases.

``bound="certified"`` promises: with probability ``>= 1 − β`` over the mechanism,
``v̲_t(s) <= V_t^π(s) <= v̄_t(s)`` on the **true** MDP at every stage and state at once, for
every policy (here ``π̄`` from :func:`jaxprivmdp.synthesize`). The promise must hold for every
combination of model (dense, sparse) × mechanism (Dirichlet, Gaussian, Laplace) ×
``support_aware`` × dtype (float32, float64) × horizon (finite, discounted). For each
combination ``N`` releases are drawn, ``π̄``'s true value is computed exactly (float64 NumPy on
the model as stored, no tolerance) and the joint coverage over all stages and states is
tested against ``1 − β`` with an exact one-sided binomial test at ``p < 1e-3``. The certified
bounds are conservative (coverage near 1); what the test catches is a configuration where
coverage collapses (0 to 0.7 here), as it did when the support was read off the release.

``"paper"`` and ``"exact"`` make a statement about ``E[V | P̄]`` that frequencies against the
true MDP cannot check; for them (and for ``"certified"``) only facts that hold release by
release are checked: ``v̲ <= V̄^π̄ <= v̄`` on the privatized MDP at every stage and state, and
the Dirichlet's Beta boxes contain ``P̄``.

The model (:func:`validity_arrays`) has tiny entries (1e-4, 1e-3) next to dominant ones,
structural zeros, masked actions and "gateway" rows whose only way to the rewarding state is a
tiny entry: a set that drops that entry (a projection or an underflowed gamma draw put a 0
there) misses the true value by far more than rounding.

Cost: one compilation per (dtype, horizon) holds every combination; each dtype's grid runs in
a subprocess (x64 on for float64) while this process runs the regressions below.
The default run's float64 grid computes the certified set only (the release-by-release check
of every set runs on the float32 grid, whose rounding margins are the tight ones); the tests
marked slow add the float64 release-by-release check and repeat the grid at other noise
levels with 1000 releases. Releases are vmapped in chunks of 200 (:data:`CHUNK`): jaxlib
0.10.2's batched LU splits larger batches over XLA:CPU's thread pool and blocks on them, and
the discounted groups hold many independent LUs; on a 2-core machine two of them at once
deadlocked the pool (1000 releases, float64). A grid subprocess that still hangs is killed
after :data:`GRID_TIMEOUT` and its tests fail.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import jax
import numpy as np
import pytest
from scipy import special, stats

import jaxprivmdp as jp

pytestmark = pytest.mark.statistical

MECHANISM = {"dirichlet": jp.Dirichlet, "gaussian": jp.Gaussian, "laplace": jp.Laplace}
SET = {"paper": jp.PaperSet, "exact": jp.ExactSet, "certified": jp.CertifiedSet}
BETA = 0.3  # large, so that a few hundred releases give power against a collapse
P_VALUE = 1e-3  # a configuration fails only when its coverage is significantly low
N_RELEASES = 200
N_RELEASES_SLOW = 1000
GRID_TIMEOUT = 1200  # seconds for one dtype's grid subprocess (about 30 s on 2 idle cores)
MECHANISMS = ("dirichlet", "gaussian", "laplace")
BOUNDS = ("paper", "exact", "certified")
KINDS = ("dense", "sparse")
HORIZON = 4
HORIZONS = (HORIZON, None)
DISCOUNT = 0.9
# k for the Dirichlet mechanism (k·1e-4 = 5e-4: gamma draws underflow in float32 and often
# in float64), σ and λ for the additive ones (the projection often zeroes a 1e-4 entry).
PARAMETERS = {"dirichlet": 5.0, "gaussian": 0.05, "laplace": 0.05}
SLOW_PARAMETERS = [
    {"dirichlet": 1.0, "gaussian": 0.01, "laplace": 0.01},
    {"dirichlet": 100.0, "gaussian": 0.3, "laplace": 0.3},
]

# ------------------------------------------------------------------------------ the model

JACKPOT, SINK = 4, 5


def validity_arrays():
    """``(P, R, RT, mask)`` in float64: six states, two actions.

    State 0 has a full-support row (four 1e-4 entries, one 0.9) and one with structural
    zeros; states 2 and 3 have a single allowed action, a *gateway* to the jackpot (1e-3 and
    1e-4) whose remaining mass goes to the zero-reward sink; 4 (the jackpot, reward 1) and 5
    (the sink) are absorbing point masses.
    """
    S, A = 6, 2
    P = np.zeros((S, A, S))
    P[0, 0] = [1e-4, 0.9, 0.0996, 1e-4, 1e-4, 1e-4]
    P[0, 1] = [0.0, 0.05, 0.9499, 0.0, 1e-4, 0.0]
    P[1, 0] = [0.9999, 0.0, 0.0, 0.0, 1e-4, 0.0]
    P[1, 1] = [0.0, 0.0, 0.5, 0.5, 0.0, 0.0]
    P[2, 0] = [0.0, 0.0, 0.0, 0.0, 1e-3, 0.999]
    P[3, 0] = [0.0, 0.0, 0.0, 0.0, 1e-4, 0.9999]
    P[JACKPOT, :, JACKPOT] = 1.0
    P[SINK, :, SINK] = 1.0
    mask = np.ones((S, A), bool)
    mask[[2, 3], 1] = False  # π̄ must use the gateways there
    R = np.zeros((S, A))
    R[0, 1], R[1, 0], R[2, 0], R[3, 0] = 0.02, 0.05, 0.1, 0.1
    R[JACKPOT] = 1.0
    RT = np.zeros(S)
    RT[JACKPOT] = 1.0
    return P, R, RT, mask


def validity_model(dtype, horizon):
    P, R, RT, mask = validity_arrays()
    if horizon is None:
        return jp.make_mdp(P, R, discount=DISCOUNT, action_mask=mask, dtype=dtype)
    return jp.make_mdp(
        P, R, terminal_reward=RT, horizon=horizon, discount=1.0, action_mask=mask, dtype=dtype
    )


# ---------------------------------------------------------------------------- the oracles


def stored(mdp):
    """The model's arrays as stored (in its dtype), exactly, in float64."""
    f = lambda x: np.asarray(x, np.float64)  # noqa: E731
    return f(mdp.transitions), f(mdp.rewards), f(mdp.terminal_reward), float(mdp.discount)


def stored_validity_arrays(dtype, horizon):
    """:func:`stored` of :func:`validity_model` without building it (float64 needs x64)."""
    if dtype == "float32":
        return stored(validity_model(np.float32, horizon))
    P, R, RT, _ = validity_arrays()
    if horizon is None:
        return P, R, np.zeros_like(RT), DISCOUNT
    return P, R, RT, 1.0


def dense_rows(model, probs):
    """`[..., S, A, S]` float64 rows from a model's layout (a sparse model's lists)."""
    probs = np.asarray(probs, np.float64)
    if not isinstance(model, jp.SparseMDP):
        return probs
    idx = np.asarray(model.next_states)
    onehot = (idx[..., None] == np.arange(model.num_states)) & (idx >= 0)[..., None]
    return np.einsum("...sak,sakt->...sat", probs, onehot.astype(np.float64))


def exact_values(P, R, RT, gamma, horizon, policy):
    """``V^π`` in float64 for `[N, T, S]` / `[N, S]` deterministic policies.

    ``P`` is `[S, A, S]` (one model) or `[N, S, A, S]` (one per release). Backward recursion,
    or ``(I − γ P_π)⁻¹ r_π`` by a float64 solve: exact to ~1e-15, far below any float32 or
    float64 rounding margin of the bounds.
    """
    policy = np.asarray(policy)
    n, S = policy.shape[0], R.shape[0]
    P = np.broadcast_to(P, (n,) + P.shape[-3:])
    release, state = np.arange(n)[:, None], np.arange(S)[None, :]

    def chosen(actions):
        return P[release, state, actions], R[state, actions]

    if horizon is None:
        P_pi, r_pi = chosen(policy)
        return np.linalg.solve(np.eye(S) - gamma * P_pi, r_pi[..., None])[..., 0]
    V = np.empty((n, horizon + 1, S))
    V[:, horizon] = RT
    for t in reversed(range(horizon)):
        P_pi, r_pi = chosen(policy[:, t])
        V[:, t] = r_pi + gamma * np.einsum("nst,nt->ns", P_pi, V[:, t + 1])
    return V


def bracketed(low, high, values):
    """`[N]` bool: ``low <= values <= high`` at every stage and state of each release."""
    low, high = np.asarray(low, np.float64), np.asarray(high, np.float64)
    ok = (low <= values) & (values <= high)
    return ok.reshape(ok.shape[0], -1).all(axis=1)


def coverage_p_value(held, beta):
    """Exact one-sided binomial p-value of "coverage < 1 − β" given the releases ``held``."""
    k, n = int(np.sum(held)), int(np.size(held))
    return stats.binomtest(k, n, 1 - beta, alternative="less").pvalue


def assert_coverage(held, beta, what):
    p, k, n = coverage_p_value(held, beta), int(np.sum(held)), int(np.size(held))
    assert p >= P_VALUE, (
        f"{what}: the bounds held the true value in {k}/{n} = {k / n:.3f} of the releases, "
        f"significantly below 1 − β = {1 - beta} (exact binomial p = {p:.2g})"
    )


# jaxlib 0.10's batched LAPACK kernels (the discounted evaluation's LU) split a batch over
# XLA:CPU's thread pool and wait for it once batch × S³ >= 2e5 flops; as many of them as the
# pool has threads, running at once, deadlock it. 200 releases of 6 states stay below.
CHUNK = 200


def compiled_together(fn, keys, *, fast_compile=False):
    """``jax.vmap(fn)(keys)`` in one compilation (run on chunks of keys), on the host.

    ``fn`` may call :func:`jaxprivmdp.synthesize` several times: its host checks read the
    (concrete) model, so operations on concrete arrays are evaluated eagerly while tracing.
    ``fast_compile``: XLA's backend optimization level 0 (about a third less compile time;
    results differ from the default build in the last bits of transcendental functions).
    """

    def run(key):
        with jax.ensure_compile_time_eval():
            return fn(key)

    options = {"xla_backend_optimization_level": 0} if fast_compile else None
    compiled = jax.jit(jax.vmap(run), compiler_options=options)
    parts = [jax.device_get(compiled(keys[i : i + CHUNK])) for i in range(0, len(keys), CHUNK)]
    return jax.tree.map(lambda *xs: np.concatenate(xs), *parts)


# ------------------------------------------------------------------------- the release grid


def _combos(bounds=BOUNDS):
    return [
        (kind, mech, aware, bound)
        for kind in KINDS
        for mech in MECHANISMS
        for aware in (False, True)
        for bound in bounds
    ]


def _name(horizon, kind, mech, aware, bound):
    h = "finite" if horizon else "discounted"
    return f"{h}/{kind}/{mech}/{'aware' if aware else 'simplex'}/{bound}"


def _models(dtype, horizon):
    mdp = validity_model(dtype, horizon)
    return {"dense": mdp, "sparse": jp.to_sparse(mdp)}


def _beta_box_holds(model, p_bar, k, bound, aware):
    """Whether the Dirichlet's Beta box of ``bound`` holds ``P̄`` (every entry of every row).

    Uses the set's internals (as ``tests/test_sets.py`` does): the public support is the
    input's nonzero pattern (``support="nonzero"``) or a sparse model's lists.
    """
    from jaxprivmdp.models._rows import transition_rows
    from jaxprivmdp.planning._bounds import set_up
    from jaxprivmdp.sets._boxes import row_box
    from jaxprivmdp.sets._sets import set_named as as_set

    if isinstance(model, jp.TabularMDP):
        model = dataclasses.replace(model, support=model.transitions > 0)
    params, _ = set_up(model, jp.Dirichlet(k), as_set(bound, BETA, aware))
    rows = transition_rows(model)._replace(probs=p_bar)
    box = row_box(rows, params, support_aware=aware)
    return jax.numpy.all((box.lower <= p_bar) & (p_bar <= box.upper))


def run_group(dtype, horizon, n, parameters=None, *, seed=0, fast_compile=False, bounds=BOUNDS):
    """Every combination's ``n`` releases for one (dtype, horizon), in one compilation.

    ``bounds``: the sets to compute (each costs a third of the compilation).

    Returns ``{name: {field: array}}`` with the fields ``policy``, ``lower``,
    ``upper``, ``private_values``, ``private_transitions`` and, for the Dirichlet's Beta
    boxes, ``box_holds``. The same keys serve every combination.
    """
    parameters = PARAMETERS if parameters is None else parameters
    models = _models(dtype, horizon)
    combos = _combos(bounds)

    def one(key, kind, mech, aware, bound):
        model = models[kind]
        out = jp.synthesize(
            key,
            model,
            MECHANISM[mech](parameters[mech]),
            SET[bound](BETA, support_aware=aware),
            support="nonzero" if kind == "dense" else None,
        )
        fields = dict(
            policy=out.policy,
            lower=out.lower,
            upper=out.upper,
            private_values=out.private_values,
            private_transitions=out.private_transitions,
        )
        if mech == "dirichlet" and bound != "paper":
            fields["box_holds"] = _beta_box_holds(
                model, out.private_transitions, parameters[mech], bound, aware
            )
        return fields

    keys = jax.random.split(jax.random.key(seed), n)
    outs = compiled_together(
        lambda key: [one(key, *c) for c in combos], keys, fast_compile=fast_compile
    )
    return {_name(horizon, *c): out for c, out in zip(combos, outs, strict=True)}


def _grid_worker(path, dtype, n, parameters, fast_compile, bounds=BOUNDS):
    """A grid subprocess: both horizons of one dtype, ``{"name/field": array}`` to ``path``."""
    jax.config.update("jax_enable_x64", dtype == "float64")
    jax.config.update("jax_numpy_rank_promotion", "raise")
    flat = {}
    for horizon in HORIZONS:
        groups = run_group(
            dtype, horizon, n, parameters, fast_compile=fast_compile, bounds=tuple(bounds)
        )
        for name, fields in groups.items():
            flat |= {f"{name}/{f}": np.asarray(v) for f, v in fields.items()}
    np.savez(path, **flat)


class Grid:
    """The releases of every (dtype, horizon, combination), computed once.

    Each dtype runs in its own subprocess (x64 on for float64), started by :meth:`start`, so
    that both run while this process does other tests.
    """

    def __init__(self, n, parameters=None, *, fast_compile=False):
        self.n, self.parameters, self.fast_compile = n, parameters, fast_compile
        self._data, self._procs, self._bounds = {}, {}, {}
        self._dir = tempfile.TemporaryDirectory()

    def start(self, dtype, bounds=BOUNDS):
        if dtype in self._procs or dtype in self._data:
            return
        self._bounds[dtype] = tuple(bounds)
        out = Path(self._dir.name) / f"{dtype}.npz"
        log = open(Path(self._dir.name) / f"{dtype}.log", "w+")  # noqa: SIM115
        code = (
            "import sys, json; sys.path.insert(0, sys.argv[1]); import test_validity as t; "
            "t._grid_worker(sys.argv[2], sys.argv[3], int(sys.argv[4]), "
            "json.loads(sys.argv[5]), sys.argv[6] == '1', json.loads(sys.argv[7]))"
        )
        args = [str(Path(__file__).parent), str(out), dtype, str(self.n)]
        args += [json.dumps(self.parameters), "1" if self.fast_compile else "0"]
        args += [json.dumps(bounds)]
        env = dict(
            os.environ,
            JAX_ENABLE_X64="1" if dtype == "float64" else "0",
            XLA_PYTHON_CLIENT_PREALLOCATE="false",
        )
        proc = subprocess.Popen(
            [sys.executable, "-c", code, *args], env=env, stdout=log, stderr=log
        )
        self._procs[dtype] = (proc, out, log)

    def get(self, dtype):
        if dtype not in self._data:
            self.start(dtype)
            proc, out, log = self._procs.pop(dtype)
            try:
                code = proc.wait(timeout=GRID_TIMEOUT)
            except subprocess.TimeoutExpired:  # a hang fails the tests, never stalls them
                proc.kill()
                proc.wait()
                code = f"killed after {GRID_TIMEOUT} s"
            log.seek(0)
            text = log.read()
            log.close()
            if code != 0:  # every test of this dtype reports it (without running it again)
                why = f"the {dtype} grid failed ({code}):\n{text[-5000:]}"
                self._data[dtype] = RuntimeError(why)
            else:
                with np.load(out) as f:
                    self._data[dtype] = {k: f[k] for k in f.files}
        if isinstance(self._data[dtype], Exception):
            raise self._data[dtype]
        return self._data[dtype]

    def bounds(self, dtype):
        """The sets the grid of ``dtype`` computes (all of them unless started otherwise)."""
        return self._bounds.get(dtype, BOUNDS)

    def close(self):
        for proc, _, log in self._procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            log.close()
        self._procs.clear()
        self._dir.cleanup()


GRID_CASES = [
    (dtype, horizon, kind, mech, aware)
    for dtype in ("float32", "float64")
    for horizon in HORIZONS
    for kind in KINDS
    for mech in MECHANISMS
    for aware in (False, True)
]
GRID_IDS = [
    f"{d}-{'finite' if h else 'discounted'}-{k}-{m}-{'aware' if a else 'simplex'}"
    for d, h, k, m, a in GRID_CASES
]
# The release-by-release check of every set, and the coverage of the certified set: float32 in
# the default run (its rounding margins are the tight ones); float64 only with the tests marked
# slow (which also run test_certified_coverage_many_releases, 1000 releases in both dtypes), so
# that the default run starts one grid subprocess, not two.
BRACKET_CASES = [
    pytest.param(*case, marks=pytest.mark.slow, id=name)
    if case[0] == "float64"
    else pytest.param(*case, id=name)
    for case, name in zip(GRID_CASES, GRID_IDS, strict=True)
]


@pytest.fixture(scope="module")
def grid(request):
    g = Grid(N_RELEASES, fast_compile=True)
    # Start the subprocesses now, for the dtypes (and the sets) the selected tests need.
    needed = {}
    for item in request.session.items:
        spec = getattr(item, "callspec", None)
        if item.module is request.module and spec and "dtype" in spec.params:
            every = item.originalname == "test_every_bound_brackets_the_value_on_the_release"
            sets = needed.setdefault(spec.params["dtype"], {"certified"})
            sets.update(BOUNDS if every else ())
    for dtype, sets in needed.items():
        g.start(dtype, tuple(b for b in BOUNDS if b in sets))
    yield g
    g.close()


@pytest.fixture(scope="module", autouse=True)
def _start_the_grid_early(request):
    """The grid's subprocesses run while the regressions below run in this process."""
    mine = [i for i in request.session.items if i.module is request.module]
    if any("grid" in i.fixturenames for i in mine):
        request.getfixturevalue("grid")


def _case(grid, dtype, horizon, kind, mech, aware, bound):
    data = grid.get(dtype)
    assert bound in grid.bounds(dtype), f"the {dtype} grid was started without {bound}"
    prefix = _name(horizon, kind, mech, aware, bound) + "/"
    return {k[len(prefix) :]: v for k, v in data.items() if k.startswith(prefix)}


# ---------------------------------------- regressions: a release read as the support


def _three_state_goal(row, terminal_reward=(0.0, 1.0, 0.0)):
    """``s0`` with the given row; G (state 1, terminal reward 1) and 2 absorbing; T = 1."""
    P = np.zeros((3, 1, 3))
    P[0, 0] = row
    P[1, 0, 1] = P[2, 0, 2] = 1.0
    return jp.make_mdp(P, np.zeros((3, 1)), horizon=1, terminal_reward=terminal_reward)


def test_gaussian_projection_zero_reproduction():
    """Regression: key 8 projects the true 0.3 entry of ``s0``'s row to 0; the certified,
    support-aware bounds were [0, 0] around a true value of 0.3."""
    mdp = _three_state_goal([0.0, 0.3, 0.7])
    out = jp.synthesize(
        jax.random.key(8), mdp, jp.Gaussian(0.3), jp.CertifiedSet(0.1, support_aware=True)
    )
    # The release that zeroes the entry (the precondition of this regression).
    np.testing.assert_array_equal(out.private_transitions[0, 0], [0.0, 0.0, 1.0])
    true = float(jp.evaluate(mdp, out.policy)[0, 0])
    assert true == pytest.approx(0.3)
    low, high = float(out.lower[0, 0]), float(out.upper[0, 0])
    assert low <= 0.3 <= high, (low, high)


ADDITIVE = {"gaussian": 0.3, "laplace": 0.2}  # σ, λ of the reported cases
SUPPORTS = {"full": None, "nonzero": "nonzero"}


@pytest.fixture(scope="module")
def small_entry_releases():
    """True row (0, 0.1, 0.9) of ``s0``: 200 certified, support-aware releases (β = 0.1)
    per mechanism and ``support``, in one compilation."""
    mdp = _three_state_goal([0.0, 0.1, 0.9])

    def every_case(key):
        out = {}
        for mech, scale in ADDITIVE.items():
            for name, support in SUPPORTS.items():
                r = jp.synthesize(
                    key,
                    mdp,
                    MECHANISM[mech](scale),
                    jp.CertifiedSet(0.1, support_aware=True),
                    support=support,
                )
                out[f"{mech}-{name}"] = (r.policy, r.lower, r.upper)
        return out

    keys = jax.random.split(jax.random.key(0), 200)
    return mdp, compiled_together(every_case, keys)


@pytest.mark.parametrize("support", SUPPORTS)
@pytest.mark.parametrize("mechanism", ADDITIVE)
def test_additive_certified_coverage_with_a_small_true_entry(
    small_entry_releases, mechanism, support
):
    """Regression: true row (0, 0.1, 0.9), β = 0.1: certified, support-aware coverage was
    0.593 (Gaussian σ = 0.3), 0.644 (Laplace λ = 0.2), 0.69-0.73 with support="nonzero"."""
    mdp, releases = small_entry_releases
    policy, low, high = releases[f"{mechanism}-{support}"]
    true = exact_values(*stored(mdp), 1, policy)
    assert_coverage(bracketed(low, high, true), 0.1, f"{mechanism}, support={support}")


def chain(dtype, states=5, tiny=1e-4, horizon=200):
    """A chain: each state moves on with probability 1 − 4e-4 and reaches every state with
    1e-4; reward 1 in the last state, which is absorbing but for the 1e-4 entries."""
    P = np.full((states, 1, states), tiny)
    for i in range(states):
        P[i, 0, min(i + 1, states - 1)] += 1 - states * tiny
    R = np.zeros((states, 1))
    R[-1] = 1.0
    return jp.make_mdp(P, R, horizon=horizon, dtype=dtype)


def _chain_coverage(dtype, k, support):
    """100 certified, support-aware releases of the chain (β = 0.1): which held ``V^π̄``,
    and the fraction of released entries that are exactly 0 (every true entry is > 0)."""
    mdp = chain(dtype)
    keys = jax.random.split(jax.random.key(0), 100)
    mech, uset = jp.Dirichlet(k), jp.CertifiedSet(0.1, support_aware=True)
    out = jax.device_get(
        jax.vmap(lambda key: jp.synthesize(key, mdp, mech, uset, support=support))(keys)
    )
    zeros = float(np.mean(np.asarray(out.private_transitions) == 0))
    true = exact_values(*stored(mdp), mdp.horizon, out.policy)
    return bracketed(out.lower, out.upper, true), zeros


@pytest.mark.parametrize("support", SUPPORTS)
def test_dirichlet_underflow_chain_float32(support):
    """Regression: a 5-state chain with 1e-4 entries, T = 200: certified coverage 0.000-0.017
    for k <= 100 in float32 (gamma draws underflow to exact zeros), also with
    support="nonzero"."""
    for k in (1.0, 10.0, 100.0):
        held, zeros = _chain_coverage("float32", k, SUPPORTS[support])
        assert zeros > 0.2  # the releases do put exact zeros where P > 0
        assert_coverage(held, 0.1, f"float32 chain, k = {k}")


@pytest.mark.parametrize("support", SUPPORTS)
def test_dirichlet_underflow_chain_float64(support):
    """Regression: the same chain in float64 at k = 10: certified coverage 0.006."""
    with jax.enable_x64(True):
        held, zeros = _chain_coverage("float64", 10.0, SUPPORTS[support])
    assert zeros > 0.2
    assert_coverage(held, 0.1, "float64 chain, k = 10")


def _radius(mechanism, scale, n, level):
    """The additive mechanisms' documented tail radius (``_additive.noise_radius``), from
    SciPy: a χ² quantile (Gaussian); the smaller of a Gamma quantile of ``‖Z‖₁`` and
    ``√n log(n / level)`` (Laplace)."""
    if mechanism == "gaussian":
        return scale * np.sqrt(stats.chi2.isf(level, n))
    return scale * min(special.gammainccinv(n, level), np.sqrt(n) * np.log(n / level))


def _box_value(p_bar, radius, v, mixture):
    """``min p·v`` over ``{β' P1 + (1 − β') P2 : P1, P2 ∈ Δ, |P2 − p̄| <= r}`` (greedy)."""
    lower = np.maximum(p_bar - radius, 0)
    upper = np.minimum(p_bar + radius, 1)
    x, slack = lower.copy(), 1 - lower.sum()
    for j in np.argsort(v, kind="stable"):
        add = min(max(slack, 0.0), upper[j] - lower[j])
        x[j] += add
        slack -= add
    return mixture * v.min() + (1 - mixture) * float(x @ v)


# A key whose release zeroes the 0.001 entry of s0's row (checked in the test).
RADIUS_KEYS = {"gaussian": 3, "laplace": 0}


@pytest.mark.parametrize("bound", ["certified", "paper"])
@pytest.mark.parametrize("mechanism", ["gaussian", "laplace"])
def test_additive_radius_counts_the_public_support(mechanism, bound):
    """Regression: the noise radius counted the dimension n from P̄'s nonzeros (2 instead of 3
    in one release: radius 1.304 instead of 1.476). The public support of s0's row is its
    three entries, whatever the release: the bounds are those of the radius with n = 3 over
    all three entries, from ``synthesize`` and from ``cost_of_privacy`` on the release rebuilt
    with its public support (``make_mdp(..., support=)``); without one, support-aware bounds
    on a dense release are refused."""
    beta, scale = 0.1, 0.01
    mdp = _three_state_goal([0.001, 0.3, 0.699], terminal_reward=(0.0, 1.0, 0.5))
    mech, uset = MECHANISM[mechanism](scale), SET[bound](beta, support_aware=True)
    out = jp.synthesize(jax.random.key(RADIUS_KEYS[mechanism]), mdp, mech, uset, support="nonzero")
    p_bar = np.asarray(out.private_transitions[0, 0], np.float64)
    assert p_bar[0] == 0.0, p_bar  # the release zeroed a supported entry
    rows = 3  # allowed rows: the certified level is β over all of them
    level, mixture = (beta / rows, 0.0) if bound == "certified" else (beta, beta)
    r = _radius(mechanism, scale, 3, level)
    v = np.asarray(mdp.terminal_reward, np.float64)
    low, high = _box_value(p_bar, r, v, mixture), -_box_value(p_bar, r, -v, mixture)
    wrong = _box_value(p_bar, _radius(mechanism, scale, 2, level), v, mixture)
    assert abs(low - wrong) > 1e-3  # the test tells the two radii apart
    assert float(out.lower[0, 0]) == pytest.approx(low, abs=2e-5)
    assert float(out.upper[0, 0]) == pytest.approx(high, abs=2e-5)

    released = np.asarray(out.private_transitions, np.float64)
    kw = dict(horizon=1, terminal_reward=mdp.terminal_reward)
    rebuilt = jp.make_mdp(released, mdp.rewards, support=np.asarray(mdp.transitions) > 0, **kw)
    again = jp.cost_of_privacy(rebuilt, out.policy, mech, uset)
    assert float(again.lower[0, 0]) == pytest.approx(low, abs=2e-5)
    assert float(again.upper[0, 0]) == pytest.approx(high, abs=2e-5)
    with pytest.raises(ValueError, match="support"):
        jp.cost_of_privacy(jp.make_mdp(released, mdp.rewards, **kw), out.policy, mech, uset)


@pytest.mark.slow  # 17 s: ten synthesize calls per layout and key
def test_sparse_zero_slots_give_the_dense_numbers():
    """Regression: a sparse model listing a successor whose input probability is 0 gave bounds
    17-26 % away from the dense model with the same nonzero pattern. Every state is listed
    here (K = S, in state order), so the same key gives the same release. (Every set of the
    Dirichlet mechanism, and one set of each additive mechanism.)"""
    P, R, RT, mask = validity_arrays()
    S, A, _ = P.shape
    idx = np.broadcast_to(np.arange(S), (S, A, S)).copy()
    kw = dict(terminal_reward=RT, horizon=HORIZON, action_mask=mask)
    sparse, dense = jp.make_sparse_mdp(idx, P, R, **kw), jp.make_mdp(P, R, **kw)
    cases = [
        ("dirichlet", 20.0, "paper"),
        ("dirichlet", 20.0, "exact"),
        ("dirichlet", 20.0, "certified"),
        ("gaussian", 0.05, "certified"),
        ("laplace", 0.05, "paper"),
    ]

    def every_case(key):
        out = {}
        for mech, scale, bound in cases:
            opts = (MECHANISM[mech](scale), SET[bound](0.1, support_aware=True))
            a = jp.synthesize(key, sparse, *opts)
            b = jp.synthesize(key, dense, *opts, support="nonzero")
            out[f"{mech}-{bound}"] = (a, b)
        return out

    # Eagerly (the library's own compiled pieces, cached after the first key): 8 CPU s, where
    # tracing all ten calls into one program cost 21. Both layouts draw from the same key.
    keys = jax.random.split(jax.random.key(3), 2)
    results = jax.tree.map(lambda *xs: np.stack(xs), *[every_case(key) for key in keys])
    for case, (a, b) in results.items():
        p_bar = dense_rows(sparse, a.private_transitions)
        np.testing.assert_array_equal(p_bar, b.private_transitions, err_msg=case)
        for field in ("lower", "upper"):
            np.testing.assert_allclose(
                getattr(a, field), getattr(b, field), rtol=1e-5, atol=1e-5, err_msg=case
            )


# ------------------------------------------------------------------- every combination


@pytest.mark.parametrize(("dtype", "horizon", "kind", "mech", "aware"), BRACKET_CASES)
def test_certified_coverage_of_the_true_value(grid, dtype, horizon, kind, mech, aware):
    """Joint coverage of ``V^π̄`` on the true MDP (all stages, states) is not below 1 − β."""
    case = _case(grid, dtype, horizon, kind, mech, aware, "certified")
    true = exact_values(*stored_validity_arrays(dtype, horizon), horizon, case["policy"])
    held = bracketed(case["lower"], case["upper"], true)
    assert_coverage(held, BETA, f"{dtype} {_name(horizon, kind, mech, aware, 'certified')}")


@pytest.mark.parametrize(("dtype", "horizon", "kind", "mech", "aware"), BRACKET_CASES)
def test_every_bound_brackets_the_value_on_the_release(grid, dtype, horizon, kind, mech, aware):
    """Release by release, ``v̲ <= V̄^π̄ <= v̄`` on ``P̄`` for paper, exact and certified:
    against the exact (float64) value of ``π̄`` on the release and against
    ``Synthesis.private_values``; and the Dirichlet's Beta boxes contain ``P̄``."""
    layout = _models("float32", horizon)[kind]  # successor lists; probabilities from P̄
    _, R, RT, gamma = stored_validity_arrays(dtype, horizon)
    failures = []
    for bound in BOUNDS:
        case = _case(grid, dtype, horizon, kind, mech, aware, bound)
        low, high = case["lower"], case["upper"]
        p_bar = dense_rows(layout, case["private_transitions"])
        exact = exact_values(p_bar, R, RT, gamma, horizon, case["policy"])
        for what, values in [("exact value", exact), ("private_values", case["private_values"])]:
            values = np.asarray(values, np.float64)
            ok = bracketed(low, high, values)
            if not ok.all():
                by = max((np.asarray(low, float) - values).max(), (values - high).max())
                failures.append(
                    f"{bound}: {what} outside in {int((~ok).sum())} releases, by {by:.3g}"
                )
        if "box_holds" in case and not np.all(case["box_holds"]):
            failures.append(f"{bound}: P̄ outside its box in {int((~case['box_holds']).sum())}")
    assert not failures, failures


@pytest.mark.slow
@pytest.mark.parametrize("parameters", SLOW_PARAMETERS, ids=["noisy", "precise"])
def test_certified_coverage_many_releases(parameters):
    """The grid at other noise levels, 1000 releases per combination, built as ``XLA_FLAGS``
    says (tests/conftest.py: optimization level 0 unless ``JAXPRIVMDP_TEST_FULL_OPT=1``)."""
    grid = Grid(N_RELEASES_SLOW, parameters)
    try:
        for dtype in ("float32", "float64"):
            grid.start(dtype)
        failures = []
        for dtype, horizon, kind, mech, aware in GRID_CASES:
            case = _case(grid, dtype, horizon, kind, mech, aware, "certified")
            true = exact_values(*stored_validity_arrays(dtype, horizon), horizon, case["policy"])
            held = bracketed(case["lower"], case["upper"], true)
            if coverage_p_value(held, BETA) < P_VALUE:
                name = _name(horizon, kind, mech, aware, "certified")
                failures.append(f"{dtype} {name}: {held.mean():.3f}")
        assert not failures, failures
    finally:
        grid.close()

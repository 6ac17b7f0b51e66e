"""One spelling: the public API's size, and the 0.2 keyword form refused with the object form.

Mechanisms and uncertainty sets are objects (``jp.Dirichlet(k)``, ``jp.CertifiedSet(beta)``,
``jp.Dirichlet.grid(ks)``); options users set together are objects too
(``jp.SolverOptions``, ``jp.Chunking``, ``jp.privacy.Adjacency``). Every public function
takes at most ten parameters and none hides options in ``**kwargs``. A call in the 0.2
form raises a ``TypeError`` whose message shows what to write instead. The command line keeps
its flags (``tests/test_cli*.py``).
"""

from __future__ import annotations

import inspect

import jax
import numpy as np
import pytest

import jaxprivmdp as jp
from jaxprivmdp import privacy

KEY = jax.random.key(0)
MAX_PARAMETERS = 10


def _public(module):
    return [(f"{module.__name__}.{n}", getattr(module, n)) for n in sorted(module.__all__)]


def _user_facing_callables():
    """Every public function, and every public method (and constructor) of a public class
    that users call: result records (named tuples) are read, not built, so their
    constructors are left out; their methods are in."""
    for name, obj in [*_public(jp), *_public(privacy)]:
        if inspect.isfunction(obj):
            yield name, obj
        elif inspect.isclass(obj):
            if not issubclass(obj, tuple):
                yield f"{name}()", obj
            for attr, member in vars(obj).items():
                if attr.startswith("_"):
                    continue
                fn = member.__func__ if isinstance(member, classmethod | staticmethod) else member
                if inspect.isfunction(fn):
                    yield f"{name}.{attr}", fn


def _parameters(fn) -> list[inspect.Parameter]:
    params = list(inspect.signature(fn).parameters.values())
    return [p for p in params if p.name not in ("self", "cls")]


def test_every_public_callable_has_at_most_ten_parameters_and_no_kwargs():
    too_many, hidden = [], []
    seen = 0
    for name, fn in _user_facing_callables():
        params = _parameters(fn)
        seen += 1
        if len(params) > MAX_PARAMETERS:
            too_many.append(f"{name}: {len(params)}")
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
            hidden.append(name)
    assert seen > 60  # the walk found the API (functions, classes and their methods)
    assert not too_many, too_many
    assert not hidden, hidden


def test_the_largest_signatures():
    # The functions that once took the most: each now at most ten, options in objects.
    for fn in (jp.synthesize, jp.sweep, jp.frontier, jp.privacy.mdp_guarantee):
        assert len(_parameters(fn)) <= MAX_PARAMETERS, fn.__name__
    assert "options" in inspect.signature(jp.synthesize).parameters
    assert "chunking" in inspect.signature(jp.sweep).parameters
    assert "adjacency" in inspect.signature(jp.frontier).parameters
    assert "model" in inspect.signature(jp.privacy.mdp_guarantee).parameters


def test_option_objects():
    opts = jp.SolverOptions(max_iterations=50, tol=1e-4, fill_width=3)
    assert jax.tree.leaves(opts) == [50, 1e-4]  # fill_width is static
    with pytest.raises(ValueError, match="max_iterations must be an int >= 1"):
        jp.SolverOptions(max_iterations=0)
    with pytest.raises(ValueError, match="tol must be > 0"):
        jp.SolverOptions(tol=0.0)
    assert jp.Chunking(8, 2).devices is None
    with pytest.raises(ValueError, match="batch_size must be an int >= 1"):
        jp.Chunking(batch_size=0)
    with pytest.raises(ValueError, match="devices must list at least one device"):
        jp.Chunking(devices=[])
    adj = privacy.Adjacency(0.1, 0.05)
    assert (adj.b, adj.eta, adj.scope) == (0.1, 0.05, "row")
    with pytest.raises(ValueError, match="b must lie in"):
        privacy.Adjacency(0.0)
    with pytest.raises(ValueError, match="scope must be 'row' or 'all'"):
        privacy.Adjacency(0.1, scope="one")
    solved = jax.jit(lambda o: jp.solve(_model(), options=o).values)(jp.SolverOptions(5))
    np.testing.assert_array_equal(solved, jp.solve(_model()).values)


# --------------------------------------------------------------------------- refusals


def _model():
    return jp.examples.investment()


def _release():
    return _model()  # refused before anything is computed: no release needed


def _policy():
    return np.zeros((1, 3), np.int32)


ADJ = privacy.Adjacency(0.1, 0.1)

# (function, the 0.2 call, what its refusal must show)
REFUSED = [
    ("synthesize", lambda: jp.synthesize(KEY, _model(), k=10.0), "jp.Dirichlet(k)"),
    (
        "synthesize",
        lambda: jp.synthesize(KEY, _model(), jp.Dirichlet(10.0), beta=0.2),
        "jp.PaperSet(beta)",
    ),
    (
        "synthesize",
        lambda: jp.synthesize(KEY, _model(), jp.Dirichlet(10.0), bound="certified"),
        "jp.CertifiedSet(beta)",
    ),
    (
        "synthesize",
        lambda: jp.synthesize(KEY, _model(), jp.Dirichlet(10.0), "certified"),
        "jp.CertifiedSet(beta)",
    ),
    (
        "synthesize",
        lambda: jp.synthesize(KEY, _model(), k=0.05, mechanism="gaussian"),
        "jp.Gaussian(sigma)",
    ),
    ("synthesize", lambda: jp.synthesize(KEY, _model(), "gaussian"), "jp.Gaussian(sigma)"),
    (
        "synthesize",
        lambda: jp.synthesize(KEY, _model(), jp.Dirichlet(10.0), support_aware=True),
        "jp.CertifiedSet(beta, support_aware=True)",
    ),
    (
        "synthesize",
        lambda: jp.synthesize(KEY, _model(), jp.Dirichlet(10.0), sampler="fast"),
        "jp.Dirichlet(k, sampler='fast')",
    ),
    (
        "synthesize",
        lambda: jp.synthesize(KEY, _model(), jp.Dirichlet(10.0), max_iterations=10),
        "options=jp.SolverOptions(max_iterations=...)",
    ),
    ("sweep", lambda: jp.sweep(KEY, _model(), ks=[1.0, 5.0]), "jp.Dirichlet.grid(ks)"),
    (
        "sweep",
        lambda: jp.sweep(KEY, _model(), jp.Dirichlet.grid([1.0]), batch_size=4),
        "chunking=jp.Chunking(batch_size=...)",
    ),
    (
        "sweep",
        lambda: jp.sweep(KEY, _model(), jp.Dirichlet.grid([1.0]), progress=print),
        "chunking=jp.Chunking(progress=...)",
    ),
    (
        "sweep",
        lambda: jp.sweep(KEY, _model(), jp.Dirichlet.grid([1.0]), beta=0.2),
        "jp.PaperSet(beta)",
    ),
    ("sweep", lambda: jp.sweep(KEY, _model(), "dirichlet"), "jp.Dirichlet(k)"),
    (
        "frontier",
        lambda: jp.frontier(KEY, _model(), epsilons=[8.0], mechanisms=("gaussian",)),
        "jp.Gaussian",
    ),
    (
        "frontier",
        lambda: jp.frontier(KEY, _model(), epsilons=[8.0], b=0.1, eta=0.1),
        "jp.privacy.Adjacency(b, eta)",
    ),
    (
        "frontier",
        lambda: jp.frontier(KEY, _model(), epsilons=[8.0], bound="certified", beta=0.1),
        "jp.CertifiedSet(beta)",
    ),
    (
        "frontier",
        lambda: jp.frontier(KEY, _model(), epsilons=[8.0], support_aware=True),
        "jp.CertifiedSet(beta, support_aware=True)",
    ),
    (
        "cost_of_privacy",
        lambda: jp.cost_of_privacy(_release(), _policy(), k=10.0, beta=0.1),
        "jp.Dirichlet(k)",
    ),
    (
        "cost_of_privacy",
        lambda: jp.cost_of_privacy(_release(), _policy(), jp.Dirichlet(10.0), tol=1e-6),
        "options=jp.SolverOptions(tol=...)",
    ),
    (
        "robust_solve",
        lambda: jp.robust_solve(_release(), k=0.05, mechanism="laplace", bound="exact"),
        "jp.ExactSet(beta)",
    ),
    (
        "robust_solve",
        lambda: jp.robust_solve(_release(), jp.Dirichlet(10.0), fill_width=2),
        "options=jp.SolverOptions(fill_width=...)",
    ),
    ("solve", lambda: jp.solve(_model(), tol=1e-6), "options=jp.SolverOptions(tol=...)"),
    (
        "privatize",
        lambda: jp.privatize(KEY, _model(), 0.05, mechanism="gaussian"),
        "jp.Gaussian(sigma)",
    ),
    ("privatize", lambda: jp.privatize(KEY, _model(), 10.0), "jp.Dirichlet(10.0)"),
    (
        "dirichlet_mechanism",
        lambda: jp.dirichlet_mechanism(KEY, _model().transitions, 10.0),
        "jp.Dirichlet(10.0)",
    ),
    (
        "dirichlet_mechanism",
        lambda: jp.dirichlet_mechanism(KEY, _model(), jp.Dirichlet(10.0), sampler="fast"),
        "jp.Dirichlet(k, sampler='fast')",
    ),
    (
        "mdp_guarantee",
        lambda: privacy.mdp_guarantee(
            10.0, transitions=_model().transitions, b=0.1, eta=0.1, target_delta=1e-3
        ),
        "jp.privacy.Adjacency(b, eta)",
    ),
    (
        "mdp_guarantee",
        lambda: privacy.mdp_guarantee(10.0, _model().transitions, ADJ, target_delta=1e-3),
        "jp.make_mdp(P, R, action_mask=...)",
    ),
    (
        "mdp_guarantee",
        lambda: privacy.mdp_guarantee(10.0, _model(), 0.1, target_delta=1e-3),
        "Adjacency(b, eta)",
    ),
    (
        "compose_rows",
        lambda: privacy.compose_rows("gaussian", 0.5, num_rows=4, delta=1e-5, b=0.1),
        "jp.privacy.Adjacency(b, eta)",
    ),
    (
        "compose_rows",
        lambda: privacy.compose_rows("gaussian", ADJ, num_rows=4, delta=1e-5),
        "jp.Gaussian(sigma)",
    ),
    ("calibrate", lambda: privacy.calibrate("laplace", 1.0, 0.0, ADJ), "jp.Laplace"),
    (
        "guarantee",
        lambda: privacy.guarantee(10.0, b=0.1, eta=0.1, n=2, target_delta=1e-3),
        "Adjacency(b, eta)",
    ),
    (
        "epsilon",
        lambda: privacy.epsilon(10.0, b=0.1, eta=0.1, gamma=0.01, n=2),
        "Adjacency(b, eta)",
    ),
    (
        "dirichlet_rdp",
        lambda: privacy.dirichlet_rdp(10.0, 2.0, b=0.1, eta=0.1),
        "Adjacency(b, eta)",
    ),
    (
        "calibrate_k",
        lambda: privacy.calibrate_k(8.0, 1e-3, b=0.1, eta=0.1, n=2),
        "Adjacency(b, eta)",
    ),
    ("gaussian_delta", lambda: privacy.gaussian_delta(0.5, 1.0, b=0.1), "Adjacency(b, eta)"),
    ("gaussian_epsilon", lambda: privacy.gaussian_epsilon(0.5, 1e-5, b=0.1), "Adjacency("),
    ("calibrate_gaussian", lambda: privacy.calibrate_gaussian(1.0, 1e-5, b=0.1), "Adjacency("),
    ("laplace_epsilon", lambda: privacy.laplace_epsilon(0.5, b=0.1), "Adjacency(b, eta)"),
    ("calibrate_laplace", lambda: privacy.calibrate_laplace(1.0, b=0.1), "Adjacency(b, eta)"),
    (
        "Dirichlet.guarantee",
        lambda: jp.Dirichlet(10.0).guarantee(b=0.1, eta=0.1, delta=1e-3, n=2),
        "Adjacency(b, eta)",
    ),
    (
        "Gaussian.epsilon",
        lambda: jp.Gaussian(0.5).epsilon(b=0.1, delta=1e-5),
        "Adjacency(b, eta)",
    ),
    ("Laplace.calibrate", lambda: jp.Laplace.calibrate(1.0, b=0.1), "Adjacency(b, eta)"),
    (
        "Dirichlet.floor",
        lambda: jp.Dirichlet.floor(1e-3, b=0.1, eta=0.1, n=2),
        "Adjacency(b, eta)",
    ),
]


@pytest.mark.parametrize(
    "call, form", [pytest.param(c, f, id=f"{n}-{i}") for i, (n, c, f) in enumerate(REFUSED)]
)
def test_the_0_2_form_is_refused_with_the_object_form(call, form):
    with pytest.raises(TypeError) as refused:
        call()
    assert form in str(refused.value), str(refused.value)


def test_every_function_that_took_a_0_2_keyword_has_a_refusal_test():
    took = {
        "synthesize", "sweep", "frontier", "cost_of_privacy", "robust_solve", "solve",
        "privatize", "dirichlet_mechanism", "mdp_guarantee", "compose_rows", "calibrate",
        "guarantee", "epsilon", "dirichlet_rdp", "calibrate_k", "gaussian_delta",
        "gaussian_epsilon", "calibrate_gaussian", "laplace_epsilon", "calibrate_laplace",
    }  # fmt: skip
    assert took <= {name.split(".")[-1] for name, _, _ in REFUSED}


def test_the_object_forms_compute_what_the_refusals_name():
    # The 0.2 README's accounting in the object form (its numbers: tests/test_readme_v03.py).
    mdp = _model()
    g = privacy.mdp_guarantee(10.0, mdp, ADJ, target_delta=1e-3, support="nonzero")
    assert g.epsilon > 0 and g.adjacency == "row"
    every = privacy.mdp_guarantee(
        10.0, mdp, privacy.Adjacency(0.1, 0.1, scope="all"), target_delta=1e-3, support="nonzero"
    )
    assert every.adjacency == "all" and every.epsilon >= g.epsilon
    sigma = privacy.calibrate(jp.Gaussian, 1.0, 1e-5, ADJ)
    assert sigma == pytest.approx(jp.Gaussian.calibrate(1.0, 1e-5, ADJ).sigma)
    rows = privacy.compose_rows(jp.Gaussian(sigma), ADJ, num_rows=4, delta=1e-5)
    assert rows.rdp_epsilon <= rows.basic_epsilon


@pytest.mark.parametrize(
    "call",
    [
        lambda: jp.Dirichlet(10.0).guarantee(ADJ, delta=1e-3),
        lambda: jp.Dirichlet(10.0).epsilon(ADJ, delta=1e-3),
        lambda: jp.Dirichlet.calibrate(8.0, 1e-3, ADJ),
    ],
)
def test_a_dirichlet_guarantee_without_n_says_what_n_is(call):
    with pytest.raises(ValueError, match="n, the number of entries of a row") as refused:
        call()
    assert "jp.privacy.mdp_guarantee" in str(refused.value)  # which takes n from a model

"""The axes as objects: mechanisms and uncertainty sets as small pytrees.

- The object form and the 0.2 keyword form give the same numbers (same key).
- Objects are pytrees: jit over them, vmap over their parameter, sweep over a grid.
- A mechanism added as one new class touches no other module: :class:`Uniform` lives only
  here, and synthesize, cost_of_privacy, robust_solve, sweep and privatize use it as they use
  the built-in ones; its certified bounds hold (Monte Carlo).
- Conflicting or unknown arguments are refused with a clear error.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxprivmdp as jp
from jaxprivmdp.mechanisms._additive import project_simplex  # a helper; nothing is changed

pytestmark = pytest.mark.integration


@dataclasses.dataclass(frozen=True)
class Uniform(jp.Mechanism):
    """A test-only mechanism: ``Π(p + U)`` with ``U`` i.i.d. uniform on ``[−a, a]``.

    ``‖P̄ − p‖∞ <= ‖U‖₂ <= a√n`` always (the projection is non-expansive onto the convex
    simplex holding ``p``), so the radius per unit of ``a`` is ``√n`` at every level. It is
    not differentially private (bounded noise); it states no guarantee.
    """

    half_width: float
    name: ClassVar[str] = "uniform"

    def privatize(self, key, rows, support, action_mask):
        u = jax.random.uniform(key, rows.shape, rows.dtype, -1.0, 1.0)
        private = project_simplex(rows + self.half_width * u, support)
        return jnp.where(action_mask[..., None], private, 0)

    def unit_radius(self, n, level):
        return math.sqrt(n)


def _model():
    return jp.examples.random_mdp(jax.random.key(1), num_states=6, num_actions=2)


KEY = jax.random.key(0)


_FORMS = [
    (jp.Dirichlet(5.0), "dirichlet", 5.0),
    (jp.Gaussian(0.05), "gaussian", 0.05),
    (jp.Laplace(0.05), "laplace", 0.05),
]
_BOUNDS = ["paper", "exact", "certified"]


# The default run takes each mechanism and each set once (the diagonal: dirichlet/paper,
# gaussian/exact, laplace/certified); the other six pairs run with the tests marked slow.
@pytest.mark.parametrize(
    "mechanism, name, parameter, bound",
    [
        pytest.param(
            *form, bound, id=f"{bound}-{form[1]}", marks=() if i == j else pytest.mark.slow
        )
        for j, bound in enumerate(_BOUNDS)
        for i, form in enumerate(_FORMS)
    ],
)
def test_object_form_equals_keyword_form(mechanism, name, parameter, bound):
    mdp = _model()
    sets = {"paper": jp.PaperSet, "exact": jp.ExactSet, "certified": jp.CertifiedSet}
    new = jp.synthesize(KEY, mdp, mechanism, sets[bound](0.2))
    assert np.all(np.asarray(new.lower) <= np.asarray(new.upper) + 1e-6)
    with pytest.raises(TypeError, match=r"jp\.") as refused:
        jp.synthesize(KEY, mdp, k=parameter, mechanism=name, bound=bound, beta=0.2)
    assert type(mechanism).__name__ in str(refused.value)
    private = jp.privatize(KEY, mdp, mechanism)
    policy = jp.solve(private).policy
    bounds = jp.cost_of_privacy(private, policy, mechanism, sets[bound](0.2))
    np.testing.assert_array_equal(bounds.lower[0], new.lower[0])
    with pytest.raises(TypeError, match=sets[bound].__name__):
        jp.cost_of_privacy(private, policy, mechanism, bound)


def test_sweep_grid_forms_agree():
    mdp = _model()
    ks = [1.0, 10.0, 100.0]
    by_ks = jp.sweep(
        KEY, mdp, jp.Dirichlet.grid(ks, sampler="fast"), jp.ExactSet(0.1), num_trials=3
    )
    by_list = jp.sweep(
        KEY, mdp, [jp.Dirichlet(k, sampler="fast") for k in ks], jp.ExactSet(), num_trials=3
    )
    for other in (by_list,):
        np.testing.assert_array_equal(by_ks.cost, other.cost)
        np.testing.assert_array_equal(by_ks.true_value, other.true_value)
    sigmas = jp.sweep(KEY, mdp, jp.Gaussian.grid([0.01, 0.1]), num_trials=2)
    listed = jp.sweep(KEY, mdp, [jp.Gaussian(0.01), jp.Gaussian(0.1)], num_trials=2)
    np.testing.assert_array_equal(sigmas.cost, listed.cost)
    np.testing.assert_array_equal(sigmas.ks, np.float32([0.01, 0.1]))


def test_sweep_signature_has_at_most_ten_parameters():
    assert len(inspect.signature(jp.sweep).parameters) <= 10


def test_objects_are_pytrees_under_jit_and_vmap():
    mdp = _model()
    cost = jax.jit(lambda key, m, s: jp.synthesize(key, mdp, m, s).cost)
    eager = jp.synthesize(KEY, mdp, jp.Dirichlet(5.0), jp.ExactSet(0.1))
    np.testing.assert_allclose(
        cost(KEY, jp.Dirichlet(5.0), jp.ExactSet(0.1)), eager.cost, rtol=1e-5
    )
    ks = jnp.array([1.0, 5.0, 50.0])
    batched = jax.vmap(lambda m: jp.synthesize(KEY, mdp, m).cost)(jp.Dirichlet(ks))
    looped = [jp.synthesize(KEY, mdp, jp.Dirichlet(float(k))).cost for k in ks]
    np.testing.assert_allclose(batched, looped, rtol=1e-5)
    leaves, treedef = jax.tree.flatten(jp.Dirichlet(2.0, sampler="fast"))
    assert leaves == [2.0] and jax.tree.unflatten(treedef, [3.0]) == jp.Dirichlet(3.0, "fast")
    assert jax.tree.leaves(jp.CertifiedSet(0.05, support_aware=True)) == [0.05]


def test_a_new_mechanism_is_one_class():
    mdp = _model()
    mech = Uniform(0.02)
    assert jax.tree.leaves(mech) == [0.02]
    out = jp.synthesize(KEY, mdp, mech, jp.CertifiedSet(0.1))
    p_bar = np.asarray(out.private_transitions)
    np.testing.assert_allclose(p_bar.sum(-1), 1.0, atol=1e-5)
    private = jp.privatize(KEY, mdp, mech)
    np.testing.assert_array_equal(private.transitions, p_bar)
    b = jp.cost_of_privacy(private, out.policy, mech, jp.CertifiedSet(0.1))
    np.testing.assert_array_equal(b.lower, out.lower)
    robust = jp.robust_solve(private, mech, jp.PaperSet(0.1))
    assert robust.values.shape == out.private_values.shape
    res = jp.sweep(KEY, mdp, Uniform.grid([0.01, 0.05]), jp.CertifiedSet(0.1), num_trials=4)
    assert res.cost.shape == (2, 4) and np.all(np.isfinite(res.cost))
    # The radius is deterministic, so every release's certified bounds hold the true value.
    true = np.asarray(jp.evaluate(mdp, out.policy), np.float64)
    assert np.all(np.asarray(out.lower) <= true + 1e-5)
    assert np.all(true <= np.asarray(out.upper) + 1e-5)
    assert np.all(np.asarray(res.lower) <= np.asarray(res.true_value) + 1e-5)
    assert np.all(np.asarray(res.true_value) <= np.asarray(res.upper) + 1e-5)
    with pytest.raises(NotImplementedError, match="Uniform states no privacy guarantee"):
        mech.guarantee(jp.privacy.Adjacency(0.1), delta=0.001)


def test_guarantee_and_calibrate_round_trip():
    g = jp.Gaussian.calibrate(1.0, 0.001, jp.privacy.Adjacency(0.1))
    assert g.guarantee(jp.privacy.Adjacency(0.1), delta=0.001).epsilon == pytest.approx(
        1.0, rel=1e-6
    )
    assert g.sigma == pytest.approx(
        jp.privacy.calibrate_gaussian(1.0, 0.001, jp.privacy.Adjacency(0.1))
    )
    lap = jp.Laplace.calibrate(2.0, 0.0, jp.privacy.Adjacency(0.1))
    assert lap.guarantee(jp.privacy.Adjacency(0.1)) == jp.RowGuarantee(2.0, 0.0, 0.1)
    d = jp.Dirichlet.calibrate(20.0, 0.001, jp.privacy.Adjacency(0.1, 0.05), n=3)
    assert d.guarantee(jp.privacy.Adjacency(0.1, 0.05), delta=0.001, n=3).epsilon <= 20.0 + 1e-9
    assert d.guarantee(jp.privacy.Adjacency(0.1, 0.05), delta=0.001, n=3).details.k == d.k
    assert (
        jp.Dirichlet.floor(0.001, jp.privacy.Adjacency(0.1, 0.05), n=3)
        > 0
        == jp.Gaussian.floor(0.001, jp.privacy.Adjacency(0.1))
    )


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda m: jp.synthesize(KEY, m, jp.Dirichlet(5.0), k=5.0), r"jp\.Dirichlet\(k\)"),
        (lambda m: jp.synthesize(KEY, m, jp.Dirichlet(5.0), beta=0.2), r"jp\.PaperSet\(beta\)"),
        (lambda m: jp.synthesize(KEY, m, "dirichlet"), r"jp\.Dirichlet\(k\)"),
        (lambda m: jp.synthesize(KEY, m, "uniform"), "takes the mechanism as an object"),
        (lambda m: jp.synthesize(KEY, m, jp.Dirichlet(5.0), "loose"), "takes the set as an"),
        (lambda m: jp.synthesize(KEY, m, jp.Dirichlet(5.0), sampler="fast"), "sampler='fast'"),
        (lambda m: jp.sweep(KEY, m, jp.Dirichlet.grid([1.0]), ks=[1.0]), r"Dirichlet\.grid"),
    ],
)
def test_the_keyword_form_is_refused(call, message):
    with pytest.raises(TypeError, match=message):
        call(_model())


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda m: jp.sweep(KEY, m, [jp.Dirichlet(1.0), jp.Gaussian(0.1)]), "one class"),
        (lambda m: jp.sweep(KEY, m, jp.Dirichlet.grid([1.0, -1.0])), "k must be"),
    ],
)
def test_bad_combinations_are_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call(_model())


def test_bad_objects_and_options():
    with pytest.raises(ValueError, match="k must be"):
        jp.Dirichlet(0.0)
    with pytest.raises(ValueError, match="sampler must be"):
        jp.Dirichlet(1.0, sampler="slow")
    with pytest.raises(ValueError, match="beta"):
        jp.CertifiedSet(1.5)
    with pytest.raises(ValueError, match="support_aware"):
        jp.PaperSet(0.1, support_aware="yes")
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        jp.sweep(KEY, _model(), jp.Dirichlet.grid([1.0], sampler="fast"), bogus=1)
    with pytest.raises(TypeError, match="jp.Chunking"):
        jp.sweep(KEY, _model(), jp.Dirichlet.grid([1.0]), chunking=dict(batch_size=4))
    with pytest.raises(TypeError, match="jp.SolverOptions"):
        jp.synthesize(KEY, _model(), jp.Dirichlet(1.0), options=dict(max_iterations=4))


def test_set_params_say_which_box_they_are():
    """``set_params`` returns the parameters alone: a radius box carries no Beta tables,
    the Dirichlet's exact set does; a ``(kind, params)`` pair is refused."""
    mdp = _model()
    policy = jp.solve(mdp).policy
    paper = jp.Dirichlet(5.0).set_params(mdp, jp.PaperSet(0.1))
    exact = jp.Dirichlet(5.0).set_params(mdp, jp.ExactSet(0.1))
    gaussian = jp.Gaussian(0.05).set_params(mdp, jp.ExactSet(0.1))
    assert paper.is_radius_box and gaussian.is_radius_box and not exact.is_radius_box

    @dataclasses.dataclass(frozen=True)
    class Paired(Uniform):
        def set_params(self, mdp, uncertainty_set):
            return "radius", super().set_params(mdp, uncertainty_set)

    with pytest.raises(TypeError, match="must return a SetParams, not tuple"):
        jp.cost_of_privacy(mdp, policy, Paired(0.01))

"""Every public call of the 0.2 README keeps working (issue 17), with the object form's numbers.

The calls are the 0.2 README's Python blocks, verbatim but for smaller sizes (trials, grids,
targets) so that the test is quick; each is compared with the same computation written with
the objects (``jp.Dirichlet``, ``jp.PaperSet``, ...). ``tests/test_readme.py`` runs today's
README.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

import jaxprivmdp as jp

KEY = jax.random.key(0)


def _same(a, b):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(x, y)


def test_quick_start_block():
    mdp = jp.examples.investment()
    out = jp.synthesize(jax.random.key(0), mdp, k=10.0, beta=0.1, support="nonzero")
    _same(out, jp.synthesize(KEY, mdp, jp.Dirichlet(10.0), jp.PaperSet(0.1), support="nonzero"))
    res = jp.sweep(jax.random.key(0), mdp, ks=[1, 5, 10, 40], num_trials=5, support="nonzero")
    grid = jp.Dirichlet.grid([1, 5, 10, 40], sampler="fast")
    _same(res, jp.sweep(KEY, mdp, grid, num_trials=5, support="nonzero"))
    g = jp.privacy.mdp_guarantee(
        10.0,
        mdp.transitions,
        b=0.1,
        eta=0.1,
        target_delta=1e-3,
        action_mask=mdp.action_mask,
        support="nonzero",
    )
    assert g.epsilon > 0


def test_transformations_block():
    mdp = jp.examples.investment()
    out = jp.synthesize(KEY, mdp, k=10.0, beta=0.1, support="nonzero")
    private = dataclasses.replace(mdp, transitions=out.private_transitions)
    policy = out.policy
    ks = jnp.array([1.0, 5.0, 10.0, 40.0])
    costs = jax.vmap(lambda k: jp.synthesize(jax.random.key(0), mdp, k=k, support="nonzero").cost)(
        ks
    )
    objects = jax.vmap(lambda m: jp.synthesize(KEY, mdp, m, support="nonzero").cost)(
        jp.Dirichlet(ks)
    )
    np.testing.assert_array_equal(costs, objects)
    bounds = jax.jit(lambda k, b: jp.cost_of_privacy(private, policy, k=k, beta=b))(10.0, 0.1)
    jitted = jax.jit(lambda m, s: jp.cost_of_privacy(private, policy, m, s))
    _same(bounds, jitted(jp.Dirichlet(10.0), jp.PaperSet(0.1)))
    dk = jax.grad(lambda k: jp.cost_of_privacy(private, policy, k=k).pessimistic[0, 0])(10.0)
    dk_object = jax.grad(
        lambda k: jp.cost_of_privacy(private, policy, jp.Dirichlet(k)).pessimistic[0, 0]
    )(10.0)
    np.testing.assert_array_equal(dk, dk_object)
    dr = jax.grad(
        lambda r: jp.cost_of_privacy(dataclasses.replace(private, rewards=r), policy, k=10.0).cost
    )(private.rewards)
    assert dr.shape == private.rewards.shape


def test_sparse_robust_and_frontier_blocks():
    grid = jp.examples.gridworld(6, 6, horizon=12, discount=1.0)
    out = jp.synthesize(jax.random.key(0), grid, k=200.0, support_aware=True)
    _same(out, jp.synthesize(KEY, grid, jp.Dirichlet(200.0), jp.PaperSet(support_aware=True)))
    out = jp.synthesize(
        jax.random.key(0), grid, k=200.0, bound="certified", support_aware=True, robust=True
    )
    certified = jp.CertifiedSet(0.1, support_aware=True)
    _same(out, jp.synthesize(KEY, grid, jp.Dirichlet(200.0), certified, robust=True))
    mdp = jp.examples.investment()
    res = jp.frontier(
        jax.random.key(0),
        mdp,
        epsilons=[16],
        delta=1e-3,
        mechanisms=("dirichlet", "gaussian", "laplace"),
        num_trials=1,
        support="nonzero",
    )
    by_class = jp.frontier(
        KEY,
        mdp,
        epsilons=[16],
        delta=1e-3,
        mechanisms=(jp.Dirichlet, jp.Gaussian, jp.Laplace),
        num_trials=1,
        support="nonzero",
    )
    for m in ("dirichlet", "gaussian", "laplace"):
        np.testing.assert_array_equal(res.true_value[m], by_class.true_value[m])
    assert res.reachable["dirichlet"].shape == (1,)


def test_keyword_forms_of_the_other_mechanisms():
    mdp = jp.examples.investment()
    for name, cls in (("gaussian", jp.Gaussian), ("laplace", jp.Laplace)):
        old = jp.synthesize(KEY, mdp, k=0.05, mechanism=name, bound="certified")
        _same(old, jp.synthesize(KEY, mdp, cls(0.05), jp.CertifiedSet(0.1)))
        released = jp.privatize(KEY, mdp, 0.05, mechanism=name)
        _same(released, jp.privatize(KEY, mdp, cls(0.05)))
        robust = jp.robust_solve(released, k=0.05, mechanism=name, bound="exact", beta=0.2)
        _same(robust, jp.robust_solve(released, cls(0.05), jp.ExactSet(0.2)))

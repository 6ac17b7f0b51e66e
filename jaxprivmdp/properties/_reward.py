"""Privacy on PRISM properties: a step-bounded property as a finite-horizon reward problem.

:func:`property_model` turns a model and a step-bounded property into a
:class:`PropertyModel`: a model whose optimal ``T``-stage value *is* the property's value,
which :func:`synthesize`, :func:`sweep`, :func:`frontier`, :func:`cost_of_privacy` and
:func:`robust_solve` take in place of a model. The reduction, for ``P{max,min}=? [φ1 U<=T
φ2]`` (``F<=T φ`` is ``true U<=T φ``):

- the *decided* states ``D = φ2 ∪ (¬φ1 ∧ ¬φ2)`` become absorbing: one allowed action (the
  first one the model allows there) whose row is a public self-loop;
- rewards 0, terminal reward ``R_T = 1[φ2]``, horizon ``T``, discount 1.

Then ``V^π_0(s) = Pr^π_s[φ1 U<=T φ2]`` for every policy π, by induction on the stages: a
decided state keeps its value (1 on φ2, 0 otherwise) to the end, an undecided one takes the
expectation of the next stage, exactly PRISM's bounded-until recursion. ``G<=T φ``: ``D =
¬φ``, ``R_T = 1[φ]``; ``X φ``: ``T = 1``, ``R_T = 1[φ]``, nothing absorbing; ``R{..}=?
[C<=T]``: the model's own rewards, ``R_T = 0``. ``min`` is maximization of the negated
problem (rewards and ``R_T`` times −1): every boundary negates the values back and swaps the
bounds, so results are always in the property's scale with ``lower <= upper`` (for a
minimization the worst case is ``upper``, the larger cost).

Why the paper's guarantees still hold. The transformed model is a finite-horizon MDP with a
terminal value, Theorem 1's setting. Its rows are the true rows of the undecided states and
public self-loops of the decided ones (the labels, like the rewards in the paper, are
public). The mechanism privatizes only the undecided states' rows (each as before, with the
same per-row guarantee); a self-loop has one entry on its support, so every mechanism returns
it unchanged and it is not released as data (the decided states' true rows never leave). For
a row released unchanged, ``E[P | P̄] = P̄`` lies in every set, so Lemma 2 and Theorem 1's
induction apply row by row: the bounds of every set (``paper``, ``exact``, ``certified``,
support-aware or not) bracket the property's value as they bracket a reward's.

Unbounded ``F``, ``U``, ``G`` and ``R [F φ]`` are refused: Theorems 1 and 2 cover finite
horizons and discounted infinite horizons (a γ-contraction); an undiscounted infinite
horizon is neither, and the paper's bounds do not carry over.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import is_concrete
from ..models.core import (
    MechanismInput,
    Model,
    RaggedMDP,
    SparseMDP,
    check_model,
    host_mechanism_input,
    mechanism_input_of,
    model_mechanism_input,
    with_probs,
    with_self_loops,
)
from ._check import check_dtmc, check_reward_structure, step_bound
from ._labels import check_labels, satisfying
from ._parse import parse_property, property_error


@dataclasses.dataclass(frozen=True)
class PropertyModel:
    """A model whose optimal value is a step-bounded property's (:func:`property_model`).

    A pytree (``model`` and ``absorbing`` are its leaves), so it passes through ``jax.jit``.

    Attributes:
      model: the transformed model (finite horizon ``T``, discount 1), in maximization form:
        its values are the property's times ``-1`` when ``minimize``.
      absorbing: `[S]` bool, the decided states made absorbing (not privatized).
      minimize: static: the property is a ``min`` query.
      text: static: the property as given.
    """

    model: Model
    absorbing: jax.Array
    minimize: bool = False
    text: str = ""

    def values(self, v):
        """Values of :attr:`model` in the property's scale."""
        return -v if self.minimize else v

    def bounds(self, low, high):
        """``(lower, upper)`` of :attr:`model`'s values in the property's scale."""
        return (-high, -low) if self.minimize else (low, high)


jax.tree_util.register_dataclass(
    PropertyModel, data_fields=["model", "absorbing"], meta_fields=["minimize", "text"]
)


def property_model(
    mdp: Model,
    prop: str,
    *,
    labels: dict | None = None,
    variables: dict | None = None,
    horizon: int | None = None,
    reward_name: str | None = None,
) -> PropertyModel:
    """A step-bounded PRISM property of ``mdp`` as a finite-horizon reward problem.

    The problem object that the privacy functions take in place of a model:
    ``jp.synthesize(key, jp.property_model(mdp, 'Pmax=? [F<=10 "goal"]', labels=labels),
    jp.Dirichlet(k))`` gives the private policy of the property, its value on the release
    and its bounds; :func:`sweep` adds the true value. One object instead of
    ``property=``/``labels=``/``horizon=`` keywords on five functions: the property travels
    as a value, is checked once, and passes through ``jax.jit``. The reduction and why the
    bounds hold: see the module ``jaxprivmdp.properties._reward``.

    Args:
      mdp: the model (dense or sparse), true or privatized. Its ``rewards`` are the reward
        structure of ``R`` properties; its discount, horizon (except as ``T``) and terminal
        reward are not used.
      prop: ``P{max,min}=? [F<=k φ]``, ``[φ1 U<=k φ2]``, ``[G<=k φ]``, ``[X φ]``,
        ``R{"name"}{max,min}=? [C<=k]``, or ``P=?``/``R=?`` on a DTMC, with ``k`` an int
        ``>= 1`` or ``T``; φ as in :func:`check`.
      labels: ``{name: bool[S]}`` as for :func:`check` (``"init"`` defaults to ``s0``).
      variables: ``{name: int[S]}``, state variables of atoms such as ``s=2``, as for
        :func:`check` (:func:`load_variables` reads PRISM's ``.sta``).
      horizon: the value of ``T`` (default: the model's horizon).
      reward_name: the model's reward structure's name (``R{"name"}`` must match).

    Returns:
      A :class:`PropertyModel`; ``check(mdp, prop, labels=labels)`` equals its
      ``values(solve(pm.model).values)[0]``.

    Raises:
      ValueError: an unbounded property (the paper's bounds need a finite horizon or a
        discount), a step bound of 0, and every error of :func:`check`.
    """
    mdp = check_model(mdp)
    p = parse_property(prop)
    check_reward_structure(p, reward_name)
    bound = step_bound(p, mdp, horizon)
    check_dtmc(p, mdp)
    where = p.positions.get("bound", p.positions["path"])
    if bound is None and p.path != "X":
        raise property_error(
            p.text,
            p.positions["path"],
            "privacy bounds need a step-bounded property: Theorems 1 and 2 bound finite-horizon "
            "and discounted values, and the paper's bounds do not carry over to an undiscounted "
            f"infinite horizon; ask for a step bound, e.g. {p.path}<=T with horizon=T",
        )
    if bound == 0:
        raise property_error(p.text, where, "the step bound must be >= 1 to privatize")
    concrete = is_concrete(labels, variables)
    lab = check_labels(mdp, labels, concrete, variables)
    sat = functools.partial(satisfying, p.text, labels=lab, xp=np if concrete else jnp)
    target, absorbing, rewards = _objective(p, mdp, sat)
    sign, dtype = (-1 if p.opt == "min" else 1), mdp.rewards.dtype
    model = dataclasses.replace(
        _absorb(mdp, absorbing),
        rewards=sign * rewards,
        terminal_reward=sign * target.astype(dtype),
        discount=jnp.asarray(1, dtype),
        horizon=1 if p.path == "X" else int(bound),
    )
    return PropertyModel(model, absorbing, p.opt == "min", p.text)


def _objective(p, mdp: Model, sat):
    """``(target, absorbing, rewards)``: `[S]` ``R_T``'s states, the decided states, and the
    `[S, A]` rewards (the model's for ``C<=k``, else 0)."""
    nothing = jnp.zeros(mdp.num_states, bool)
    if p.kind == "R":  # C<=k: the model's rewards, nothing decided
        return nothing, nothing, mdp.rewards
    target = jnp.asarray(sat(p.right))
    if p.path == "X":
        absorbing = nothing
    elif p.path == "G":
        absorbing = ~target
    else:  # F, U: φ2, and ¬φ1 ∧ ¬φ2
        left = jnp.asarray(sat(p.left)) if p.left is not None else ~nothing
        absorbing = target | (~left & ~target)
    return target, absorbing, jnp.zeros_like(mdp.rewards)


def _absorb(mdp: Model, absorbing: jax.Array) -> Model:
    """``mdp`` with each ``absorbing`` state reduced to one allowed action, a self-loop."""
    S, A = mdp.num_states, mdp.num_actions
    mask = mdp.action_mask
    first = jax.nn.one_hot(jnp.argmax(mask, axis=1), A, dtype=bool)
    mask = jnp.where(absorbing[:, None], first, mask)
    a3 = absorbing[:, None, None]
    if isinstance(mdp, RaggedMDP):
        return with_self_loops(mdp, absorbing, mask)
    if isinstance(mdp, SparseMDP):
        K = mdp.max_successors
        loop = jnp.where(jnp.arange(K) == 0, jnp.arange(S)[:, None], -1).astype(jnp.int32)
        next_states = jnp.where(a3, loop[:, None, :], mdp.next_states)
        probs = jnp.where(a3, (loop >= 0)[:, None, :].astype(mdp.probs.dtype), mdp.probs)
        return dataclasses.replace(mdp, next_states=next_states, probs=probs, action_mask=mask)
    eye = jnp.eye(S, dtype=bool)[:, None, :]
    transitions = jnp.where(a3, eye.astype(mdp.transitions.dtype), mdp.transitions)
    support = mdp.support if mdp.support is None else jnp.where(a3, eye, mdp.support)
    return dataclasses.replace(mdp, transitions=transitions, support=support, action_mask=mask)


def in_property_scale(
    prop: PropertyModel | None,
    result,
    values: tuple[str, ...] = (),
    bounds: tuple[str, str] | None = ("lower", "upper"),
):
    """``result`` (a NamedTuple of the transformed model's numbers) in the property's scale.

    A ``min`` property is solved as the maximization of its negation; every function that
    returns numbers to the user calls this once to undo it: the ``values`` fields negated
    back, and the ``bounds`` pair ``(lower, upper)`` negated and swapped (so the lower bound
    stays in the first field, and for a minimization the bad side is the upper bound). A
    ``minimize`` field left None is set to the direction, one bool per run (the shape of the
    result's ``cost``). Otherwise the identity for ``prop`` or ``result`` None and for a
    ``max`` property.
    """
    if result is None:
        return None
    minimize = prop is not None and prop.minimize
    if "minimize" in result._fields and result.minimize is None:
        shape = jnp.shape(result.cost) if "cost" in result._fields else ()
        result = result._replace(minimize=jnp.full(shape, minimize))
    if not minimize:
        return result
    changes = {name: prop.values(getattr(result, name)) for name in values}
    if bounds is not None:
        low, high = bounds
        changes[low], changes[high] = prop.bounds(getattr(result, low), getattr(result, high))
    return result._replace(**changes)


def as_problem(mdp, name: str = "mdp") -> tuple[Model, PropertyModel | None]:
    """``(model, property)``: the model to work on, and the :class:`PropertyModel` if given."""
    if isinstance(mdp, PropertyModel):
        return mdp.model, mdp
    return check_model(mdp, name), None


def problem_input(
    mdp: Model, pm: PropertyModel | None, support, smoothing, *, interior: bool = True
) -> MechanismInput:
    """What the mechanism privatizes: :func:`model_mechanism_input`, the decided states'
    self-loops kept as one-entry rows (never privatized, whatever ``support`` says)."""
    if pm is None or isinstance(mdp, SparseMDP | RaggedMDP):  # a self-loop lists one successor
        return mechanism_input_of(mdp, support, smoothing, interior=interior)
    a3 = pm.absorbing[:, None, None]
    # The self-loops would fail the interior check a Dirichlet release of full rows makes:
    # check (and smooth) a uniform row in their place, then put them back.
    uniform = jnp.full_like(mdp.transitions, 1 / mdp.num_states)
    stand_in = with_probs(mdp, jnp.where(a3, uniform, mdp.transitions))
    rows_in = model_mechanism_input(stand_in, support, smoothing, interior=interior)
    loops = mdp.transitions > 0
    return MechanismInput(
        jnp.where(a3, mdp.transitions, rows_in.rows),
        jnp.where(a3, loops, rows_in.support),
        rows_in.action_mask,
    )


def host_problem_input(mdp: Model, pm: PropertyModel | None, support) -> MechanismInput:
    """:func:`problem_input` on the host in float64 (the accounting's rows)."""
    rows_in = host_mechanism_input(mdp, support=support, interior=False)
    if pm is None or isinstance(mdp, SparseMDP):
        return rows_in
    a3 = np.asarray(pm.absorbing)[:, None, None]
    loops = np.asarray(mdp.transitions) > 0
    return rows_in._replace(support=np.where(a3, loops, rows_in.support))

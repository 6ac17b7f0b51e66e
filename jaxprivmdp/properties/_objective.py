"""The objective's direction: a model's rewards minimized as a cost, and the worst and best
ends of a result's bounds.

Every planner maximizes. :func:`minimizing` states a minimization as the maximization of the
negated rewards, in the :class:`PropertyModel` form that :func:`property_model` gives a
``min`` property: every boundary that takes it (:func:`synthesize`, :func:`sweep`,
:func:`frontier`, :func:`cost_of_privacy`, :func:`robust_solve`) negates its numbers back
(``in_property_scale``), so values are costs and ``lower <= upper`` always holds.

The interval ``[lower, upper]`` says nothing of which end is bad: for a reward (maximized) the
worst case is ``lower``, for a cost (minimized) it is ``upper``. Results carry ``minimize`` (a
bool per run, batched like the run) and name the ends with :data:`WORST_CASE` and
:data:`BEST_CASE`.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from ..models.core import Model, check_model
from ._reward import PropertyModel


def minimizing(mdp: Model, *, reward_name: str | None = None) -> PropertyModel:
    """The problem of minimizing ``mdp``'s rewards (a cost: steps, energy, time).

    The problem object that the privacy functions take in place of a model, as the one of a
    ``Rmin`` property: ``jp.synthesize(key, jp.minimizing(mdp), jp.Dirichlet(k))`` gives the
    private policy that minimizes the expected total cost, its cost on the release and its
    bounds ``lower <= upper``, with ``worst_case`` the upper bound. It is the maximization of
    the negated rewards and terminal reward, whose numbers every boundary negates back (and
    whose bounds it swaps); no state is made absorbing, the horizon and discount are the
    model's.

    Args:
      mdp: the model (dense, sparse or ragged), true or privatized; finite or infinite
        horizon.
      reward_name: the name of the reward structure its rewards are (e.g. ``"steps"``),
        recorded in the problem's ``text`` (``reward "steps"``).

    Returns:
      A :class:`PropertyModel` with ``minimize=True``, ``absorbing`` all False and ``text``
      ``reward`` or ``reward "name"``; ``pm.values(solve(pm.model).values)`` is the minimal
      expected cost.

    Raises:
      TypeError: ``mdp`` is a :class:`PropertyModel` (a property states its own direction) or
        not a model.
      ValueError: every check of the model's constructor.
    """
    if isinstance(mdp, PropertyModel):
        raise TypeError(
            "minimizing() takes a model; a PropertyModel states its own direction "
            "(write the property with min, e.g. Rmin=? [C<=T])"
        )
    if reward_name is not None and not isinstance(reward_name, str):
        raise TypeError(f"reward_name must be a str or None, got {reward_name!r}")
    mdp = check_model(mdp)
    model = dataclasses.replace(mdp, rewards=-mdp.rewards, terminal_reward=-mdp.terminal_reward)
    text = "reward" if reward_name is None else f'reward "{reward_name}"'
    return PropertyModel(model, jnp.zeros(mdp.num_states, bool), True, text)


def objective(prop: PropertyModel | None, what: str = "reward") -> str:
    """``"maximize reward"``, ``"minimize Rmin=? [C<=20]"``: the direction and its object."""
    direction = "minimize" if prop is not None and prop.minimize else "maximize"
    text = prop.text if prop is not None and prop.text else what
    return f"{direction} {text}"


def worst_end_name(minimize: bool) -> str:
    """``"upper"`` for a minimization, ``"lower"`` for a maximization: the name of the worst
    end of ``[lower, upper]`` (the best end is ``worst_end_name(not minimize)``); the one
    rule behind every "worst case = ..." in results, JSON and the terminal."""
    return "upper" if minimize else "lower"


def bound_end(minimize, lower, upper, *, worst: bool):
    """The worst (``worst=True``) or best end of ``[lower, upper]`` for the direction
    ``minimize``: ``upper`` is the worst for a minimization, ``lower`` for a maximization.

    ``minimize`` has the run's batch shape (None: a maximization); it is broadcast from the
    left over the bounds' trailing (stage, state) dimensions. Dicts of arrays (a frontier's
    per-mechanism fields) are mapped with one ``minimize`` for all.
    """
    if isinstance(lower, dict):
        return {m: bound_end(minimize, lower[m], upper[m], worst=worst) for m in lower}
    if lower is None or upper is None:
        return None
    if minimize is None:
        minimize = False
    numpy = isinstance(lower, np.ndarray) and not isinstance(minimize, jax.Array)
    xp = np if numpy else jnp
    m = xp.asarray(minimize, bool)
    m = m.reshape(m.shape + (1,) * max(0, np.ndim(lower) - m.ndim))
    if not worst:
        m = ~m
    return xp.where(m, upper, lower)


def _end(worst: bool) -> property:
    which = "worst" if worst else "best"
    ends = (worst_end_name(worst), worst_end_name(not worst))  # (minimization, maximization)

    def get(self):
        return bound_end(self.minimize, self.lower, self.upper, worst=worst)

    get.__doc__ = (
        f"The {which} case of the bounds, relative to the objective's direction: "
        f"``{ends[0]}`` for a minimization (``minimize`` True), ``{ends[1]}`` for a "
        "maximization; same shape as ``lower``."
    )
    return property(get)


WORST_CASE = _end(worst=True)
BEST_CASE = _end(worst=False)

"""The public accounting functions: each takes the adjacency as one :class:`Adjacency`.

The modules beside this one compute with ``b`` and ``eta`` as numbers; these functions are
what ``jp.privacy`` exports: the same computations, with the setting (adjacent rows, their
public lower bound, adjacent MDPs) passed as one object. A mechanism is passed as an object
(``jp.Gaussian(sigma)``) or a class (``jp.Gaussian``), never by name.
"""

from __future__ import annotations

from typing import Literal

from numpy.typing import ArrayLike

from .._refusals import mechanism_form, refuses
from ..models import RaggedMDP, SparseMDP, TabularMDP
from . import _additive, _calibrate, _mdp, _rdp, _row
from ._adjacency import Adjacency, as_adjacency, needs_eta
from ._mdp import MDPGuarantee
from ._rdp import DEFAULT_ORDERS, RowComposition
from ._row import Guarantee


def _mechanism(function: str, mechanism, *, instance: bool):
    """A mechanism object (``instance``) or class, duck-typed (this layer is below the
    mechanisms): a name is refused with the object form."""
    ok = hasattr(mechanism, "calibrate") and hasattr(mechanism, "name")
    if ok and (isinstance(mechanism, type) != instance):
        return mechanism
    example = mechanism_form(mechanism, instance=instance)
    what = "a mechanism object" if instance else "a mechanism class"
    raise TypeError(f"{function}() takes {what}, got {mechanism!r}: pass {example}")


@refuses("b", "eta")
def epsilon(
    k: ArrayLike,
    adjacency: Adjacency,
    *,
    n: int,
    gamma: float | None = None,
    log_gamma: float | None = None,
):
    """The worst-case privacy loss of ``Dirichlet(k·p)`` on the good set ``{x >= γ}`` for
    adjacent rows (``adjacency.b``, ``adjacency.eta`` required); see ``docs/privacy.md``.
    Exactly one of ``gamma`` and ``log_gamma``; ``k`` may be an array."""
    a = as_adjacency("epsilon", adjacency)
    eta = needs_eta("epsilon", a)
    return _row.epsilon(k, b=a.b, eta=eta, gamma=gamma, n=n, log_gamma=log_gamma)


@refuses("b", "eta")
def guarantee(k: float, adjacency: Adjacency, *, n: int, target_delta: float) -> Guarantee:
    """The smallest ε of one row's Dirichlet mechanism at ``target_delta``, choosing the
    good set's ``γ`` (``adjacency.eta`` required; ``n >= 2`` the row's dimension)."""
    a = as_adjacency("guarantee", adjacency)
    eta = needs_eta("guarantee", a)
    return _row.guarantee(k, b=a.b, eta=eta, n=n, target_delta=target_delta)


@refuses("b", "eta")
def dirichlet_rdp(k: float, order: float, adjacency: Adjacency, *, n: int | None = None) -> float:
    """The Rényi DP ``ε(λ)`` of one row's Dirichlet mechanism at ``order`` ``λ > 1`` for
    adjacent rows (``adjacency.eta`` required)."""
    a = as_adjacency("dirichlet_rdp", adjacency)
    eta = needs_eta("dirichlet_rdp", a)
    return _rdp.dirichlet_rdp(k, order, b=a.b, eta=eta, n=n)


@refuses("b", "eta")
def calibrate_k(
    target_epsilon: float,
    target_delta: float,
    adjacency: Adjacency,
    *,
    n: int,
    k_bounds: tuple[float, float] = (1e-2, 1e5),
) -> float:
    """The largest ``k`` (the least noise) whose :func:`guarantee` meets both targets
    (``adjacency.eta`` required); a ValueError below the floor of reachable ε."""
    a = as_adjacency("calibrate_k", adjacency)
    eta = needs_eta("calibrate_k", a)
    return _calibrate.calibrate_k(
        target_epsilon, target_delta, b=a.b, eta=eta, n=n, k_bounds=k_bounds
    )


@refuses("b")
def gaussian_delta(sigma: float, epsilon: float, adjacency: Adjacency) -> float:
    """The exact δ(ε) of the Gaussian mechanism with standard deviation ``sigma``
    (Balle & Wang 2018, Theorem 8) for adjacent rows."""
    a = as_adjacency("gaussian_delta", adjacency)
    return _additive.gaussian_delta(sigma, epsilon, b=a.b)


@refuses("b")
def gaussian_epsilon(sigma: float, delta: float, adjacency: Adjacency) -> float:
    """The smallest ε at which the Gaussian mechanism with ``sigma`` is (ε, δ)-DP for
    adjacent rows (rounded up)."""
    a = as_adjacency("gaussian_epsilon", adjacency)
    return _additive.gaussian_epsilon(sigma, delta, b=a.b)


@refuses("b")
def calibrate_gaussian(epsilon: float, delta: float, adjacency: Adjacency) -> float:
    """The smallest σ whose Gaussian mechanism is (ε, δ)-DP for adjacent rows."""
    a = as_adjacency("calibrate_gaussian", adjacency)
    return _additive.calibrate_gaussian(epsilon, delta, b=a.b)


@refuses("b")
def laplace_epsilon(scale: float, adjacency: Adjacency) -> float:
    """Pure ε of the Laplace mechanism with ``scale`` per entry: ``b / scale``."""
    a = as_adjacency("laplace_epsilon", adjacency)
    return _additive.laplace_epsilon(scale, b=a.b)


@refuses("b")
def calibrate_laplace(epsilon: float, adjacency: Adjacency) -> float:
    """The scale ``b / ε`` of the ε-DP Laplace mechanism for adjacent rows."""
    a = as_adjacency("calibrate_laplace", adjacency)
    return _additive.calibrate_laplace(epsilon, b=a.b)


@refuses("b", "eta")
def calibrate(mechanism, epsilon: float, delta: float, adjacency: Adjacency, *, n=None):
    """The least-noise parameter of a mechanism class meeting (ε, δ) for one adjacent row:
    ``calibrate(jp.Gaussian, 1.0, 1e-5, Adjacency(0.1))`` is
    ``jp.Gaussian.calibrate(1.0, 1e-5, Adjacency(0.1)).sigma``. The Dirichlet's needs
    ``adjacency.eta`` and ``n``; the Laplace mechanism is pure ε (``delta`` unused)."""
    cls = _mechanism("calibrate", mechanism, instance=False)
    a = as_adjacency("calibrate", adjacency)
    return cls.calibrate(epsilon, delta, a, n=n).parameter


@refuses("b", "eta")
def compose_rows(
    mechanism,
    adjacency: Adjacency,
    *,
    num_rows: int,
    delta: float,
    n: int | None = None,
    orders=DEFAULT_ORDERS,
) -> RowComposition:
    """The (ε, δ) of ``num_rows`` rows privatized independently by ``mechanism`` (an object:
    ``jp.Dirichlet(k)``, ``jp.Gaussian(sigma)``, ``jp.Laplace(scale)``), all of which may
    change: basic and Rényi-DP composition side by side (the Dirichlet's needs
    ``adjacency.eta`` and ``n``), ``delta`` the total δ in ``(0, 1)``."""
    mech = _mechanism("compose_rows", mechanism, instance=True)
    a = as_adjacency("compose_rows", adjacency)
    return _rdp.compose_rows(
        mech.name,
        float(mech.parameter),
        num_rows=num_rows,
        delta=delta,
        b=a.b,
        eta=a.eta,
        n=n,
        orders=orders,
    )


@refuses("b", "eta", "transitions", "action_mask")
def mdp_guarantee(
    k: float,
    model: TabularMDP | SparseMDP | RaggedMDP,
    adjacency: Adjacency,
    *,
    target_delta: float,
    support: Literal["nonzero"] | None = None,
    smoothing: float | None = None,
) -> MDPGuarantee:
    """The (ε, δ) of privatizing every allowed row of ``model`` with ``Dirichlet(k·P(s, a))``.

    ``adjacency.scope`` picks the adjacent MDPs: ``"row"`` (one row differs: ``ε = max ε_r``,
    ``δ = max δ_r``, each row meeting ``target_delta``) or ``"all"`` (every row may differ:
    basic composition, each row meeting ``target_delta / num_rows``). ``adjacency.eta`` is
    the *public* lower bound on the (smoothed) entries on the support; None means
    ``smoothing`` when given, else each row's own minimum (that ε depends on, and leaks, the
    data). The rows privatized follow :func:`jaxprivmdp.dirichlet_mechanism` with the same
    ``support`` and ``smoothing``; rows with a one-entry support cost nothing.

    Args:
      k: the mechanism's parameter, ``> 0``.
      model: a :class:`TabularMDP` (its own action mask), :class:`SparseMDP` or
        :class:`RaggedMDP` (rows over their listed successors; no ``smoothing``).
      adjacency: ``jp.privacy.Adjacency(b, eta, scope="row" | "all")``.
      target_delta: the MDP-level δ to meet, in ``(0, 1)``.
      support: None (rows strictly positive) or ``"nonzero"`` (over the nonzero entries).
      smoothing: ``η_s`` in ``(0, 1/S]``, as in the mechanism; not with ``support``.

    Returns:
      An :class:`MDPGuarantee` (``ε = δ = 0`` with no privatized row).

    Raises:
      TypeError: a model that is not a model (an array: wrap it with ``jp.make_mdp``).
      ValueError: invalid arguments; a zero entry under ``support=None`` without smoothing;
        an entry below a given ``eta``.
    """
    if not isinstance(model, TabularMDP | SparseMDP | RaggedMDP):
        raise TypeError(
            f"mdp_guarantee() takes a model, got {type(model).__name__}: pass "
            "jp.make_mdp(P, R, action_mask=...) (or a sparse or ragged model)"
        )
    a = as_adjacency("mdp_guarantee", adjacency)
    return _mdp.mdp_guarantee(
        k,
        model,
        b=a.b,
        eta=a.eta,
        target_delta=target_delta,
        support=support,
        smoothing=smoothing,
        adjacency=a.scope,
    )

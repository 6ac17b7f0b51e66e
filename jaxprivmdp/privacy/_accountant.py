""":class:`Accountant`: the privacy ledger of several releases, one (ε, δ) for the history.

In the shape of dp_accounting's ``PrivacyAccountant``: ``compose(event, count)``,
``get_epsilon(target_delta)``, ``get_delta(target_epsilon)``, with the neighbouring relation
(an :class:`Adjacency`) stated once, at construction. Composition is Rényi-DP: the curves of
the events add up over a fixed grid of orders and are converted to (ε, δ) once.

dp_accounting does the work it can do: an ``RdpAccountant`` composes every dp_accounting
event (the Gaussian and Laplace releases' own ``GaussianDpEvent``/``LaplaceDpEvent``, and any
event a user composes directly), and its ``compute_epsilon``/``compute_delta`` convert the
total curve. The Dirichlet mechanism has no dp_accounting event (its RDP is this library's,
``_rdp.dirichlet_rdp``, and an ``RdpAccountant`` cannot be given a curve), so the ledger
keeps the Dirichlet releases' total curve on the accountant's orders beside it and converts
the sum of the two with the same dp_accounting function.
"""

from __future__ import annotations

import numpy as np

from .._checks import check_int, real
from ._adjacency import Adjacency, as_adjacency
from ._mdp import sum_up
from ._rdp import DEFAULT_ORDERS
from ._release import Release, additive_events, dirichlet_curve

_MECHANISMS = ("dirichlet", "gaussian", "laplace")


class Accountant:
    """A privacy ledger: the (ε, δ) of everything released about one private MDP.

    ``Accountant(jp.privacy.Adjacency(b, eta, scope=...))`` states once which MDPs are
    neighbours; :meth:`compose` adds a :class:`Release` (a model privatized by
    ``jp.Dirichlet``, ``jp.Gaussian`` or ``jp.Laplace``) or any dp_accounting ``DpEvent``;
    :meth:`get_epsilon` and :meth:`get_delta` give one (ε, δ) for the whole history, by
    Rényi-DP composition (Mironov 2017) and dp_accounting's conversion (Balle et al. 2020).

    What is promised: (ε, δ)-DP of the whole sequence of releases (adaptively chosen
    included) for the one adjacency given, the same pair of neighbouring MDPs throughout:
    with ``scope="row"`` one row differs, the same row in every release; with ``"all"``
    every row may differ. Every curve is an upper bound on the Rényi divergence: the
    Dirichlet one is exact or above the worst split (``docs/privacy.md``); the Gaussian and
    Laplace ones are dp_accounting's, at the sensitivity of ``adjacency.b`` (under smoothing,
    which shrinks it, an upper bound). RDP composition is itself an upper bound: for a
    single Dirichlet release :func:`mdp_guarantee` (its probabilistic (ε, δ) analysis) can
    give a smaller ε, and a few Laplace releases' pure ε added up (``Σ b/λ``) can be smaller
    than their RDP conversion.

    What is not promised: anything about releases of other data, another adjacency or
    another model (refused where a :class:`Release` shows it: another ``adjacency``, another
    ``(S, A)``); a ``DpEvent`` is taken as stated: its noise must be calibrated to the same
    neighbouring relation (a row replaced by an adjacent one: dp_accounting's
    ``REPLACE_ONE``).

    Args:
      adjacency: ``jp.privacy.Adjacency(b, eta, scope="row" | "all")``; the Dirichlet
        mechanism needs ``eta`` (or a release's smoothing).
      orders: the Rényi orders ``λ > 1`` the curves are kept on (default: dp_accounting's
        grid with finer orders near 1, where the Dirichlet curve is finite).

    Raises:
      TypeError: an adjacency that is not an :class:`Adjacency`.
      ValueError: no orders, or an order ``<= 1``.

    References:
      I. Mironov, "Rényi Differential Privacy", CSF 2017 (composition, Proposition 1).
      B. Balle, G. Barthe, M. Gaboardi, J. Hsu, T. Sato, "Hypothesis Testing
      Interpretations and Renyi Differential Privacy", AISTATS 2020 (the conversion).
    """

    def __init__(self, adjacency: Adjacency, *, orders=DEFAULT_ORDERS):
        self._adjacency = as_adjacency("Accountant", adjacency)
        orders = [real("orders", o, low=1.0, low_open=True) for o in np.ravel(orders)]
        if not orders:
            raise ValueError("orders must hold at least one Rényi order > 1")
        self._orders = tuple(orders)
        self._dirichlet = np.zeros(len(orders))
        self._events = None  # dp_accounting's RdpAccountant, made at the first event
        self._ledger: list[tuple[object, int]] = []
        self._shape: tuple[int, int] | None = None

    @property
    def adjacency(self) -> Adjacency:
        """The neighbouring relation, fixed for every composition."""
        return self._adjacency

    @property
    def orders(self) -> tuple[float, ...]:
        """The Rényi orders the curves are kept on."""
        return self._orders

    @property
    def ledger(self) -> tuple[tuple[object, int], ...]:
        """Every ``(event, count)`` composed so far, in order."""
        return tuple(self._ledger)

    @property
    def rdp(self) -> np.ndarray:
        """`[len(orders)]` the total Rényi-DP curve ``ε(λ)`` of the history."""
        if self._events is None:
            return self._dirichlet.copy()
        return _add_up(self._dirichlet, self._events.rdp)

    def __repr__(self) -> str:
        return f"Accountant({self._adjacency!r}, events={len(self._ledger)})"

    def _rdp_accountant(self):
        if self._events is None:
            from dp_accounting import NeighboringRelation
            from dp_accounting.rdp import RdpAccountant

            # A row replaced by an adjacent row: the relation of every statement here.
            self._events = RdpAccountant(list(self._orders), NeighboringRelation.REPLACE_ONE)
        return self._events

    def supports(self, event) -> bool:
        """Whether :meth:`compose` takes ``event`` (a :class:`Release` of a mechanism the
        ledger accounts, of the ledger's adjacency and ``(S, A)`` and, for the Dirichlet
        mechanism, with a public ``η`` no row is below; or a ``DpEvent`` dp_accounting's
        ``RdpAccountant`` composes): exactly the events :meth:`compose` does not refuse."""
        if isinstance(event, Release):
            try:
                self._release_part(event)
            except ValueError:
                return False
            return True
        import dp_accounting

        return isinstance(event, dp_accounting.DpEvent) and self._rdp_accountant().supports(event)

    def compose(self, event, count: int = 1) -> Accountant:
        """Adds ``count`` independent runs of ``event`` to the ledger.

        Args:
          event: a :class:`Release` or a dp_accounting ``DpEvent`` (e.g.
            ``dp_accounting.GaussianDpEvent(noise_multiplier)``).
          count: how many times, ``>= 1``.

        Returns:
          This accountant, so that calls chain:
          ``acc.compose(r1).compose(r2).get_epsilon(1e-5)``.

        Raises:
          TypeError: an event of neither kind.
          ValueError: ``count < 1``; a release of another adjacency or another ``(S, A)``
            than the ledger's, of a mechanism the ledger does not account, or that its
            accounting refuses (no public ``η``, a row below it); a ``DpEvent`` that
            dp_accounting's ``RdpAccountant`` cannot compose.
        """
        count = check_int("count", count, low=1)
        if isinstance(event, Release):
            self._compose_release(event, count)
        else:
            self._compose_dp_event(event, count)
        self._ledger.append((event, count))
        return self

    def _compose_release(self, release: Release, count: int) -> None:
        curve, found = self._release_part(release)
        if curve is not None:
            scaled = np.array([sum_up([c], [count]) for c in curve.tolist()])
            self._dirichlet = _add_up(self._dirichlet, scaled)
        elif found is not None:
            self._rdp_accountant().compose(found[0], found[1] * count)
        self._shape = release.shape

    def _release_part(self, release: Release):
        """``(curve, None)``: a Dirichlet release's Rényi-DP curve; ``(None, (event,
        count))`` or ``(None, None)``: an additive one's dp_accounting event, if any rows.
        Changes nothing (what :meth:`supports` asks).

        Raises:
          ValueError: a release the ledger refuses.
        """
        name = release.mechanism.name
        if name not in _MECHANISMS:
            raise ValueError(
                f"the ledger accounts releases of the {', '.join(_MECHANISMS)} mechanisms, "
                f"got {name!r}: compose its dp_accounting DpEvent instead"
            )
        if release.adjacency is not None and release.adjacency != self._adjacency:
            raise ValueError(
                f"the release was accounted under {release.adjacency!r}, this ledger under "
                f"{self._adjacency!r}: one ledger holds one neighbouring relation"
            )
        if self._shape is not None and release.shape != self._shape:
            raise ValueError(
                f"the release is of a model with (S, A) = {release.shape}, the ledger's "
                f"releases of {self._shape}: one ledger is about one private model"
            )
        if name == "dirichlet":
            return dirichlet_curve(release, self._adjacency, self._orders), None
        return None, additive_events(release, self._adjacency)

    def _compose_dp_event(self, event, count: int) -> None:
        import dp_accounting

        if not isinstance(event, dp_accounting.DpEvent):
            hint = ""
            if hasattr(event, "calibrate") and hasattr(event, "name"):
                hint = ": wrap a mechanism with the model it privatized, Release(mech, mdp)"
            raise TypeError(
                "compose() takes a jp.privacy.Release or a dp_accounting DpEvent, got "
                f"{type(event).__name__}{hint}"
            )
        accountant = self._rdp_accountant()
        if not accountant.supports(event):
            raise ValueError(
                f"dp_accounting's RdpAccountant cannot compose {event!r} under the "
                "neighbouring relation of this ledger (a row replaced by an adjacent one)"
            )
        accountant.compose(event, count)

    def get_epsilon(self, target_delta: float) -> float:
        """The smallest ε of the whole history at ``target_delta`` in ``(0, 1)`` over the
        orders (``inf`` where no order gives a finite one; 0 for an empty ledger)."""
        from dp_accounting.rdp import rdp_privacy_accountant as rdp

        delta = real("target_delta", target_delta, low=0.0, high=1.0, low_open=True, high_open=True)
        eps, _ = rdp.compute_epsilon(list(self._orders), self.rdp.tolist(), delta)
        return float(eps)

    def get_delta(self, target_epsilon: float) -> float:
        """The smallest δ of the whole history at ``target_epsilon >= 0`` over the orders
        (at most 1; 0 for an empty ledger)."""
        from dp_accounting.rdp import rdp_privacy_accountant as rdp

        eps = real("target_epsilon", target_epsilon, low=0.0)
        curve = self.rdp
        if not curve.any():
            return 0.0
        dlt, _ = rdp.compute_delta(list(self._orders), curve.tolist(), eps)
        return float(dlt)


def _add_up(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a + b`` per order, rounded up (:func:`sum_up`): a total never below its parts."""
    return np.array([sum_up([x, y], [1, 1]) for x, y in zip(a.tolist(), b.tolist(), strict=True)])

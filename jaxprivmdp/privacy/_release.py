""":class:`Release`: one privatized model as an event of the privacy ledger.

A release of the Dirichlet mechanism enters the ledger by its Rényi-DP curve over the rows
it privatized (:func:`dirichlet_curve`: the per-row curve of ``_rdp``, the largest over the
rows when one row differs, their sum when every row may); a release of the Gaussian or
Laplace mechanism by dp_accounting's own event for one row (:func:`additive_events`), once
or once per private row. The rows are the ones :func:`mdp_guarantee` counts, read the same
way (``_private_rows``), so a ledger and a single-release guarantee never disagree on which
rows were privatized.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import numpy as np

from ..models.core import (
    RaggedMDP,
    SparseMDP,
    TabularMDP,
    check_options,
    host_mechanism_input,
)
from . import _rdp
from ._adjacency import Adjacency
from ._mdp import row_domain, sum_up
from ._private_rows import PrivateRows, ragged_rows, rows_of_input
from ._public import _mechanism


@dataclasses.dataclass(frozen=True, eq=False)
class Release:
    """One privatized model, as :class:`Accountant` composes it.

    ``Release(jp.Dirichlet(10.0), mdp, support="nonzero")`` is what
    ``jp.privatize(key, mdp, jp.Dirichlet(10.0), support="nonzero")`` released. Only the
    model's public structure is read (which rows are private, over which support) and, for
    the Dirichlet mechanism, that every entry on the support is at least the public ``η``:
    the model is the one privatized (the true one), as for :func:`mdp_guarantee`.

    Attributes:
      mechanism: the mechanism object that privatized it: ``jp.Dirichlet(k)``,
        ``jp.Gaussian(sigma)`` or ``jp.Laplace(scale)``.
      model: the :class:`TabularMDP`, :class:`SparseMDP` or :class:`RaggedMDP` it
        privatized.
      support: None or ``"nonzero"``, as given to ``jp.privatize``.
      smoothing: ``η_s`` as given to ``jp.privatize`` (dense models only).
      adjacency: the adjacency the release was accounted under when it states one (a
        release file records it); None: the accountant's. An accountant refuses a release
        of another adjacency.

    Raises:
      TypeError: a mechanism that is not a mechanism object, a model that is not a model,
        an adjacency that is not an :class:`Adjacency`.
      ValueError: invalid ``support`` or ``smoothing``.
    """

    mechanism: object
    model: TabularMDP | SparseMDP | RaggedMDP
    support: Literal["nonzero"] | None = None
    smoothing: float | None = None
    adjacency: Adjacency | None = None

    def __post_init__(self):
        _mechanism("Release", self.mechanism, instance=True)
        if not isinstance(self.model, TabularMDP | SparseMDP | RaggedMDP):
            raise TypeError(
                f"Release() takes the model privatized, got {type(self.model).__name__}: pass "
                "jp.make_mdp(P, R, action_mask=...) (or a sparse or ragged model)"
            )
        check_options(self.support, self.smoothing)
        if self.adjacency is not None and not isinstance(self.adjacency, Adjacency):
            raise TypeError(
                f"Release(adjacency=) takes a jp.privacy.Adjacency or None, got {self.adjacency!r}"
            )

    @property
    def shape(self) -> tuple[int, int]:
        """``(S, A)`` of the model released."""
        if isinstance(self.model, PrivateRows):
            return tuple(int(d) for d in self.model.shape)
        return (int(self.model.num_states), int(self.model.num_actions))

    def __repr__(self) -> str:
        model = f"<{type(self.model).__name__} S={self.shape[0]} A={self.shape[1]}>"
        parts = [repr(self.mechanism), model]
        for name in ("support", "smoothing", "adjacency"):
            if getattr(self, name) is not None:
                parts.append(f"{name}={getattr(self, name)!r}")
        return f"Release({', '.join(parts)})"


def release_of_rows(mechanism, rows: PrivateRows, smoothing=None) -> Release:
    """The :class:`Release` of a release file, known by the rows it records rather than
    by the model privatized (the released model's zeros hide its support): the internal
    path of the command line's ledger. ``rows.minima`` stand for the rows' smallest entries
    (the public lower bound they were verified against when released)."""
    _mechanism("Release", mechanism, instance=True)
    if not isinstance(rows, PrivateRows):
        raise TypeError(f"release_of_rows() takes PrivateRows, got {type(rows).__name__}")
    check_options(None, smoothing)
    release = object.__new__(Release)
    fields = dict(mechanism=mechanism, model=rows, support=None, smoothing=smoothing)
    for name, value in {**fields, "adjacency": None}.items():
        object.__setattr__(release, name, value)
    return release


def model_rows(model, support=None, smoothing=None, *, interior: bool = False) -> PrivateRows:
    """The rows a mechanism changes when it privatizes ``model`` with ``support`` and
    ``smoothing`` (``interior``: refuse rows with zeros, as the Dirichlet mechanism does)."""
    if isinstance(model, RaggedMDP):
        return ragged_rows(model, support, smoothing)
    rows_in = host_mechanism_input(model, support=support, smoothing=smoothing, interior=interior)
    return rows_of_input(rows_in)


def private_rows(release: Release) -> PrivateRows:
    """The rows the release's mechanism changed (rows with zeros are fine for the additive
    mechanisms, which need no interior; refused for the Dirichlet one without an option)."""
    if isinstance(release.model, PrivateRows):
        return release.model
    interior = release.mechanism.name == "dirichlet"
    return model_rows(release.model, release.support, release.smoothing, interior=interior)


def dirichlet_curve(release: Release, adjacency: Adjacency, orders) -> np.ndarray:
    """The Rényi-DP curve ``ε(λ)`` over ``orders`` of a Dirichlet release.

    ``scope="row"``: the largest row's (any one row may be the one that differs);
    ``"all"``: the sum over the private rows (each an independent mechanism), rounded up.
    The public ``η`` is ``adjacency.eta``, else the release's smoothing; smoothing shrinks
    the adjacency bound to ``(1 − nη_s)·b`` per row, as in :func:`mdp_guarantee`.

    Raises:
      ValueError: no public ``η``; a row with an entry below it.
    """
    eta = adjacency.eta if adjacency.eta is not None else release.smoothing
    if eta is None:
        raise ValueError(
            "the Dirichlet mechanism's accounting needs the public lower bound eta: "
            "Accountant(jp.privacy.Adjacency(b, eta)) (or a release with smoothing)"
        )
    k = float(release.mechanism.parameter)
    rows = private_rows(release)
    first, which, row_b, row_eta = row_domain(
        rows, b=adjacency.b, eta=eta, smoothing=release.smoothing
    )
    curves = np.zeros((len(first), len(orders)))
    for j, i in enumerate(first.tolist()):
        if row_b[i] <= 0:  # smoothing = 1/n: the output is Dirichlet(k/n·1), data-free
            continue
        n, b, e = int(rows.sizes[i]), float(row_b[i]), float(row_eta[i])
        curves[j] = [_rdp.dirichlet_rdp(k, o, b=b, eta=e, n=n) for o in orders]
    if not len(first):
        return np.zeros(len(orders))
    if adjacency.scope == "row":
        return curves.max(axis=0)
    counts = np.bincount(which, minlength=len(first))
    return np.array([sum_up(curves[:, j], counts) for j in range(len(orders))])


def additive_events(release: Release, adjacency: Adjacency) -> tuple[object, int] | None:
    """dp_accounting's event of one private row of a Gaussian or Laplace release and how
    many times it composes (1 for ``scope="row"``, the number of private rows for
    ``"all"``); None when the release privatized no row.

    The sensitivity is that of ``adjacency.b`` even under smoothing (which shrinks it): an
    upper bound, as the command line's release guarantee.
    """
    mech = release.mechanism
    num_rows = private_rows(release).states.size
    if num_rows == 0:
        return None
    event = _rdp.additive_event(mech.name, float(mech.parameter), b=adjacency.b)
    return event, (num_rows if adjacency.scope == "all" else 1)

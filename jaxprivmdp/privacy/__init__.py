"""(ε, δ) accounting for the row mechanisms, per row and for a whole MDP.

Per-row accounting of the Dirichlet mechanism lives in ``_row.py`` (the guarantee of one
``k``; with the worst-case loss ε in ``_loss.py``, the concave-majorant bound on spreading
mass in ``_split.py`` and special functions in ``_special.py``), the search for the ``k``
that meets a target in ``_calibrate.py``; the lifting to a whole MDP and composition in
``_mdp.py`` (over the rows ``_private_rows.py`` finds, in any layout, ragged included);
the Gaussian and Laplace mechanisms' accounting and calibration in ``_additive.py``;
Rényi-DP and composition over many rows (basic vs RDP, through ``dp_accounting``) in
``_rdp.py``; the ledger of several releases (:class:`Accountant`, composing
:class:`Release` events and dp_accounting's) in ``_accountant.py`` and ``_release.py``.
Those compute with ``b`` and ``η`` as numbers; the functions exported here
(``_public.py``) take them as one :class:`Adjacency` (``_adjacency.py``).

The mechanism outputs ``x ~ Dirichlet(k·p)`` for a row ``p`` of the transition function.
This module answers: which (ε, δ) does a given ``k`` buy, and which ``k`` buys a target
(ε, δ)? It is plain NumPy/SciPy float64 bookkeeping (no JAX), done in log space because the
optimal ``γ`` below is often far smaller than the smallest float64 (``γ ≈ 10⁻⁴⁰⁰``).

Setting (Gohari et al., TIFS 2021):

* **Domain.** Rows ``p`` in the simplex of dimension ``n`` with every entry ``>= η``.
  ``η`` is a *public* assumption: the guarantee covers every pair of rows in this domain.
* **Adjacency (general ℓ1).** ``p`` and ``q`` are b-adjacent if ``‖p − q‖₁ <= b``, with
  any number of entries changed (the paper's Definition 1, two entries, is a special case;
  for ``n = 2`` they coincide). Every mechanism (Dirichlet, Gaussian, Laplace) and every
  accounting here (ε, δ, Rényi DP) uses this adjacency.
* **Good outputs.** ``Ω₁ = {x : x_l >= γ for all l}``; ``δ`` bounds ``P[x ∉ Ω₁]``.

What is promised: probabilistic (ε, δ)-DP of one row's mechanism for b-adjacent rows in the
η-domain (the privacy loss is ``<= ε`` on ``Ω₁`` and ``P[Ω₁ᶜ] <= δ``), which implies ordinary
(ε, δ)-DP. Policy synthesis on the privatized MDP is post-processing and keeps the guarantee.
:func:`mdp_guarantee` lifts the per-row guarantee to a whole MDP for two notions of MDP
adjacency (one row changes, or every row may change).

What is not promised: nothing about rows outside the η-domain (entries below ``η`` or a
different support), nothing about the public structure (the zero pattern with
``support="nonzero"``, which actions are allowed, the dimension). The analysis is of the
ideal real-valued mechanism: floating-point sampling artefacts (Mironov 2012, "On
significance of the least significant bits for differential privacy") are not defended
against, and the sampler's randomness must be secret and fresh.

Imports: ``jaxprivmdp._checks`` and :mod:`jaxprivmdp.models` only (plain NumPy/SciPy
accounting; the mechanisms one layer up state their guarantees through it). What the layers
above use beyond the public functions is in :mod:`jaxprivmdp.privacy.core`.

The derivations of ε, δ and the Rényi DP, with the conditions under which they are exact,
are in ``docs/privacy.md``.

References:
  P. Gohari, B. Wu, C. Hawkins, M. Hale, U. Topcu, "Differential Privacy on the Unit Simplex
  via the Dirichlet Mechanism", IEEE Trans. Information Forensics and Security 16, 2021
  (Definition 1: b-adjacency; probabilistic DP; the mechanism's (ε, δ) theorem).
  P. Gohari, M. Hale, U. Topcu, "Privacy-Preserving Policy Synthesis in Markov Decision
  Processes", IEEE CDC 2020 (Algorithm 1; privacy by post-processing, Section III).
"""

from ._accountant import Accountant as Accountant
from ._adjacency import Adjacency as Adjacency
from ._mdp import Composition as Composition
from ._mdp import MDPGuarantee as MDPGuarantee
from ._mdp import compose as compose
from ._public import calibrate as calibrate
from ._public import calibrate_gaussian as calibrate_gaussian
from ._public import calibrate_k as calibrate_k
from ._public import calibrate_laplace as calibrate_laplace
from ._public import compose_rows as compose_rows
from ._public import dirichlet_rdp as dirichlet_rdp
from ._public import epsilon as epsilon
from ._public import gaussian_delta as gaussian_delta
from ._public import gaussian_epsilon as gaussian_epsilon
from ._public import guarantee as guarantee
from ._public import laplace_epsilon as laplace_epsilon
from ._public import mdp_guarantee as mdp_guarantee
from ._rdp import RowComposition as RowComposition
from ._release import Release as Release
from ._row import Guarantee as Guarantee
from ._row import delta as delta

__all__ = [
    "Accountant",
    "Adjacency",
    "Composition",
    "Guarantee",
    "MDPGuarantee",
    "Release",
    "RowComposition",
    "calibrate",
    "calibrate_gaussian",
    "calibrate_k",
    "calibrate_laplace",
    "compose",
    "compose_rows",
    "delta",
    "dirichlet_rdp",
    "epsilon",
    "gaussian_delta",
    "gaussian_epsilon",
    "guarantee",
    "laplace_epsilon",
    "mdp_guarantee",
]

"""Models: what an agent's MDP is, dense or sparse, and its public structure.

A :class:`TabularMDP` holds dense ``[S, A, S]`` transitions; a :class:`SparseMDP` holds
successor lists ``[S, A, K]``; a :class:`RaggedMDP` the same lists bucketed by length
(``_ragged``: O(transitions) however unequal the rows); all carry rewards, horizon, discount,
the action mask and the public support a release keeps. An :class:`IntervalMDP`
(``_interval``) bounds each row entry by entry instead, dense or over successor lists (a
:class:`RaggedIntervalMDP`, ``_interval_ragged``, the lists in buckets).
``_rows`` is what every layer above needs of any kind (the rows a policy picks, their
support, expectations); ``_support`` decides which rows and entries a mechanism privatizes;
``examples`` builds the paper's models and test problems; ``_memory`` checks that dense
arrays fit before they are allocated; ``_convert`` converts between the dense and the list
layouts.

Imports: only ``jaxprivmdp._checks``. Everything else imports this: the public names from
here, the rest from :mod:`jaxprivmdp.models.core` (the internal API).
"""

from . import examples as examples
from ._convert import to_dense as to_dense
from ._convert import to_padded as to_padded
from ._convert import to_ragged as to_ragged
from ._convert import to_sparse as to_sparse
from ._dense import TabularMDP as TabularMDP
from ._dense import make_mdp as make_mdp
from ._interval import IntervalMDP as IntervalMDP
from ._interval import make_interval_mdp as make_interval_mdp
from ._interval_ragged import RaggedIntervalMDP as RaggedIntervalMDP
from ._ragged import RaggedMDP as RaggedMDP
from ._ragged import make_ragged_mdp as make_ragged_mdp
from ._sparse import SparseMDP as SparseMDP
from ._sparse import make_sparse_mdp as make_sparse_mdp

__all__ = [
    "IntervalMDP",
    "RaggedIntervalMDP",
    "RaggedMDP",
    "SparseMDP",
    "TabularMDP",
    "examples",
    "make_interval_mdp",
    "make_mdp",
    "make_ragged_mdp",
    "make_sparse_mdp",
    "to_dense",
    "to_padded",
    "to_ragged",
    "to_sparse",
]

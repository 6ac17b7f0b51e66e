""":class:`SolverOptions`: how far the solvers iterate and how far the robust fill reaches."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
from jax.typing import ArrayLike

from .._checks import check_count, check_int, check_range


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class SolverOptions:
    """The solvers' options, one object for :func:`~jaxprivmdp.solve`,
    :func:`~jaxprivmdp.synthesize`, :func:`~jaxprivmdp.cost_of_privacy`,
    :func:`~jaxprivmdp.robust_solve` and :func:`~jaxprivmdp.sweep`.

    A pytree: ``max_iterations`` and ``tol`` are leaves (traced under ``jax.jit``, values
    checked when concrete); ``fill_width`` is static (it sets the compiled program's shapes).

    Attributes:
      max_iterations: infinite horizon: the guard on value iterations (and on the bounds'
        iterations), an int ``>= 1``.
      tol: infinite horizon: the tolerance ``ε > 0`` (None: the default of
        :func:`~jaxprivmdp.solve` and :func:`~jaxprivmdp.cost_of_privacy`). Not used by
        :func:`~jaxprivmdp.synthesize` and :func:`~jaxprivmdp.sweep`, whose steps pick
        their own.
      fill_width: how many entries, in value order, each greedy fill of the robust kernel
        reaches (None: proven from concrete values, or every entry), see
        :func:`~jaxprivmdp.cost_of_privacy`.
    """

    max_iterations: ArrayLike = 10_000
    tol: ArrayLike | None = None
    fill_width: int | None = dataclasses.field(default=None, metadata=dict(static=True))

    def __post_init__(self):
        # Numbers are checked here; arrays (maybe traced) by the solvers when concrete.
        if isinstance(self.max_iterations, int | float | np.number):
            check_count("max_iterations", self.max_iterations)
        if isinstance(self.tol, int | float | np.number):
            check_range("tol", self.tol, low=0.0, low_open=True, scalar=True)
        if self.fill_width is not None:
            object.__setattr__(self, "fill_width", check_int("fill_width", self.fill_width, low=1))


def solver_options(options: SolverOptions | None) -> SolverOptions:
    """``options``, or the defaults for None; a TypeError for anything else."""
    if options is None:
        return SolverOptions()
    if not isinstance(options, SolverOptions):
        raise TypeError(f"options must be a jp.SolverOptions, got {options!r}")
    return options

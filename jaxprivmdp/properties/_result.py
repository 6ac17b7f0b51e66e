"""The answer of :func:`jaxprivmdp.check`: :class:`CheckResult`, one model's or a batch's."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..models.core import Model
from ._precision import host_answer, relative_width, summarize

Array = jax.Array | np.ndarray  # (see CheckResult: where the answer was computed)


class CheckResult(NamedTuple):
    """The answer to a property, per state.

    All numbers are in the model's dtype; they were computed in float64 for a concrete model
    (see :mod:`jaxprivmdp.properties._check`) and in the model's dtype under ``jax.jit``.
    The fields are where they were computed: NumPy arrays for a concrete model (checked on
    the host, like Storm's and PRISM's results; ``jnp.asarray`` moves one to the device),
    ``jax.Array`` under ``jax.jit``. For a batch of models every field has a leading batch axis.

    Attributes:
      values: `[S]` the value of the property in each state (probabilities; expected rewards,
        ``inf`` where PRISM reports infinity): the midpoint of ``[lower, upper]`` when
        ``converged``, else ``lower`` (an upper bound that has not converged may be far off
        or infinite); always within ``[lower, upper]``.
      policy: the optimizing deterministic policy, int32, `[S]`: for bounded properties the
        decision rule of the first step (``k`` steps to go, the rule to apply in the initial
        state; with ``k = 0`` each state's first allowed action), or with ``step_policy``
        `[k, S]`, one rule per step (``policy[t]`` at step ``t``, ``t = 0`` first). Never a
        masked action. For ``P=?``/``R=?`` on a DTMC, its only action.
      error_bound: `[S]` ``max(values − lower, upper − values)`` rounded up: a bound on
        ``|values − exact|``, ``exact`` being the value of the model's rows read as
        distributions (see the module); 0 where the precomputation decided the value; ``inf``
        where ``upper`` is.
      value_at_initial: scalar ``values[model.initial_state]``.
      converged: scalar bool: ``precision <= tol`` (every state's interval met ``tol``, as
        reported in the model's dtype); always True for bounded properties.
      iterations: scalar int: interval iterations done, summed over the windows of states
        the strongly connected components are solved in (each a few hundred states; see
        ``_topological``; 0 where a verified guess met ``tol`` at once; in a batch, the
        shared passes' count for every model they ran on), or the step bound ``k``.
      lower: `[S]` a lower bound on the exact value in each state.
      upper: `[S]` an upper bound (``inf`` where none was found); ``exact`` lies in
        ``[lower, upper]``, rounded outward when narrowed from float64.
      precision: scalar: the relative precision reached, ``max_s (upper − lower) /
        (|upper| + |lower|)`` (the half-width of the ``tol`` test), 0 where every state is
        exact (equal bounds, infinities included), ``inf`` where some upper bound is.
    """

    values: Array
    policy: Array
    error_bound: Array
    value_at_initial: Array
    converged: Array
    iterations: Array
    lower: Array
    upper: Array
    precision: Array


def result(mdp: Model, out) -> CheckResult:
    """``(values, error, policy, iterations, converged, lower, upper, precision)``, traced
    under ``jax.jit``, as a CheckResult."""
    values, error, policy, it, conv, lower, upper, precision = out
    return CheckResult(
        values=jnp.asarray(values),
        policy=jnp.asarray(policy),
        error_bound=jnp.asarray(error),
        value_at_initial=jnp.asarray(values[mdp.initial_state]),
        converged=jnp.asarray(conv),
        iterations=jnp.asarray(it, jnp.int32),
        lower=jnp.asarray(lower),
        upper=jnp.asarray(upper),
        precision=jnp.asarray(precision),
    )


def stacked(results: list[CheckResult]) -> CheckResult:
    """Host results of one property on a batch, stacked along a leading axis."""
    return CheckResult(*(np.stack(field) for field in zip(*results, strict=True)))


def traced_result(mdp: Model, out) -> CheckResult:
    """``(lower, upper, policy, iterations, converged)`` computed in the model's dtype
    (traced, under ``jax.jit``) as a CheckResult."""
    lower, upper, policy, it, conv = out
    values, error = summarize(lower, upper, jnp.asarray(conv), jnp)
    precision = relative_width(lower, upper, jnp)
    return result(mdp, (values, error, policy, it, conv, lower, upper, precision))


def host_result(mdp: Model, out, dtype, tol) -> CheckResult:
    """The host's float64 ``(lower, upper, policy, iterations, converged)`` (of one model,
    or of a batch: a leading axis on each) narrowed to ``dtype`` (:func:`host_answer`;
    ``tol``: see there) as a CheckResult of NumPy arrays: the answer stays on the host where
    it was computed (handing nine arrays to JAX would cost ~0.3 ms, a third of a small
    model's check, and a transfer on a GPU nobody asked for)."""
    lower, upper, policy, it, conv = out
    lower, upper, values, error, precision, conv = host_answer(lower, upper, dtype, conv, tol)
    initial = np.asarray(values[..., mdp.initial_state])
    it = np.asarray(it, np.int32)
    policy = np.asarray(policy, np.int32)  # (a bounded property's may be on the device)
    return CheckResult(values, policy, error, initial, conv, it, lower, upper, precision)

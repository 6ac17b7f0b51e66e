"""The Dirichlet mechanism: privatizes every allowed row ``P(s, a)`` of an MDP.

``P̄(s, a) ~ Dirichlet(k · P(s, a))`` independently per row. Larger ``k`` means weaker
privacy and less noise. See :mod:`jaxprivmdp.privacy` for the (ε, δ) that a ``k`` buys.
"""

from __future__ import annotations

import secrets
from typing import Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from ._mdp import check_range, validate_transitions
from ._sampling import loggamma

Support = Literal["nonzero"] | None
Sampler = Literal["jax", "fast"]


class ZeroEntryError(ValueError):
    """Rows with zero entries were given without ``support="nonzero"`` or ``smoothing``.

    Attributes:
      rows: the offending ``(state, action)`` pairs, in order.
    """

    def __init__(self, message: str, rows: list[tuple[int, int]]):
        super().__init__(message)
        self.rows = rows


class MechanismInput(NamedTuple):
    """Validated inputs of the mechanism, as NumPy arrays (nothing the user gave is changed).

    Attributes:
      rows: `[S, A, S]` the rows that are privatized (smoothed when ``smoothing`` was given).
      support: `[S, A, S]` bool, entries sampled; entries outside stay exactly 0.
      action_mask: `[S, A]` bool, allowed actions; masked rows are never privatized.
    """

    rows: np.ndarray
    support: np.ndarray
    action_mask: np.ndarray


def prepare_mechanism_input(
    transitions: ArrayLike,
    *,
    action_mask: ArrayLike | None = None,
    support: Support = None,
    smoothing: float | None = None,
    dtype=None,
) -> MechanismInput:
    """Validates the rows to privatize and resolves zero entries.

    A Dirichlet density needs every concentration ``k·p_j > 0``. Rows with zeros are refused
    unless ``support="nonzero"`` (the zero pattern is public structure, rows are privatized
    over their nonzero entries) or ``smoothing=η`` (rows are mixed with the uniform
    distribution, ``p ← (1 − nη) p + η``, which changes the data).

    Raises:
      ValueError: for invalid transitions, or zero entries without an option to handle them.
    """
    P, mask = validate_transitions(transitions, action_mask, dtype=dtype)
    n = P.shape[-1]
    if support not in (None, "nonzero"):
        raise ValueError(f"support must be None or 'nonzero', got {support!r}")
    if smoothing is not None:
        if support is not None:
            raise ValueError("pass either support='nonzero' or smoothing, not both")
        check_range("smoothing", smoothing, low=0.0, high=1.0 / n, low_open=True)
        P = (1.0 - n * smoothing) * P + smoothing
    allowed = np.broadcast_to(mask[:, :, None], P.shape)
    if support == "nonzero":
        supp = (P > 0) | ~allowed
    else:
        zeros = np.argwhere((P <= 0) & allowed)
        if zeros.size:
            rows = sorted({(int(s), int(a)) for s, a, _ in zeros})
            shown = ", ".join(f"(state {s}, action {a})" for s, a in rows[:5])
            more = f" and {len(rows) - 5} more" if len(rows) > 5 else ""
            raise ZeroEntryError(
                f"transition rows {shown}{more} have zero entries: the Dirichlet mechanism "
                "needs rows in the interior of the simplex. Pass support='nonzero' to treat the "
                "zero pattern as public and privatize each row over its nonzero entries, or "
                "smoothing=eta to mix every row with the uniform distribution first.",
                rows,
            )
        supp = np.ones(P.shape, bool)
    return MechanismInput(P, supp, mask)


def _loggamma(key: jax.Array, a: jax.Array, sampler: Sampler) -> jax.Array:
    if sampler == "jax":
        return jax.random.loggamma(key, a, dtype=a.dtype)
    if sampler == "fast":
        return loggamma(key, a, dtype=a.dtype)
    raise ValueError(f"sampler must be 'jax' or 'fast', got {sampler!r}")


def privatize(
    key: jax.Array,
    rows: jax.Array,
    k: jax.Array,
    support: jax.Array,
    action_mask: jax.Array,
    sampler: Sampler = "fast",
) -> jax.Array:
    """The mechanism on validated inputs (pure, jit- and vmap-friendly; no checks).

    Samples normalized log-gamma variates exactly as ``jax.random.dirichlet`` does
    (``softmax(loggamma(k·p))``), with ``-inf`` outside a row's support so those entries are
    exactly 0. For full-support rows and ``sampler="jax"`` the result equals
    ``jax.random.dirichlet(key, k * rows)`` bit for bit. Masked rows come out as zeros.
    """
    # Entries outside the support get a dummy concentration 1; their variates are discarded.
    # Concentrations are floored at the smallest normal float: XLA:CPU flushes subnormals to
    # zero, and a zero concentration has no gamma distribution (the change is below 1e-38).
    tiny = jnp.finfo(rows.dtype).tiny
    a = jnp.where(support, jnp.maximum(k * rows, tiny), jnp.ones_like(rows))
    log_g = _loggamma(key, a, sampler)
    log_g = jnp.where(support, log_g, -jnp.inf)
    private = jax.nn.softmax(log_g, axis=-1)
    return jnp.where(action_mask[..., None], private, jnp.zeros_like(private))


def check_key(key) -> jax.Array:
    """A typed PRNG key, or a ValueError that says how to make one."""
    if isinstance(key, jax.Array) and jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        if key.ndim != 0:
            raise ValueError(f"key must be a single PRNG key, got shape {key.shape}")
        return key
    if isinstance(key, jax.Array | np.ndarray) and key.shape == (2,) and key.dtype == np.uint32:
        return jax.random.wrap_key_data(jnp.asarray(key))  # a legacy jax.random.PRNGKey
    raise ValueError(
        f"key must be a JAX PRNG key such as jax.random.key(seed) or secure_key(), got {key!r}"
    )


def dirichlet_mechanism(
    key: jax.Array,
    transitions: ArrayLike,
    k: ArrayLike,
    *,
    action_mask: ArrayLike | None = None,
    support: Support = None,
    smoothing: float | None = None,
    sampler: Sampler = "fast",
) -> jax.Array:
    """Privatizes every allowed row: ``P̄(s, a) ~ Dirichlet(k · P(s, a))``, independently.

    Args:
      key: a JAX PRNG key (``jax.random.key``). The same key gives the same noise; for a real
        release use :func:`secure_key`.
      transitions: `[S, A, S]` the sensitive transition probabilities.
      k: the mechanism's parameter ``k > 0`` (larger = weaker privacy, less noise).
      action_mask: `[S, A]` bool, True = allowed. Masked rows are never privatized and come out
        as zeros (they are ignored everywhere in the library).
      support: None (every allowed row must be strictly positive) or ``"nonzero"``: each row is
        privatized over its nonzero entries; the zero pattern is treated as public structure
        and structural zeros stay exactly 0.
      smoothing: ``η`` in ``(0, 1/S]``: replace each allowed row by ``(1 − Sη) p + η`` before
        privatizing. This changes the data (a bias of at most ``Sη`` in ℓ1 per row) in exchange
        for rows with every entry ``>= η``, which the privacy accounting needs.
      sampler: ``"fast"`` (default: an exact vectorized Marsaglia–Tsang gamma sampler,
        ``jaxprivmdp._sampling``, about 50–100x faster than ``jax.random.dirichlet`` in float32
        on CPU for the sweep's shapes, see ``benchmarks/RESULTS.md``) or ``"jax"`` (the
        reference: ``jax.random.loggamma``; the result then equals
        ``jax.random.dirichlet(key, k * P)`` bit for bit). Same distribution, different
        draws for the same key.

    Returns:
      `[S, A, S]` privatized transitions ``P̄``: same dtype as a floating ``transitions``
      array (JAX's default float dtype otherwise).

    Raises:
      ValueError: invalid transitions, ``k <= 0``, or zero entries without ``support`` or
        ``smoothing``.

    References:
      Gohari, Hale, Topcu, "Privacy-Preserving Policy Synthesis in Markov Decision Processes",
      CDC 2020, Algorithm 1 step 1 and Section II-D.
    """
    check_range("k", k, low=0.0, low_open=True, scalar=True)
    given = getattr(transitions, "dtype", None)
    dtype = given if given is not None and jnp.issubdtype(given, jnp.floating) else None
    inp = prepare_mechanism_input(
        transitions, action_mask=action_mask, support=support, smoothing=smoothing, dtype=dtype
    )
    rows = jnp.asarray(inp.rows)
    return privatize(
        check_key(key),
        rows,
        jnp.asarray(k, rows.dtype),
        jnp.asarray(inp.support),
        jnp.asarray(inp.action_mask),
        sampler,
    )


def secure_key(impl: str | None = None) -> jax.Array:
    """A fresh PRNG key seeded from the operating system's entropy (``secrets``).

    Use it to release private data: a key from a small integer seed is guessable, and the same
    key reproduces the same noise, which would undo the privacy. Note that JAX's threefry
    generator is a counter-based PRNG, not a vetted cryptographic generator, and that
    floating-point samplers have known attacks (Mironov 2012) that this library does not
    defend against.

    Args:
      impl: optional PRNG implementation name passed to ``jax.random.key``.

    Returns:
      A typed key whose whole key data (64 bits for the default threefry) comes from OS
      entropy.
    """
    impl = impl or jax.config.jax_default_prng_impl
    shape = jax.random.key_data(jax.random.key(0, impl=impl)).shape
    words = np.array([secrets.randbits(32) for _ in range(int(np.prod(shape)))], np.uint32)
    return jax.random.wrap_key_data(words.reshape(shape), impl=impl)

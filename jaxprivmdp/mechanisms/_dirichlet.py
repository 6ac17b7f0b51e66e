"""The Dirichlet mechanism: privatizes every allowed row ``P(s, a)`` of an MDP.

``P̄(s, a) ~ Dirichlet(k · P(s, a))`` independently per row. Larger ``k`` means weaker
privacy and less noise. See :mod:`jaxprivmdp.privacy` for the (ε, δ) that a ``k`` buys.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import secrets
from typing import ClassVar, Literal

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from .._checks import (
    check_key,
    check_positive,
    working_dtype,
)
from .._refusals import mechanism_object, refuses
from ..models.core import (
    RaggedMDP,
    SparseMDP,
    Support,
    TabularMDP,
    mechanism_input,
    model_mechanism_input,
    ragged_mechanism_input,
    with_probs,
)
from ..privacy import Adjacency, calibrate_k
from ..privacy import guarantee as row_guarantee
from ..privacy.core import smallest_epsilon
from ..sets.core import UncertaintySet, beta_params, outward_radius, radius_params
from ._base import Mechanism, RowGuarantee, privatize_jit
from ._sampling import loggamma, spread_of

try:  # JAX's per-element gamma sampler, the one jax.random.loggamma vmaps (see jax_loggamma)
    from jax._src.random.core import _gamma_one
except ImportError:  # pragma: no cover - another JAX: the unchunked path
    _gamma_one = None

Sampler = Literal["jax", "fast"]


def _loggamma(key: jax.Array, a: jax.Array, support: jax.Array, sampler: Sampler) -> jax.Array:
    if sampler == "jax":
        return jax_loggamma(key, a)
    return loggamma(key, a, dtype=a.dtype, names=entry_names(jnp.broadcast_to(support, a.shape)))


# Elements per chunk of the "jax" sampler: jax.random.loggamma keeps about 140 bytes of
# loop state per element (1.6 GiB at S = 10⁶, A = 4, K = 3); a chunk of 2^16 holds 9 MiB,
# stays in cache and runs its rejection loop to its own (smaller) maximum: 2^21 entries
# take 1.0 s of CPU in chunks of 2^14–2^16, 3.0 s in chunks of 2^20 (2-core CPU).
JAX_CHUNK = 1 << 16
_NEEDS_N = (
    "the Dirichlet mechanism's {what} needs n, the number of entries of a row (its "
    "support's size: the number of states S for a dense model): pass n=..., or use "
    "jp.privacy.mdp_guarantee(k, model, adjacency, target_delta=...), which takes it from "
    "the model"
)


def _chunkable(key: jax.Array) -> bool:
    """Whether ``jax.random.split(key, n)[i] == jax.random.fold_in(key, i)`` (threefry in
    its partitionable mode, JAX's default) and JAX's per-element sampler is at hand."""
    return (
        _gamma_one is not None
        and jax.config.jax_threefry_partitionable
        and str(jax.random.key_impl(key)) == "threefry2x32"
    )


def jax_loggamma(key: jax.Array, a: jax.Array, chunk: int | None = None) -> jax.Array:
    """``jax.random.loggamma(key, a)`` bit for bit, in chunks of ``chunk`` elements.

    ``jax.random.loggamma`` gives element ``i`` (row-major) the key ``split(key, a.size)[i]``
    and runs JAX's Marsaglia–Tsang loop on it, vmapped over all elements at once. With
    threefry in its partitionable mode that key is ``fold_in(key, i)``, so a ``lax.map``
    over chunks that derives each element's key from its index runs the same loop on the
    same keys, holding one chunk's loop state at a time. Other key implementations (and
    arrays of up to ``chunk`` elements, default :data:`JAX_CHUNK`) take
    ``jax.random.loggamma`` whole. Under ``vmap`` the keys are the same; XLA compiles the
    batched loop differently, so a value may differ from the unchunked one in the last bit.
    """
    n, chunk = a.size, JAX_CHUNK if chunk is None else chunk
    if n <= chunk or not _chunkable(key):
        return jax.random.loggamma(key, a, dtype=a.dtype)
    num = -(-n // chunk)
    flat = jnp.pad(a.reshape(-1), (0, num * chunk - n), constant_values=1)
    index = jnp.arange(num * chunk, dtype=jnp.uint32).reshape(num, chunk)

    def one(args):
        a_chunk, i_chunk = args
        keys = jax.vmap(jax.random.fold_in, in_axes=(None, 0))(key, i_chunk)
        return jax.vmap(functools.partial(_gamma_one, log_space=True))(keys, a_chunk)

    out = jax.lax.map(one, (flat.reshape(num, chunk), index))
    return out.reshape(-1)[:n].reshape(a.shape)


def entry_names(support: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Each entry's name for the fast sampler: ``(row, rank)``, its row (the flat index of
    the leading axes: ``s·A + a``) and its rank among the row's supported entries.

    A dense row names its supported entries in state order; a successor list in list
    order. So a sparse model whose lists are in increasing state order (``to_sparse``'s,
    the examples') names every entry as its dense twin does and draws the same release
    from the same key. Entries off the support (discarded) are named ``n + position``.
    """
    *lead, n = support.shape
    num_rows = math.prod(lead)
    if num_rows * spread_of(2) >= 2**32:  # loggamma's bound on the first name
        raise ValueError(f"too many rows ({num_rows}) to name the entries of a release")
    row = jnp.arange(num_rows, dtype=jnp.uint32).reshape(*lead, 1)
    place = jnp.broadcast_to(jnp.arange(n, dtype=jnp.uint32), support.shape)

    def ranks():  # a log-depth scan: XLA:CPU lowers cumsum as a reduce_window, O(n²)
        count = jax.lax.associative_scan(jnp.add, support.astype(jnp.uint32), axis=-1)
        return jnp.where(support, count - np.uint32(1), place + np.uint32(n))

    # Full rows (the common dense case, support=None) rank every entry at its place.
    rank = jax.lax.cond(jnp.all(support), lambda: place, ranks)
    return jnp.broadcast_to(row, support.shape), rank


def check_sampler(sampler) -> Sampler:
    if sampler not in ("jax", "fast"):
        raise ValueError(f"sampler must be 'jax' or 'fast', got {sampler!r}")
    return sampler


def privatize(
    key: jax.Array,
    rows: jax.Array,
    k: jax.Array,
    support: jax.Array,
    action_mask: jax.Array,
    sampler: Sampler = "jax",
) -> jax.Array:
    """The mechanism on validated inputs: the pure core (jit, vmap; no checks).

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
    log_g = _loggamma(key, a, support, sampler)
    log_g = jnp.where(support, log_g, -jnp.inf)
    private = jax.nn.softmax(log_g, axis=-1)
    return jnp.where(action_mask[..., None], private, jnp.zeros_like(private))


_privatize_jit = jax.jit(privatize, static_argnames=("sampler",))


@dataclasses.dataclass(frozen=True)
class Dirichlet(Mechanism):
    """The paper's mechanism: ``P̄(s, a) ~ Dirichlet(k · P(s, a))`` for every allowed row.

    Args:
      k: the concentration ``k > 0`` (larger = less noise, weaker privacy).
      sampler: ``"jax"`` (default: ``jax.random.dirichlet``'s sampler, the one to audit) or
        ``"fast"`` (same distribution, faster; the same draws for a dense model and its
        sparse twin), see :func:`dirichlet_mechanism` (static).

    Its sets: Lemma 1's box for :class:`~jaxprivmdp.PaperSet`, the exact Beta marginals for
    the exact and certified sets. Its (ε, δ): ``jaxprivmdp.privacy.guarantee`` (needs the
    public lower bound ``eta`` on the rows' entries and the row dimension ``n``):
    ``jp.Dirichlet(k).guarantee(jp.privacy.Adjacency(b, eta), delta=..., n=...)``.
    """

    k: ArrayLike
    sampler: Sampler = dataclasses.field(default="jax", metadata=dict(static=True))
    name: ClassVar[str] = "dirichlet"
    needs_interior: ClassVar[bool] = True
    noise_grows_with_parameter: ClassVar[bool] = False

    def __post_init__(self):
        super().__post_init__()
        check_sampler(self.sampler)

    def privatize(self, key, rows, support, action_mask):
        return privatize(key, rows, self.k, support, action_mask, self.sampler)

    def set_params(self, mdp, uncertainty_set: UncertaintySet):
        if not uncertainty_set.exact:  # Lemma 1's box
            dtype = mdp.rewards.dtype
            alpha = outward_radius(self.k, uncertainty_set.beta, dtype)
            return radius_params(alpha, uncertainty_set, dtype)
        return beta_params(mdp, self.k, uncertainty_set)

    @refuses("b", "eta")
    def guarantee(self, adjacency: Adjacency, *, delta, n=None) -> RowGuarantee:
        if n is None:
            raise ValueError(_NEEDS_N.format(what="guarantee"))
        g = row_guarantee(float(self.k), adjacency, n=n, target_delta=delta)
        return RowGuarantee(g.epsilon, g.delta, adjacency.b, g)

    @refuses("b", "eta")
    def epsilon(self, adjacency: Adjacency, *, delta, n=None):
        return self.guarantee(adjacency, delta=delta, n=n).epsilon

    @classmethod
    @refuses("b", "eta")
    def calibrate(cls, epsilon, delta, adjacency: Adjacency, *, n=None, sampler: Sampler = "jax"):
        if adjacency.eta is None:
            raise ValueError("calibrating the Dirichlet mechanism needs Adjacency(b, eta)")
        if n is None:
            raise ValueError(_NEEDS_N.format(what="calibration"))
        return cls(calibrate_k(epsilon, delta, adjacency, n=n), sampler)

    @classmethod
    @refuses("b", "eta")
    def floor(cls, delta, adjacency: Adjacency, *, n=None):
        b, eta = adjacency.b, adjacency.eta
        return smallest_epsilon(b=b, eta=eta, n=n, target_delta=delta)

    @classmethod
    def grid(cls, values, sampler: Sampler = "jax") -> Dirichlet:
        """One Dirichlet mechanism holding a 1-D grid of ``k``: ``Dirichlet.grid(ks)``."""
        return dataclasses.replace(super().grid(values), sampler=check_sampler(sampler))


@refuses("k", "sampler", "mechanism")
def dirichlet_mechanism(
    key: jax.Array,
    transitions: ArrayLike,
    mechanism: Dirichlet,
    *,
    action_mask: ArrayLike | None = None,
    support: Support = None,
    smoothing: float | None = None,
) -> jax.Array:
    """Privatizes every allowed row: ``P̄(s, a) ~ Dirichlet(k · P(s, a))``, independently.

    ``dirichlet_mechanism(key, P, jp.Dirichlet(k))``. Works under ``jax.jit`` and
    ``jax.vmap`` over ``key``, ``transitions`` and the mechanism's ``k``; values are checked
    only when they are concrete (traced inputs get shape checks).

    Args:
      key: a JAX PRNG key (``jax.random.key``). The same key gives the same noise; for a real
        release use :func:`secure_key`.
      transitions: `[S, A, S]` the sensitive transition probabilities, or a whole model
        (:class:`TabularMDP`, :class:`SparseMDP` or :class:`RaggedMDP`, whose own action
        mask is used): then the privatized model of the same kind comes back. A sparse or
        ragged model's rows are privatized over their listed successors (its support is
        public structure); a ragged one's bucket by bucket, as :func:`jaxprivmdp.privatize`
        does (the same draws for the same key; the padded layout's distribution).
      mechanism: ``jp.Dirichlet(k, sampler=...)``: the parameter ``k > 0`` (larger = weaker
        privacy, less noise) and the gamma sampler: ``"jax"`` (default, the one to audit:
        ``jax.random.loggamma``, so the result equals ``jax.random.dirichlet(key, k * P)``
        bit for bit) or ``"fast"`` (an exact
        vectorized Marsaglia–Tsang sampler, ``jaxprivmdp.mechanisms._sampling``, 50–100x
        faster in float32 on CPU; the one for large sweeps). Same distribution,
        different draws for the same key. Dense and sparse: ``"fast"`` keys each entry's
        draw by its row and its rank in the row's support (:func:`entry_names`), so a
        dense model and its :func:`~jaxprivmdp.to_sparse` (any sparse model whose lists
        are in increasing state order, as the examples' are) release the same ``P̄`` from
        the same key. ``"jax"`` draws by position in the array (``jax.random.dirichlet``'s
        own keying), so a sparse model's release differs from its dense twin's (same
        distribution); compare the two kinds with ``"fast"``.
      action_mask: `[S, A]` bool, True = allowed. Masked rows are never privatized and come out
        as zeros (they are ignored everywhere in the library).
      support: None (every allowed row must be strictly positive) or ``"nonzero"``: each row is
        privatized over its nonzero entries; the zero pattern is treated as public structure
        and structural zeros stay exactly 0.
      smoothing: ``η`` in ``(0, 1/S]``: replace each allowed row by ``(1 − Sη) p + η`` before
        privatizing. This changes the data (a bias of at most ``Sη`` in ℓ1 per row) in exchange
        for rows with every entry ``>= η``, which the privacy accounting needs.

    Returns:
      `[S, A, S]` privatized transitions ``P̄``: same dtype as a floating ``transitions``
      array (JAX's default float dtype otherwise); for a model, the privatized model.

    Raises:
      TypeError: a mechanism that is not a :class:`Dirichlet` (a bare ``k``, the 0.2 form).
      ValueError: invalid transitions, ``k <= 0``, or zero entries without ``support`` or
        ``smoothing``.

    References:
      Gohari, Hale, Topcu, "Privacy-Preserving Policy Synthesis in Markov Decision Processes",
      CDC 2020, Algorithm 1 step 1 and Section II-D.
    """
    key = check_key(key)
    mech = mechanism_object("dirichlet_mechanism", mechanism, Dirichlet)
    k, sampler = mech.k, mech.sampler
    if isinstance(transitions, TabularMDP | SparseMDP | RaggedMDP):
        return _privatize_model(key, transitions, k, action_mask, support, smoothing, sampler)
    given = getattr(transitions, "dtype", None)
    floating = given is not None and np.dtype(given) in (np.float32, np.float64)
    # A float64 array without x64 is computed in float32, as everywhere in JAX.
    dtype = jax.dtypes.canonicalize_dtype(given) if floating else working_dtype()
    check_positive("k", k, dtype=dtype)
    rows_in = mechanism_input(transitions, action_mask, support, smoothing, dtype)
    k = jnp.asarray(k, dtype)
    rows, sampled, mask = rows_in
    return _privatize_jit(key, rows, k, sampled, mask, sampler=sampler)


def _privatize_model(key, mdp, k, action_mask, support, smoothing, sampler):
    """:func:`dirichlet_mechanism` of a whole model: the same kind of model comes back."""
    if action_mask is not None:
        raise ValueError("a model carries its own action_mask; do not pass another")
    dtype = mdp.rewards.dtype
    check_positive("k", k, dtype=dtype)
    k = jnp.asarray(k, dtype)
    if isinstance(mdp, RaggedMDP):  # bucket by bucket: jp.privatize's release, its draws too
        rows_in = ragged_mechanism_input(mdp, support, smoothing)
        mech = Dirichlet(k, sampler)
        rows, sampled, mask = rows_in
        return with_probs(mdp, privatize_jit(key, rows, mech, sampled, mask))
    rows_in = model_mechanism_input(mdp, support, smoothing)
    rows, sampled, mask = rows_in
    p_bar = _privatize_jit(key, rows, k, sampled, mask, sampler=sampler)
    return with_probs(mdp, p_bar, sampled)


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

"""Decimal numbers to float64 with array operations, rounded as Python's ``float`` rounds.

:func:`decimal_column` converts the fields ``b[s:e]`` of a byte array, each a decimal number
``[+-]digits[.digits][(e|E)[+-]digits]`` (at least one digit before the exponent), or returns
None if one is not. A number is ``M · 10^q`` (``M`` its digits as an integer, ``q`` its
exponent less its fraction digits); it is converted exactly where that is cheap:

- ``M ≤ 2^53`` and ``|q| ≤ 22``: ``M`` and ``10^|q|`` are doubles exactly, so one product or
  quotient is correctly rounded (Clinger 1990, the "fast path" of every exact reader).
- ``2^53 < M < 10^19`` and ``−22 ≤ q ≤ 0`` (the 17 digits of a shortest round-trip double such
  as ``0.16272744065985467``): the quotient in double-double arithmetic (Dekker's exact
  product), accurate to far better than 2^-30 of a unit in the last place, rounded once.

A result that close to a rounding boundary (or a power of two), and every other number, goes
through NumPy's string-to-float cast (correctly rounded, as Python's
``float``), which is exact but several times slower. Plain fields (digits and at most one
point, at most 19 digits, the common case) have their digits read eight at a time from 64-bit
words (the SWAR conversion of simdjson and fast_float); the others digit by digit.

References:
  W. D. Clinger, "How to read floating point numbers accurately", PLDI 1990.
  T. J. Dekker, "A floating-point technique for extending the available precision",
  Numerische Mathematik 18, 1971.
  D. Lemire, "Number parsing at a gigabyte per second", Software: Practice and Experience
  51(8), 2021 (the eight-digit conversion).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

# Character kinds (rows of ``parse_decimals``' input).
DIGIT, DOT, EXP, SIGN, AFTER = 1, 2, 3, 4, 5  # 0: any other character; AFTER: past the field
KINDS = np.zeros(256, np.uint8)
KINDS[ord("0") : ord("9") + 1] = DIGIT
KINDS[ord(".")] = DOT
KINDS[[ord("e"), ord("E")]] = EXP
KINDS[[ord("+"), ord("-")]] = SIGN

_POW10 = 10.0 ** np.arange(23)  # exact doubles
_TWO53 = np.uint64(1 << 53)
_SPLIT = 134217729.0  # 2^27 + 1 (Veltkamp)
_POW10_HIGH = _POW10 * _SPLIT - (_POW10 * _SPLIT - _POW10)  # each power's split
_POW10_LOW = _POW10 - _POW10_HIGH
_MANTISSA = np.uint64((1 << 52) - 1)
_MAX_DIGITS = 19  # below 2^64
_MAX_EXPONENT_DIGITS = 4
MAX_CHARS = 40  # a longer field goes to the caller's line-by-line reader
_U = np.uint64
_POW10_INT = 10 ** np.arange(20, dtype=np.uint64)
_ZEROS = _U(0x3030303030303030)  # eight '0'
# For a word that holds the last m bytes of a run (m = 0..8, in its high bytes): the mask of
# those bytes, and '0' in the bytes before them.
_KEEP = np.array([0] + [(2**64 - 1) << (8 * (8 - m)) & (2**64 - 1) for m in range(1, 9)], _U)
_FILL = _ZEROS & ~_KEEP


def windows(b: np.ndarray, at: np.ndarray, width: int) -> np.ndarray:
    """``b[at[i] : at[i] + width]`` for each i: `[n, width]` (rows copied, no index matrix)."""
    return np.lib.stride_tricks.sliding_window_view(b, width)[at]


def decimal_column(b: np.ndarray, s: np.ndarray, e: np.ndarray) -> np.ndarray | None:
    """float64 values of the fields ``b[s[i]:e[i]]``, or None if one is no decimal number.

    ``b`` must hold ``MAX_CHARS`` bytes before the first field and after the last.
    """
    out = _plain(b, s, e)
    rest = np.flatnonzero(np.isnan(out))  # not plain, or not exact in :func:`_scale`
    if rest.size:
        values = _general(b, s[rest], e[rest])
        if values is None:
            return None
        out[rest] = values
    return out


def _plain(b: np.ndarray, s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """The values of the plain fields (digits, at most one point, at most 19 digits); NaN
    where :func:`_scale` is not exact, and for the others."""
    point = s + 1  # most often the point follows one digit ("0.25")
    plain = None  # at most one point
    elsewhere = np.flatnonzero(b[point] != ord("."))
    if elsewhere.size:
        plain = np.ones(s.size, bool)
        point[elsewhere], plain[elsewhere] = _find_points(b, s[elsewhere], e[elsewhere])
    # (A second point after the first is no digit: the fraction's check refuses it.)
    whole = point - s
    fraction = e - point
    fraction -= 1
    np.maximum(fraction, 0, out=fraction)
    digits = whole + fraction
    short = (digits >= 1) & (digits <= _MAX_DIGITS)
    plain = short if plain is None else plain & short
    if not plain.all():  # the others read as no digits here (and become NaN)
        whole, fraction = np.where(plain, whole, 0), np.where(plain, fraction, 0)
    high, ok = digit_runs(b, point, whole)
    low, ok_low = digit_runs(b, e, fraction)
    ok &= ok_low
    ok &= plain
    M = high * _POW10_INT[fraction]
    M += low
    # M · 10^-fraction: every row is one of _scale's two exact cases (fraction <= 19).
    out = M.astype(np.float64)  # exact up to 2^53
    out /= _POW10[fraction]
    out = _with_quotients(out, M, fraction, M > _TWO53)
    out[np.flatnonzero(~ok)] = np.nan  # (indices: a boolean mask's scatter is slower)
    return out


def _find_points(b: np.ndarray, s: np.ndarray, e: np.ndarray):
    """Each field's point (``e`` if none) and whether it has at most one."""
    points = np.concatenate([[-1], np.flatnonzero(b == ord("."))])  # -1: before any field
    after = np.searchsorted(points, e)
    n_points = after - np.searchsorted(points, s)
    return np.where(n_points == 1, points[after - 1], e), n_points <= 1


def digit_runs(b: np.ndarray, end: np.ndarray, length: np.ndarray):
    """``(value, ok)``: the integers written in ``b[end − length : end]`` (``length ≤ 19``;
    ``b`` holds 24 bytes before ``end``), and whether those bytes are all ASCII digits.

    Eight digits at a time, from 64-bit words read at any byte offset (a strided view, no
    copy of the text): each word's bytes before the run become ``'0'``."""
    longest = int(length.max(initial=1))
    if longest <= 1:  # one digit (or none): PRISM's choices, "0." and "0.5"'s whole part
        digit = b[end - 1] - np.uint8(ord("0"))
        used = length == 1
        return np.where(used, digit, 0).astype(np.uint64), ~used | (digit <= 9)
    shortest = int(length.min())
    at = np.ndarray((b.size - 7,), "<u8", buffer=b, strides=(1,))  # at[i]: b[i : i + 8]
    value = high = None
    for k in range(-(-longest // 8)):  # k-th word from the right
        x = at[end - 8 * (k + 1)]
        if shortest < 8 * (k + 1):  # some rows start inside this word: its bytes in the run
            inside = length if k == 0 and longest <= 8 else np.clip(length - 8 * k, 0, 8)
            x &= _KEEP[inside]
            x |= _FILL[inside]  # '0' before the run
        digits = x - _ZEROS
        x += _U(0x4646464646464646)  # a byte above '9' carries into its high bit
        x |= digits  # one below '0' borrows
        high = x if high is None else np.bitwise_or(high, x, out=high)
        digits = _eight_digits(digits)
        if value is None:
            value = digits
        else:
            digits *= _POW10_INT[8 * k]
            value += digits
    high &= _U(0x8080808080808080)
    return value, high == 0


def _eight_digits(x: np.ndarray) -> np.ndarray:
    """The 8-digit integers of little-endian words of eight digits 0..9 (each byte its
    digit, the first in the lowest byte; Lemire 2021), computed in place of ``x``."""
    low = x >> _U(8)
    x *= _U(10)
    x += low  # each pair of bytes: its two-digit number in the low byte
    low = x & _U(0x000000FF000000FF)
    low *= _U(0x000F424000000064)
    x >>= _U(16)
    x &= _U(0x000000FF000000FF)
    x *= _U(0x0000271000000001)
    x += low
    x >>= _U(32)
    return x


def _scale(M: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``M · 10^q`` where the conversion is exact (see the module), NaN elsewhere."""
    small = (M <= _TWO53) & (np.abs(q) <= 22)
    long = (M > _TWO53) & (q <= 0) & (q >= -22)
    k = np.clip(np.abs(q), 0, 22)
    p = _POW10[k]
    m = M.astype(np.float64)  # exact where small
    out = np.where(small, np.where(q >= 0, m * p, m / p), np.nan)
    return _with_quotients(out, M, k, long)


def _with_quotients(out: np.ndarray, M: np.ndarray, k: np.ndarray, long: np.ndarray):
    """``out`` with ``M / 10^k`` (:func:`_quotient`) where ``long``."""
    n_long = np.count_nonzero(long)
    if 2 * n_long > long.size:  # most: no gathers (the others' quotients are discarded)
        return np.where(long, _quotient(M, k), out)
    if n_long:
        at = np.flatnonzero(long)  # (integer gathers: several times a boolean mask's speed)
        out[at] = _quotient(M[at], k[at])
    return out


def _general(b: np.ndarray, s: np.ndarray, e: np.ndarray) -> np.ndarray | None:
    """The other fields: digit by digit, and NumPy's exact cast where :func:`_scale` is not."""
    width = int((e - s).max())
    if width > MAX_CHARS:
        return None
    chars = windows(b, s, width)
    inside = np.arange(width) < (e - s)[:, None]
    kind = np.where(inside, KINDS[chars], np.uint8(AFTER))
    shape = parse_decimals(kind)
    if shape is None:
        return None
    out = decimal_values(chars, kind, shape)
    slow = np.isnan(out)
    if slow.any():
        text = np.where(inside[slow], chars[slow], np.uint8(0))
        with np.errstate(over="ignore"):  # "1e999" is inf, as for Python's float
            out[slow] = text.view(f"S{width}").ravel().astype(np.float64)
    return out


class Shape(NamedTuple):
    """Where each number's parts are: `[n, 1]` columns of its exponent mark (its length if
    none) and of its point (the exponent's column if none)."""

    exp_at: np.ndarray
    dot_at: np.ndarray


def parse_decimals(kind: np.ndarray) -> Shape | None:
    """The shape of each row of character kinds `[n, W]`, or None if a row is no decimal."""
    if (kind == 0).any():
        return None
    cols = np.arange(kind.shape[1])
    is_exp, is_dot = kind == EXP, kind == DOT
    n_exp = is_exp.sum(1)
    length = (kind != AFTER).sum(1)
    exp_at = np.where(n_exp > 0, is_exp.argmax(1), length)[:, None]
    dot_at = np.where(is_dot.any(1), is_dot.argmax(1), exp_at[:, 0])[:, None]
    digit = kind == DIGIT
    ok = (
        (n_exp <= 1).all()
        and (is_dot.sum(1) <= 1).all()
        and (dot_at <= exp_at).all()
        and ((kind != SIGN) | (cols == 0) | (cols == exp_at + 1)).all()
        and (digit & (cols < exp_at)).any(1).all()
        and ((n_exp == 0) | (digit & (cols > exp_at)).any(1)).all()
    )
    return Shape(exp_at, dot_at) if ok else None


def decimal_values(chars: np.ndarray, kind: np.ndarray, shape: Shape) -> np.ndarray:
    """float64 values of the rows of ``chars`` `[n, W]` (their ``kind`` and ``shape`` from
    :func:`parse_decimals`); NaN where the exact conversion is left to the caller."""
    cols = np.arange(chars.shape[1])
    digit = kind == DIGIT
    mantissa = digit & (cols < shape.exp_at)
    exponent = digit & (cols > shape.exp_at)
    M = _horner(chars, mantissa, np.uint64)
    E = _horner(chars, exponent, np.int64)
    rows = np.arange(chars.shape[0])
    after_mark = chars[rows, np.minimum(shape.exp_at[:, 0] + 1, chars.shape[1] - 1)]
    E = np.where(after_mark == ord("-"), -E, E)
    q = E - (mantissa & (cols > shape.dot_at)).sum(1)
    easy = (mantissa.sum(1) <= _MAX_DIGITS) & (exponent.sum(1) <= _MAX_EXPONENT_DIGITS)
    out = np.where(easy, _scale(M, q), np.nan)
    return np.where(chars[:, 0] == ord("-"), -out, out)


def _horner(chars: np.ndarray, which: np.ndarray, dtype) -> np.ndarray:
    """The integer of each row's digits where ``which`` (wraps past the dtype: not used)."""
    value = np.zeros(chars.shape[0], dtype)
    ten = dtype(10)
    digits = (chars - np.uint8(ord("0"))).T.astype(dtype)
    for column, use in zip(digits, which.T, strict=True):
        if use.any():
            value = np.where(use, value * ten + column, value)
    return value


def _quotient(M: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``M / 10^k`` correctly rounded for ``2^53 < M < 2^64`` and ``k ≤ 22``; NaN within
    2^-30 units in the last place of a rounding boundary."""
    p = _POW10[k]
    high = (M & ~np.uint64(2047)).astype(np.float64)  # at most 53 significant bits: exact
    low = (M & np.uint64(2047)).astype(np.float64)
    q = high / p
    # q · p = ph + pl exactly (Dekker's product; p's halves from the table).
    ph = q * p
    q1 = q * _SPLIT
    q1 = q1 - (q1 - q)
    q2 = q - q1
    p1, p2 = _POW10_HIGH[k], _POW10_LOW[k]
    pl = ((q1 * p1 - ph) + q1 * p2 + q2 * p1) + q2 * p2
    remainder = ((high - ph) - pl) + low  # M − q·p, to a relative 2^-52
    correction = remainder / p
    out = q + correction
    error = correction - (out - q)  # (q + correction) − out, exactly (Fast2Sum)
    half = np.spacing(out) / 2
    near_tie = np.abs(np.abs(error) - half) <= half * 2.0**-30
    # A power of two (its mantissa bits 0): the boundary below is a quarter unit away.
    power_of_two = (out.view(np.uint64) & _MANTISSA) == 0
    return np.where(near_tie | power_of_two, np.nan, out)

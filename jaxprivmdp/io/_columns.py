"""The numeric columns of an explicit model file, read without a Python object per line.

:func:`read_columns` reads the data lines after a file's header as NumPy columns (integers
and decimal numbers), a few MB at a time, tokenizing and converting with array operations.
It reads the plain form only: ASCII text, the same fields on every line (plus, where the
caller allows them, trailing fields such as PRISM's action names), integers written in ASCII
digits, decimal numbers as PRISM and Storm write them. On anything else (a ``#`` line in the
body, PRISM's ``:rows`` form, ``-exact`` rationals, a sign on an integer, a missing field,
non-ASCII text, ...) it returns None, and the caller reads the file line by line and names the
line that fails. It is a fast path: it never changes what a file means or which error it gets.

Its values are those of the line-by-line reader, bit for bit: integers are exact (at most 9
digits, int32), and decimals are rounded exactly as Python's ``float`` rounds them
(:mod:`._decimals`; tested against ``float`` on random and hard cases). Lines whose fields are
separated by single spaces (what PRISM and Storm write) are split from one pass over the
block; other blanks, blank lines and ``\\r\\n`` line ends take a slower split. Blocks are
split in the calling thread and converted in ``WORKERS`` threads (NumPy's loops release the
GIL), into disjoint rows of the columns: the values do not depend on the threads.
:func:`head_lines` and :func:`body_start` give the header lines and where the body starts.
"""

from __future__ import annotations

import collections
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ._decimals import MAX_CHARS, decimal_column, digit_runs
from ._text import where

BLOCK = 1 << 23  # bytes read per step (8 MiB): the temporaries stay a few times this
# Rows converted at a time: their temporaries (512 KiB each) are reused from the heap, where
# a whole block's (MiBs each) would be fresh pages from the system, faulted in again and again
# (a third of the time on this reader's benchmark).
SLICE = 1 << 16
WORKERS = 2  # threads converting blocks (and blocks in flight beside the one being split)
MAX_INT_DIGITS = 9  # below 2**31 whatever the digits: int32 (longer: line by line)
PAD = MAX_CHARS + 8  # bytes before and after a block, for windows that reach past it

# Byte classes: 0 refused (the line-by-line reader decides), 1 blank, 2 newline, 3 in a field.
_CLASS = np.zeros(256, np.uint8)
_CLASS[33:127] = 3
_CLASS[[ord("#"), ord(":")]] = 0  # comments and the rows form
_CLASS[[ord(" "), ord("\t"), ord("\r")]] = 1
_CLASS[ord("\n")] = 2


class Columns(NamedTuple):
    """The columns (int32 for ``"i"``, float64 for ``"f"``) and each row's line number (a
    ``range`` where every line is a row)."""

    values: list[np.ndarray]
    line: np.ndarray | range


def read_columns(path: Path, kinds: str, *, skip: int, extra: int = 0) -> Columns | None:
    """The data lines after the first ``skip`` ones, as columns; None if not in plain form.

    Args:
      path: the file (its errors name it).
      kinds: one letter per field, ``"i"`` an integer, ``"f"`` a decimal number.
      skip: how many data lines (neither blank nor ``#``) to pass over first: the header.
      extra: how many more fields a line may have (ignored: action names).

    Returns:
      The columns, or None where the file is not in the plain form (see the module).
    """
    try:
        with path.open("rb") as f:
            start = _body_start(f, skip)
            if start is None:
                return None
            offset, line = start
            # At most one row per 2 bytes per field; pages never written take no memory.
            rows = (os.fstat(f.fileno()).st_size - offset) // (2 * len(kinds)) + 1
            return _read_blocks(f, kinds, extra, rows, line)
    except OSError as e:
        raise ValueError(f"cannot read {where(path)}: {e}") from None


def head_lines(path: Path, count: int) -> list[tuple[int, list[str]]] | None:
    """The first ``count`` data lines as ``(line number, fields)``, reading nothing after
    them; None where a line up to there is not printable ASCII (read the file as text)."""
    out: list[tuple[int, list[str]]] = []
    try:
        with path.open("rb") as f:
            start = _body_start(f, count, out)
    except OSError as e:
        raise ValueError(f"cannot read {where(path)}: {e}") from None
    return None if start is None else out


def body_start(path: Path, skip: int) -> tuple[int, int] | None:
    """The byte offset and line number after the first ``skip`` data lines (None: a line
    up to there is not printable ASCII)."""
    try:
        with path.open("rb") as f:
            return _body_start(f, skip)
    except OSError as e:
        raise ValueError(f"cannot read {where(path)}: {e}") from None


def _body_start(f, skip: int, head: list | None = None) -> tuple[int, int] | None:
    """The byte offset and line number after ``skip`` data lines; None where the lines
    before hold anything but printable ASCII (the line numbers might then differ)."""
    offset, line = 0, 0
    while skip:
        text = f.readline()
        if not text:
            return offset, line
        body = text.rstrip(b"\n").removesuffix(b"\r")
        if any(c < 32 and c != 9 or c > 126 for c in body):
            return None
        offset, line = offset + len(text), line + 1
        fields = body.split()
        if fields and not fields[0].startswith(b"#"):
            skip -= 1
            if head is not None:
                head.append((line, [x.decode() for x in fields]))
    return offset, line


def _read_blocks(f, kinds: str, extra: int, rows: int, first_line: int) -> Columns | None:
    """Fills the columns block by block (``rows`` bounds the number of lines): each block is
    split into fields here and converted by a worker thread (NumPy releases the GIL) while
    the next is read and split."""
    out = [np.empty(rows, np.int32 if k == "i" else np.float64) for k in kinds]
    line = None  # while every line is a row: range(first_line + 1, ...)
    n, base, tail = 0, first_line, b""
    pool = ThreadPoolExecutor(WORKERS)
    pending: collections.deque = collections.deque()  # at most WORKERS blocks in flight
    try:
        while True:
            # A fresh buffer per block (the last ones are still being converted), with PAD
            # bytes on both sides: the windows of the first and last fields stay inside.
            buf = np.zeros(PAD + len(tail) + BLOCK + PAD, np.uint8)
            buf[PAD : PAD + len(tail)] = np.frombuffer(tail, np.uint8)
            got = f.readinto(memoryview(buf)[PAD + len(tail) : PAD + len(tail) + BLOCK])
            size = len(tail) + got
            data = buf[PAD : PAD + size]
            cut = _after_last_newline(data) if got else size
            tail = data[cut:].tobytes()
            buf[PAD + cut :] = 0
            if cut:
                fields = _single_spaced(data[:cut], len(kinds), extra)
                if fields is None:  # (a block that splits so has no other fields)
                    fields = _fields(data[:cut], len(kinds), extra)
                if fields is None:
                    return None
                starts, ends, used, newlines = fields
                pending.append(pool.submit(_convert, buf, kinds, starts, ends, out, n))
                if len(pending) > WORKERS and not pending.popleft().result():
                    return None
                numbers = used + 1  # each row's line within the block
                every = not numbers.size or numbers[-1] == numbers.size  # 1, 2, ..., size
                if line is None and not (every and base == first_line + n):
                    line = np.empty(rows, np.int64)
                    line[:n] = np.arange(first_line + 1, first_line + 1 + n)
                if line is not None:
                    line[n : n + numbers.size] = base + numbers
                n += numbers.size
                base += newlines
            if not got:
                break
        if not all(block.result() for block in pending):
            return None
    finally:
        pool.shutdown(cancel_futures=True)
    lines = range(first_line + 1, first_line + 1 + n) if line is None else line[:n]
    return Columns([column[:n] for column in out], lines)


def _after_last_newline(data: np.ndarray) -> int:
    """The index after ``data``'s last newline (0 if none), looking at its end first."""
    for part in (data[-4096:], data):
        found = np.flatnonzero(part == ord("\n"))
        if found.size:
            return data.size - part.size + int(found[-1]) + 1
    return 0


def _convert(buf: np.ndarray, kinds: str, starts: list, ends: list, out: list, at: int) -> bool:
    """Stores field ``j`` of each row into ``out[j][at:]``, ``SLICE`` rows at a time (the
    temporaries stay small: the allocator reuses them, and they stay in cache); False where
    a field is not a number of its kind."""
    rows = starts[0].size
    for i in range(0, rows, SLICE):
        part = slice(i, min(i + SLICE, rows))
        for j, kind in enumerate(kinds):
            parse = _integers if kind == "i" else decimal_column
            values = parse(buf, starts[j][part] + PAD, ends[j][part] + PAD)
            if values is None:
                return False
            out[j][at + part.start : at + part.stop] = values
    return True


def _single_spaced(b: np.ndarray, n: int, extra: int):
    """``(starts, ends, used, newlines)`` (as :func:`_fields`) where every line has the same
    fields, each between single spaces (as PRISM and Storm write them); else None. A field
    may then hold any byte above the space: the number parsers check theirs, and the block's
    bytes are checked here only if there are trailing fields."""
    separators = np.flatnonzero(b <= ord(" "))  # blanks, line ends and control bytes
    if not separators.size or separators[0] == 0 or separators[-1] != b.size - 1:
        return None  # an empty first field, or no newline at the block's end
    if (separators[1:] - separators[:-1] == 1).any():
        return None  # an empty field
    byte = b[separators]
    newline = byte == ord("\n")
    lines = np.count_nonzero(newline)
    if not newline[-1]:
        return None
    per = separators.size // lines  # separators per line, if the same on each
    if per * lines != separators.size or not n <= per <= n + extra:
        return None
    at = separators.reshape(-1, per)
    # Each line's last separator its newline (so the others are no newlines), the others
    # spaces (a tab or "\r": the general split).
    if not newline[per - 1 :: per].all() or np.count_nonzero(byte == ord(" ")) + lines != byte.size:
        return None
    if per > n and not _plain_ascii(b):
        return None
    newlines = at[:, -1]
    first = np.concatenate([[0], newlines[:-1] + 1])
    starts = [first, *(at[:, j] + 1 for j in range(n - 1))]
    return starts, [at[:, j] for j in range(n)], np.arange(lines), lines


def _plain_ascii(b: np.ndarray) -> bool:
    """Printable ASCII, spaces and ``\\n`` only (no ``#`` or ``:``)."""
    return bool((_CLASS[b] != 0).all()) and not b.tobytes().count(b"\r")


def _fields(b: np.ndarray, n: int, extra: int):
    """``(starts, ends, used, newlines)``: the first ``n`` fields' starts and ends
    `[n, lines]` of each non-blank line, its index in the block, and the block's number of
    newlines; None if a line has fewer than ``n`` or more than ``n + extra`` fields or a
    byte that Python might read otherwise."""
    newlines = np.flatnonzero(b == ord("\n"))
    cls = _CLASS[b]
    if not cls.all():
        return None
    if b.tobytes().count(b"\r"):
        cr = np.flatnonzero(b == ord("\r"))
        if cr[-1] + 1 == b.size or (b[cr + 1] != ord("\n")).any():
            return None  # a carriage return alone breaks a line for Python, not here
    field = np.zeros(b.size + 2, bool)
    field[1:-1] = cls == 3
    edges = np.flatnonzero(field[1:] != field[:-1])  # each field's start, then its end
    starts, ends = edges[0::2], edges[1::2]
    got = _lines(starts, newlines, b.size, n, extra)
    if got is None:
        return None
    first, used = got
    index = first + np.arange(n)[:, None]
    return starts[index], ends[index], used, newlines.size


def _lines(starts: np.ndarray, newlines: np.ndarray, size: int, n: int, extra: int):
    """``(first, used)``: each non-blank line's first field and the line's index in the
    block; None if a line has fewer than ``n`` or more than ``n + extra`` fields."""
    n_lines = newlines.size + (newlines.size == 0 or newlines[-1] != size - 1)
    per = starts.size // n_lines
    if per * n_lines == starts.size and n <= per <= n + extra:
        # The same number of fields on every line (the common case), if each line's first
        # field follows the previous newline and its last one precedes its own.
        first = np.arange(0, starts.size, per)
        after = (starts[first[1:]] > newlines[: n_lines - 1]).all()
        if after and (starts[first[: newlines.size] + per - 1] < newlines).all():
            return first, np.arange(n_lines)
    counts = np.diff(np.searchsorted(starts, newlines), prepend=0)
    counts = np.append(counts, starts.size - counts.sum())[:n_lines]
    used = np.flatnonzero(counts)
    if ((counts[used] < n) | (counts[used] > n + extra)).any():
        return None
    return (np.cumsum(counts) - counts)[used], used


def _integers(b: np.ndarray, s: np.ndarray, e: np.ndarray) -> np.ndarray | None:
    """Fields of ASCII digits, below 10^9 (uint64: stored into the int32 column as they are
    copied there); None if any field is not, or is too long."""
    length = e - s
    if length.max(initial=1) > MAX_INT_DIGITS:
        return None
    value, ok = digit_runs(b, e, length)
    return value if ok.all() else None

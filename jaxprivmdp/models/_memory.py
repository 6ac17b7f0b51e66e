"""Sizes checked before anything is allocated: a clear ValueError instead of an allocator's.

A dense model holds ``S·A·S`` entries: 10⁵ states are 4·10¹⁰ entries per action, far past
any machine. Functions that build such arrays (``to_dense``, ``examples.random_mdp``)
compute what they need from the shapes first and refuse what the machine cannot hold,
saying how much it is and what to use instead, rather than failing in the allocator with
a traceback (XLA's ``RESOURCE_EXHAUSTED``, NumPy's ``MemoryError``).
"""

from __future__ import annotations

import os

import jax


def host_memory() -> int | None:
    """The host's physical memory in bytes (None where the OS does not say)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, OSError, ValueError):
        return None


def device_memory(device=None) -> int | None:
    """The memory of ``device`` (default: this process's first device) in bytes: its allocator's
    limit where it reports one (GPUs), else the host's (the CPU backend)."""
    device = jax.local_devices()[0] if device is None else device
    stats = device.memory_stats() if hasattr(device, "memory_stats") else None
    if stats and stats.get("bytes_limit"):
        return int(stats["bytes_limit"])
    return host_memory()


def format_bytes(n: float) -> str:
    """``n`` bytes as GiB, MiB or KiB with one decimal (``120.7 GiB``)."""
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def check_fits(what: str, needed: int, available: int | None, where: str, instead: str) -> None:
    """A ValueError unless ``needed`` bytes fit in ``available`` (unknown: not checked).

    Args:
      what: what is being built and its shape (``"to_dense: [S, A, S] = [...] float32 ..."``).
      needed: the bytes it needs at least.
      available: the memory it would use, in bytes, or None.
      where: that memory, in words (``"this device"``).
      instead: what to use instead.
    """
    if available is not None and needed > available:
        raise ValueError(
            f"{what} needs {format_bytes(needed)}, more than the {format_bytes(available)} "
            f"of {where}: {instead}"
        )

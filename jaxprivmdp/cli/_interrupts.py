"""Ctrl-C while JAX computes: deferred to a safe point, so the command exits 130 cleanly.

A ``KeyboardInterrupt`` raised while a compiled computation is still running (JAX dispatches
asynchronously) leaves XLA's threads working while the interpreter shuts down, which crashed
``jaxprivmdp reproduce`` with a segmentation fault. So inside :func:`guarded` a first Ctrl-C
only records the interrupt; it is raised at the next safe point: :func:`checkpoint` (the
progress callbacks call it between a sweep's chunks, after the chunk is ready) or the end of
the guarded call, after its results are ready. Outputs are written under :func:`writing`: a
Ctrl-C that lands inside matplotlib's or NumPy's C code can come back as another error (seen:
matplotlib's "Invalid bounding box"), so it is held until the files are written and raised
before they are moved into place. Elsewhere, and at a second Ctrl-C, the interrupt is raised
at once, as Python's own handler does.
"""

from __future__ import annotations

import contextlib
import signal
import threading

_state = {"pending": False, "depth": 0}


def _handler(signum, frame) -> None:
    if _state["depth"] == 0 or _state["pending"]:  # not computing, or pressed twice
        _state["pending"] = False
        raise KeyboardInterrupt
    _state["pending"] = True


@contextlib.contextmanager
def deferred_interrupts():
    """Installs the handler for the block (main thread only; restored after)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, _handler)
    _state.update(pending=False, depth=0)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        _state.update(pending=False, depth=0)


def checkpoint() -> None:
    """Raises the interrupt recorded during a guarded call (call it where nothing runs)."""
    if _state["pending"]:
        _state["pending"] = False
        raise KeyboardInterrupt


@contextlib.contextmanager
def writing():
    """Ctrl-C deferred while the block writes outputs, raised when it ends. Use it inside
    :func:`jaxprivmdp.io.core.atomic_outputs`, so an interrupt leaves no file behind."""
    _state["depth"] += 1
    try:
        yield
    finally:
        _state["depth"] -= 1
    checkpoint()


def guarded(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` with Ctrl-C deferred until its results are ready."""
    import jax

    _state["depth"] += 1
    try:
        result = fn(*args, **kwargs)
        jax.block_until_ready(result)
    finally:
        _state["depth"] -= 1
    checkpoint()
    return result

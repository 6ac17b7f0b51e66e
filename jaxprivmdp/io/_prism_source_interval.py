"""Interval models from PRISM sources: Storm's build with interval values.

PRISM's language writes an interval update as ``[0.1, 0.3] : (s'=1)``. Storm's default
(float64) builder refuses such a source ("interval updates, which are not supported by the
chosen value type"); :func:`build` then builds it again with Storm's interval values
(``stormpy.build_model[stormpy.Interval]``), the model :func:`~jaxprivmdp.load_prism` turns
into an :class:`~jaxprivmdp.IntervalMDP` (the matrix through Storm's binary export with
interval values: each entry's lower and upper bound as float64). Storm's reward structures
of such a model hold intervals too; a reward that is an interval of positive width has no
place in an :class:`IntervalMDP` (one reward per state and action) and is refused.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np

from ._text import where


def build(stormpy, source):
    """Storm's sparse model of ``source`` with float64 values, or with interval values where
    the source has interval updates (Storm's log of the first try silenced)."""
    options = stormpy.BuilderOptions(build_full=True)
    try:
        with _quiet(stormpy):
            return stormpy.build_model(source, options=options)
    except Exception as e:
        if "interval" not in str(e).lower() or not hasattr(stormpy, "Interval"):
            raise
    return stormpy.build_model[stormpy.Interval](source, options=options)


@contextlib.contextmanager
def _quiet(stormpy):
    """Storm's log off for the block (it prints the builder's refusal before raising)."""
    developer = getattr(stormpy, "developer", None)
    levels = getattr(developer, "LogLevel", None)
    if levels is None or not hasattr(developer, "get_log_level"):
        yield
        return
    before = developer.get_log_level()
    developer.set_log_level(levels.OFF)
    try:
        yield
    finally:
        developer.set_log_level(before)


def is_interval(built) -> bool:
    """Whether Storm built ``built`` with interval values."""
    return type(built).__name__.endswith("Interval")  # stormpy's _SparseMdp_Interval, ...


def interval_rewards(path: Path, built, name: str, cells: np.ndarray, mask: np.ndarray):
    """A structure's one-step rewards `[S, A]` (state plus state-action rewards) of an
    interval model; its transition rewards and rewards of positive width are refused."""
    reward = built.reward_models[name]
    S, A = mask.shape
    r = np.zeros((S, A))
    if reward.has_transition_rewards:
        raise ValueError(
            f"{where(path)}: reward structure {name!r} has transition rewards, whose "
            "expectation depends on the distribution nature picks; an interval model holds "
            "one reward per (state, action)"
        )
    if reward.has_state_rewards:
        r += _points(path, name, reward.state_rewards)[:, None]
    if reward.has_state_action_rewards:
        r.reshape(-1)[cells] += _points(path, name, reward.state_action_rewards)
    return np.where(mask, r, 0.0)


def _points(path: Path, name: str, values) -> np.ndarray:
    """Storm's interval rewards as float64, each one a point ``[r, r]``."""
    bounds = np.array([(v.lower(), v.upper()) for v in values], np.float64).reshape(-1, 2)
    wide = np.flatnonzero(bounds[:, 0] != bounds[:, 1])
    if wide.size:
        i = wide[0]
        raise ValueError(
            f"{where(path)}: reward structure {name!r} has the interval reward "
            f"[{bounds[i, 0]:g}, {bounds[i, 1]:g}]; an interval model's rewards are numbers"
        )
    return bounds[:, 0]

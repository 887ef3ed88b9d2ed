"""What a case's stored runs may claim: runs that disagree with the majority set aside, spread and floor never below
what the others show, and never widened past ``STORE_BOUND``.

A calibration's A/A runs are made back to back and agree more closely than runs an hour or a day apart, which is
how the gate compares a candidate with the store. Measured on our 2-core CI machine: a 5% calibrated floor
against 8-20% drift of latency-bound cases within an hour gave false alarms in 4 of 6 trials. So from
``MIN_RUNS_TO_LEARN`` stored runs on, neither the spread nor the floor is taken below what they show.

Whoever can push to the store can also push runs that raise what they show: two runs 10x slower once made every
64 MiB case's floor 9x, and a real 2x slowdown passed. So a run farther from the others' median than both the
case's floor and ``Z_BOUND`` robust spreads is set aside (and named), and a store that still swings past
``STORE_BOUND`` does not widen the floor: the case is not gated by it, which compare says and fails on. No torch here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..load.case_time import MIN_RUNS_TO_LEARN, learned_spread
from .noise import Z_BOUND

__all__ = ["STORE_BOUND", "Baseline", "bimodal", "set_aside", "step_bound", "store_baseline", "store_swing"]

#: The widest floor the stored runs may give a case (a ratio less one), by class: 1.4x bandwidth-bound, 2x
#: latency-bound (the default floor of that class). A case whose stored runs swing further is not gated by them.
STORE_BOUND = {"bandwidth": 0.4, "latency": 1.0}


def store_swing(log_times: Sequence[float] | np.ndarray) -> float | None:
    """The swing (a ratio less one, 0.3: 1.3x) the stored runs of a case show between them: each run's distance
    from the median of the others (log), the second largest of them, so that two runs reach it and one wild run
    alone does not set it. None under ``MIN_RUNS_TO_LEARN`` runs (too few to show their spread)."""
    x = np.asarray(log_times, dtype=float)
    if x.size < MIN_RUNS_TO_LEARN:
        return None
    swings = sorted(abs(x[i] - float(np.median(np.delete(x, i)))) for i in range(x.size))
    return math.expm1(swings[-2])


def set_aside(log_times: np.ndarray, cls: str, floor: float) -> np.ndarray:
    """Which runs to keep (a mask): from ``MIN_RUNS_TO_LEARN`` runs on, a run farther from the runs' median than the
    case's ``floor`` and than ``Z_BOUND`` robust spreads disagrees with the majority and is set aside. Half the runs
    or more never are: the median and its spread move with them, and the case reads as bimodal instead."""
    x = np.asarray(log_times, dtype=float)
    if x.size < MIN_RUNS_TO_LEARN:
        return np.ones(x.size, dtype=bool)
    return np.abs(x - np.median(x)) <= max(Z_BOUND * learned_spread(x, cls), math.log1p(floor))


def bimodal(log_times: np.ndarray) -> tuple[int, int] | None:
    """The runs of each of two groups when the runs fall into two (at least two runs each, the gap between them
    wider than either group's own range), else None."""
    x = np.sort(np.asarray(log_times, dtype=float))
    if x.size < 4:
        return None
    gaps = np.diff(x)
    cut = int(np.argmax(gaps)) + 1
    low, high = x[:cut], x[cut:]
    if min(low.size, high.size) < 2 or gaps[cut - 1] <= max(np.ptp(low), np.ptp(high)):
        return None
    return low.size, high.size


def step_bound(steps: np.ndarray, cls: str, spread: float, floor: float) -> tuple[float, float]:
    """The spread and floor a lasting step is sought with (``noise.current_segment``): no smaller than what the
    run-to-run differences ``steps`` show (their learned spread, ``store_swing``), as a lasting step moves only one
    of them. Nothing is set aside here: alternating runs make differences of two signs, and a majority of one."""
    if (shown := store_swing(steps)) is None:
        return spread, floor
    return max(spread, learned_spread(steps, cls)), max(floor, shown)


@dataclass(frozen=True)
class Baseline:
    """A case's stored runs as compare judges against them: the runs kept, the spread and floor with where each came
    from, the runs set aside (a mask over those given), the swing of the kept ones (``store_swing``) and, for a case
    they cannot gate, the two groups they fall into (``bimodal``)."""

    kept: np.ndarray
    spread: float
    source: str
    floor: float
    floor_from: str
    aside: np.ndarray
    swing: float | None = None
    groups: tuple[int, int] | None = None


def store_baseline(old: np.ndarray, cls: str, floor: float, floor_from: str, calibrated: float | None) -> Baseline:
    """The base runs ``old`` (log times) with those that disagree with the majority set aside (``set_aside``). The
    spread is the ``calibrated`` one, else learned from the runs kept (``case_time.learned_spread``); from
    ``MIN_RUNS_TO_LEARN`` runs kept on, neither spread nor floor is below what they show (their learned spread,
    ``store_swing``), and a swing past ``STORE_BOUND`` makes the floor infinite (not gated), never wider."""
    keep = set_aside(old, cls, floor)
    kept = old[keep]
    learned = learned_spread(kept, cls)
    spread, source = (learned, "default" if kept.size < 3 else "history") if calibrated is None else (calibrated, "calibration")
    if (shown := store_swing(kept)) is None:
        return Baseline(kept, spread, source, floor, floor_from, ~keep)
    if learned > spread:
        spread, source = learned, "history"
    if shown > STORE_BOUND[cls]:
        return Baseline(kept, spread, source, math.inf, "store spread", ~keep, shown, bimodal(kept))
    if shown > floor:
        floor, floor_from = shown, "store spread"
    return Baseline(kept, spread, source, floor, floor_from, ~keep, shown)

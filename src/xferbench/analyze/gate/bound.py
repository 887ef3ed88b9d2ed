"""The store's own runs bound what a calibration may claim for a case: its between-run spread and its floor.

A calibration's A/A runs are made back to back and agree more closely than runs an hour or a day apart, which is
how the gate compares a candidate with the store. Measured on our 2-core CI machine: a 5% calibrated floor
against 8-20% drift of latency-bound cases within an hour gave false alarms in 4 of 6 trials. So from
``MIN_RUNS_TO_LEARN`` stored runs on, neither the spread nor the floor is taken below what they show. No torch here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..load.case_time import MIN_RUNS_TO_LEARN, learned_spread

__all__ = ["store_bound", "store_swing"]


def store_swing(log_times: Sequence[float] | np.ndarray) -> float | None:
    """The swing (a ratio less one, 0.3: 1.3x) the stored runs of a case show between them: each run's distance
    from the median of the others (log), the second largest of them, so that two runs reach it and one wild run
    alone does not set it. None under ``MIN_RUNS_TO_LEARN`` runs (too few to show their spread)."""
    x = np.asarray(log_times, dtype=float)
    if x.size < MIN_RUNS_TO_LEARN:
        return None
    swings = sorted(abs(x[i] - float(np.median(np.delete(x, i)))) for i in range(x.size))
    return math.expm1(swings[-2])


def store_bound(old: np.ndarray, cls: str, spread: float, source: str, floor: float,
                floor_from: str) -> tuple[float, str, float, str]:
    """Spread and floor (with where each came from) no smaller than what the base runs ``old`` (log times) show,
    once there are enough of them: their learned spread (``case_time.learned_spread``) and ``store_swing``."""
    shown = store_swing(old)
    if shown is None:
        return spread, source, floor, floor_from
    learned = learned_spread(old, cls)
    if learned > spread:
        spread, source = learned, "history"
    if shown > floor:
        floor, floor_from = shown, "store spread"
    return spread, source, floor, floor_from

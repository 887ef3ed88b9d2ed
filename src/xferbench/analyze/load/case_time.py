"""Which time of a case a run stands for, the class of the case, and the between-run spread assumed by default.

Reading runs (the run cache, history's trend) and judging them (gate/noise.py, compare) must agree on these, or
a trend would show steps the gate never saw: they live here, below both, so that the loading side needs nothing
from the gates. The rule itself is explained in gate/noise.py. No torch here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["BANDWIDTH_MIN_BYTES", "DEFAULT_FLOOR", "DEFAULT_SPREAD", "MAD_MARGIN", "MAD_TO_SD", "MIN_RUNS_TO_LEARN",
           "MIN_SPREAD", "case_class", "learned_spread", "robust_spread", "time_of"]

#: Payload size from which a moving case is bandwidth-bound (8 MiB: past the size where
#: per-call overhead and bandwidth weigh the same on every link in docs/design.md's table).
BANDWIDTH_MIN_BYTES = 8 * 2**20

#: Between-run spread (SD of the log of a run's median) assumed when none is learned: a
#: shared CI virtual machine on a quiet day. A busy one is far worse (docs/regression-tracking.md: 0.4-0.7 was
#: measured for most cases under a load of 10 on 2 cores), which is what calibrate is for.
DEFAULT_SPREAD = {"bandwidth": 0.15, "latency": 0.40}

#: Smallest change that counts when none is learned: 25% for bandwidth-bound cases, 2x
#: for latency-bound ones (microsecond calls swing that much with a busy neighbour).
DEFAULT_FLOOR = {"bandwidth": 0.25, "latency": 1.0}

#: No spread is taken below 2%, whatever the runs say (a MAD of zero is luck, not precision).
MIN_SPREAD = 0.02


def case_class(nbytes: int, moves_payload: bool) -> str:
    """``bandwidth`` or ``latency`` (see gate/noise.py's docstring)."""
    return "bandwidth" if moves_payload and nbytes >= BANDWIDTH_MIN_BYTES else "latency"


def time_of(nbytes: Any, bandwidth_gbps: Any, data: Any, min_s: Any, median_s: Any) -> float:
    """A case's time in one run from its row's values: a latency-bound case's fastest round, another's median
    (the rounds when the run kept them, else the statistics)."""
    latency = case_class(int(nbytes), bool(np.isfinite(bandwidth_gbps))) == "latency"
    if isinstance(data, list) and data:
        rounds = np.asarray(data, dtype=float)
        return float(np.min(rounds) if latency else np.median(rounds))
    return float(min_s if latency else median_s)


#: A spread learned from fewer runs than this is not trusted below the class default.
MIN_RUNS_TO_LEARN = 5

#: Consistency constant: 1.4826 x MAD estimates a normal's SD.
MAD_TO_SD = 1.4826

#: The MAD's relative standard error is about MAD_MARGIN / sqrt(n) (normal data).
MAD_MARGIN = 1.17


def robust_spread(values: Sequence[float] | np.ndarray) -> float:
    """1.4826 x the median absolute deviation: an SD that one wild run cannot inflate."""
    x = np.asarray(values, dtype=float)
    return float(MAD_TO_SD * np.median(np.abs(x - np.median(x))))


def learned_spread(log_times: Sequence[float] | np.ndarray, cls: str) -> float:
    """A case's between-run spread learned from its runs' log times, as compare takes it from history (and the
    history page draws it as the noise band): 1.4826 x MAD, at least ``MIN_SPREAD``, taken at the upper end of its
    own uncertainty, x (1 + 1.17 / sqrt(n)) (a MAD of a handful of runs is often too small by luck, and with ~60
    cases judged at once luck always strikes somewhere); the class default under 3 runs, and not below it under
    ``MIN_RUNS_TO_LEARN``."""
    n = len(log_times)
    if n < 3:
        return DEFAULT_SPREAD[cls]
    learned = max(robust_spread(log_times), MIN_SPREAD) * (1 + MAD_MARGIN / math.sqrt(n))
    return learned if n >= MIN_RUNS_TO_LEARN else max(learned, DEFAULT_SPREAD[cls])

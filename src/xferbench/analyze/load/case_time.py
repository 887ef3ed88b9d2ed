"""Which time of a case a run stands for, the class of the case, and the between-run spread assumed by default.

Reading runs (the run cache, history's trend) and judging them (gate/noise.py, compare) must agree on these, or
a trend would show steps the gate never saw: they live here, below both, so that the loading side needs nothing
from the gates. The rule itself is explained in gate/noise.py. No torch here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["BANDWIDTH_MIN_BYTES", "DEFAULT_FLOOR", "DEFAULT_SPREAD", "MIN_SPREAD", "case_class", "time_of"]

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

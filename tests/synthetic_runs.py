"""Runs whose truth is known: the real sample's cases, redrawn with chosen between-run noise.

Each synthetic run moves every case by a run-level factor drawn from a lognormal
(the between-run drift that makes one-run comparisons cry wolf) and then draws its
rounds around that (within-run noise); ``slow`` multiplies chosen cases by a known
factor. Seeds make every draw repeatable; nothing here reads a clock.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from xferbench.analyze.gate.noise import case_class
from xferbench.analyze.load.results import Results, load

SAMPLE = Path(__file__).parent / "data" / "cpu-sample.json"
_BASE = load([SAMPLE])

#: Between-run SD of log time by class, like the CI machine's (and heavier-tailed: see ``wild``).
SPREAD = {"bandwidth": 0.08, "latency": 0.25}


def classes() -> pd.Series:
    frame = _BASE.frame
    return pd.Series([case_class(int(n), bool(np.isfinite(b))) for n, b in zip(frame["nbytes"], frame["bandwidth_gbps"],
                                                                                 strict=True)], index=frame.index)


def bandwidth_keys() -> set[str]:
    return set(_BASE.frame["case_key"][classes() == "bandwidth"])


def run(seed: int, slow: float = 1.0, which: Callable[[pd.Series], bool] = lambda _: False,
        wild: float = 0.0, spread: dict[str, float] | None = None) -> Results:
    """One synthetic run. ``wild``: chance that a case lands 2-20x off in this run (a busy neighbour)."""
    rng = np.random.default_rng(seed)
    spread = spread or SPREAD
    frame = _BASE.frame.copy()
    data = []
    for (_, row), cls in zip(frame.iterrows(), classes(), strict=True):
        level = float(row["median_s"]) * float(np.exp(rng.normal(0, spread[cls])))
        if rng.random() < wild:
            level *= float(rng.uniform(2, 20))
        if which(row):
            level *= slow
        data.append((level * rng.lognormal(0, 0.03, 15)).tolist())
    frame["data"] = data
    frame["median_s"] = [float(np.median(d)) for d in data]
    return Results(frame, copy.deepcopy(_BASE.machine_info), {}, [f"synthetic-{seed}.json"])


def runs(first_seed: int, count: int, **kwargs: object) -> list[Results]:
    return [run(first_seed + i, **kwargs) for i in range(count)]  # type: ignore[arg-type]


def is_bandwidth(row: pd.Series) -> bool:
    return row["case_key"] in bandwidth_keys()

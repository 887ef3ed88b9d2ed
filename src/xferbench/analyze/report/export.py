"""What a report leaves to take away: a tidy CSV and a Markdown summary, beside the HTML.

``xferbench report -o x.html`` also writes ``x.csv`` (one row per benchmark, every field
of the data contract plus its statistics, for notebooks) and ``x.md`` (key findings, the
latency/bandwidth table and the comparison with other tools, for a PR comment).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ...contract import IDENTITY, MEASURED
from ...units import format_bytes
from ..load.results import Results

__all__ = ["CSV_COLUMNS", "frame_for_csv", "to_csv", "to_markdown"]

#: Statistics of each benchmark, as pytest-benchmark computed them (seconds per call).
STATS = ("median_s", "min_s", "mean_s", "max_s", "iqr_s", "q1_s", "q3_s", "stddev_s", "rounds", "iterations")
#: What the suite derives: the time of one transfer, bytes / time (GB = 1e9 B), nccl-tests' bus bandwidth.
DERIVED = ("transfer_s", "bandwidth_gbps", "busbw_gbps", "path")
#: The CSV's columns, in order: where the row came from, the identity, the measured fields, stats, derived.
CSV_COLUMNS = ("run", "datetime", "name", *IDENTITY, *MEASURED, *STATS, *DERIVED)


def to_csv(results: Results) -> str:
    """One row per benchmark, every data-contract field; shape as ``AxB``, empty where a field is absent."""
    return str(frame_for_csv(results.frame).to_csv(index=False, lineterminator="\n"))


def _cell(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value).replace("|", "\\|")


def _us(value: float) -> str:
    return f"{value:.3g} µs" if np.isfinite(value) else "–"


def to_markdown(results: Results, findings: list[str], model: list[dict[str, Any]],
                peers: list[str] | None = None, simulated: bool = False, peer_plan: Sequence[str] = ()) -> str:
    """The report's take-aways as Markdown: findings, the α/β table, the peer pairs measured, the other tools'
    figures."""
    lines = ["# xferbench: tensor creation and transfer costs", ""]
    if simulated:
        lines += ["> **Simulated machine.** These figures come from xferbench's simulated machine, not from hardware: "
                  "they check the suite, they are not measurements.", ""]
    lines += [f"{len(results.frame)} benchmarks from {', '.join(results.sources)}.", "", "## Key findings", ""]
    lines += [f"- {sentence}" for sentence in findings] or ["- Not enough data for findings."]
    if model:
        lines += ["", "## Latency and bandwidth per path", "",
                  "α and β from wall time describe a loop that synchronizes after every call; pipelined, from the "
                  "copy's device time, what copies issued back to back pay (– where the rows have no device time).", "",
                  "| path | α (sync loop) | α pipelined | β (GB/s, sync loop) | β pipelined (GB/s) | β from "
                  "| largest size: GB/s | roof | share of roof |",
                  "|---|---:|---:|---:|---:|---|---:|---|---:|"]
        for row in model:
            share = row.get("share", "–")
            largest = f"{format_bytes(row['largest_bytes'])}: {_cell(row['largest_gbps'])}"
            lines.append(f"| {_cell(row['path'])} | {_us(row['alpha_us'])} | {_us(row['pipelined_alpha_us'])} "
                         f"| {_cell(row['stated_gbps'])} | {_cell(row['pipelined_gbps'])} | {_cell(row['beta_basis'])} "
                         f"| {largest} | {_cell(row['link'])} | {share} |")
    if peer_plan:
        lines += ["", "## Peer pairs measured", ""] + [f"- {sentence}" for sentence in peer_plan]
    if peers:
        lines += ["", "## Against other tools on this machine", ""] + [f"- {sentence}" for sentence in peers]
    return "\n".join(lines) + "\n"


def frame_for_csv(frame: pd.DataFrame) -> pd.DataFrame:
    """The CSV's rows as a DataFrame (for a notebook that wants it without a file)."""
    return frame.reindex(columns=list(CSV_COLUMNS))

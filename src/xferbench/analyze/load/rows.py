"""One benchmark of a run's JSON as one row of the frame: its identity, its statistics checked, and the figures
derived from them (transfer time, GB/s, bus bandwidth). No torch here."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ...contract import IDENTITY, ContractError, identity_from, measured_from
from ...families import FAMILIES

__all__ = ["MAX_BYTES", "QUARTILE_ROUNDING", "UNTRACKED_HINT", "VALID_DEVICE_METHODS", "Row", "bench_row",
           "device_time_valid", "flag", "flags", "matching", "rows_by_label"]


def _moves_payload(op: str, variant: str | None) -> bool:
    """Whether bytes / time is a bandwidth: a family that moves its payload (unknown ops are
    assumed to), and not a second module.to() that finds everything in place."""
    family = FAMILIES.get(op)
    return (family is None or family.moves_payload) and variant != "again"


#: What a plain pytest-benchmark test needs to be tracked (measure/session/plugin.py's fixture).
UNTRACKED_HINT = "name what a test times with the xfer_identity fixture: docs/regression-tracking.md, 'Your own code'"

#: Times in seconds per call: pytest-benchmark's statistics of the rounds.
_TIMES = ("median", "min", "mean", "max", "q1", "q3")
#: Spreads in seconds: zero when every round took the same time.
_SPREADS = ("iqr", "stddev")
_STATS = _TIMES + _SPREADS
#: Pairs of statistics that cannot be the other way round, whatever the rounds were (the median's own check is
#: against its rounds, below).
_ORDERED = (("min", "max"), ("q1", "q3"), ("min", "q1"), ("q3", "max"))
#: How far past its neighbour a quartile may lie, relatively, and still be read (as that neighbour): a case measured
#: in blocks has quartiles averaged over its blocks (load/blocks.py), and a weighted sum of up to 1,000 equal
#: quartiles rounds by at most 1,000 units in the last place (1.1e-13). min and max are rounds: never out of order.
QUARTILE_ROUNDING = 1e-12
#: Payloads past this are not a measurement but a corrupted number (and overflow a float).
MAX_BYTES = 2**62
#: Bounds of a plausible time per call, in seconds: no clock resolves a femtosecond, and no
#: call lasts a year. Outside them a number is corrupt, and would overflow bandwidths and sums.
_SHORTEST, _LONGEST = 1e-15, 3e7


def _seconds(value: Any) -> float | None:
    """``value`` as seconds if it is a plain number from 0 to ``_LONGEST`` (NaN fails the bounds), else None."""
    return float(value) if type(value) in (int, float) and 0 <= value <= _LONGEST else None


def _stats_from(stats: Any) -> dict[str, Any]:
    """The statistics the analysis reads, type-checked: finite positive times, numeric rounds."""
    if not isinstance(stats, dict):
        raise ContractError(f"'stats' must be an object, got {stats!r:.60}")
    checked: dict[str, Any] = {}
    for name in _STATS:
        value = _seconds(stats.get(name))
        if value is None:
            raise ContractError(f"stats field {name!r} must be a finite number of seconds, 0 to {_LONGEST:.0e}, "
                                f"got {stats.get(name)!r:.60}")
        if value < _SHORTEST and name in _TIMES:
            raise ContractError(f"stats field {name!r} must be above 0 (a time per call), got {value!r}")
        checked[f"{name}_s"] = value
    for name, default in (("rounds", None), ("iterations", 1)):
        value = stats.get(name, default)
        if type(value) is not int or value < 1:
            raise ContractError(f"stats field {name!r} must be a whole number >= 1, got {value!r:.60}")
        checked[name] = value
    for low, high in _ORDERED:  # statistics of one set of rounds: any other order is a changed or made-up file
        slack = 0.0 if (low, high) == ("min", "max") else QUARTILE_ROUNDING
        if checked[f"{low}_s"] > checked[f"{high}_s"] * (1 + slack):
            raise ContractError(f"stats out of order: {low} {checked[f'{low}_s']:.6g} > {high} "
                                f"{checked[f'{high}_s']:.6g} (min <= q1 <= q3 <= max)")
    checked["q1_s"] = min(max(checked["q1_s"], checked["min_s"]), checked["max_s"])  # every reader gets them in order
    checked["q3_s"] = min(max(checked["q3_s"], checked["q1_s"]), checked["max_s"])
    data = stats.get("data")
    if data is not None and not _round_times(data):
        raise ContractError("stats field 'data' must be a list of finite times >= 0 (one per round)")
    if data == []:
        raise ContractError("stats field 'data' holds no round: no time was measured")
    if data and not math.isclose(middle := float(np.median(data)), checked["median_s"], rel_tol=1e-6):
        # compare reads the rounds, the report and the CSV the median: two readings of one run must not differ
        raise ContractError(f"stats field 'median' ({checked['median_s']:.6g} s) is not the median of its rounds "
                            f"'data' ({middle:.6g} s): changed after pytest-benchmark wrote it")
    checked["data"] = data
    return checked


def _round_times(data: Any) -> bool:
    """Is ``data`` a list of plain numbers, each a time within bounds (0 allowed)? The rounds are most of a run's
    numbers: checked in one vectorised pass (each within ±2**63, as every number of a run is: none overflows)."""
    if not isinstance(data, list) or not all(type(x) in (int, float) for x in data):
        return False
    times = np.asarray(data)  # floats, or ints numpy holds (each within ±2**63)
    return bool(np.all((times >= 0) & (times <= _LONGEST)))  # NaN fails both comparisons


def bench_row(bench: dict[str, Any], run: str, when: str | None) -> dict[str, Any]:
    info = bench["extra_info"]
    identity = identity_from(info)
    measured = measured_from(info)
    stats = _stats_from(bench.get("stats"))
    if identity.nbytes > MAX_BYTES:
        raise ContractError(f"field 'nbytes' is not a plausible payload, got {identity.nbytes!r:.30}")
    for name in ("name", "group"):
        if bench.get(name) is not None and not isinstance(bench[name], str):
            raise ContractError(f"{name!r} must be a string, got {bench[name]!r:.60}")
    row: dict[str, Any] = {"run": run, "datetime": when, "name": bench.get("name"), "group": bench.get("group")}
    row |= {name: getattr(identity, name) for name in IDENTITY}
    row |= {"shape": "x".join(map(str, identity.shape)), **measured, **stats}
    # The time of one transfer: a ping-pong call carries the payload there and back.
    row["transfer_s"] = stats["median_s"] / (2 if measured["round_trip"] else 1)
    # GB = 1e9 bytes, bytes counted once; a no-op moves nothing.
    moves = _moves_payload(identity.op, identity.variant)
    row["bandwidth_gbps"] = identity.nbytes / row["transfer_s"] / 1e9 if moves else math.nan
    row["busbw_gbps"] = row["bandwidth_gbps"] * measured["bus_factor"] if measured["bus_factor"] is not None else math.nan
    row["path"], row["case_key"] = identity.path, identity.key
    options = bench.get("options")  # the clock that timed it (pytest-benchmark's --benchmark-timer)
    row["timer"] = str(options["timer"])[:80] if isinstance(options, dict) and options.get("timer") is not None else None
    return row


#: Methods (contract.DEVICE_TIME_METHODS) that give a blocking copy a device time of its own: the copy's DMA
#: duration from the profiler's device activity records, or events around its non-blocking twin. "events"
#: around the call itself holds only for non-blocking copies.
VALID_DEVICE_METHODS = ("profiler", "nonblocking_twin")


def device_time_valid(frame: pd.DataFrame) -> pd.Series:
    """Per row: is its device time a measurement under the current contract?

    Not for a pageable copy (the host stages it through a bounce buffer, so events time the host's
    memcpy too), nor for a blocking copy to or from host memory timed back to back by events (each
    call waits for the one before it, so the host sets the pace: on an H200 a 4 B pinned ``.to``
    read 11.7 µs blocking against 2.2 µs non-blocking), unless the row records a valid method.
    """
    recorded = frame["device_time_method"].isin(VALID_DEVICE_METHODS) if "device_time_method" in frame else False
    pageable = frame["host_memory"].eq("pageable")
    blocking_host = frame["host_memory"].notna() & ~frame["non_blocking"].astype(bool)
    return recorded | ~(pageable | blocking_host)


class Row(dict[str, Any]):
    """One row of a frame as a dict, its label as ``name`` (a Series' own): the comparisons read a row field by field,
    and a dict's ``get`` costs a tenth of a Series' (which took a fifth of a 2,000-benchmark report)."""

    def __init__(self, name: Any, fields: Mapping[str, Any]) -> None:
        super().__init__(fields)
        self.name = name

    def copy(self) -> Row:
        return Row(self.name, self)


def rows_by_label(frame: pd.DataFrame) -> dict[Any, Row]:
    """Each row of ``frame`` by its label, made once: from each column's values as a list (a quarter of the time of
    ``to_dict("records")``, a tenth of ``iterrows``' Series)."""
    columns = list(frame.columns)
    return {label: Row(label, dict(zip(columns, values, strict=True)))
            for label, values in zip(frame.index, zip(*(frame[c].tolist() for c in columns), strict=True), strict=True)}


def flag(row: pd.Series, name: str) -> bool:
    """A row's optional yes/no field (``round_trip``, ``mixed_iterations``): False where absent or NaN."""
    value = row.get(name)
    return bool(pd.notna(value) and value)


def flags(frame: pd.DataFrame, name: str) -> pd.Series:
    """``flag`` for every row of ``frame`` at once: False where the column is absent or NaN."""
    return frame[name].eq(True) if name in frame else pd.Series(False, index=frame.index)


def round_times(row: Mapping[str, Any]) -> tuple[int, np.ndarray]:
    """Its calls a round and each round's seconds; a merged row whose blocks timed calls a round 2x or more apart reads
    its blocks of the most calls alone (``many_rounds``, load/blocks.py: the quick run's module move at 38.2 MiB, rounds
    of 100 calls from 7.88 ms, beside one-call rounds of 41 µs)."""
    if isinstance(many := row.get("many_rounds"), list):
        return int(np.nanmax(np.asarray(row["block_iterations"], dtype=float))), np.asarray(many, dtype=float)
    return int(row["iterations"]), np.asarray(row.get("data") or [], dtype=float) * row["iterations"]


def ticked(frame: pd.DataFrame) -> pd.Series:
    """Per row: did its rounds wait for the CPU (``on_ticks``, load/blocks.py)? False where the column is
    absent (rows no loader merged)."""
    return frame["on_ticks"].notna() if "on_ticks" in frame else pd.Series(False, index=frame.index)


def matching(frame: pd.DataFrame, match: Mapping[str, object]) -> pd.DataFrame:
    """The rows whose columns equal ``match``'s values (None: the column is empty; a tuple: any of its values)."""
    rows = frame
    for column, value in match.items():
        rows = rows[rows[column].isna() if value is None else rows[column].isin(value) if isinstance(value, tuple)
                    else rows[column] == value]
    return rows

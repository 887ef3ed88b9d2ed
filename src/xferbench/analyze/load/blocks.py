"""A case's blocks merged into one row, before any reader (report, compare, history, the journal) sees it.

A case measured in blocks (contract.BLOCK) is a reference case at the run's start, middle and end, or every case under
``--xfer-blocks``: each block a benchmark of its own in the run's JSON.

The merged statistics: where every block kept its rounds (``stats.data``, as the suite saves them), the blocks' rounds
are one set of rounds and every statistic is taken from it (median, quartiles, mean, standard deviation, min, max); else
the rounds-weighted mean of the blocks' medians, quartiles and means, the pooled standard deviation, the least min and
the greatest max. Rounds add up. The figures measured beside the time (device time, clocks, faults) are the median of
the blocks' where numbers, else the first block's. The row keeps ``blocks`` (how many were merged), ``block_medians``,
``block_log_se`` and ``block_iterations`` (per planned block, NaN where one is missing: each block's median, the
standard error of its log and its calls a round, from which xferbench.ratios pairs two cases block by block, those timed
alike, and analyze/drift.py reads the drift beyond the blocks' own noise), ``block_spread`` (the slowest block's median
over the fastest's, minus one) and ``mixed_iterations`` (its blocks timed calls a round 2x or more apart: their medians
measure different things). A block that is missing (a run cut short) leaves the others to merge; a duplicated block, a
block count that differs, or blocks of different cases under one case id are an error (ContractError, one line).

A busy machine's scheduler can set a one-call round's time: on the 2-core CPU runs beside busy loops, 37 of 40 rounds of a
1 MiB copy_ took 12 ms, three 4 ms ticks, where its blocks of 100 calls a round took 14 µs a call. Where a run shows it
(``run_tick``), a block whose median and a quarter of its rounds lie on the tick's multiples is left out of its
row where another block timed more calls a round (counted in ``tick_blocks``); a row whose median and rounds lie so
names the tick in ``on_ticks`` (NaN elsewhere), as does one whose median round of many calls stood 3/4 of a tick, and
half its fastest round, beyond that fastest: a wait for the CPU is part of its time, how much the run cannot say,
so the report states no bandwidth of it and judges no comparison with it (analyze/view.py), nor does compare
(analyze/gate/compare.py). A row off the multiples whose rounds waited all the same says so in ``waited_off_ticks``
(``waited_off``). No torch here.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ...contract import MEASURED, Block, ContractError, block_from
from ...ratios import log_se, order_se
from .rows import bench_row, flag, flags, round_times

__all__ = ["rows_of", "waited_rows"]


def rows_of(benches: Sequence[dict[str, Any]], run: str, when: str | None, busy: bool = False) -> list[dict[str, Any]]:
    """One row per benchmark, the blocks of a case merged into one row where its first block was. A case is its id
    and its benchmark's name without the block: two tests of one run may time the same case. ``busy``: the run recorded
    more load than cores (``waited_off``)."""
    groups: dict[tuple[str, str], list[tuple[Block, dict[str, Any], dict[str, Any]]]] = {}
    order: list[tuple[str, str] | dict[str, Any]] = []
    measured = [_row(bench, run, when) for bench in benches]
    tick = run_tick([row for row, _ in measured])
    for bench, (row, block) in zip(benches, measured, strict=True):
        if block is None:
            order.append(_ticked(row, tick))
            continue
        key = block.case_id, _whole_name(bench.get("name"))
        if key not in groups:
            order.append(key)
        groups.setdefault(key, []).append((block, bench, row))
    rows = [item if isinstance(item, dict) else _merged(item[0], groups[item], tick) for item in order]
    return [row | {"waited_off_ticks": waited_off(row, tick, busy, larger)} for row, larger in zip(
        rows, least_larger(rows), strict=True)]


def least_larger(rows: Sequence[Mapping[str, Any]]) -> list[float]:
    """Per row, the least median call of a larger size of its path (inf where none): a row whose every call took far
    longer waited in every round (``waited_off``). One pass per path, its sizes from the largest down."""
    by_path: dict[Any, list[tuple[int, float]]] = {}
    for row in rows:
        by_path.setdefault(row["path"], []).append((int(row["nbytes"]), float(row["median_s"])))
    least: dict[tuple[Any, int], float] = {}
    for path, sizes in by_path.items():
        below = math.inf  # the least median of the sizes above the one at hand
        for nbytes, group in itertools.groupby(sorted(sizes, reverse=True), key=lambda size: size[0]):
            least[path, nbytes] = below
            below = min(below, *(median for _, median in group))
    return [least[row["path"], int(row["nbytes"])] for row in rows]


#: The scheduler ticks a one-call round can land on (CONFIG_HZ 100, 250, 300 and 1000), the longest first.
TICKS = (10e-3, 4e-3, 10e-3 / 3, 1e-3)
#: A round lies on the tick within this share of one tick of a multiple of it (100 µs of 4 ms).
ON_TICK = 0.025


def _on_tick(row: dict[str, Any], tick: float) -> tuple[bool, int]:
    """Whether ``row``'s median and a quarter or more of its rounds (5 or more, of one call each; 5x what chance puts
    there) lie on multiples of ``tick`` (the busy run's 64 MiB copy_: 12.004 ms, 13 of 31 rounds), and on how many
    multiples. A round of more calls is no evidence: pytest-benchmark sets their count to fill its round's time."""
    data = row.get("data")
    if row["iterations"] != 1 or not isinstance(data, list) or len(data) < 5:
        return False, 0
    steps = np.asarray([*data, row["median_s"]], dtype=float) / tick
    on = (np.abs(steps - np.round(steps)) <= ON_TICK) & (steps > 0.5)
    return bool(on[-1]) and 4 * int(on[:-1].sum()) >= len(data), np.unique(np.round(steps[:-1][on[:-1]])).size


def run_tick(rows: Sequence[dict[str, Any]]) -> float:
    """The scheduler tick (seconds) this run's one-call rounds land on, or NaN: the longest of ``TICKS`` on which two
    rows or more lie (``_on_tick``) with rounds on two multiples or more (a steady time near one is no evidence),
    where it finds at least three quarters of the rows that the tick finding the most does."""
    found = {tick: sum(ok and steps >= 2 for ok, steps in (_on_tick(row, tick) for row in rows)) for tick in TICKS}
    most = max(found.values())
    return next((tick for tick in TICKS if found[tick] >= max(2, 0.75 * most)), math.nan)


def _waited(row: Mapping[str, Any], tick: float, calls: int = 2) -> bool:
    """Whether ``row``'s rounds of ``calls`` calls or more each (5 or more rounds) held a wait for the CPU: its median
    round beyond its fastest by 3/4 of a tick or more (a wait's jitter: the loaded run's rounds stepped 3.9-4.4 ms) and
    by half that fastest round or more (a long round's jitter is no wait). The busy run's one-thread 1 MiB copy_:
    rounds of 100 calls, 2.37 ms at fastest, 6.47 ms at the median; the quick run's gloo reduce_scatter of 16 MiB: 4
    calls, 142 ms and 232 ms."""
    if not isinstance(row.get("data"), list) or (times := round_times(row))[0] < calls or len(rounds := times[1]) < 5:
        return False
    return bool(np.median(rounds) - rounds.min() >= max(0.75 * tick, 0.5 * rounds.min()))


#: A busy run whose rounds land on no tick (``run_tick``) reads its waits by the longest: 3/4 of it is past any tick's
#: wait, and half the fastest round past it no round's jitter (the threads run at load 11.6 on 2 CPUs: its copy_ of
#: 1 MiB, rounds of 100 calls, 1.27 ms at fastest and 21.6 ms at the median; of 16 MiB, one call, 12.3 and 20.0 ms).
LONGEST = TICKS[0]


def waited_off(row: Mapping[str, Any], tick: float, busy: bool, larger: float = math.inf) -> bool:
    """Whether ``row``, off the ticks' multiples, held a wait for the CPU all the same: in a run whose rounds land on
    ``tick``, its rounds of one call (``waited_one_call``); in a busy run whose rounds land on none, its rounds of one
    call or many beyond their fastest by 3/4 of the ``LONGEST`` tick and half that fastest (``_waited``), or its
    fastest call as far past ``larger``, the least median call of a larger size of its path (``least_larger``): bytes
    only add time, so every round waited (the threads run's clone of 256 KiB: 18.3 ms at fastest, its 1 MiB 16.6 µs at
    the median)."""
    if pd.notna(row.get("on_ticks", math.nan)):
        return False
    if math.isfinite(tick):
        return waited_one_call(row, tick)
    return busy and (_waited(row, LONGEST, calls=1) or row["min_s"] - larger >= 0.75 * LONGEST)


def waited_one_call(row: Mapping[str, Any], tick: float) -> bool:
    """Whether ``row``'s rounds of one call each (5 or more, its blocks timed alike) held a wait off the ticks'
    multiples: its median round 3/4 of a tick or more beyond its fastest, in a run whose rounds land on ``tick``. A
    one-call round is that call and its waits (the busy run's one-thread 64 MiB copy_: 7.18 ms at fastest, 14.3 ms at
    the median, in clusters off the multiples; its clone, 51.3 against 66.5 ms): model.fit_paths fits no β through it.
    Its comparisons are a wait's (``RunView.ratio``): it took at most its median."""
    data = row.get("data")
    if row.get("iterations") != 1 or flag(row, "mixed_iterations") or not isinstance(data, list) or len(data) < 5:
        return False
    return bool(math.isfinite(tick) and np.median(data) - min(data) >= 0.75 * tick)


def waited_rows(frame: pd.DataFrame) -> pd.Series:
    """Per row of ``frame``: did its rounds wait off the ticks (``waited_off``, as its loader read it)? A fit leaves such
    a size out; the first screen states no GB/s of it. False where the column is absent (rows no loader merged)."""
    return flags(frame, "waited_off_ticks")


def _ticked(row: dict[str, Any], tick: float) -> dict[str, Any]:
    """``row`` with ``on_ticks``: ``tick`` where its median and rounds lie on it (``_on_tick``) or its rounds of many
    calls held its waits (``_waited``), else NaN."""
    on = math.isfinite(tick) and (_on_tick(row, tick)[0] or _waited(row, tick))
    return row | {"on_ticks": tick if on else math.nan}


def _whole_name(name: Any) -> str:
    """The benchmark's name as the case measured whole would have it: ``test_host[<case>]`` of
    ``test_host[<case>-block2of3]`` (contract.Block.param_id)."""
    return _BLOCK_ID.sub("", name) if isinstance(name, str) else ""


_BLOCK_ID = re.compile(r"-block\d+of\d+(?=\]$)")


def _row(bench: dict[str, Any], run: str, when: str | None) -> tuple[dict[str, Any], Block | None]:
    try:
        return bench_row(bench, run, when), block_from(bench["extra_info"])
    except ContractError as error:
        raise ContractError(f"benchmark {bench.get('name')!r:.80}: {error}") from None


def _merged(case_id: str, blocks: list[tuple[Block, dict[str, Any], dict[str, Any]]], tick: float) -> dict[str, Any]:
    _check(case_id, blocks)
    blocks = sorted(blocks, key=lambda b: b[0].index)
    # the blocks that timed many calls a round measure the call; those of one call on the tick, the scheduler
    timed = [b for b in blocks if not (math.isfinite(tick) and _on_tick(b[2], tick)[0])]
    left_out = len(blocks) - len(timed) if any(row["iterations"] > 1 for _, _, row in timed) else 0
    blocks = timed if left_out else blocks
    first_bench, rows = blocks[0][1], [row for _, _, row in blocks]
    info = {k: v for k, v in first_bench["extra_info"].items() if k not in ("xfer_block", "xfer_blocks", "xfer_case_id")}
    info |= _measured(rows)
    name = first_bench.get("name")
    merged = bench_row({**first_bench, "name": _whole_name(name) if isinstance(name, str) else name, "extra_info": info,
                        "stats": _stats(rows)}, rows[0]["run"], rows[0]["datetime"])
    medians = [row["median_s"] for row in rows]
    merged["blocks"] = len(rows)
    merged["block_spread"] = max(medians) / min(medians) - 1 if len(rows) > 1 else float("nan")
    # pytest-benchmark calibrates each block: one whose first calls stalled times a call a round, the others a hundred
    # (a 1,000 against 1,058 of a 1 µs call is calibration's usual wobble, the same measure)
    counts = [int(row["iterations"]) for row in rows]
    merged["mixed_iterations"] = (most := max(counts)) >= 2 * min(counts)
    if merged["mixed_iterations"]:  # rounds of two loops: ``rows.round_times`` reads those of the most calls
        merged["many_rounds"] = [float(t) * most for row in rows if row["iterations"] == most for t in row["data"] or []]
    planned = [math.nan] * blocks[0][0].count
    merged["block_medians"], merged["block_log_se"], merged["block_iterations"] = (list(planned) for _ in range(3))
    for (block, _, _), row in zip(blocks, rows, strict=True):
        merged["block_medians"][block.index] = row["median_s"]
        merged["block_log_se"][block.index] = _log_se(row)
        merged["block_iterations"][block.index] = float(row["iterations"])
    merged["tick_blocks"] = left_out
    return _ticked(merged, tick)


def _log_se(row: dict[str, Any]) -> float:
    """A block's standard error of its log median, from its rounds where kept (distribution-free: a block preempted
    in half its rounds is bimodal, and an IQR across both modes would hide the spread between blocks), else its IQR."""
    data = row.get("data")
    if isinstance(data, list) and len(data) > 1:
        return order_se(data)
    return log_se(row["median_s"], row["iqr_s"], row["rounds"])


def _check(case_id: str, blocks: list[tuple[Block, dict[str, Any], dict[str, Any]]]) -> None:
    """One case, each block once, one count: anything else is a changed or made-up file."""
    first, _, row = blocks[0]
    seen: set[int] = set()
    for block, bench, other in blocks:
        where = f"benchmark {bench.get('name')!r:.80}: case {case_id!r:.80}"
        if block.count != first.count:
            raise ContractError(f"{where}: its blocks disagree on their count ({first.count} and {block.count})")
        if block.index in seen:
            raise ContractError(f"{where}: block {block.index} appears twice")
        if other["case_key"] != row["case_key"]:
            raise ContractError(f"{where}: its blocks measure different cases ({row['path']} at {row['nbytes']} B and "
                                f"{other['path']} at {other['nbytes']} B)")
        seen.add(block.index)


def _stats(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The blocks' statistics as one set (pytest-benchmark's names), as the module's docstring says."""
    rounds = [int(row["rounds"]) for row in rows]
    merged: dict[str, Any] = {"rounds": sum(rounds), "iterations": int(rows[0]["iterations"]),
                              "min": min(row["min_s"] for row in rows), "max": max(row["max_s"] for row in rows)}
    if all(row["data"] for row in rows):
        data = [float(t) for row in rows for t in row["data"]]
        times = np.asarray(data)
        q1, median, q3 = (float(v) for v in np.percentile(times, [25, 50, 75]))
        std = float(np.std(times, ddof=1)) if len(times) > 1 else 0.0
        return merged | {"data": data, "median": median, "q1": q1, "q3": q3, "iqr": q3 - q1,
                         "mean": float(np.mean(times)), "stddev": std}
    weights = np.asarray(rounds, dtype=float) / sum(rounds)

    def weighted(name: str) -> float:
        return float(np.dot(weights, [row[f"{name}_s"] for row in rows]))

    mean = weighted("mean")
    # Pooled: each block's own spread plus how far its mean lies from the whole's.
    squares = sum(n * (row["stddev_s"] ** 2 * (n - 1) / n + (row["mean_s"] - mean) ** 2)
                  for n, row in zip(rounds, rows, strict=True))
    total = sum(rounds)
    q1, q3 = weighted("q1"), weighted("q3")
    return merged | {"median": weighted("median"), "q1": q1, "q3": q3, "iqr": q3 - q1, "mean": mean,
                     "stddev": math.sqrt(squares / (total - 1)) if total > 1 else 0.0}


def _measured(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The measured numbers beside the time: each one's median over the blocks that have it."""
    out: dict[str, Any] = {}
    for name, kind in MEASURED.items():
        values = [row[name] for row in rows if row.get(name) is not None]
        if values and kind in (float, int) and len(values) > 1:
            middle = float(np.median(np.asarray(values, dtype=float)))
            out[name] = round(middle) if kind is int else middle
    return out

"""Is pinning worth it, size by size: pin_memory() on a cold cache over what each copy from pinned memory saves
(``RunView.break_even``), as verdicts and the small table beneath the pin_memory scenario. No torch here."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pandas as pd

from ...families.base import ms as _ms
from ...units import format_bytes, format_seconds
from ..view import COLD_OVER_CACHED, BreakEven, RunView

__all__ = ["MIN_COLD_ROUNDS", "break_even_table", "pinning_break_even"]

#: Where most of a cold pin's rounds hit the cache, this many rounds standing apart above it price the cold pin.
MIN_COLD_ROUNDS = 3


def _between(even: BreakEven) -> tuple[str, str]:
    """The copies that pay for the pin at either end of the two copies' ratio interval (the pinned copy's median times
    the ratio's bounds less one), and at its pin's quartiles (the middle half of its rounds, each over the median
    saving): ``("4-7", "")``; a span of one copy is none."""
    assert even.ratio is not None and even.pinned is not None  # a priced break-even has both copies
    pin, pinned, saved = float(even.pin["median_s"]), float(even.pinned["median_s"]), even.saved_s or math.nan
    by_ratio = [math.ceil(pin / (pinned * (bound - 1))) for bound in (even.ratio.high, even.ratio.low)]
    by_pin = [math.ceil(q / saved) if (q := float(even.pin.get(key, math.nan))) > 0 else 0 for key in ("q1_s", "q3_s")]
    ratio_span, pin_span = (f"{first}-{last}" if 0 < first != last else "" for first, last in (by_ratio, by_pin))
    return ratio_span, pin_span


def _verdict(even: BreakEven) -> tuple[str, float | None, str]:
    """The break-even's verdict, copies and the copies its spans allow (``_between``): can't tell where the two
    copies' ratio is not resolved (``BreakEven.ratio``); else from copy N, by the pin's median (a pin whose rounds
    mostly missed page-locking is judged before this)."""
    saved, copies = even.saved_s or 0.0, even.copies
    if even.ratio is not None and not even.ratio.resolved:
        return f"can't tell: pageable over pinned, {even.ratio.text()}", None, ""
    if saved < 0:
        return "never pays off: the pinned copy is slower", None, ""
    by_ratio, by_pin = _between(even)
    spans = [f"copies {by_ratio} by its interval"] * bool(by_ratio) + [f"{by_pin} by the pin's middle half"] * bool(by_pin)
    said = f"{', '.join(spans)}; " if spans else ""
    between = by_ratio + (f"; {by_pin} by the pin's middle half" if by_pin else "")
    return f"from copy {math.ceil(copies or 0.0)} ({said}pinning = {copies:.3g}× one copy's saving)", copies, between


def _above_gap(rounds: list[float]) -> pd.Series:
    """The rounds above the widest gap between sorted rounds, where it is ``COLD_OVER_CACHED``x or more (the H200's
    1 MiB cold pin: 17 rounds to 35.7 µs, 13 from 2.98 ms); none otherwise."""
    times = pd.Series(sorted(t for t in rounds if t > 0), dtype=float)
    gaps = (times / times.shift()).iloc[1:]  # none for fewer than two rounds: their max is NaN, no split
    return times.loc[gaps.idxmax():] if gaps.max() >= COLD_OVER_CACHED else times.iloc[:0]


def pinning_break_even(view: RunView) -> list[dict[str, Any]]:
    """Per size and GPU: how many copies pay for pinning a tensor once, pin_memory() (cold) / (pageable .to -
    pinned .to), every figure from the pin's own run (``RunView.break_even``); "never pays off" where the pinned copy
    is slower, "can't tell" where the copies' ratio is not resolved, where the cold pin took under ``COLD_OVER_CACHED``x
    a cached one (most rounds locked no page) unless ``MIN_COLD_ROUNDS`` rounds stand apart above the rest at that
    factor or more (they locked fresh pages: they price the pin), or where one was not measured in that run."""
    rows = []
    for even in view.break_even:
        pin, pageable, pinned = even.pin, even.pageable, even.pinned
        size, dst = int(pin["nbytes"]), str(pin["dst"])
        row: dict[str, Any] = {"size": size, "dst": dst, "pin_s": float(pin["median_s"]), "pageable": pageable,
                               "pinned": pinned, "saved_s": None, "copies": None, "between": "", "where": "",
                               "run": str(pin["run"])}
        slow = _above_gap(pin.get("data") or []) if even.cold_unseen else pd.Series(dtype=float)
        cached = float(even.cached["median_s"]) if even.cached is not None else math.nan
        if (len(slow) >= MIN_COLD_ROUNDS and slow.median() >= COLD_OVER_CACHED * cached and pageable is not None
                and pinned is not None):
            # the rounds that did lock fresh pages stand apart from the cache's, as a cold pin does: they price it
            # (the H200's 1 MiB: 13 of 30 rounds from 2.98 ms, the median 18.3 µs the cache's)
            cold = pin.copy()
            cold["median_s"] = row["pin_s"] = float(slow.median())
            cold["q1_s"], cold["q3_s"] = slow.quantile(0.25), slow.quantile(0.75)
            row["saved_s"] = even.saved_s
            verdict, row["copies"], row["between"] = _verdict(dataclasses.replace(even, pin=cold))
            row["verdict"] = (f"{verdict}; the cold pin priced by the {len(slow)} of {len(pin['data'])} rounds that "
                              f"locked fresh pages ({_ms(slow)}): its median, {format_seconds(float(pin['median_s']))}, "
                              "is the cache's")
            # most of its pins hit the cache and paid back at once: the count holds where a pin locks fresh pages
            row["where"] = f" where a pin locks fresh pages ({len(slow)} of its {len(pin['data'])} rounds did)"
        elif even.cold_unseen and even.cached is not None:  # the fundamental lack: first, whatever else is missing
            some = f" ({len(slow)} of {len(pin['data'])} took {_ms(slow)})" if len(slow) else ""
            row["verdict"] = (f"can't tell: the cold pin ({format_seconds(float(pin['median_s']))}) took under "
                              f"{COLD_OVER_CACHED:g}× a cached one ({format_seconds(cached)}): most rounds locked no "
                              f"fresh page{some}, so its median prices no cold pin")
        elif pageable is None or pinned is None:
            lacking = "pageable" if pageable is None else "pinned"
            instance = view.instance_of(pin)
            row["verdict"] = (f"can't tell: no {lacking} copy measured at {format_bytes(size)}" if even.elsewhere is None else
                              f"can't tell: the {lacking} copy at {format_bytes(size)} was measured in another machine "
                              f"instance (another boot) than the pin's" + (f", {instance.label}" if instance else ""))
        else:
            row["saved_s"] = even.saved_s
            row["verdict"], row["copies"], row["between"] = _verdict(even)  # between: the copies its interval allows
        # the verdict in two or three words, for the fold's line and the first screen: "from copy 5", "can't tell"
        row["pays"] = (f"from copy {math.ceil(row['copies'])}" if row["copies"] else row["verdict"].split(":")[0])
        rows.append(row)
    return rows


def _case(row: pd.Series | None) -> str:
    if row is None:
        return "not measured"
    return f"{format_seconds(row['median_s'])} ({'scenario' if row['op'] == 'pin_memory' else row['op'] + ' family'})"


def break_even_table(view: RunView, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The pinning break-even per size (``rows``: ``pinning_break_even``'s) as a small table, or None without
    pin_memory."""
    if not rows:
        return None
    runs = len(view.sources) > 1  # two files may be two boots of the machine: say which one each row read
    gpus = len({row["dst"] for row in rows}) > 1  # each size once per GPU: name it
    said = "; ".join(f"{format_bytes(row['size'])}{' on ' + row['dst'] if gpus else ''} {row['pays']}"
                     + (f" ({row['between']})" if row["between"] else "")
                     + row["where"] for row in rows)
    return {"id": "break-even", "summary": f"Break-even of pinning: {said}",
            "caption": (
        "Break-even: pin_memory() on a cold cache (pin_cold) over what each copy from pinned memory saves against one "
        "from pageable memory (.to(), blocking; pinned: non_blocking, then a synchronize). Both copies are the scenario's "
        "own (to, pinned_to) where both ran, else the host-to-device family's same calls at that size, else what ran of "
        "each, always from the pin's own run. A saving whose copies' ratio the run cannot tell from 1 (its 95% "
        "interval) can't tell, nor can a cold pin that took under twice a cached one (most of its rounds locked no "
        "fresh page). A count's span: the copies at either end of that interval, and at the pin's quartiles where they "
        "differ."),
        "columns": ["size", "GPU", "pin_memory() (cold)", "pageable copy", "pinned copy", "saved per copy",
                    "pinning pays off"] + (["run (every figure of the row)"] if runs else []),
        "rows": [[format_bytes(row["size"]), row["dst"], format_seconds(row["pin_s"]), _case(row["pageable"]),
                  _case(row["pinned"]), format_seconds(row["saved_s"]), row["verdict"]] + ([row["run"]] if runs else [])
                 for row in rows]}

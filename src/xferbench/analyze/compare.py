"""Regression comparison of two runs: a threshold *and* a significance test.

pytest-benchmark's ``--benchmark-compare-fail`` compares one statistic against a
threshold; on a shared machine that fails on noise. Here a case counts as a
regression only when it is slower by more than the threshold and a Mann-Whitney
U test on the per-round timings says the difference is not chance. Cases are
matched on their identity (op, method, devices, size, dtype, memory), not on
test names, and runs from different machines are refused unless allowed.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.stats import false_discovery_control, mannwhitneyu

from ..contract import machine_differences, machine_identity
from ..units import format_bytes, format_seconds
from .results import Results

__all__ = [
    "ALPHA",
    "Comparison",
    "compare",
    "machine_differences",
    "machine_identity",
    "parse_threshold",
    "to_json",
    "to_markdown",
    "to_text",
]

#: Significance level of the Mann-Whitney U test: a difference this unlikely under
#: "same distribution" is taken as real.
ALPHA = 0.01
STATS = {"median": "median_s", "min": "min_s", "mean": "mean_s"}


def parse_threshold(text: str) -> float:
    """``10%`` or ``0.1`` -> 0.1; ValueError otherwise."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise ValueError(f"{text!r} is not a threshold; write it like 10% or 0.1") from None
    if not 0 < value < 10:
        raise ValueError(f"{text!r}: the threshold must be above 0% and below 1000%")
    return value


@dataclass(frozen=True)
class Comparison:
    """One case in both runs (or in one of them)."""

    path: str
    nbytes: int
    base_s: float | None
    new_s: float | None
    ratio: float | None  # new / base: above 1 is slower
    p_value: float | None
    verdict: str  # regression, improvement, unchanged, not significant, new, gone

    @property
    def regression(self) -> bool:
        return self.verdict == "regression"

    @property
    def change(self) -> str:
        if self.ratio is None:
            return self.verdict
        if abs(self.ratio - 1) < 0.005:
            return "same"
        if self.ratio >= 1:
            return f"{self.ratio:.2f}x slower"
        return f"{1 / self.ratio:.2f}x faster"


def _p_value(base: Any, new: Any) -> float | None:
    if not isinstance(base, list) or not isinstance(new, list) or len(base) < 3 or len(new) < 3:
        return None
    return float(mannwhitneyu(base, new, alternative="two-sided").pvalue)


def _verdict(ratio: float, p: float | None, threshold: float) -> str:
    beyond = ratio > 1 + threshold or ratio < 1 / (1 + threshold)
    if not beyond:
        return "unchanged"
    if p is not None and p >= ALPHA:
        return "not significant"
    return "regression" if ratio > 1 else "improvement"


def compare(base: Results, new: Results, threshold: float = 0.10, stat: str = "median") -> list[Comparison]:
    """Match cases by identity and judge each; ValueError when none are in common.

    The p-values of all matched cases are adjusted together (Benjamini-Hochberg):
    with 50 cases tested at 0.01, about one would otherwise come out "significant"
    by chance alone.
    """
    column = STATS[stat]
    a, b = base.frame.set_index("case_key"), new.frame.set_index("case_key")
    common = a.index.intersection(b.index)
    if common.empty:
        raise ValueError("the two runs have no case in common (compare matches op, devices, size, dtype and method)")
    raw = {key: _p_value(a.loc[key, "data"], b.loc[key, "data"]) for key in common}
    adjusted = _adjust(raw)
    rows = []
    for key in a.index.union(b.index, sort=False):
        old, cur = (a.loc[key] if key in a.index else None), (b.loc[key] if key in b.index else None)
        row = cur if cur is not None else old
        if old is None or cur is None:
            rows.append(Comparison(row["path"], int(row["nbytes"]), None if old is None else float(old[column]),
                                   None if cur is None else float(cur[column]), None, None,
                                   "new" if old is None else "gone"))
            continue
        ratio = float(cur[column]) / float(old[column])
        p = adjusted[key]
        rows.append(Comparison(row["path"], int(row["nbytes"]), float(old[column]), float(cur[column]), ratio, p,
                               _verdict(ratio, p, threshold)))
    order = {"regression": 0, "improvement": 1, "not significant": 2, "unchanged": 3, "new": 4, "gone": 5}
    return sorted(rows, key=lambda r: (order[r.verdict], -(r.ratio or 0)))


def _adjust(p_values: dict[str, float | None]) -> dict[str, float | None]:
    """Benjamini-Hochberg adjusted p-values; cases without raw timings stay None."""
    keys = [k for k, p in p_values.items() if p is not None]
    adjusted = dict.fromkeys(p_values)
    if keys:
        values = false_discovery_control([p_values[k] for k in keys], method="bh")
        adjusted.update({k: float(v) for k, v in zip(keys, values, strict=True)})
    return adjusted


def _cells(r: Comparison) -> list[str]:
    p = "-" if r.p_value is None else f"{r.p_value:.2g}"
    change = r.change if r.verdict not in ("not significant", "unchanged") else f"{r.change} ({r.verdict})"
    return [r.path, format_bytes(r.nbytes), format_seconds(r.base_s), format_seconds(r.new_s), change, p, r.verdict]


_HEAD = ["case", "size", "base", "new", "change", "p", "verdict"]


def summary(rows: list[Comparison], threshold: float) -> str:
    regressions = sum(r.regression for r in rows)
    improvements = sum(r.verdict == "improvement" for r in rows)
    return (f"{regressions} regression(s), {improvements} improvement(s) in {len(rows)} case(s) "
            f"(threshold {threshold:.0%}, significance p < {ALPHA} after Benjamini-Hochberg)")


def to_text(rows: list[Comparison], threshold: float) -> str:
    table = [_HEAD] + [_cells(r) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(_HEAD))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in table]
    return "\n".join([*lines, "", summary(rows, threshold)])


def to_markdown(rows: list[Comparison], threshold: float, differences: list[str] | None = None) -> str:
    icon = {"regression": "🔴", "improvement": "🟢"}
    lines = ["### xferbench comparison", "", summary(rows, threshold), ""]
    if differences:
        lines += ["Compared across machines: " + "; ".join(differences), ""]
    lines += ["| " + " | ".join(_HEAD) + " |", "|" + "---|" * len(_HEAD)]
    for r in rows:
        cells = [c.replace("|", "\\|") for c in _cells(r)]
        cells[-1] = f"{icon.get(r.verdict, '')} {cells[-1]}".strip()
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def to_json(rows: list[Comparison], threshold: float) -> str:
    def clean(value: Any) -> Any:
        return None if isinstance(value, float) and not math.isfinite(value) else value

    payload = {
        "threshold": threshold,
        "alpha": ALPHA,
        "regressions": sum(r.regression for r in rows),
        "cases": [{k: clean(v) for k, v in asdict(r).items()} | {"change": r.change} for r in rows],
    }
    return json.dumps(payload, indent=1, default=lambda v: v.item() if isinstance(v, np.generic) else str(v))

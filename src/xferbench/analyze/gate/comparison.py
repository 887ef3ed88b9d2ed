"""One compared case (``Comparison``) and how compare writes its rows: a text table, a Markdown comment, JSON.

compare decides the verdicts; this says them, the same rows in each form, with what a
run file wrote (a case's path, software versions) made inert for the terminal or Markdown.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from ... import escape
from ...units import format_bytes, format_seconds
from .bound import STORE_BOUND
from .noise import Z_BOUND, Noise
from .verdicts import CANT_TELL, FASTER_WITHIN, GONE, IMPROVEMENT, NEW, NOT_COMPARED, NOT_GATED, SLOWER_WITHIN, Verdicted
from .verdicts import of as verdict_of

__all__ = ["MAX_SHOWN_RATIO", "Comparison", "can_see", "markdown_table", "strict", "summary", "text_table", "to_json",
           "to_markdown", "to_text"]


@dataclass(frozen=True)
class Comparison(Verdicted):
    """One case across the base and new runs (or in only one of them)."""

    path: str
    nbytes: int
    case_class: str
    base_s: float | None  # median over runs of each run's median round
    new_s: float | None
    ratio: float | None  # new / base: above 1 is slower
    low: float | None  # 95% interval of the ratio
    high: float | None
    z: float | None  # robust z of the log ratio against the between-run spread
    floor: float | None
    spread: float | None  # between-run SD of log time used
    spread_from: str | None  # calibration, history, default
    verdict: str  # regression, improvement, not reproduced, can't tell, unchanged, not compared, new, gone
    smallest: float | None = None  # the smallest change (0.5: 1.5x) this comparison could have flagged
    key: str = ""  # the case's full identity (contract.Identity.key)
    environment: tuple[str, ...] = ()  # software that changed between the sides, e.g. "torch 2.12.0 → 2.13.0"
    why: str | None = None  # why a flag became "can't tell" (a side ran on a busy machine), or "not compared"
    before_step: int = 0  # base runs left out: before a lasting step the gate itself would flag (the baseline moved)
    floor_from: str | None = None  # calibrated, store spread (the base runs' own swing was larger), default, threshold
    name: str = ""  # the test's name in the newest run that has the case (ab --only selects it by it)
    aside: tuple[str, ...] = ()  # the base runs set aside: they disagree with the others past floor and spread
    swing: float | None = None  # how far the kept base runs swing between them (bound.store_swing), once they show it
    groups: tuple[int, int] | None = None  # a case not gated whose base runs fall into two groups: their runs
    moved: float | None = None  # an accepted lasting step (before_step): the new level over the one before it
    waited: str = ""  # whose rounds waited for the CPU (on the ticks or off them): "base", "new" or "both"

    @property
    def change(self) -> str:
        """``1.42x slower``; where a side's rounds waited for the CPU it took at most its median, so the figure is a
        bound (``at most 69.74x slower``: the slower side waited; ``at least``: the faster), none where both did."""
        if self.ratio is None or self.waited == "both":
            return self.verdict if self.ratio is None else "-"
        if abs(self.ratio - 1) < 0.005 and not self.waited:
            return "1.00x"  # not "same": beside a wide interval that would read as a verdict
        factor = max(self.ratio, 1 / self.ratio)
        # a bound is a figure a reader can use, however large (``_times`` caps only a plain ratio)
        shown = _times(factor) if not self.waited else f"{factor:,.0f}x" if factor >= 100 else f"{factor:.2f}x"
        said = f"{shown} {'slower' if self.ratio >= 1 else 'faster'}"
        return said if not self.waited else ("at most " if (self.waited == "new") == (self.ratio >= 1) else "at least ") + said

    @property
    def not_gated_why(self) -> str:
        """Why no floor holds: the stored runs' swing (and their two groups), else the calibration's word."""
        if self.swing is None:
            return "calibration: it swings too much between A/A runs"
        said = f"the stored runs spread {1 + self.swing:.3g}×"
        return said + (f", bimodal: {self.groups[0]} and {self.groups[1]} runs" if self.groups else "")

    @property
    def shown_verdict(self) -> str:
        """The verdict in words: what a "can't tell" could have seen, and what software changed."""
        shown = self.verdict
        if self.verdict in (SLOWER_WITHIN, FASTER_WITHIN) and self.floor is not None:
            shown += f" (×{1 + self.floor:.3g})"
        if self.verdict == NOT_GATED:
            shown += f" ({self.not_gated_why})"
        if self.verdict == CANT_TELL:  # what it could see, where the change is smaller (69.7x beside 9.61x reads wrong)
            seen = [] if self.smallest is None or math.isinf(self.smallest) or (
                self.ratio is not None and max(self.ratio, 1 / self.ratio) >= 1 + self.smallest) else [
                f"would flag {(t := _times(1 + self.smallest))}" + " or more" * (not t.startswith(">"))]
            shown += f" ({'; '.join([*([self.why] if self.why else []), *seen])})" if self.why or seen else ""
        elif self.verdict in (NOT_COMPARED, NEW, GONE) and self.why:
            shown += f" ({self.why})"
        if self.before_step:
            shown += f"; baseline moved: a lasting step left out the {self.before_step} run(s) before it"
        if self.environment:
            shown += "; environment changed: " + ", ".join(self.environment)
        return shown


#: The largest ratio printed as a number: beyond it a figure (32379637.39x) says nothing a reader can use and
#: comes from runs that measured something else (a busy machine's scheduler ticks), so it reads ">1000x".
MAX_SHOWN_RATIO = 1000.0


def _times(ratio: float) -> str:
    """``1.42x``, or ``>1000x`` past ``MAX_SHOWN_RATIO``."""
    return f">{MAX_SHOWN_RATIO:g}x" if ratio > MAX_SHOWN_RATIO else f"{ratio:.2f}x"


def _interval(r: Comparison) -> str:
    """The 95% interval read the way ``change`` reads: "2.00x faster" beside 1.61-2.50x, not beside new/base's
    0.40-0.62x, where a reader takes the smaller figure for the change."""
    if r.low is None or r.high is None:
        return "-"
    faster = r.change.endswith("faster") and r.low > 0  # a low end that underflowed to 0 keeps new/base
    return f"{1 / r.high:.2f}-{1 / r.low:.2f}x" if faster else f"{r.low:.2f}-{r.high:.2f}x"


def _cells(r: Comparison) -> list[str]:
    z = "-" if r.z is None else f"{r.z:+.1f}"
    floor = "-" if r.floor is None else ("none" if math.isinf(r.floor) else f"{r.floor:.0%}")
    if r.floor_from in _FLOOR_SAID and floor != "-":  # which floor held: a calibration's, or the store's own swing
        floor += f" ({r.floor_from})"
    return [r.path, format_bytes(r.nbytes), r.case_class, format_seconds(r.base_s), format_seconds(r.new_s),
            r.change, _interval(r), z, floor, r.shown_verdict]


#: Floor sources named beside the floor (a default or --threshold is said once, in the summary).
_FLOOR_SAID = ("calibrated", "store spread")

_HEAD = ["case", "size", "class", "base", "new", "change", "95% CI", "z", "floor", "verdict"]


def summary(rows: list[Comparison], n_base: int, n_new: int, noise: Noise | None = None, notes: Sequence[str] = ()) -> str:
    said = [can_see(rows), _ONE_AGAINST_ONE if n_base == n_new == 1 and noise is None else None, _not_gated(rows),
            _set_aside(rows), _moved(rows, n_base), _environment(rows)]
    return "\n".join([_counts(rows, n_base, n_new, noise), *[line for line in said if line], *notes])


def _counts(rows: list[Comparison], n_base: int, n_new: int, noise: Noise | None) -> str:
    count = Counter(r.verdict for r in rows)
    within = count[SLOWER_WITHIN] + count[FASTER_WITHIN]
    z_bound = noise.z_bound if noise is not None else Z_BOUND
    spread = "calibration file" if noise is not None else ("the base runs" if n_base >= 3 else "class defaults")
    return (f"{sum(r.regression for r in rows)} regression(s), {count[IMPROVEMENT]} improvement(s), "
            + (f"{count[NOT_GATED]} {NOT_GATED}, " if count[NOT_GATED] else "")
            + (f"{within} change(s) within the floor, " if within else "") + f"{count[CANT_TELL]} {CANT_TELL}, "
            + (f"{count[NOT_COMPARED]} {NOT_COMPARED}, " if count[NOT_COMPARED] else "") + f"in {len(rows)} "
            f"case(s): {n_base} base run(s) against {n_new} new run(s); flagged when |robust z| > {z_bound:g} and "
            f"beyond the case's floor, slower or faster \"within the floor\" when past the z bound only, unchanged "
            f"when neither and the 95% interval lies within the floor (between-run spread from {spread}); base and new: "
            "a bandwidth-bound case's median round, a latency-bound case's fastest.")


#: Said when one run is compared with one run and no calibration.
_ONE_AGAINST_ONE = ("One run against one run cannot tell a change from between-run drift: the spread assumed is a "
                    "class default. Compare folders of several runs, or calibrate this machine (xferbench calibrate).")


#: Cases named in a summary line at most (the table has every row; a PR comment may be cut before it).
_MOST_NAMED = 10


def _named(items: Sequence[str]) -> str:
    return ", ".join(items[:_MOST_NAMED]) + (f" and {len(items) - _MOST_NAMED} more" if len(items) > _MOST_NAMED else "")


def _not_gated(rows: Sequence[Comparison]) -> str | None:
    """The cases no floor holds for, each with why: never "unchanged", and compare fails on them unless allowed."""
    found = [f"{r.path} {format_bytes(r.nbytes)} ({r.not_gated_why})" for r in rows if r.verdict == NOT_GATED]
    if not found:
        return None
    bounds = " and ".join(f"{1 + bound:g}x {cls}-bound" for cls, bound in STORE_BOUND.items())
    return (f"Not gated, {len(found)} case(s) (their runs support no floor; a store may widen one to {bounds} at "
            f"most): {_named(found)}. compare fails on them unless --allow-not-gated; xferbench ab --only judges "
            "them side by side with the base.")


def _set_aside(rows: Sequence[Comparison]) -> str | None:
    """The base runs set aside for disagreeing with the others, each with the cases it was set aside in."""
    if not (count := Counter(name for r in rows for name in r.aside)):
        return None
    runs = [f"{name} ({cases} case(s))" for name, cases in count.most_common()]
    return (f"Set aside, {len(runs)} base run(s) that disagree with the others by more than the case's floor and "
            f"{Z_BOUND:g} robust spreads: {_named(runs)}.")


def _moved(rows: Sequence[Comparison], n_base: int) -> str | None:
    if not (moved := [r for r in rows if r.before_step]):
        return None
    return (f"Baseline moved for {len(moved)} case(s): a lasting step the gate itself flags left out the base runs "
            f"before it (up to {max(r.before_step for r in moved)} of {n_base}); each such row says so.")


def _environment(rows: Sequence[Comparison]) -> str | None:
    if not (environment := next((r.environment for r in rows if r.environment), ())):
        return None
    return ("Environment changed: " + ", ".join(environment) + " (same hardware): every verdict carries it, and a "
            "change found may be the upgrade's.")


def can_see(rows: Sequence[Comparison]) -> str | None:
    """What the gate can see on this runner with these runs: per case class, the smallest slowdown its cases could
    flag (each past its floor and its z bound: ``Comparison.smallest``), and how many could flag none. A smaller
    change is not flagged, whatever its verdict: said beside the table, so that a pass is not read as more."""
    parts = []
    for cls in ("latency", "bandwidth"):
        seen = [r.smallest for r in rows if r.case_class == cls and r.ratio is not None and r.smallest is not None]
        finite = sorted(v for v in seen if math.isfinite(v))
        if not seen:
            continue
        blind = len(seen) - len(finite)
        said = [f"{_times(1 + finite[0])} at best, {_times(1 + finite[len(finite) // 2])} for half of them"
                if len(finite) > 1 else _times(1 + finite[0])] if finite else []
        said += [f"{blind} {NOT_GATED}"] if blind else []
        parts.append(f"{cls}-bound, {len(seen)} case(s): " + "; ".join(said))
    if not parts:
        return None
    return ("What these runs can flag here (the smallest slowdown past each case's floor and z bound): "
            + "; ".join(parts) + ". A smaller slowdown is not flagged.")


def _inert(rows: Sequence[Comparison], clean: Callable[[object], str]) -> list[Comparison]:
    """The rows with what a run file wrote (the case's path, the software's versions) passed through ``clean``."""
    return [replace(r, path=clean(r.path), environment=tuple(map(clean, r.environment)),
                    why=None if r.why is None else clean(r.why), aside=tuple(map(clean, r.aside))) for r in rows]


def to_text(rows: list[Comparison], n_base: int, n_new: int, noise: Noise | None = None, notes: Sequence[str] = ()) -> str:
    rows, notes = _inert(rows, escape.terminal), [escape.terminal(n) for n in notes]
    return "\n".join([*text_table([_HEAD, *map(_cells, rows)]), "", summary(rows, n_base, n_new, noise, notes)])


def text_table(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows of cells (the head first) as the terminal shows them: in columns two spaces apart."""
    widths = [max(map(len, column)) for column in zip(*rows, strict=True)]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def markdown_table(head: Sequence[str], rows: Sequence[Sequence[str]], icons: Sequence[str]) -> list[str]:
    """A Markdown table (the PR comment's), each cell inert text (escape.markdown), each row's icon before its last cell."""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for cells, icon in zip(rows, icons, strict=True):
        escaped = [escape.markdown(c) for c in cells]
        escaped[-1] = f"{icon} {escaped[-1]}".strip()
        lines.append("| " + " | ".join(escaped) + " |")
    return lines


def to_markdown(rows: list[Comparison], n_base: int, n_new: int, noise: Noise | None = None,
                differences: list[str] | None = None, notes: Sequence[str] = ()) -> str:
    said = summary(_inert(rows, escape.markdown), n_base, n_new, noise, [escape.markdown(n) for n in notes])
    lines = ["### xferbench comparison", "", said, ""]
    if differences:
        lines += ["Compared across machines: " + "; ".join(map(escape.markdown, differences)), ""]
    lines += markdown_table(_HEAD, [_cells(r) for r in rows], [verdict_of(r.verdict).icon for r in rows])
    return "\n".join(lines) + "\n"


def strict(value: Any) -> Any:
    """A value for strict JSON: a float that is not finite (inf, NaN: ``JSON.parse`` refuses them) is null."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


def to_json(rows: list[Comparison], n_base: int, n_new: int, noise: Noise | None = None, notes: Sequence[str] = ()) -> str:
    payload = {"z_bound": noise.z_bound if noise is not None else Z_BOUND, "base_runs": n_base, "new_runs": n_new,
               "regressions": sum(r.regression for r in rows), "not_gated": sum(r.verdict == NOT_GATED for r in rows),
               "environment_changed": list(next((r.environment for r in rows if r.environment), ())), "notes": list(notes),
               "cases": [{k: strict(v) for k, v in asdict(r).items()} | {"change": r.change, "shown": r.shown_verdict}
                         for r in rows]}
    return json.dumps(payload, indent=1, allow_nan=False)

"""The first screen: what to change in one's code on this machine, ranked by the time it saves in this run, and the
table of moves at the largest common size.

A change is families/core.py's ``CHANGES`` or a scenario's (``Family.changes``): the call users make and the one to
make instead, each a row of one run at one size (the largest common size where both ran, else the largest they
share), judged by their ratio (``RunView.ratio``: paired blocks where measured so). A change the run cannot resolve, or
that does not save, is not listed; its condition says who gets the gain and who pays what it needs. No torch here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from ...families import FAMILIES
from ...families.base import ChangeSpec, size_of
from ...families.base import ms as _ms
from ...families.base import span as _span
from ...families.core import CHANGES
from ...ratios import Ratio
from ...units import format_bytes, format_seconds
from ..view import USUAL_WAY_BACK, RunView, matching
from .drift_text import one_after_other
from .ladder_text import took_at
from .svg import ON_TICKS, bytes_said

__all__ = ["MOST", "Change", "at_a_glance", "first_screen"]

#: At most this many changes on the first screen.
MOST = 3


@dataclass(frozen=True, eq=False)
class Change:
    """A change priced by the run: the rows before and after, their ratio, and its condition in words."""

    spec: ChangeSpec
    now: pd.Series
    then: pd.Series
    ratio: Ratio
    condition: str

    @property
    def simulated(self) -> bool:
        """Whether either side is the simulated machine's cost model, not a measurement (the page says so beside it)."""
        return "simulated" in (self.now.get("clock"), self.then.get("clock"))

    @property
    def saved_s(self) -> float:
        return float(self.now["median_s"] - self.then["median_s"])

    def text(self) -> str:
        """``saves 176 ms a call (181 ms → 4.94 ms at 256 MiB: 36.7× (28-57.2) faster)``; where the run orders its
        rounds but no interval sizes the saving, that order (the busy run's clone against copy_: ``Ratio.order``)."""
        if not self.ratio.resolved:
            return (f"saves time ({_medians(self.now, self.then)}{_faults(self.now, self.then)}): "
                    + self.ratio.order("of the code before", "of the code after") + self.ratio.text())
        # a paired ratio is the block ratios' mean, not the two medians' quotient: said so, lest a reader divide them
        how = f"{self.ratio.text()} faster block by block" if self.ratio.paired else f"{self.ratio.text()} faster"
        return f"saves {format_seconds(self.saved_s)} a call ({_medians(self.now, self.then)}: {how})"


def _pair(view: RunView, spec: ChangeSpec) -> tuple[pd.Series, pd.Series] | None:
    """The rows before and after, of one run and size: the largest common size where both ran, else their largest."""
    keys = ["nbytes", "run", "dst", "src"]
    now, then = (matching(view.rows, spec.now).dropna(subset=keys), matching(view.rows, spec.then).dropna(subset=keys))
    pairs = now[keys].rename_axis("now").reset_index().merge(
        then[[*keys, "median_s"]].rename_axis("then").reset_index(), on=keys)  # keeps now's order, then then's
    if pairs.empty:
        return None
    best = pairs.assign(largest=pairs["nbytes"] == view.largest_size).sort_values(
        ["largest", "nbytes", "median_s"], ascending=[False, False, True]).iloc[0]  # lexsort: stable on ties
    return now.loc[best["now"]], then.loc[best["then"]]


def _cost_of(view: RunView, op: str, variant: str, at: pd.Series) -> pd.Series | None:
    rows = matching(view.rows, {"op": op, "variant": variant, "nbytes": at["nbytes"], "run": at["run"]})
    return rows.iloc[0] if not rows.empty else None


def _condition(view: RunView, spec: ChangeSpec, now: pd.Series, then: pd.Series, pinning: list[dict[str, Any]]) -> str:
    """The change's condition (``_price``), and where the call after it took under 2x as long as at a size with 1/16
    of its bytes, how little of its time its bytes set (``RunView.waited``: the loaded run's copy_, 20 ms at 1 MiB
    and at 64 MiB)."""
    return _price(view, spec, now, then, pinning) + ("" if (waited := view.waited(then)) is None else (
        f"; after the change the call took {format_seconds(float(then['median_s']))}, and "
        f"{took_at(waited.small, then)}: {bytes_said(waited)} in this run"))


def _price(view: RunView, spec: ChangeSpec, now: pd.Series, then: pd.Series, pinning: list[dict[str, Any]]) -> str:
    """The change's condition, with what the run measured of the price of breaking it (``pinning``: the break-even
    rows, ``break_even.pinning_break_even``)."""
    size = format_bytes(int(now["nbytes"]))
    if spec.key == "pinned-buffer" and (pin := _cost_of(view, "pin_memory", "pin_cold", now)) is not None:
        # pin_cached is pin_memory() from the pinned cache with its copy in: no price of a recycled empty buffer; a cold
        # pin_memory() page-locks fresh memory and copies into it, so it bounds what a fresh pinned buffer costs
        return (f"{spec.condition}; kept results need a fresh pinned buffer each, at most a cold pin_memory() "
                f"({format_seconds(float(pin['median_s']))} at {size}){_kept(view, now, then, pin)}")
    if spec.key == "non-blocking-to":
        kept, freed = (_cost_of(view, "d2h_kept", v, now) for v in ("kept", "freed"))
        if kept is not None and freed is not None:
            return (f"{spec.condition}; a caller who keeps every result pays a fresh pinned allocation each call: "
                    f"{format_seconds(float(kept['median_s']))} a call kept against "
                    f"{format_seconds(float(freed['median_s']))} dropped at {size} (d2h_kept, first pass)")
        return f"{spec.condition}; a caller who keeps every result pays a fresh pinned allocation each call"
    cpu = _cost_of(view, "placement", "convert_on_cpu", now) if spec.key == "convert-on-gpu" else None
    if cpu is not None and cpu.get("clock") == now.get("clock"):  # a simulated move beside a real conversion: neither
        return f"{spec.condition}; the GPU converts ({format_seconds(float(cpu['median_s']))} on the CPU)"
    if spec.key == "pinned-source":
        row = next((r for r in pinning if r["size"] == int(now["nbytes"]) and r["copies"]), None)
        if row is not None:  # the break-even table's own verdict: one break-even per size on the page
            return (f"{spec.condition}: pinning costs {format_seconds(row['pin_s'])} at {size} and pays "
                    f"{row['pays']} ({row['between'] + '; ' if row['between'] else ''}break-even table){row['where']}")
    return spec.condition


def _kept(view: RunView, now: pd.Series, then: pd.Series, pin: pd.Series) -> str:
    """Whether a caller who keeps each result still saves, paying up to a cold pin_memory() for each buffer and the copy
    after the change (at its median): the call before against the two, the pin's rounds giving the spread (the H200 at
    256 MiB: 181 ms against 134 + 4.94 ms, the call before 1.3× (1.01-1.68) as long, its width the run's drift), no saving
    where the two take longer beyond the interval (the simulated machine's 64 MiB: 6.73 against 12.9 + 1.23 ms); else that
    the run cannot say."""
    both = pin.copy()
    both["median_s"] = float(pin["median_s"]) + float(then["median_s"])
    ratio = view.ratio(now, both)
    said = f" (the call before: {ratio.text() if ratio.resolved else ratio.figures()} as long)"
    verdict = ("whether still a saving, this run cannot say" if not ratio.resolved else
               "still a saving" if ratio.value > 1 else "no longer a saving")
    return ": with the copy, " + verdict + said


def _medians(now: pd.Series, then: pd.Series) -> str:
    """``1.08 ms → 636 µs at 16 MiB``: the two medians a change's verdict is about, at the size in the scenario's own
    unit where it has one (``at 256 images``: ``families.base.size_of``)."""
    return f"{format_seconds(float(now['median_s']))} → {format_seconds(float(then['median_s']))} at {size_of(now)}"


def _faults(now: pd.Series, then: pd.Series) -> str:
    """``, 16,385 page faults a call against 0``: where both sides counted their page faults and the counts differ, a
    fact of the run beside a verdict its times cannot give (the busy run's fresh 64 MiB clone against copy_)."""
    counts = [f"{float(c):,.0f}" for row in (now, then) if pd.notna(c := row.get("minor_faults_per_call"))]
    return f", {counts[0]} page faults a call against {counts[1]}" if len(set(counts)) == 2 else ""


def _unlisted(ratio: Ratio, now: pd.Series, then: pd.Series) -> str:
    """A priced change the run does not list: slower here, or can't tell, with the order its interleaved rounds give
    where they give one (``Ratio.order``: the busy, loaded and quick runs' clone against copy_), else the order of its
    rounds measured one case after the other, which the run's drift could give too (cpu-sample's 16 MiB clone and
    copy_: quickest 896 µs against slowest 804 µs)."""
    if ratio.resolved:
        return f"slower here, {ratio.faster().text()} as long"
    gives = "" if ratio.apart is None else ("saves" if ratio.value > 1 else "costs") + " time: "
    sides = ("of the code before", "of the code after")  # not "before" alone: it reads as time, not code
    # interleaved, ``Ratio.order`` says it; else the order of rounds measured one case after the other
    return gives + ratio.order(*sides) + ratio.text() + one_after_other(now, then, sides)


def ranked(changes: list[Change]) -> list[Change]:
    """The changes a run sizes, most time saved first, then those it orders only (``Ratio.apart``): a saving no interval
    sizes ranks below every sized one, whatever its medians' difference."""
    return sorted(changes, key=lambda change: (not change.ratio.resolved, -change.saved_s))


def first_screen(view: RunView, pinning: list[dict[str, Any]]) -> tuple[list[Change], str | None, list[dict[str, str]]]:
    """The first screen's words: the changes the run prices and resolves, most time saved first, then those whose
    interleaved rounds order them but size no saving, at most ``MOST`` (``pinning``: the break-even rows a pinned
    source's condition cites); where it lists none, those it priced, each
    with its verdict (can't tell, or slower here), so that an empty list reads as the run's verdict, not as nothing
    measured (None where it priced none); and the box of moves (``at_a_glance``)."""
    specs = [*CHANGES, *(spec for family in FAMILIES.values() for spec in family.changes)]
    priced = [(spec, pair, view.ratio(*pair)) for spec in specs if (pair := _pair(view, spec)) is not None]
    changes = [Change(spec, *pair, ratio, _condition(view, spec, *pair, pinning)) for spec, pair, ratio in priced
               if (ratio.resolved or ratio.apart) and ratio.value > 1]
    listed = ranked(changes)[:MOST]
    said = [f"{spec.title} ({_medians(*pair)}{_faults(*pair)}): " + _unlisted(ratio, *pair) for spec, pair, ratio in priced]
    unresolved = (f"No change listed (none with a saving this run can size): {'; '.join(said)}." if said and not listed else None)
    return listed, unresolved, at_a_glance(view)


def at_a_glance(view: RunView) -> list[dict[str, str]]:
    """This machine's figures at the largest common size, for the box at the top of the page: pinned and pageable
    device to host, .cpu() / .to(device), host to device, same-device. A line only for what the run measured; where
    the run cannot tell a kind's calls from its fastest, the line spans them all."""
    size, lines = view.largest_size, []  # no size: no rows at it (``at_largest``), so no line

    def add(label: str, rows: pd.DataFrame) -> None:
        if not rows.empty:
            # "–" where the bytes set none of the times (``RunView.waited``: the loaded run's 20 ms copy_ at 1 and 64 MiB)
            # or where one-call rounds waited for the CPU (the busy run's 64 MiB clone: 51.3 ms at fastest, 66.5 ms)
            waited = view.waited_for_cpu.loc[rows.index].all()
            gbps = "–" if waited or all(view.waited(row) for _, row in rows.iterrows()) else _span(rows["bandwidth_gbps"])
            lines.append({"what": label, "time": _ms(rows["median_s"]) + (ON_TICKS if waited else ""), "gbps": gbps})

    def fastest(label: str, rows: pd.DataFrame) -> None:  # and how many calls the run cannot tell from the fastest
        tied = view.tied_fastest(rows)
        which = f"{len(tied)} calls" if len(tied) == len(rows) else f"{len(tied)} of {len(rows)} calls"
        same = len(tied) > 1 and all(view.ratio(row, tied.iloc[0]).same for _, row in tied.iterrows())
        which = "fastest call" if len(tied) < 2 else which + (": the same time" if same else "; fastest: can't tell")
        add(f"{label} ({which})", tied)

    down = matching(view.at_largest, {"op": "d2h"})
    fastest("device to host, pinned", down[down["host_memory"] == "pinned"])
    add("device to host, copy_ into an existing pageable buffer", down[(down["host_memory"] == "pageable")
                                                                        & (down["method"] == "copy_")])
    add(".cpu() / .to(device) (new tensor each call)", down[down["method"].isin(USUAL_WAY_BACK)
                                                                    & ~down["non_blocking"].astype(bool)])
    add(".to(torch.device('cpu'), non_blocking=True) (the one-line fix)",
        down[down["method"].isin(USUAL_WAY_BACK) & down["non_blocking"].astype(bool)])
    up = matching(view.at_largest, {"op": "h2d"})
    for memory in ("pinned", "pageable"):
        fastest(f"host to device, {memory}", up[up["host_memory"] == memory])
    fastest("same-device copy", matching(view.at_largest, {"op": "d2d"}))
    if not lines:  # a CPU-only run: its moves are the host's, a fresh destination against a reused one
        # torch's default threads: one thread's copy_ is the roof, not a move
        host = matching(view.at_largest, {"op": "host"})
        add("host clone (new tensor every call)", host[host["method"] == "clone"])
        add("host copy_ into an existing buffer", host[(host["method"] == "copy_") & host["variant"].ne("single_thread")])
    return [line | {"size": format_bytes(size)} for line in lines] if size is not None else []

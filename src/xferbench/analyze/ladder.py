"""A cost explained by the run's own controls: a ladder of cases, each differing from the next in one factor.

The call users make is the top rung; each rung below removes one factor (a fresh destination, the driver's
staging copy, launch and synchronization), and the bottom rung is what is left (the DMA's own device time, or a
host copy into a touched buffer). Each step is the difference of two medians of the same run at the same size,
with an interval of its share of the call read from the rungs' ratios; the steps and the bottom rung add up to the
top rung by construction. Each step is judged by its two rungs' ratio (xferbench.ratios, through the view: paired blocks where
both rungs were measured so, else their rounds and the run's drift in their regime): a step the ratio does not tell
from 1 is "can't tell", never a share. The ladders, each rung and factor named, are families/core.py's ``LADDERS``; a
ladder in words is report/ladder_text.py. No torch here (docs/design.md section 6).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pandas as pd

from ..families.base import LadderSpec, RungSpec
from ..families.core import FRESH, LADDERS
from ..ratios import Ratio
from ..units import percent_span
from .load.results import VALID_DEVICE_METHODS
from .load.rows import matching
from .model import Wait

__all__ = ["Ladder", "Rung", "Step", "ladders"]


@dataclass(frozen=True, eq=False)
class Rung:
    """One case of the ladder: its call, the row it was read from, and its median (or the copy's device time)."""

    label: str
    row: pd.Series
    median_s: float
    #: The device's own time of the copy (one figure per case, no rounds) rather than the row's median.
    device_time: bool = False

    @property
    def path(self) -> str:
        return str(self.row["path"])

    @property
    def rounds(self) -> int:
        return int(self.row.get("device_repeats") or 1) if self.device_time else int(self.row["rounds"])

    @property
    def case(self) -> str:
        return f"{self.path} (device time)" if self.device_time else self.path


@dataclass(frozen=True)
class Step:
    """What removing one factor saved: the rung above minus the rung below, judged by the two rungs' ratio with its
    interval (``Ladder.share_bounds`` reads the step's share of the call from it)."""

    factor: str
    above: Rung
    below: Rung
    ratio: Ratio

    @property
    def seconds(self) -> float:
        return self.above.median_s - self.below.median_s

    @property
    def told(self) -> bool:
        """Whether the run tells this step from zero: the two rungs' ratio is resolved."""
        return self.ratio.resolved


@dataclass(frozen=True)
class Split:
    """A step split further by what the run recorded: faults per call and what each cost."""

    faults_per_call: float
    us_per_fault: float


@dataclass(frozen=True)
class Ladder:
    """A call's cost read down its rungs at one size of one run; ``steps[i]`` joins ``rungs[i]`` and ``rungs[i+1]``."""

    key: str
    title: str
    run: str
    size: int
    rungs: tuple[Rung, ...]
    steps: tuple[Step, ...]
    bottom: str
    split: Split | None = None
    #: The call over what is left, with its interval (None: not judged, as in a ladder built by hand).
    whole: Ratio | None = None
    #: Where the bytes set little of what is left (``RunView.waited``: the loaded run's copy_, 20 ms at 1 and 64 MiB):
    #: the smaller size that took as long; its table, caption and figure say so. None where they set it.
    waited: Wait | None = None

    @property
    def top(self) -> Rung:
        return self.rungs[0]

    @property
    def base(self) -> Rung:
        return self.rungs[-1]

    @property
    def left_share(self) -> float | None:
        """What is left's share of the call, or None where the run cannot tell the call from it (the CPU sample's
        clone, whose one step can't tell: its copy_ is no 59% of it)."""
        return self.base.median_s / self.top.median_s if self.whole is None or self.whole.resolved else None

    def share(self, step: Step) -> float | None:
        """The step's share of the call, or None where the run cannot tell it from zero."""
        return step.seconds / self.top.median_s if step.told else None

    def share_bounds(self, step: Step) -> tuple[float, float]:
        """The interval of the step's share of the call, read from its own comparison alone: 1 - 1/r of the rung above
        over the ends of its two rungs' ratio's interval, in shares of the call (times the rung above's share of it).
        The H200's 1 GiB clone, 4.09× (3.18-5.28) its copy_ into a touched buffer, is 76% (69-81%) fresh destination:
        no bound passes the rung above, as one over the rung below could (66.6-131 ms of a 125 ms call)."""
        above = step.above.median_s / self.top.median_s
        return above * (1 - 1 / step.ratio.low), above * (1 - 1 / step.ratio.high)

    def parts(self) -> list[tuple[str, float, str, bool]]:
        """(factor, seconds, its share's interval (``percent_span``, none where told alike), told) for every step and
        the bottom rung: they add up to the call."""
        rows = [(s.factor, s.seconds, percent_span(*self.share_bounds(s), alike="") if s.told else "", s.told)
                for s in self.steps]
        return [*rows, (self.bottom, self.base.median_s, "", True)]


def _device_rows(frame: pd.DataFrame, match: Mapping[str, object]) -> pd.DataFrame:
    """Rows whose device time is the copy's own: a recorded method, else a non-blocking copy timed by events
    (results.device_time_valid); a blocking copy's own figure is preferred where it is valid."""
    rows = matching(frame, match)
    seconds = pd.to_numeric(rows["device_seconds"], errors="coerce")
    method = rows["device_time_method"] if "device_time_method" in rows else pd.Series(None, index=rows.index)
    valid = seconds.gt(0) & (method.isin(VALID_DEVICE_METHODS) | rows["non_blocking"].astype(bool))
    rows = rows[valid]
    return rows.sort_values("non_blocking", kind="stable")


def _rung(spec: RungSpec, frame: pd.DataFrame) -> Rung | None:
    rows = _device_rows(frame, spec.match) if spec.device_time else matching(frame, spec.match)
    if rows.empty:
        return None
    row = rows.iloc[0]
    return Rung(spec.label, row, float(row["device_seconds" if spec.device_time else "median_s"]), spec.device_time)


#: Judges two rungs: the upper's time over the lower's, with its interval (the view's, analyze/view.py).
Judge = Callable[[Rung, Rung], Ratio]


def _split(top: pd.Series, below: pd.Series, step: Step) -> Split | None:
    """Faults per call beyond the touched buffer's, and the step's time over them, where both rows record faults."""
    faults = pd.to_numeric(pd.Series([top.get("minor_faults_per_call"), below.get("minor_faults_per_call")]), errors="coerce")
    if faults.isna().any() or faults.iloc[0] <= faults.iloc[1] or not step.told:
        return None
    extra = float(faults.iloc[0] - faults.iloc[1])
    return Split(extra, step.seconds / extra * 1e6)


def _at_size(spec: LadderSpec, rows: pd.DataFrame, run: str, size: int, judge: Judge) -> Ladder | None:
    at = rows[rows["nbytes"] == size]
    rungs = [_rung(r, at) for r in spec.rungs]
    if any(r is None for r in rungs):
        return None
    found = tuple(r for r in rungs if r is not None)
    steps = tuple(Step(s.factor, a, b, judge(a, b)) for s, a, b in zip(spec.rungs[1:], found, found[1:], strict=False))
    split = None
    if spec.rungs[1].factor == FRESH:
        split = _split(matching(at, spec.rungs[0].match).iloc[0], matching(at, spec.rungs[1].match).iloc[0], steps[0])
    return Ladder(spec.key, spec.title, run, size, found, steps, spec.bottom, split, judge(found[0], found[-1]))


def _ladder(spec: LadderSpec, frame: pd.DataFrame, judge: Judge) -> Ladder | None:
    """The ladder at the largest size where every rung was measured in one run (rows of two runs are never mixed:
    they may come from two instances of the machine), a size whose top rung was measured in paired blocks first."""
    top = matching(frame, spec.rungs[0].match)
    paired = top["block_medians"].map(lambda b: isinstance(b, list)) if "block_medians" in top else top["nbytes"] < 0
    candidates = sorted(((bool(p), int(size), str(run)) for p, size, run in zip(paired, top["nbytes"], top["run"],
                                                                                 strict=True)), reverse=True)
    return next((found for _, size, run in candidates
                 if (found := _at_size(spec, frame[frame["run"] == run], run, size, judge)) is not None), None)


def ladders(frame: pd.DataFrame, judge: Judge) -> list[Ladder]:
    """Every ladder of ``LADDERS`` the run measured all rungs of, each at its largest such size (paired sizes first),
    each step judged by ``judge``."""
    return [found for spec in LADDERS if (found := _ladder(spec, frame, judge)) is not None]

"""What a benchmark family is: its record (``Family``, a core family's calls as ``Variant``), the registry
every stage reads (``FAMILIES``, filled in report order by ``xferbench.families``), and what the families'
findings share (``span``, ``ms``, ``of_variant``, ``ratios``).

In the spirit of nvbandwidth's list of test cases: each family says what it times, what it needs from the
machine, whether it moves a payload and over which link, and how the report shows it (order, colour, prose).
Plain data: no torch, nothing from either side (import-linter checks it), so the analysis side reads it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..units import format_bytes, format_number, format_seconds, format_span

if TYPE_CHECKING:
    import pandas as pd

    from ..ratios import Ratio

__all__ = [
    "FAMILIES",
    "KINDS",
    "ChangeSpec",
    "Family",
    "Judge",
    "LadderSpec",
    "RungSpec",
    "Variant",
    "by_op",
    "family",
    "fitted_ops",
    "judge_of",
    "moving_ops",
    "ms",
    "of_variant",
    "ops",
    "order_of",
    "ratios",
    "span",
]


@dataclass(frozen=True)
class Variant:
    """One way a core family's payload is moved: the call, the host memory, blocking or not.

    ``cuda_only`` variants (``.cuda(i)``) exist only where the accelerator is CUDA (or ROCm).
    ``variant`` names a second way of running the same call (``single_thread``: with torch's
    intra-op threads set to one); it is part of the identity.
    """

    method: str
    host_memory: str | None = None
    non_blocking: bool = False
    cuda_only: bool = False
    variant: str | None = None


#: Where a core family's cases run: each device; the host alone; host and each accelerator
#: (either direction); each accelerator alone; every ordered pair of accelerators.
ENDPOINTS = ("each", "host", "host->accelerator", "accelerator->host", "accelerator", "accelerator->accelerator")


#: The kinds of family: the case matrix; a scenario and copies at once, copy paths and NUMA
#: (a folder each in families/); collectives between processes (measure/distributed).
KINDS = ("core", "scenario", "concurrent", "distributed")
#: The points of the report's "why" list (GPU-to-CPU moves cost more than their bytes): waiting for queued work, the
#: driver's staging, fixed costs, the fix.
WHY_POINTS = ("wait", "staged", "fixed", "fix")


@dataclass(frozen=True)
class Family:
    """One benchmark family."""

    op: str
    title: str
    times: str  # one sentence: what is timed
    kind: str  # "core" (the case matrix), "scenario", "concurrent" (copies at once) or "distributed"
    colour: str  # matplotlib colour of its lines and bars
    moves_payload: bool = True  # bandwidth = bytes / time means something; fitted with t = α + n/β
    link: str | None = None  # what bounds it: "pcie", "nvlink", "device memory", "host memory", "network"
    endpoints: str = "each"  # core families: see ENDPOINTS
    variants: tuple[Variant, ...] = ()  # core families: the calls timed
    sizes: str = "sweep"  # core families: "sweep", "ends" (smallest and largest only: a no-op), or "none"
    # (no size axis: one case per endpoint and variant, nbytes 0, no size in its id: a synchronize)
    caption: str = ""  # the report's prose for its section or plot
    # A scenario or concurrent family's sentences from its rows (the ``finding`` of its folder), or None
    finding: Callable[[Any], list[str]] | None = None
    break_even: bool = False  # its report section carries the pinning break-even table (pin_cold against pinned_to)
    # Its calls that run the same PyTorch code, (column, values, the calls in words): their pairs measure the run's
    # drift (analyze/drift.py), and the report judges each pair by its own interval
    same_code: tuple[tuple[str, tuple[str, ...], str], ...] = ()
    # Its methods that stage through a pageable host buffer though their source is pinned: judged by the pageable
    # regime's drift (analyze/drift.py)
    staged: tuple[str, ...] = ()
    # The point of the report's "why" list its rows measure (one of WHY_POINTS) and the sentence that says what this
    # run measured of it, from the family's rows and how many runs the page reads
    why: tuple[str, Callable[[Any, int], str | None]] | None = None
    # The changes to a user's code its rows price, for the first screen (analyze/report/changes.py ranks them)
    changes: tuple[ChangeSpec, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"family {self.op!r}: kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.kind == "core" and (self.endpoints not in ENDPOINTS or not self.variants):
            raise ValueError(f"family {self.op!r}: a core family needs endpoints (one of {', '.join(ENDPOINTS)}) "
                             "and at least one variant")
        if self.why is not None and self.why[0] not in WHY_POINTS:
            raise ValueError(f"family {self.op!r}: why names one of {', '.join(WHY_POINTS)}, got {self.why[0]!r}")
        if self.sizes not in ("sweep", "ends", "none"):
            raise ValueError(f"family {self.op!r}: sizes must be sweep, ends or none, got {self.sizes!r}")


@dataclass(frozen=True)
class RungSpec:
    """How to find a rung among the rows: column values to match, and whether it is the row's device time."""

    label: str
    match: Mapping[str, object]
    factor: str  # what this rung removes from the one above (empty for the top rung)
    device_time: bool = False


@dataclass(frozen=True)
class LadderSpec:
    """A ladder of controls: its rungs top (the call users make) to bottom, each named with the factor it removes,
    and what is left below the last (analyze/ladder.py reads it from the rows)."""

    key: str
    title: str
    rungs: tuple[RungSpec, ...]
    bottom: str


@dataclass(frozen=True)
class ChangeSpec:
    """A change to a user's code the run can price: the call before and after (one line each), the rows that time
    each (column values to match), and when it holds (analyze/report/changes.py measures its gain)."""

    key: str
    title: str
    before: str
    after: str
    now: Mapping[str, object]
    then: Mapping[str, object]
    condition: str


def by_op(records: Iterable[Family]) -> dict[str, Family]:
    """The records keyed by op; two records of one op (a scenario named like a collective) are refused."""
    table: dict[str, Family] = {}
    for record in records:
        if record.op in table:
            raise ValueError(f"two families are named {record.op!r}")
        table[record.op] = record
    return table


#: Every family, in report order: filled once by ``xferbench.families`` (its one list).
FAMILIES: dict[str, Family] = {}


def family(op: str) -> Family:
    """The family of ``op``; KeyError names the ops that exist."""
    try:
        return FAMILIES[op]
    except KeyError:
        raise KeyError(f"unknown op {op!r}; the families are: {', '.join(FAMILIES)}") from None


def ops(kind: str | None = None) -> tuple[str, ...]:
    """The ops of every family of ``kind`` (all when None), in report order."""
    return tuple(op for op, f in FAMILIES.items() if kind is None or f.kind == kind)


def moving_ops(kinds: Iterable[str] = ("core",)) -> tuple[str, ...]:
    """Core families whose time is a payload moving (drawn as bandwidth, in the matrix)."""
    return tuple(op for op, f in FAMILIES.items() if f.kind in kinds and f.moves_payload)


def fitted_ops() -> tuple[str, ...]:
    """Families fitted with t = α + n/β: payload moves of the core and distributed kinds."""
    return moving_ops(("core", "distributed"))


def order_of(op: object) -> int:
    """Position of ``op`` in report order; unknown ops go last."""
    return list(FAMILIES).index(op) if op in FAMILIES else len(FAMILIES)


# --- what the families' findings share (each takes its family's rows of ``analyze.results``) ---------------

def span(values: pd.Series, digits: str = ".3g") -> str:
    """``181-217`` (the lowest and the highest, the same format), or one figure when they round alike."""
    def text(value: float) -> str:  # 1,926, not 1.93e+03
        return format_number(value) if digits == ".3g" else f"{value:{digits}}"

    return format_span(text(values.min()), text(values.max()))  # figures with no unit: joined by "-"


def ms(seconds: pd.Series) -> str:
    """Times as one span in ms, µs or s, whichever the shortest reads best in."""
    unit, scale = next(((u, k) for u, k in (("s", 1.0), ("ms", 1e3), ("µs", 1e6)) if seconds.min() * k >= 1), ("ns", 1e9))
    return f"{span(seconds * scale)} {unit}"


def of_variant(rows: pd.DataFrame, variant: str) -> pd.DataFrame:
    """The rows of one variant."""
    return rows[rows["variant"] == variant]


#: Sets row a against row b of one run: a's time over b's, with its interval (xferbench.ratios.Ratio). The report
#: gives each family's ``finding`` its view's (``rows.attrs["ratio"]``, analyze/view.py's ``RunView.ratio``).
Judge = Callable[["pd.Series", "pd.Series"], "Ratio"]


class Rule:
    """The run's comparison rule as ``rows.attrs["ratio"]`` holds it: called as ``RunView.ratio`` is, and carried by
    reference, since pandas deep-copies a frame's attrs in every operation on it (a bound method of the view is the
    whole run: deep copies of it were 20 of the H200 page's 74 s under cProfile)."""

    def __init__(self, judge: Judge) -> None:
        self.judge = judge

    def __call__(self, a: pd.Series, b: pd.Series) -> Ratio:
        return self.judge(a, b)

    def __deepcopy__(self, memo: dict[int, Any]) -> Rule:
        return self


def judge_of(rows: pd.DataFrame) -> Judge:
    """The comparison rule the report set on ``rows``; a KeyError names it where it set none."""
    try:
        judge: Judge = rows.attrs["ratio"]
        return judge
    except KeyError:
        raise KeyError("a family's finding needs rows.attrs['ratio'] (RunView.ratio), the run's comparison rule") from None


def size_of(row: pd.Series) -> str:
    """A case's size in its family's own unit where it has one (``256 images``: what a user batches, not the bytes
    it comes to), else its bytes."""
    unit, shape = row.get("size_unit"), row.get("shape")
    return f"{shape} {unit}" if isinstance(unit, str) and unit != "bytes" and isinstance(shape, str) else \
        format_bytes(int(row["nbytes"]))


def ratios(rows: pd.DataFrame, slow: str, fast: str, what: str) -> list[str]:
    """``slow`` against ``fast`` at each size and device, the last two (the largest sizes), each with its interval
    (``judge_of``)."""
    out, judge = [], judge_of(rows)
    for (_, dst), group in rows.groupby(["nbytes", "dst"]):
        a, b = of_variant(group, slow), of_variant(group, fast)
        if not a.empty and not b.empty:
            r = judge(a.iloc[0], b.iloc[0])  # "can't tell (...)" as a clause of its own: no parenthesis in a parenthesis
            said = f"; which is faster, {r.text()}" if not (r.resolved or r.same) else f" ({r.text()})"
            out.append(f"{what} at {size_of(a.iloc[0])} on {dst}: {fast} took {format_seconds(b['median_s'].iloc[0])}, "
                       f"{slow} {format_seconds(a['median_s'].iloc[0])}{said}.")
    return out[-2:]

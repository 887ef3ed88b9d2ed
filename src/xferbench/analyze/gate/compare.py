"""Regression comparison of runs: significance on runs, a magnitude floor, and honesty about drift.

pytest-benchmark's ``--benchmark-compare-fail`` (and a Mann-Whitney test over one
run's rounds against another's) treats rounds as independent samples; they are not,
and on a shared machine two runs of the same code differ by more than their rounds
say, so such gates cry wolf. Here each run contributes one value per case (its
median round), base and new may each be several runs (a storage folder), and a case
is flagged only when the change is significant against the case's *between-run*
spread and larger than the case's floor (``noise.JUDGED``). Cases are matched on
their identity (op, method, devices, size, dtype, shape, memory), not on test names;
runs from different machines are refused unless allowed. What compare refuses to judge
(``REFUSALS``) and the verdict it gives a case (``VERDICTS``) are rules as small objects,
each in one ordered list: the first that fires decides.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np
import pandas as pd

from ...contract import (
    environment_differences,
    hardware_differences,
    hardware_identity,
    simulation_mismatch,
    software_changes,
    software_environment,
)
from ...families import FAMILIES
from ...output import OutputError, check_output
from ..load.blocks import waited_rows
from ..load.history import RunSummary, load_storage
from ..load.results import Results, ResultsError, bounded_read, busy_load, load
from ..load.rows import ticked
from ..peer_plan import RecordedPlan, difference, same_cases
from .bound import Baseline, step_bound, store_baseline
from .comparison import Comparison, markdown_table, strict, summary, text_table, to_json, to_markdown, to_text
from .noise import (
    DEFAULT_FLOOR,
    DEFAULT_SPREAD,
    JUDGED,
    Z_BOUND,
    Case,
    Noise,
    VerdictRule,
    current_segment,
    decide,
    run_tables,
    weigh,
)
from .verdicts import CANT_TELL, GONE, NEW, NOT_COMPARED, NOT_REPRODUCED, REGRESSION, rank

__all__ = ["OUTPUT_REFUSALS", "REFUSALS", "VERDICTS", "Comparison", "Outputs", "Matched", "Refusal", "Refused",
           "Sides", "admitted", "earlier_output", "busy", "busy_notes", "compare", "load_runs", "markdown_table",
           "parse_threshold", "plan_notes", "refusal", "reproduced", "strict", "summary", "text_table", "to_json",
           "to_markdown", "to_text"]

#: Newest runs of a storage folder used as the baseline (older ones may predate a step).
MAX_BASE_RUNS = 20


# -- What compare refuses to judge: rules as small objects, in one ordered list ---------------------------------
# The shape of pytest-benchmark's RegressionCheck (utils.parse_compare_fail): each rule is an object that looks at
# what is compared and says why it fails, or nothing. The first rule that fails decides; the command line prints it.


class Refused(ValueError):
    """Runs compare will not judge; the message is one line (the command line's exit 2)."""


@dataclass
class Sides:
    """What a comparison is asked to judge: the base and new runs, the calibration (``--noise``: read when a rule
    first needs it, so that a run the rules before refuse is refused before the file is read) and its file's
    name, and whether other hardware is allowed (``--allow-different-machines``). ``notes`` collects what a rule
    lets through but says (a calibration made under other software). ``names`` are the sides' names in what a
    rule says (ab's are base and head)."""

    base: list[Results]
    new: list[Results]
    read_noise: Callable[[], Noise | None] = lambda: None
    noise_source: str = "--noise"
    allow_different_machines: bool = False
    notes: list[str] = field(default_factory=list)
    names: tuple[str, str] = ("base", "new")

    @cached_property
    def noise(self) -> Noise | None:
        return self.read_noise()

    @property
    def machines(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The machine of each side: its newest run's."""
        return self.base[-1].machine_info, self.new[-1].machine_info


#: What a refusal looks at: compare's ``Sides``, the ``Outputs`` asked for, ab's blocks.
Asked = TypeVar("Asked", contravariant=True)
Of = TypeVar("Of")


class Refusal(Generic[Asked]):
    """One rule: ``fails`` returns why what is asked cannot be done, or None."""

    def fails(self, asked: Asked) -> str | None:
        raise NotImplementedError


def refusal(asked: Of, rules: Sequence[Refusal[Of]]) -> str | None:
    """The first of ``rules`` (in order) that fails for ``asked``: its message; None when none does."""
    return next((why for rule in rules if (why := rule.fails(asked))), None)


class SameClock(Refusal[Sides]):
    """Runs timed by different clocks (--benchmark-timer=time.process_time against the wall clock) differ by what the
    clocks count, not by the code: no verdict is drawn from them."""

    def fails(self, sides: Sides) -> str | None:
        ours, theirs = ({str(t) for run in runs for t in run.frame["timer"].dropna().unique()}
                        for runs in (sides.base, sides.new))
        if ours and theirs and ours != theirs:
            a, b = sides.names
            return (f"the runs were timed by different clocks ({a}: {', '.join(sorted(ours))}; {b}: "
                    f"{', '.join(sorted(theirs))}: --benchmark-timer); rerun one with the other's clock")
        return None


class SameSimulation(Refusal[Sides]):
    """A simulated run against a real one, or two simulated specs: whatever --allow-different-machines says."""

    def fails(self, sides: Sides) -> str | None:
        why = simulation_mismatch(*sides.machines)
        return why.replace("new run", f"{sides.names[1]} run") if why else None


class SameHardware(Refusal[Sides]):
    """Other hardware is another machine (other software on the same hardware is compared, and said)."""

    def fails(self, sides: Sides) -> str | None:
        if (differences := hardware_differences(*sides.machines)) and not sides.allow_different_machines:
            return ("the runs come from different machines (" + "; ".join(differences)
                    + "); pass --allow-different-machines to compare anyway")
        return None


class CalibratedHere(Refusal[Sides]):
    """A calibration (--noise) learned on other hardware is not this machine's noise; one learned under other software
    on the same hardware is used, and said."""

    def fails(self, sides: Sides) -> str | None:
        if sides.noise is None:
            return None
        machine = sides.noise.machine
        here = hardware_identity(sides.new[-1].machine_info)
        # Fields either side does not record (None, or added since) are not held against it.
        differ = [key for key, value in here.items()
                  if value is not None and machine.get(key) is not None and machine[key] != value]
        if differ and not sides.allow_different_machines:
            return (f"{sides.noise_source}: calibrated on another machine ({', '.join(differ)} differ); "
                    "run xferbench calibrate here")
        now = software_environment(sides.new[-1].machine_info)
        if upgraded := software_changes({key: machine.get(key) for key in now}, now):
            sides.notes.append(f"{sides.noise_source}: calibrated under other software ({', '.join(upgraded)}); used, "
                               "as the hardware is the same (calibrate again to learn the new software's noise)")
        return None


#: Compare's refusals, in the order they are checked: the first that fails is the one said.
REFUSALS: list[Refusal[Sides]] = [SameClock(), SameSimulation(), SameHardware(), CalibratedHere()]


def admitted(sides: Sides, rules: Sequence[Refusal[Sides]] = REFUSALS) -> list[str]:
    """Check ``sides`` against each rule in order: Refused with the first failure's message; else the hardware
    differences compared anyway (--allow-different-machines), to be said beside the verdicts."""
    if why := refusal(sides, rules):
        raise Refused(why)
    return hardware_differences(*sides.machines)


# -- What compare and ab refuse to write: the same shape, checked before any run is read or any block runs ---------


@dataclass(frozen=True)
class Outputs:
    """The files a command is asked to write beside its table (flag -> path: ``--markdown``, ``--json``), the inputs
    none may replace, and how each such file begins (``starts``, by flag): an existing file that begins otherwise
    (a run, someone's notes) is never replaced."""

    files: dict[str, Path]
    inputs: list[Path]
    starts: dict[str, str]


class Writable(Refusal[Outputs]):
    """An output that would destroy an input, land among the runs as one, or cannot be written (``check_output``)."""

    def fails(self, outputs: Outputs) -> str | None:
        for flag, path in outputs.files.items():
            try:
                check_output(path, outputs.inputs)
            except OutputError as error:
                return f"{flag} {error}"
        return None


class TwoFiles(Refusal[Outputs]):
    """--markdown and --json naming one file: one would replace the other."""

    def fails(self, outputs: Outputs) -> str | None:
        markdown, written = outputs.files.get("--markdown"), outputs.files.get("--json")
        if markdown and written and os.path.realpath(markdown) == os.path.realpath(written):
            return f"--markdown and --json name the same file ({written}); give two"
        return None


class OnlyOwn(Refusal[Outputs]):
    """An existing file is replaced only when it is an earlier output of its kind (``earlier_output``)."""

    def fails(self, outputs: Outputs) -> str | None:
        return next((why for flag, path in outputs.files.items()
                     if (why := earlier_output(path, outputs.starts[flag], flag))), None)


def earlier_output(path: Path, start: str, flag: str) -> str | None:
    """Why ``path`` may not be replaced: it exists and does not begin as this output does (a run, another tool's
    file), or cannot be read to tell; None when it is free or an earlier output."""
    if not (path.exists() or path.is_symlink()):
        return None
    try:
        head = bounded_read(path, len(start) + 8, whole=False).decode("utf-8", "replace")
    except (OSError, ResultsError) as error:
        return f"{flag} {path}: cannot read it ({error}); refusing to replace it"
    if not head.startswith(start):
        return (f"{flag} {path}: exists and is not an earlier output of xferbench {flag[2:]} "
                "(a run, or another file); it would be replaced. Choose another name")
    return None


#: The refusals of what compare and ab write, in the order they are checked: the first that fails is the one said.
OUTPUT_REFUSALS: list[Refusal[Outputs]] = [Writable(), TwoFiles(), OnlyOwn()]

#: How compare's written files begin.
STARTS = {"--json": '{\n "z_bound"', "--markdown": "### xferbench comparison"}


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


def load_runs(path: Path, last: int = MAX_BASE_RUNS, like: dict[str, Any] | None = None) -> tuple[list[Results], list[str]]:
    """A file as one run; a folder as its newest ``last`` runs of one machine's hardware.

    The machine is ``like``'s (the candidate's machine_info: a store shared by several runners
    holds the candidate's own history beside others') when the folder holds a run of it, else
    the newest run's. Runs of that hardware under other software are kept (an upgrade is a
    step of the same machine's history). Returns the runs (oldest first) and notes on what
    was left out.
    """
    if not path.is_dir():
        return [load([path])], []
    stored = load_storage(path)  # a damaged or foreign file is skipped with a note, never the whole folder
    runs, copies = _distinct(stored.summaries)  # chosen by their summaries: only the runs used are read in full
    mine = [r for r in runs if like is not None and not hardware_differences(r.machine_info, like)]
    reference = mine[-1] if mine else runs[-1]
    differences = [hardware_differences(r.machine_info, reference.machine_info) for r in runs]
    same = [r for r, differ in zip(runs, differences, strict=True) if not differ]
    differ = dict.fromkeys(d for found in differences for d in found)  # each difference once, in order
    notes = list(stored.notes)
    if copies:
        notes.append(f"{path}: {copies} copy(ies) of a run left out (the same time for every case: a file saved "
                     "twice counts once)")
    if len(same) < len(runs):
        against = "the machine of the new run" if mine else "the newest run"
        notes.append(f"{path}: {len(runs) - len(same)} run(s) from another machine left out "
                     f"(against {against}: {'; '.join(differ)})")
    if len(same) > last:
        notes.append(f"{path}: the newest {last} of {len(same)} runs used")
    return [stored.load(run) for run in same[-last:]], notes


def _distinct(runs: Sequence[RunSummary]) -> tuple[list[RunSummary], int]:
    """The runs without copies: two runs with the same time for every case are one run saved twice (byte for byte,
    or again with a new datetime); each copy would count as one more run for the verdict. The newest copy stays."""
    newest = {tuple(sorted(run.times.items())): i for i, run in enumerate(runs)}
    kept = sorted(newest.values())
    return [runs[i] for i in kept], len(runs) - len(kept)


def busy(run: Results) -> str | None:
    """``load 9.1 on 2 CPUs, 63% of CPU time taken by other processes`` when the run's machine was
    busier than its cores (``load.results.busy_load``), else None."""
    return busy_load(run.run)


def busy_notes(base: Sequence[Results], new: Sequence[Results]) -> list[str]:
    """One sentence per side that ran (in part) on a busy machine: such a side is not a baseline."""
    notes = []
    for side, runs in (("base", base), ("new", new)):
        if found := [b for b in map(busy, runs) if b]:
            of = f"{len(found)} of {len(runs)} {side} runs" if len(runs) > 1 else f"the {side} run"
            notes.append(f"Busy machine: {of} ran with more load than CPUs ({found[-1]}); a change that rests on "
                         "an assumed spread is \"can't tell\" there.")
    return notes


# -- What compare says of a case: verdict rules as small objects, in one ordered list ------------------------------
# The same shape as the refusals (and noise.JUDGED's, whose rules end the list): each rule is an object that says
# whether its verdict is the case's; the first that fires decides.


@dataclass(frozen=True)
class Matched(Case):
    """One case as compare sees it: its evidence where both sides ran it (else ``only``, the side that did), whether
    the sides planned their peer pairs differently and it is a peer case (``peers_differ``), whether a side ran on a
    busy machine (``crowded``), and where its between-run spread came from (``spread_from``), whose rounds waited for
    the CPU, on the scheduler's ticks or off them (``ticked``: "base", "new", "both"; "" where none's)."""

    only: str | None = None
    peers_differ: bool = False
    crowded: bool = False
    spread_from: str | None = None
    ticked: str = ""


class NotCompared(VerdictRule[Matched]):
    """A peer case one side alone measured because the sides planned their peer pairs differently: no change is
    known, and none is implied (whatever a missing case usually means)."""

    verdict = NOT_COMPARED

    def fires(self, case: Matched) -> bool:
        return case.only is not None and case.peers_differ

    def why(self, case: Matched) -> str | None:
        return f"measured on the {case.only} side only: the peer plans differ"


class OneSide(VerdictRule[Matched]):
    """A case only ``side`` measured: gone where the base side alone did, new where the new side did."""

    def __init__(self, verdict: str, side: str) -> None:
        self.verdict, self.side = verdict, side

    def fires(self, case: Matched) -> bool:
        return case.only == self.side

    def why(self, case: Matched) -> str | None:
        return "its rounds waited for the CPU" if case.ticked else None  # its time holds a wait (OnTicks)


class OnBusyMachine(VerdictRule[Matched]):
    """A flag that rests on an assumed spread (a class default) while a side ran on a busy machine: that side's times
    say more about its neighbours than about the code."""

    verdict = CANT_TELL

    def fires(self, case: Matched) -> bool:
        e = case.evidence
        return case.crowded and case.spread_from == "default" and e is not None and e.significant and e.beyond

    def why(self, case: Matched) -> str | None:
        return "a side ran on a busy machine"


class OnTicks(VerdictRule[Matched]):
    """A case whose rounds lay mostly on the scheduler's ticks in a run of either side (analyze/load/blocks.py): a wait
    for the CPU of a length no run measured is part of its time, so no change is judged (a busy runner's 1 MiB copy_
    took 12 ms on three 4 ms ticks, where its blocks of 100 calls a round took 14.7 µs a call)."""

    verdict = CANT_TELL

    def fires(self, case: Matched) -> bool:
        return bool(case.ticked) and case.evidence is not None

    def why(self, case: Matched) -> str | None:
        return f"{_WHOSE[case.ticked]} rounds waited for the CPU"


_WHOSE = {"base": "the base side's", "new": "the new side's", "both": "both sides'"}

#: compare's verdicts, in the order they are asked: the first that fires decides a case's.
VERDICTS: list[VerdictRule[Matched]] = [NotCompared(), OneSide(GONE, "base"), OneSide(NEW, "new"), OnTicks(), OnBusyMachine(),
                                         *JUDGED]


@dataclass(frozen=True)
class _Tables:
    """What every case of one comparison is judged from: each side's cases x runs tables (``run_tables``), the base
    runs' names and which ran on a busy machine, and the settings (a calibration, a ``--threshold``)."""

    base: tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]
    new: tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]
    names: np.ndarray
    busy: np.ndarray
    crowded: bool
    one_sided: set[str]
    ticked: tuple[set[str], set[str]]  # the base side's cases whose rounds waited (on the ticks or off), the new side's
    environment: tuple[str, ...]
    noise: Noise | None
    floor: float | None

    @classmethod
    def of(cls, base: Sequence[Results], new: Sequence[Results], noise: Noise | None, floor: float | None) -> _Tables:
        names = np.array([Path(r.sources[0]).name if r.sources else f"run {i + 1}" for i, r in enumerate(base)])
        busy = np.array([bool(busy_load(r.run)) for r in base])
        # on the ticks, or one call a round far past its fastest: the waits the pages mark (``RunView.waited_for_cpu``)
        on = tuple({str(key) for r in runs for key in r.frame.loc[ticked(r.frame) | waited_rows(r.frame), "case_key"]}
                   for runs in (base, new))
        return cls(run_tables(base), run_tables(new), names, busy, bool(busy.any() or any(busy_load(r.run) for r in new)),
                   _one_sided_peers(base, new), (on[0], on[1]), tuple(environment_differences(base[-1].machine_info,
                                                                              new[-1].machine_info)), noise, floor)

    def whose_ticks(self, key: str) -> str:
        """Whose rounds of ``key`` waited for the CPU, on the ticks or off them: "base", "new", "both", or ""."""
        base, new = (key in side for side in self.ticked)
        return "both" if base and new else "base" if base else "new" if new else ""

    @property
    def z_bound(self) -> float:
        return self.noise.z_bound if self.noise is not None else Z_BOUND

    def keys(self) -> list[str]:
        base, new = self.base[0].index, self.new[0].index
        if base.intersection(new).empty:
            raise ValueError("the runs have no case in common (compare matches op, devices, size, dtype, shape and method)")
        return [str(key) for key in base.union(new, sort=False)]

    def judge(self, key: str) -> Comparison:
        meta = self.new[1].loc[key] if key in self.new[1].index else self.base[1].loc[key]
        cls = str(meta["class"])
        present = self.base[0].loc[key].notna().to_numpy() if key in self.base[0].index else np.array([], dtype=bool)
        old = self.base[0].loc[key].to_numpy()[present] if key in self.base[0].index else np.array([])
        cur = self.new[0].loc[key].dropna().to_numpy() if key in self.new[0].index else np.array([])
        if old.size == 0 or cur.size == 0:  # one side alone: new, gone, or a peer case not compared (the plans differ)
            case = Matched(None, only="base" if cur.size == 0 else "new", peers_differ=key in self.one_sided,
                           ticked=self.whose_ticks(key))
            rule = decide(VERDICTS, case)
            return Comparison(str(meta["path"]), int(meta["nbytes"]), cls, float(np.exp(np.median(old))) if old.size else None,
                              float(np.exp(np.median(cur))) if cur.size else None, None, None, None, None, None, None, None,
                              rule.verdict, key=key, environment=self.environment, why=rule.why(case), name=str(meta["name"]))
        start, moved, b = self.baseline(key, cls, old, present)
        spread = self._own_rounds(key, meta, cur, b)
        e, could = weigh(b.kept, cur, spread, b.floor, self.z_bound)
        case = Matched(e, crowded=self.crowded, spread_from=b.source, ticked=self.whose_ticks(key))
        rule = decide(VERDICTS, case)
        # a wait for the CPU of no measured length: its rounds bound nothing (no interval, no z), as on the page
        low, high, z, smallest = (None,) * 4 if isinstance(rule, OnTicks) else (e.low, e.high, e.z, could)
        return Comparison(str(meta["path"]), int(meta["nbytes"]), cls, float(np.exp(np.median(b.kept))),
                          float(np.exp(np.median(cur))), e.ratio, low, high, z, b.floor, spread, b.source,
                          rule.verdict, smallest, key, self.environment, rule.why(case), before_step=start,
                          floor_from=b.floor_from, name=str(meta["name"]),
                          aside=tuple(str(n) for n in self.names[present][start:][b.aside]), swing=b.swing,
                          groups=b.groups, moved=moved, waited=case.ticked)

    def baseline(self, key: str, cls: str, old: np.ndarray, present: np.ndarray) -> tuple[int, float | None, Baseline]:
        """The case's current level (after its last lasting step that the gate itself would flag: an accepted step
        resets the baseline), how far that step moved it (new level over old), and the runs of that level as the
        store may claim them (``bound.store_baseline``); a ``--threshold`` is the user's word, never raised."""
        calibrated = self.noise is not None and key in self.noise.cases
        assumed = self.noise.spread(key, cls) if self.noise is not None and calibrated else DEFAULT_SPREAD[cls]
        floor = self.floor if self.floor is not None else (
            self.noise.floor(key, cls) if self.noise is not None else DEFAULT_FLOOR[cls])
        # Without a --threshold, a step is one the store's own spread cannot explain, whatever a calibration says:
        # that spread from run-to-run differences, as a lasting step moves only one of them
        step_spread, step_floor = (step_bound(np.diff(old) / math.sqrt(2), cls, assumed, floor) if self.floor is None
                                   else (assumed, floor))
        start = current_segment(old, step_spread, step_floor, self.z_bound, self.busy[present])
        moved = float(np.exp(np.median(old[start:]) - np.median(old[:start]))) if start else None
        floor_from = "threshold" if self.floor is not None else ("calibrated" if calibrated else "default")
        b = store_baseline(old[start:], cls, floor, floor_from, assumed if calibrated else None)
        if self.floor is not None:
            b = replace(b, floor=self.floor, floor_from=floor_from, swing=None, groups=None)
        return start, moved, b

    def _own_rounds(self, key: str, meta: pd.Series, cur: np.ndarray, b: Baseline) -> float:
        """With one run a side and nothing learned, a scenario or concurrent case's spread is at least its own
        rounds' spread on either side: its runs cannot be told apart more finely than that."""
        if b.source != "default" or len(cur) != 1 or not _scenario(meta["op"]):
            return b.spread
        own = [float(t.loc[key].dropna().max()) for t in (self.base[2], self.new[2]) if key in t.index]
        return max([b.spread, *[o for o in own if math.isfinite(o)]])


def compare(base: Sequence[Results], new: Sequence[Results], noise: Noise | None = None,
            floor: float | None = None) -> list[Comparison]:
    """Match cases by identity and judge each; ValueError when none are in common.

    ``floor`` overrides every case's floor; else the calibration's (the case's own, else its class's), else
    ``DEFAULT_FLOOR``, bounded by the stored runs (``bound.store_baseline``). An accepted lasting step resets
    the baseline (``noise.current_segment``); the row says how many runs it left out. A flag that rests on an
    assumed spread while a side ran on a busy machine is "can't tell": its times say more about its neighbours.
    """
    tables = _Tables.of(base, new, noise, floor)
    return _sorted([tables.judge(key) for key in tables.keys()])


def _scenario(op: object) -> bool:
    """Whether ``op`` is a scenario or concurrent family's: a workload of several calls, not one copy."""
    found = FAMILIES.get(str(op))
    return found is not None and found.kind in ("scenario", "concurrent")


def _differing_plans(base: Sequence[Results], new: Sequence[Results]) -> tuple[RecordedPlan | None, RecordedPlan | None] | None:
    """The newest base and new peer plans that plan different cases, or None when every run of both sides plans alike."""
    bases, news = ([RecordedPlan.of(run.machine_info) for run in reversed(runs)] for runs in (base, new))
    return next(((b, n) for n in news for b in bases if not same_cases(b, n)), None)


def _one_sided_peers(base: Sequence[Results], new: Sequence[Results]) -> set[str]:
    """The peer cases of either side, when the sides planned their peer pairs differently (else none): one of them
    measured on one side only is not compared, whatever a missing case usually means."""
    if _differing_plans(base, new) is None:
        return set()
    return {str(key) for run in [*base, *new] if "op" in run.frame
            for key in run.frame.loc[run.frame["op"] == "peer", "case_key"]}


def plan_notes(base: Sequence[Results], new: Sequence[Results]) -> list[str]:
    """One sentence when the two sides planned their peer pairs differently (``--xfer-peer-pairs``)."""
    differing = _differing_plans(base, new)
    return [] if differing is None else [s for s in [difference(*differing)] if s]


def _sorted(rows: list[Comparison]) -> list[Comparison]:
    """Worst verdict first (``verdicts.TABLE``'s order), the biggest slowdown first within one."""
    return sorted(rows, key=lambda r: (rank(r.verdict), -(r.ratio or 0)))


def reproduced(rows: list[Comparison], earlier: str, source: str) -> list[Comparison]:
    """Keep as regressions only the cases an earlier comparison (its ``--json``) flagged too.

    Confirmation by reproduction: CI compares once, and only when that flags a case
    runs fresh candidate runs and compares again; a case flagged once, by a run that
    happened to meet a busy neighbour, becomes "not reproduced" instead of failing the job.
    Cases are matched by their full identity (two shapes of one size are two cases).
    """
    try:
        before = {c["key"] for c in json.loads(earlier)["cases"] if c["verdict"] == REGRESSION}
    except (RecursionError, ValueError, KeyError, TypeError):
        raise ResultsError(f"{source}: not a comparison written by xferbench compare --json "
                           "(this version's: each case names its identity, 'key')") from None
    return _sorted([replace(r, verdict=NOT_REPRODUCED) if r.regression and r.key not in before else r for r in rows])

"""Trends over the runs in a pytest-benchmark storage folder (``--benchmark-autosave``).

Lasting steps, not every difference: between consecutive runs a shared machine
differs by chance all the time, so the history page marks a *step* only where a
change-point search over a case's whole series finds a level that held for at least
``MIN_STEP_RUNS`` runs on each side and moved by more than the case's floor. The
search is ruptures' PELT with an L1 (median) cost: ruptures is maintained, pip-
installable with wheels, has no service to run (unlike Apache Otava) and no MongoDB
tooling to pull in (unlike signal-processing-algorithms), and the L1 cost keeps one
wild run from making a step. Such a step is marked on the trend; it resets the baseline that
``compare`` measures the case against (``current_segment``) only on evidence that would pass the gate
itself: the runs after it against the runs before, judged with the spread of the runs about their own
levels, flagged (and not resting on an assumed spread while a run of either side was on a busy machine).
Six noisy runs once made a "step" of 1 MiB ``clone`` to 3.9 ms against 11 µs when quiet; it moved the
baseline and the next comparison called a quiet run 191.88x faster.
"""

from __future__ import annotations

import math
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import case_time, results
from .case_time import MIN_SPREAD
from .results import Loaded, Results, ResultsError, assemble, find_json, load

__all__ = ["MIN_STEP_RUNS", "RunSummary", "Stored", "lasting_steps", "load_storage", "read_summary"]

#: Runs a level must hold on each side of a step for the step to count (and be accepted).
MIN_STEP_RUNS = 3


@dataclass(frozen=True)
class RunSummary:
    """One stored run without its rows: what the trend and the choice of a baseline read of it."""

    path: Path
    datetime: str
    #: As the loader left it (blocks that are not objects taken out).
    machine_info: dict[str, Any]
    incomplete: bool
    #: Each case's time as compare judges it (``case_time.time_of``), by its whole identity.
    times: dict[str, float]


def read_summary(path: Path) -> tuple[RunSummary, Loaded]:
    """One run file read, checked as ``results.load`` checks it, and summarized straight from its rows (no frame is
    built: the first reading of a folder of thousands of runs is mostly this), with what it read, from which
    ``results.assemble`` gives the run in full without reading it again. A case measured twice in the file counts
    with its last row, as ``load`` keeps it. ResultsError for a file that is no readable run."""
    data, rows, foreign = results.load_file(path)
    last: dict[str, dict[str, Any]] = {}
    for row in rows:
        last.pop(row["case_key"], None)  # the order ``load``'s drop_duplicates(keep="last") leaves
        last[row["case_key"]] = row
    times = {str(key): case_time.time_of(row["nbytes"], row["bandwidth_gbps"], row["data"], row["min_s"], row["median_s"])
             for key, row in last.items()}
    summary = RunSummary(path, str(data.get("datetime") or ""), results.machine_described(data), "xfer_progress" in data, times)
    return summary, (path, data, rows, foreign)


#: pytest-benchmark's number of a saved run (``0007_name.json``): the order it saved them in.
_NUMBERED = re.compile(r"(\d{4})_.*\.json(\.gz)?")


def _run_files(folder: Path, notes: list[str]) -> list[Path]:
    """The regular ``*.json`` / ``*.json.gz`` files below ``folder``; anything else of that name (a FIFO would
    block the read forever) is skipped with a note."""
    files = find_json(folder) if not folder.is_dir() else sorted({*folder.rglob("*.json"), *folder.rglob("*.json.gz")})
    kept = []
    for path in files:
        try:
            if stat.S_ISREG(path.stat().st_mode):
                kept.append(path)
                continue
            why = "not a regular file (a FIFO, device or socket)"
        except OSError as error:
            why = error.strerror or type(error).__name__
        notes.append(f"{path}: skipped, {why}")
    return kept


def _keys(summary: RunSummary) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A run's place in ``_order``'s two orders: by pytest-benchmark's number, and by datetime then name."""
    return (summary.path.name[:4], summary.datetime, str(summary.path)), (summary.datetime, summary.path.name)


def _order(summaries: list[RunSummary]) -> list[RunSummary]:
    """The runs oldest first. pytest-benchmark numbers the runs it saves, and that number, not a clock that may have
    been set back, says which is newest (as ``--benchmark-compare`` reads it); a folder not entirely numbered is
    ordered by each run's datetime, then name."""
    numbered = all(_NUMBERED.fullmatch(summary.path.name) for summary in summaries)
    return sorted(summaries, key=lambda summary: _keys(summary)[0 if numbered else 1])


@dataclass
class Stored:
    """The runs of a storage folder that could be read, as summaries oldest first, and a note for each file skipped.
    A run is read in full only when asked for (``load``, ``newest``); the newest one read while summarizing is kept."""

    summaries: list[RunSummary]
    notes: list[str] = field(default_factory=list)
    loaded: dict[Path, Results] = field(default_factory=dict)

    def load(self, summary: RunSummary) -> Results:
        """The run in full (parsed once per process)."""
        if summary.path not in self.loaded:
            self.loaded[summary.path] = load([summary.path])
        return self.loaded[summary.path]

    @property
    def newest(self) -> Results:
        return self.load(self.summaries[-1])

    @property
    def runs(self) -> list[Results]:
        """Every run in full: each file not read yet is parsed now (for a few runs; thousands take minutes)."""
        return [self.load(summary) for summary in self.summaries]


def load_storage(folder: Path, progress: Callable[[int, int], None] | None = None, keep: bool = False) -> Stored:
    """Every run in a storage folder (or one file), summarized; each file is parsed once. A damaged file (a save cut
    short by a full disk or a power loss) or a foreign one (not a pytest-benchmark run of xferbench) is skipped with
    a one-line note naming it, never refusing the whole folder; with no readable run left it is a ResultsError.
    ``progress(done, total)`` is called as the files are read (a folder of thousands of runs takes a while).
    ``keep``: every run read is kept in full, for a caller that reads them all (``Stored.runs``).
    Each file's summary (or the note that skips it) is taken, and offered to ``_Newest``, as it is read, so that no
    file is parsed twice. One process: a file costs a few milliseconds (65 ms an H200 full run), and worker processes
    would only spread that CPU time over more cores."""
    notes: list[str] = []
    files = _run_files(folder, notes)
    summaries: list[RunSummary] = []
    newest = _Newest(keep)
    for done, path in enumerate(files, 1):
        try:
            summary, loaded = read_summary(path)
            summaries.append(summary)
            newest.offer(summary, loaded)
        except ResultsError as error:
            notes.append(f"{error}; skipped")
        if progress is not None:
            progress(done, len(files))
    if not summaries:
        raise ResultsError(f"{folder}: no readable run in it" + (f" ({notes[0]})" if notes else ""))
    ordered = _order(summaries)
    return Stored(ordered, notes, newest.of(ordered[-1].path))


class _Newest:
    """The runs read while summarizing that may turn out newest (by either of ``_order``'s keys), kept as read so the
    newest one is not parsed twice; at most two are held, whatever the folder's size (every one with ``every``)."""

    def __init__(self, every: bool) -> None:
        self.best: list[tuple[tuple[str, ...], Path, Loaded] | None] = [None, None]
        self.all: dict[Path, Loaded] | None = {} if every else None

    def offer(self, summary: RunSummary, run: Loaded) -> None:
        if self.all is not None:
            self.all[summary.path] = run
        for i, key in enumerate(_keys(summary)):
            held = self.best[i]
            if held is None or key >= held[0]:
                self.best[i] = (key, summary.path, run)

    def of(self, path: Path) -> dict[Path, Results]:
        """The runs held in full (the newest one's, when it was read here), each assembled once."""
        if self.all is not None:
            return {held: assemble([run]) for held, run in self.all.items()}
        run = next((held[2] for held in self.best if held is not None and held[1] == path), None)
        return {} if run is None else {path: assemble([run])}


#: Candidate boundaries the change-point search weighs per series: PELT with an L1 cost costs about the square
#: of the candidates (17 s per case at 1,000 runs, every run a candidate), so a longer series is searched on a
#: grid of this many points and each boundary found is then placed exactly (``_refine``).
MAX_CANDIDATES = 60


def lasting_steps(log_times: np.ndarray, spread: float, floor: float) -> list[int]:
    """Indices where a lasting step starts a new level in one case's series of log run-medians.

    PELT's penalty is 2 x spread x ln(n): in L1 units, what chance alone rarely buys
    (a BIC-like price per extra segment); a found boundary is kept only when the
    medians on its two sides differ by more than the floor. Up to ``MAX_CANDIDATES`` runs every run is a
    candidate; beyond, PELT weighs every ``jump``-th run and each boundary is moved to the exact run
    within a ``jump`` of it that best splits its two neighbouring levels, so the cost grows about linearly.
    """
    x = np.asarray(log_times, dtype=float)
    if x.size < 2 * MIN_STEP_RUNS:
        return []
    penalty = 2 * max(spread, MIN_SPREAD) * math.log(x.size)
    jump = max(1, math.ceil(x.size / MAX_CANDIDATES))
    import ruptures as rpt  # here: it loads scipy.stats, a second of every report that draws no trend

    bounds = rpt.Pelt(model="l1", min_size=max(MIN_STEP_RUNS, jump), jump=jump).fit(x.reshape(-1, 1)).predict(pen=penalty)
    edges = [0, *bounds]
    if jump > 1:
        for i in range(1, len(edges) - 1):
            edges[i] = _refine(x, edges[i - 1], edges[i], edges[i + 1], jump)
    return [mid for start, mid, end in zip(edges, edges[1:], edges[2:], strict=False)
            if abs(float(np.median(x[mid:end]) - np.median(x[start:mid]))) > math.log1p(floor)]


def _refine(x: np.ndarray, start: int, bound: int, end: int, jump: int) -> int:
    """The split of ``x[start:end]`` within ``jump`` of ``bound`` with the least L1 cost (each side about its median),
    keeping ``MIN_STEP_RUNS`` runs a side."""
    def cost(split: int) -> float:
        left, right = x[start:split], x[split:end]
        return float(np.abs(left - np.median(left)).sum() + np.abs(right - np.median(right)).sum())

    lowest, highest = max(start + MIN_STEP_RUNS, bound - jump), min(end - MIN_STEP_RUNS, bound + jump)
    return min(range(lowest, highest + 1), key=cost, default=bound)



"""One computed view of a run: every fact the report states, derived once when the run is loaded.

The findings, figures, tables, captions, the CSV and the Markdown read a ``RunView``, never the rows or the
``machine_info`` behind it, so two places of one page cannot derive one fact two ways: the fingerprint, the fits, the
largest common size, the cache-resident sizes, the cliff, the pinning break-even and each path's roof are read once.
A view knows which machine instance (boot) each row came from: a figure of one is never divided by one of another.

It sits between the loading side (load/) and its readers (report/, gate/): it imports load/ and model, and
neither report nor gate. The ladders of controls (one factor removed per step, docs/design.md section 6)
hang on it in ``ladders``, the run's drift by regime in ``drift``, and every comparison of two of its rows is
``ratio`` (xferbench.ratios). No torch here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from ..contract import Fingerprint
from ..families import moving_ops
from ..ratios import Drift, Ratio, paired, unpaired
from .cliff import USUAL_WAY_BACK, Split, cliff, split
from .drift import RunDrift, paired_blocks, rounds_apart, run_drift, side
from .ladder import Ladder, Rung, ladders
from .load.blocks import waited_rows
from .load.results import Results, busy_load
from .load.rows import Row, flag, flags, matching, rows_by_label, ticked
from .model import (
    SINGLE_THREAD,
    NoHostRoof,
    Wait,
    cache_resident,
    fit_paths,
    host_ceiling,
    host_ceiling_missing,
    largest_common_size,
    path_roofs,
    practical_ceiling,
)

__all__ = ["COLD_OVER_CACHED", "MODEL_MISS", "USUAL_WAY_BACK", "BreakEven", "HostPlacement", "Instance", "RunView",
           "cliff", "flag", "flags", "host_placement", "matching", "ticked"]

#: A fit whose line misses a measured size beyond the cache by more than this factor describes no size well.
MODEL_MISS = 2.0

#: A cold pin page-locks fresh memory and then makes the cached pin's copy: one under this many cached pins' time saw
#: no page-locking in most rounds (the H200 at 64 KiB and 1 MiB: 10.9 and 18.3 µs against 6.95 and 14.2 µs, where
#: from 16 MiB up a cold pin costs 18x a cached one), so the run priced no cold pin at that size.
COLD_OVER_CACHED = 2.0

#: Variants of the pin_memory scenario the break-even reads, and the core-family case that stands in for a missing one.
_PINNED_COPY = ("pinned_to", {"op": "h2d", "host_memory": "pinned", "non_blocking": True, "method": "to"})
_PAGEABLE_COPY = ("to", {"op": "h2d", "host_memory": "pageable", "non_blocking": False, "method": "to"})


@dataclass(frozen=True)
class Instance:
    """One boot of the machine: the runs (file names) that recorded its boot id, or one run that recorded none."""

    number: int
    boot_id: str | None
    runs: tuple[str, ...]

    @property
    def label(self) -> str:
        """``instance 1 (full.json, boot 1a2b3c4d)``; a run without a boot id is an instance of its own."""
        boot = f"boot {self.boot_id[:8]}" if self.boot_id else "no boot id recorded"
        return f"instance {self.number} ({', '.join(self.runs)}; {boot})"


@dataclass(frozen=True)
class BreakEven:
    """One pin_memory() on a cold cache against what each copy from pinned memory saves at its size and GPU: the
    pin's row, the pageable and pinned copies read from its machine instance (None: not measured there; ``elsewhere``
    is the missing one where another instance measured it), and what the run can tell of the saving."""

    pin: pd.Series
    pageable: pd.Series | None
    pinned: pd.Series | None
    elsewhere: pd.Series | None = None
    #: Pageable over pinned, with its interval (None where one copy is missing).
    ratio: Ratio | None = None
    #: The same size's pin_memory() from the cache, in the pin's run (None: not measured).
    cached: pd.Series | None = None

    @property
    def cold_unseen(self) -> bool:
        """Whether the cold pin took under ``COLD_OVER_CACHED`` cached pins: most rounds locked no fresh page."""
        return self.cached is not None and float(self.pin["median_s"]) < COLD_OVER_CACHED * float(self.cached["median_s"])

    @property
    def saved_s(self) -> float | None:
        """What each copy from pinned memory saves (pageable median - pinned median), or None without both."""
        if self.pageable is None or self.pinned is None:
            return None
        return float(self.pageable["median_s"] - self.pinned["median_s"])

    @property
    def copies(self) -> float | None:
        """How many copies pay for the pin (its median over the saving), or None without a saving."""
        return float(self.pin["median_s"]) / self.saved_s if self.saved_s else None


@dataclass(frozen=True)
class HostPlacement:
    """Where the h2d and d2h cases' host buffers sat: how many were placed on their GPU's NUMA node, the nodes of
    each GPU's, how many cases ran where the process did (the GPU's node unknown or off limits), and how many spilled
    (bound to the GPU's node, a page of the buffer found on another: that node was full)."""

    placed: int
    nodes: dict[str, list[int]]
    unplaced: int
    spilled: int = 0


def host_placement(rows: pd.DataFrame) -> HostPlacement | None:
    """Where the h2d and d2h cases' host buffers sat (``host_placement``, ``host_numa_node``); None if unrecorded."""
    if "host_placement" not in rows:
        return None
    moves = rows[rows["op"].isin(("h2d", "d2h")) & rows["host_placement"].notna()]
    placed = moves[moves["host_placement"] == "gpu_node"]
    gpus = placed["dst"].where(placed["op"] == "h2d", placed["src"])
    nodes = {str(gpu): [int(n) for n in sorted(group["host_numa_node"].dropna().unique())] for gpu, group in placed.groupby(gpus)}
    spilled = int((moves["host_placement"] == "spilled").sum())
    return HostPlacement(len(placed), nodes, len(moves) - len(placed) - spilled, spilled)


def _waited(row: pd.Series) -> bool:
    """Whether ``row``'s rounds waited for the CPU: on the scheduler's ticks, or off them (``load.blocks.waited_off``)."""
    return pd.notna(row.get("on_ticks", math.nan)) or flag(row, "waited_off_ticks")


def _no_bandwidth(frame: pd.DataFrame, untimed: pd.Series) -> pd.DataFrame:
    """``frame`` with no GB/s (nor bus bandwidth) in the rows ``untimed`` marks."""
    return frame.assign(**{n: frame[n].mask(untimed) for n in ("bandwidth_gbps", "busbw_gbps")}) if untimed.any() else frame


@dataclass(frozen=True, eq=False)
class RunView:
    """A loaded run and what the report derives from it, each computed on first use and kept."""

    results: Results

    @classmethod
    def of(cls, results: Results | RunView) -> RunView:
        """The view of a loaded run; a view given is its own."""
        return results if isinstance(results, RunView) else cls(results)

    # -- the run as loaded ------------------------------------------------------------------------------------

    @cached_property
    def rows(self) -> pd.DataFrame:
        """One row per benchmark (load/results.py): what every fact below is derived from. One whose rounds waited for
        the CPU (``on_ticks``, or ``waited_rows``: a wait is part of its time), or whose blocks timed calls a round 2x or
        more apart (``mixed_iterations``: its median is neither timing), states no bandwidth: not in the appendix, the
        CSV, a hover nor a finding."""
        return _no_bandwidth(self._modelled, self.waits_off_ticks)  # those on the ticks or mixed: masked already

    @cached_property
    def _modelled(self) -> pd.DataFrame:
        """``rows`` as the α/β fits and cache residency read them: a row whose one-call rounds waited keeps its GB/s
        there (a memory's figure beyond the cache: ``model.memory_allows``), as it states none anywhere else."""
        frame = self.results.frame
        return _no_bandwidth(frame, flags(frame, "mixed_iterations") | ticked(frame))

    @property
    def sources(self) -> list[str]:
        return self.results.sources

    @property
    def shuffled(self) -> bool:
        """Whether the run's cases ran in a shuffled order (``--xfer-shuffle``, or pytest-randomly), as it recorded."""
        return isinstance(self.results.run.get("case_order"), dict)

    @property
    def busy(self) -> str | None:
        """The load the run recorded where it exceeded the cores (``load.results.busy_load``), else None."""
        return busy_load(self.results.run)

    @property
    def machine_info(self) -> dict[str, Any]:
        """The machine description as recorded: shown whole on the page, read through ``fingerprint`` otherwise."""
        return self.results.machine_info

    @cached_property
    def fingerprint(self) -> Fingerprint:
        """xferbench's section of the machine description, read once."""
        return Fingerprint.of(self.results.machine_info)

    @property
    def simulated(self) -> bool:
        return self.fingerprint.simulated

    @staticmethod
    def priced(rows: pd.DataFrame) -> pd.Series:
        """Which of ``rows`` a cost model timed (``clock`` "simulated"), not a measurement; none where no row says."""
        return rows.get("clock", pd.Series(None, rows.index)).eq("simulated")

    @cached_property
    def has_accelerator(self) -> bool:
        return self.results.has_accelerator

    # -- machine instances -------------------------------------------------------------------------------------

    @cached_property
    def instances(self) -> tuple[Instance, ...]:
        """The machine instances behind the rows, oldest run first: runs that recorded one boot id share one;
        a run that recorded none is its own (nothing says it ran in the same boot as another)."""
        runs = self.results.boot_ids or {str(run): None for run in pd.unique(self.rows["run"])}
        groups: dict[str, list[str]] = {}
        for run, boot in runs.items():
            groups.setdefault(boot if boot is not None else f"\0{run}", []).append(run)
        return tuple(Instance(number, None if key.startswith("\0") else key, tuple(members))
                     for number, (key, members) in enumerate(groups.items(), 1))

    @cached_property
    def _instance_of_run(self) -> dict[str, Instance]:
        return {run: instance for instance in self.instances for run in instance.runs}

    def instance_of(self, row: pd.Series) -> Instance | None:
        """The instance a row came from (None for a row of no file this view knows)."""
        return self._instance_of_run.get(str(row["run"]))

    def same_instance(self, *rows: pd.Series) -> bool:
        """Whether every row came from one machine instance: only then may their figures be set against each other."""
        return len({self.instance_of(row) for row in rows}) <= 1

    @property
    def benchmark_count(self) -> int:
        """The files' benchmarks: each block of a case merged into its row (those left out on the ticks too), each run
        of a case read from one."""
        blocks, ticked = (pd.to_numeric(self.measured.get(c, pd.Series(dtype=float)), errors="coerce") for c in
                          ("blocks", "tick_blocks"))
        return len(self.measured) + int((blocks - 1).clip(lower=0).sum() + ticked.fillna(0).sum())  # NaN adds none

    @property
    def benchmarks(self) -> str:
        """``37 benchmarks (12 cases)``, or ``58 benchmarks`` where each is a case of its own."""
        every = self.benchmark_count
        return f"{every} benchmarks" + (f" ({len(self.rows)} cases)" if every > len(self.rows) else "")

    @property
    def several_instances(self) -> bool:
        return len(self.instances) > 1

    @cached_property
    def measured(self) -> pd.DataFrame:
        """Every row measured, with ``read``: True for the instance of its case every figure and sentence reads (all
        of them where no case was measured in more than one run)."""
        every = self.results.measured
        return self.rows.assign(read=True) if every is None or "read" not in every else every

    def numbered(self, rows: pd.DataFrame) -> pd.DataFrame:
        """``rows`` with ``instance``: the number of the machine instance each came from."""
        return rows.assign(instance=rows["run"].astype(str).map({run: i.number for run, i in self._instance_of_run.items()}))

    def one_instance_rows(self, rows: pd.DataFrame) -> tuple[pd.DataFrame, Instance | None, int]:
        """``rows`` of one instance, the one that measured most of them, ties to the newest (so that nothing said of
        them divides a figure of one boot by one of another, and a short second run of a few cases does not speak
        for a family the first measured whole), that instance, and how many rows of other instances were left."""
        if not self.several_instances or rows.empty:
            return rows, None, 0
        numbers = rows["run"].astype(str).map(lambda run: getattr(self._instance_of_run.get(run), "number", 0))
        counts = numbers.value_counts()
        chosen = int(max(counts.index, key=lambda number: (counts[number], number)))
        kept = rows[numbers == chosen]
        left = len(rows) - len(kept)
        return kept, (self.instances[chosen - 1] if left and chosen else None), left

    def elsewhere(self, rows: pd.DataFrame) -> pd.DataFrame | None:
        """The rows of ``rows``' ops other machine instances measured, those no figure reads too (a case measured in
        both is read from one run: the H200's quick-scenarios module moves); None with one instance."""
        if not self.several_instances:
            return None
        mine, every = {self._instance_of_run.get(run) for run in rows["run"].astype(str)}, self.measured
        return every[every["op"].isin(set(rows["op"])) & ~every["run"].astype(str).map(self._instance_of_run.get).isin(mine)]

    # -- what is derived ---------------------------------------------------------------------------------------

    @cached_property
    def largest_size(self) -> int | None:
        """The largest payload measured by the most move families (``model.largest_common_size``)."""
        return largest_common_size(self.rows)

    @cached_property
    def at_largest(self) -> pd.DataFrame:
        """The rows at ``largest_size`` (none where the run moved nothing): the first screen's like-for-like size."""
        return self.rows[self.rows["nbytes"] == self.largest_size]

    @cached_property
    def resident(self) -> pd.Series:
        """Per row: did its payload run from a cache, faster than memory allows (``model.cache_resident``)?"""
        return cache_resident(self._modelled, self.fingerprint)

    @cached_property
    def fits(self) -> pd.DataFrame:
        """One α-β fit per moving path (``model.fit_paths``), in report order; a path whose largest size ``waited``
        (the bytes do not set its time: the loaded run's copy_, 20 ms at 1 and at 64 MiB) states no β nor GB/s."""
        fits = fit_paths(self._modelled, self.fingerprint)
        for i, fit in fits.iterrows():
            # or whose β was read from a size beyond the cache that waited (the busy run's copy_: its 1 KiB): that size
            if str(fit["beta_basis"]).endswith("measured beyond the cache"):
                beyond = self.kept_by(fit)
                if self.waited(size := beyond.loc[beyond["nbytes"].idxmax()]) is not None:
                    fits.loc[i, "largest_bytes"] = fit["largest_bytes"] = int(size["nbytes"])
            if self.largest_wait(fit) is None:
                continue
            fits.loc[i, "largest_gbps"] = np.nan  # no GB/s where the bytes set no time (the box at the top says "–")
            if fit["beta_basis"] != "latency-bound":  # a latency-bound path's basis says why already
                fits.loc[i, ["stated_gbps", "half_peak_bytes", "beta_basis"]] = [np.nan, np.nan, "waits"]
        return fits

    @cached_property
    def single_thread_fits(self) -> pd.DataFrame:
        """The α-β fit of the single-thread host copy, which ``fits`` leaves out (a roof, not a call users make)."""
        one = self._modelled[(self._modelled["op"] == "host") & self._modelled["variant"].eq(SINGLE_THREAD["variant"])]
        return fit_paths(one, self.fingerprint) if not one.empty else pd.DataFrame()

    def of_path(self, path: str, beyond_cache: bool = False) -> pd.DataFrame:
        """``rows`` of one path, split once for the run (a mask over every row costs each question a pass);
        ``beyond_cache``: less the sizes that ran from a cache (``resident``)."""
        return self._paths[beyond_cache].get(path, self.rows.iloc[:0])

    @cached_property
    def _paths(self) -> dict[bool, dict[Any, pd.DataFrame]]:
        beyond = self.rows[~self.resident.loc[self.rows.index].to_numpy(dtype=bool)]
        return {False: dict(list(self.rows.groupby("path", sort=False))), True: dict(list(beyond.groupby("path", sort=False)))}

    def kept_by(self, fit: Mapping[str, Any]) -> pd.DataFrame:
        """The rows of a fit's path (``fits``) beyond the cache that it kept: less the sizes it left out (``left_out``)."""
        return (rows := self.of_path(fit["path"], beyond_cache=True))[~rows["nbytes"].isin(fit.get("left_out") or ())]

    def fit_of(self, path: str) -> dict[str, Any] | None:
        """The fit of one path, or None when the path is not fitted."""
        found = self.fits[self.fits["path"] == path]
        return found.iloc[0].to_dict() if not found.empty else None

    @cached_property
    def host_ceiling(self) -> tuple[float, str] | None:
        """The single-thread host memcpy that bounds a pageable transfer (``model.host_ceiling``), or None."""
        return host_ceiling(self.rows)

    @cached_property
    def host_ceiling_missing(self) -> NoHostRoof | None:
        """Why the run gives pageable moves no host roof (``model.host_ceiling_missing``), or None when it has one."""
        return host_ceiling_missing(self.rows)

    @cached_property
    def _roofs(self) -> dict[tuple[str, str, str, str | None], list[tuple[float, str]]]:
        return {}

    def roofs(self, op: str, src: str, dst: str, host_memory: str | None = None) -> list[tuple[float, str]]:
        """What bounds a path, highest first (``model.path_roofs``), each with its figure; read once per path."""
        key = (op, src, dst, host_memory if isinstance(host_memory, str) else None)
        if key not in self._roofs:
            self._roofs[key] = path_roofs(self.fingerprint, op, src, dst, key[3], self.host_ceiling)
        return self._roofs[key]

    def practical(self, op: str, src: str, dst: str) -> tuple[float, float] | None:
        """The practical ceiling of pinned copies on the PCIe link a path uses (``model.practical_ceiling``)."""
        return practical_ceiling(self.fingerprint, op, src, dst)

    def model_miss(self, fit: Mapping[str, Any]) -> tuple[float, int] | None:
        """How far t = α + n/β misses the worst size the fit kept that did not run from cache (the larger of
        predicted over measured and its inverse), and that size, where it is over ``MODEL_MISS``x (a path with a
        cliff: the capped β of .cpu() predicts 11.3 ms at 16 MiB, where 1.30 ms was measured; a busy run's gloo
        isend_irecv, α 167 µs, took 704 µs at 4 B); else None."""
        rows = self.kept_by(fit)  # the sizes the fit left out, as it did
        if rows.empty or not np.isfinite(fit["alpha_us"]) or not np.isfinite(fit["stated_gbps"]):
            return None
        predicted = fit["alpha_us"] / 1e6 + rows["nbytes"] / (fit["stated_gbps"] * 1e9)
        misses = np.maximum(predicted / rows["transfer_s"], rows["transfer_s"] / predicted)
        worst = misses.idxmax()
        return (float(misses[worst]), int(rows.at[worst, "nbytes"])) if misses[worst] > MODEL_MISS else None

    @cached_property
    def host_placement(self) -> HostPlacement | None:
        """Where the h2d and d2h cases' host buffers sat (``host_placement``), or None where the run does not say."""
        return host_placement(self.rows)

    @cached_property
    def run_times(self) -> pd.Series:
        """Each run's newest benchmark time, by run in the rows' order; empty where no row recorded one."""
        return self.rows.dropna(subset=["datetime"]).groupby("run", sort=False)["datetime"].max()

    def variants(self, op: str) -> set[Any]:
        """The variants a family measured."""
        return set(self.rows.loc[self.rows["op"] == op, "variant"].dropna())

    @cached_property
    def break_even(self) -> list[BreakEven]:
        """Each pin_memory() on a cold cache, smallest size first, against the copies of its size and GPU from its
        own machine instance (a saving from another boot is no measure of the pin): both the pin_memory scenario's
        own where both ran, else both the h2d family's same calls, else whichever of each ran."""
        pins, found = self.rows[self.rows["op"] == "pin_memory"], []
        cached = pins[pins["variant"] == "pin_cached"]
        for _, pin in pins[pins["variant"] == "pin_cold"].sort_values("nbytes").iterrows():
            scene, core = zip(*(self._copy_at(pin, which) for which in (_PAGEABLE_COPY, _PINNED_COPY)), strict=True)
            # one source for both where one has both: the scenario's .to against the family's pinned copy differs in
            # more than the memory (the H200's 256 MiB: the scenario's .to took 37.7 ms, the family's 32.4 ms)
            pageable, pinned = next((pair for pair in (scene, core) if all(row is not None for row in pair)),
                                    [a if a is not None else b for a, b in zip(scene, core, strict=True)])
            twin = cached[(cached["nbytes"] == pin["nbytes"]) & (cached["dst"] == pin["dst"]) & (cached["run"] == pin["run"])]
            cache = twin.iloc[0] if not twin.empty else None
            if pageable is not None and pinned is not None:
                found.append(BreakEven(pin, pageable, pinned, ratio=self.ratio(pageable, pinned), cached=cache))
                continue
            scene, core = self._copy_at(pin, _PAGEABLE_COPY if pageable is None else _PINNED_COPY, anywhere=True)
            found.append(BreakEven(pin, pageable, pinned, scene if scene is not None else core, cached=cache))
        return found

    def _copy_at(self, pin: pd.Series, which: tuple[str, dict[str, Any]],
                 anywhere: bool = False) -> tuple[pd.Series | None, pd.Series | None]:
        """The pin_memory scenario's own copy at the pin's size and device, and the core family's same call; only
        from the pin's machine instance unless ``anywhere``."""
        variant, core = which
        at = self.rows[(self.rows["nbytes"] == int(pin["nbytes"])) & (self.rows["dst"] == str(pin["dst"]))]
        if self.several_instances and not anywhere:
            at = at[[self.same_instance(pin, row) for _, row in at.iterrows()]]
        scene, family = at[(at["op"] == "pin_memory") & (at["variant"] == variant)], matching(at, core)
        return (scene.iloc[0] if not scene.empty else None), (family.iloc[0] if not family.empty else None)

    @cached_property
    def cliff(self) -> dict[str, Any] | None:
        """Where .cpu() / .to('cpu') fall off a cliff (``cliff.cliff``), or None."""
        return cliff(self.rows)

    @cached_property
    def cliff_split(self) -> Split:
        """Across the cliff, which calls writing a fresh destination grew dearer than every call into a reused buffer
        (``cliff.split``, judged by ``ratio``), once for the figure's note and the key finding; empty without a cliff."""
        return split(self.rows, self.cliff, self.ratio) if self.cliff is not None else Split([], [], [])

    @cached_property
    def ladders(self) -> list[Ladder]:
        """The ladders of controls of the run's costs, by call (docs/design.md section 6: each step one factor
        removed, read from two cases of the same run and size): ``ladder.ladders``, computed once."""
        return [replace(ladder, waited=None if ladder.base.device_time or (waited := self.waited(ladder.base.row)) is None
                        else waited) for ladder in ladders(self.rows, self._rung_ratio)]

    def _rung_ratio(self, above: Rung, below: Rung) -> Ratio:
        """Two rungs of a ladder (``ladder.Judge``): their rows' ratio, or against a device time (one figure, no
        rounds) the upper row's rounds and, where the device time is another case's, the drift of their regimes."""
        if not below.device_time:
            return self.ratio(above.row, below.row)
        drift = Drift() if above.row.name == below.row.name else self.drift.of(above.row, below.row)
        return unpaired(side(above.row), (below.median_s, 0.0, 1), drift)

    @cached_property
    def drift(self) -> RunDrift:
        """How far the run moved by itself, per regime (``drift.run_drift``): its same-code pairs and its blocks."""
        return run_drift(self.rows)

    def tied_fastest(self, rows: pd.DataFrame) -> pd.DataFrame:
        """The fastest of ``rows`` and every other whose ratio to it is unresolved: which is fastest, the run cannot tell."""
        if rows.empty:
            return rows
        fastest = rows.loc[rows["median_s"].idxmin()]
        return rows[[index == fastest.name or not self.ratio(row, fastest).resolved for index, row in rows.iterrows()]]

    def ratio(self, a: pd.Series, b: pd.Series, leave_out: str | None = None) -> Ratio:
        """Row ``a``'s median time over row ``b``'s, with this comparison's own interval (xferbench.ratios): from
        their paired blocks where both were measured so, else from their rounds and the drift of their regimes. A side
        whose rounds waited for the CPU (``_waited``) took at most its median: a floor where only the faster side did
        (resolved where it excludes 1), a ceiling where only the slower did (``ticks``: unjudged, yet under 2x it bounds
        a growth), neither where both did (``waited``). Unsized, the order of its interleaved rounds (``Ratio.apart``)."""
        found = self._ratio(a, b, leave_out)
        return found if found.resolved else replace(found, apart=rounds_apart(a, b))

    def _ratio(self, a: pd.Series, b: pd.Series, leave_out: str | None) -> Ratio:
        slow, fast = (_waited(row) for row in ((a, b) if a["median_s"] > b["median_s"] else (b, a)))
        if slow and fast:
            return Ratio(a["median_s"] / b["median_s"], 0.0, math.inf, "waited", int(min(a["rounds"], b["rounds"])))
        x, y = paired_blocks(a, b)
        found = paired(x.tolist(), y.tolist()) if x.size else unpaired(side(a), side(b), self.drift.of(a, b, leave_out=leave_out))
        if not (slow or fast):
            return found
        # a/b's true value lies above its measured one where only the faster waited and a is slower, or the reverse
        low, high = (found.low, math.inf) if fast == (a["median_s"] > b["median_s"]) else (0.0, found.high)
        return Ratio(found.value, low, high, "ticks" if slow else found.basis, found.n)

    def growth(self, row: pd.Series) -> tuple[pd.Series, Ratio] | None:
        """The largest size of ``row``'s path and run with a sixteenth of its bytes or less, and ``row``'s time over
        it (``ratio``); None where there is no such size."""
        if (measured := self._smaller(row, 16)) is None:
            return None
        small, (_, alike) = measured, paired_blocks(row, measured)
        # a mixed row's blocks timed as ``row``'s were: their median is the one quoted (the ratio pairs them alike)
        if flag(measured, "mixed_iterations") and 0 < alike.size < np.isfinite(np.asarray(measured["block_medians"])).sum():
            small, blocks = measured.copy(), np.asarray(measured["block_medians"], dtype=float)
            small["median_s"], small["alike_blocks"] = float(np.median(alike)), alike.size
            other = np.isfinite(blocks) & ~np.isin(blocks, alike)  # the blocks timed otherwise, which the page names
            small["other_blocks"] = (blocks[other], np.asarray(measured["block_iterations"], dtype=float)[other])
        return small, self.ratio(row, measured)

    def grew_before(self, row: pd.Series) -> tuple[pd.Series, Ratio] | None:
        """``row``'s path at the next smaller size of its run, and ``row``'s time over it, where that growth is resolved
        above 1 (the H200's torch.empty: 2.24 µs at 4 MiB, 4.44 µs at 16 MiB, 1.98× (1.81-2.18)); else None."""
        if (small := self._smaller(row, 1)) is None:
            return None
        grew = self.ratio(row, small)
        return (small, grew) if grew.resolved and grew.value > 1 else None

    def _smaller(self, row: pd.Series, fewer: int) -> pd.Series | None:
        """The largest size of ``row``'s path and run below it with ``1/fewer`` of its bytes or less; None where none."""
        labels, sizes = self._sizes.get((row["path"], row["run"]), ([], np.zeros(0)))
        below = np.flatnonzero((sizes < row["nbytes"]) & (sizes * fewer <= row["nbytes"]))
        return None if below.size == 0 else self._row[labels[below[np.argmax(sizes[below])]]]

    @cached_property
    def _row(self) -> dict[Any, Row]:
        """Each row of ``rows`` by label, made once (``rows.loc`` makes a new Series at every call)."""
        return rows_by_label(self.rows)

    @cached_property
    def _sizes(self) -> dict[tuple[str, str], tuple[list[Any], np.ndarray]]:
        """Each path and run's row labels and sizes (``_smaller`` reads one group, not every row, for each row asked)."""
        return {key: (list(group.index), group.to_numpy(dtype=float))
                for key, group in self.rows.groupby(["path", "run"], sort=False)["nbytes"]}

    @cached_property
    def waits(self) -> dict[Any, Wait]:
        """The rows whose bytes set little of their time (``model.Wait``), by label in ``rows``: growth told under 2x.
        Judged once for the run: the appendix, the host finding, the box at the top, a change's condition, a ladder's
        foot and the α-β fits read it alike."""
        return {label: Wait(*grown, float(self.rows.at[label, "nbytes"]) / float(grown[0]["nbytes"]))
                for label, grown in self.growths.items() if grown is not None and grown[1].high < 2}

    @cached_property
    def waits_off_ticks(self) -> pd.Series:
        """Per row: did its rounds wait for the CPU off the scheduler's ticks (``load.blocks.waited_off``: never a row on
        them)? Read once, for the notice, the appendix and ``waited_for_cpu`` (the α/β fit reads it on its frame)."""
        return waited_rows(self._modelled)  # read once: ``rows`` masks by it

    @cached_property
    def waited_for_cpu(self) -> pd.Series:
        """Per row: did its rounds wait for the CPU, on the ticks (``on_ticks``) or off them (``waits_off_ticks``)?"""
        return self.waits_off_ticks | ticked(self.rows)

    @cached_property
    def growths(self) -> dict[Any, tuple[pd.Series, Ratio] | None]:
        """``growth`` of every row, by label: judged once, for the waits and the α/β table's ceilings alike."""
        return {label: self.growth(row) for label, row in self._row.items()}

    @cached_property
    def no_bandwidth(self) -> dict[Any, Wait]:
        """``waits``, and each other size whose bytes set under 1/15 of its time by its nearest size with k = 16x its
        bytes or more, h times as long at most: (h - 1) / (k - 1) (``Wait.share``; under 2x at 16x: the H200's gloo
        all_reduce, 268 µs at 64 B, 217 µs at 1 KiB). The marks (‡, ×, hovers) read it; the sentences read ``waits``."""
        found, rows = dict(self.waits), self._row
        # a growth already judged (``growths``) where this size is the 16-fold size's sixteenth: its ratio, not a new one
        judged = {(grown[0].name, label): grown[1] for label, grown in self.growths.items() if grown is not None}
        for labels, sizes in self._sizes.values():
            for label, nbytes in zip(labels, sizes, strict=True):
                if label in found or nbytes <= 0 or not (above := np.flatnonzero(sizes >= 16 * nbytes)).size:
                    continue
                large = labels[above[np.argmin(sizes[above])]]
                grew = judged.get((label, large)) or self.ratio(rows[large], rows[label])
                if (wait := Wait(rows[large], grew, float(rows[large]["nbytes"]) / nbytes, larger=True)).share < 1 / 15:
                    found[label] = wait
        return found

    def waiting(self, rows: pd.DataFrame) -> np.ndarray:
        """Which of ``rows`` (rows of ``RunView.rows``, by label) state no bandwidth (``no_bandwidth``): one mask for the
        appendix, charts, fits."""
        return rows.index.isin(list(self.no_bandwidth))

    def cheapest_copy(self, like: pd.Series | None = None, runs: set[Any] | None = None) -> pd.Series | None:
        """The cheapest real copy (any moving family, any size; of ``runs`` where given), timed by ``like``'s clock where
        given, a cost model's or a measurement (a simulated no-op beside a measured host copy is no comparison): the
        no-op finding's yardstick (one device's no-ops) and the figure's (every no-op of the runs, either clock)."""
        simulated = self.priced(frame := self.rows)
        copies = frame[frame["op"].isin(moving_ops())
                       & (simulated.eq(like.get("clock") == "simulated") if like is not None else True)
                       & (frame["run"].isin(runs) if runs is not None else True)]
        return copies.loc[copies["median_s"].idxmin()] if not copies.empty else None

    def waited(self, row: pd.Series) -> Wait | None:
        """``waits`` of ``row`` (a row of ``rows``); else None."""
        return self.waits.get(row.name)

    def largest_wait(self, fit: Mapping[str, Any]) -> Wait | None:
        """``waits`` of a fitted path's largest size (``fit_paths``' ``largest_bytes``); None where it is no wait."""
        at = (rows := self.of_path(fit["path"])).index[(rows["nbytes"] == fit["largest_bytes"]).to_numpy()]
        return self.waits.get(at[0]) if len(at) else None

    def per_byte(self, large: pd.Series, small: pd.Series) -> Ratio:
        """``ratio`` of two sizes per byte moved: the larger size's time over the smaller's, over their bytes' ratio
        (above 1 beyond its interval: the larger ran slower per byte, the smaller drew on something the larger did not)."""
        ratio, scale = self.ratio(large, small), float(large["nbytes"]) / float(small["nbytes"])
        return Ratio(ratio.value / scale, ratio.low / scale, ratio.high / scale, ratio.basis, ratio.n)

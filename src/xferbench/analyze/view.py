"""One computed view of a run: every fact the report states, derived once when the run is loaded.

The findings, figures, tables, captions, the CSV and the Markdown read a ``RunView``, never the rows or the
``machine_info`` behind it, so two places of one page cannot derive one fact two ways: the machine's
fingerprint is read once, the paths fitted once, the largest common size chosen once, the cache-resident
sizes and the cliff found once, each roof read once per path. A view also knows which machine instance
(one boot of the machine) each row came from: two files of one machine from different boots differ by more
than their spread, so a figure of one is never divided by a figure of the other.

It sits between the loading side (load/) and its readers (report/, gate/): it imports load/ and model, and
neither report nor gate. The ladders of controls (one factor removed per step, docs/design.md section 6)
hang on it in ``ladders``, the run's drift floor (its same-code pairs) in ``drift``. No torch here.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import pandas as pd

from ..contract import Fingerprint
from .drift import Drift, repeated_references, same_code_pairs
from .ladder import Ladder, ladders
from .load.results import Results
from .model import (
    SINGLE_THREAD,
    cache_resident,
    fit_paths,
    host_ceiling,
    host_ceiling_missing,
    largest_common_size,
    path_roofs,
    practical_ceiling,
)

__all__ = ["CLIFF_DROP", "USUAL_WAY_BACK", "Instance", "RunView", "cliff"]

#: The calls users make to bring a tensor back to the CPU: each allocates a new pageable tensor.
USUAL_WAY_BACK = ("cpu", "to")

#: A fall in bandwidth from one size to the next by at least this factor is a cliff worth naming.
CLIFF_DROP = 3.0


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


@dataclass(frozen=True, eq=False)
class RunView:
    """A loaded run and what the report derives from it, each computed on first use and kept."""

    results: Results

    @classmethod
    def of(cls, results: Results) -> RunView:
        return cls(results)

    @classmethod
    def of_rows(cls, frame: pd.DataFrame, machine_info: dict[str, Any] | None = None) -> RunView:
        """A view of rows without the files they came from (tests, a run's end summary)."""
        return cls(Results(frame=frame, machine_info=machine_info or {}, commit_info={}, sources=[]))

    # -- the run as loaded ------------------------------------------------------------------------------------

    @property
    def rows(self) -> pd.DataFrame:
        """One row per benchmark (load/results.py): what every fact below is derived from."""
        return self.results.frame

    @property
    def sources(self) -> list[str]:
        return self.results.sources

    @property
    def notes(self) -> list[str]:
        return self.results.notes

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
    def several_instances(self) -> bool:
        return len(self.instances) > 1

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

    # -- what is derived ---------------------------------------------------------------------------------------

    @cached_property
    def largest_size(self) -> int | None:
        """The largest payload measured by the most move families (``model.largest_common_size``)."""
        return largest_common_size(self.rows)

    @cached_property
    def resident(self) -> pd.Series:
        """Per row: did its payload run from a cache, faster than memory allows (``model.cache_resident``)?"""
        return cache_resident(self.rows, self.fingerprint)

    @cached_property
    def fits(self) -> pd.DataFrame:
        """One α-β fit per moving path (``model.fit_paths``), in report order."""
        return fit_paths(self.rows, self.fingerprint)

    @cached_property
    def single_thread_fits(self) -> pd.DataFrame:
        """The α-β fit of the single-thread host copy, which ``fits`` leaves out (a roof, not a call users make)."""
        one = self.rows[(self.rows["op"] == "host") & self.rows["variant"].eq(SINGLE_THREAD["variant"])]
        return fit_paths(one, self.fingerprint) if not one.empty else pd.DataFrame()

    def fit_of(self, path: str) -> dict[str, Any] | None:
        """The fit of one path, or None when the path is not fitted."""
        found = self.fits[self.fits["path"] == path]
        return found.iloc[0].to_dict() if not found.empty else None

    @cached_property
    def host_ceiling(self) -> tuple[float, str] | None:
        """The single-thread host memcpy that bounds a pageable transfer (``model.host_ceiling``), or None."""
        return host_ceiling(self.rows)

    @cached_property
    def host_ceiling_missing(self) -> str | None:
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

    @cached_property
    def cliff(self) -> dict[str, Any] | None:
        """Where .cpu() / .to('cpu') fall off a cliff (``cliff``), or None."""
        return cliff(self.rows)

    @cached_property
    def ladders(self) -> list[Ladder]:
        """The ladders of controls of the run's costs, by call (docs/design.md section 6: each step one factor
        removed, read from two cases of the same run and size): ``ladder.ladders``, computed once."""
        return ladders(self.rows, self.drift.floor())

    @cached_property
    def drift(self) -> Drift:
        """The run's drift floor from its same-code pairs and repeated references (``drift.Drift``): how far the same
        code moved while the run ran, the least difference between two of its cases that the report tells apart."""
        return Drift(same_code_pairs(self.rows), repeated_references(self.rows))


def cliff(frame: pd.DataFrame) -> dict[str, Any] | None:
    """Where .cpu() / .to('cpu') into new pageable memory fall off a cliff: the pair of consecutive sizes with
    the steepest fall in bandwidth (at least ``CLIFF_DROP``x, on every such call), and what the run measured
    about its cause (``minor_faults_per_call``), or None."""
    down = frame[(frame["op"] == "d2h") & (frame["host_memory"] == "pageable") & frame["bandwidth_gbps"].notna()]
    usual = down[down["method"].isin(USUAL_WAY_BACK) & ~down["non_blocking"].astype(bool)]
    if usual["nbytes"].nunique() < 2:
        return None
    gbps = usual.pivot_table(index="nbytes", columns="method", values="bandwidth_gbps").dropna()
    falls = gbps.shift(1) / gbps  # bandwidth at the size before over bandwidth at this size, per call
    steepest = falls.min(axis=1)  # the fall every call shares
    if steepest.isna().all() or steepest.max() < CLIFF_DROP:
        return None
    after = int(steepest.idxmax())
    before = int(gbps.index[gbps.index.get_loc(after) - 1])
    at = usual[usual["nbytes"] == after]
    existing = down[(down["method"] == "copy_") & (down["nbytes"] == after)]
    found: dict[str, Any] = {"before": before, "after": after, "gbps_before": gbps.loc[before], "gbps_after":
                             gbps.loc[after], "existing": existing.iloc[0] if not existing.empty else None,
                             "faults": None, "us_per_fault": None}
    faults = pd.to_numeric(at.get("minor_faults_per_call"), errors="coerce") if "minor_faults_per_call" in at else None
    if faults is not None and faults.notna().all():
        found["faults"] = faults
        if found["existing"] is not None:
            base = pd.to_numeric(pd.Series([found["existing"].get("minor_faults_per_call")]), errors="coerce").fillna(0)
            extra = faults - float(base.iloc[0])
            cost = at["median_s"] - float(found["existing"]["median_s"])
            per = (cost / extra)[extra > 0]
            found["us_per_fault"] = per * 1e6 if not per.empty else None
    return found

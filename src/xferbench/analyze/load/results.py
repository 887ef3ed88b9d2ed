"""pytest-benchmark JSON -> a tidy pandas DataFrame, one row per benchmark.

This is the analysis side's only door to the data: it validates the files and
turns them into rows, so that model, plots, report and compare work on a
DataFrame and never on JSON. No torch here.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import os
import re
import stat
import sys
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...bounded_read import NotRegular, TooLarge, out_of_range, read_bounded
from ...contract import SCHEMA_VERSION, ContractError, Fingerprint, machine_differences
from ...units import count
from ..peer_plan import plan_ok
from .blocks import rows_of
from .rows import MAX_BYTES, UNTRACKED_HINT, VALID_DEVICE_METHODS, device_time_valid

__all__ = ["MAX_RUN_BYTES", "VALID_DEVICE_METHODS", "Document", "Loaded", "Results", "ResultsError",
           "assemble", "boot_id", "busy_load", "one_per_case", "repeated_note", "bounded_read",
           "device_time_valid", "drop_invalid_device_times", "find_json", "fingerprint_problem", "frame_from_rows",
           "incomplete_label", "is_journal", "load", "load_file", "machine_described", "read_journal", "read_text",
           "run_facts", "run_names"]


class ResultsError(ValueError):
    """A results file that cannot be used; the message is one line naming the file."""


@dataclass(frozen=True)
class Document:
    """A pytest-benchmark JSON document already in memory (parsed by a caller that had to look inside the file,
    or never written: the run's end summary), loaded like a file without reading or parsing it again. ``path``
    names it in messages and is its run's name."""

    path: Path
    data: Any


@dataclass
class Results:
    """Benchmarks as rows, plus what the report says about where they came from."""

    frame: pd.DataFrame
    machine_info: dict[str, Any]
    commit_info: dict[str, Any]
    sources: list[str]
    notes: list[str] = field(default_factory=list)
    #: One label per journal of a run that did not finish ("12 of 58 cases ..."); also in notes.
    incomplete: list[str] = field(default_factory=list)
    #: Each file's run name (its rows' ``run``) and the boot id it recorded (``xferbench_run.boot_id``; None in a
    #: run from before it was recorded), oldest run first: which machine instance each row came from.
    boot_ids: dict[str, str | None] = field(default_factory=dict)
    #: The newest file's own facts (``run_facts``): boot_id, started, load; empty when it recorded none.
    run: dict[str, Any] = field(default_factory=dict)
    #: Every run's rows, every instance of a case measured in more than one run included (``frame`` holds the one
    #: each reader reads: ``one_per_case``; its ``read`` column says which); None when no case was measured twice
    #: (then it is ``frame``).
    measured: pd.DataFrame | None = None
    #: Which instance each figure reads where cases were measured in more than one run (a sentence), else None.
    repeated: str | None = None
    #: The run ``--read-run`` named: read wherever it measured a case measured in more than one run.
    read_run: str | None = None

    @property
    def fingerprint(self) -> Fingerprint:
        """xferbench's section of the machine description, typed (contract.Fingerprint)."""
        return Fingerprint.of(self.machine_info)

    @property
    def simulated(self) -> dict[str, Any] | None:
        """The machine spec when the run was simulated (--xfer-simulate), else None."""
        return self.fingerprint.spec

    @property
    def has_accelerator(self) -> bool:
        devices = pd.unique(pd.concat([self.frame["src"], self.frame["dst"]]).dropna().astype(str))  # a few, read alone
        # Distributed rows name devices per rank ("rank0:cpu", "all:cuda"): look past the prefix.
        return any(re.sub(r"^(rank\d+|all):", "", device).split(":")[0] != "cpu" for device in devices)


def find_json(path: Path) -> list[Path]:
    """A file as itself; a folder (pytest-benchmark storage) as every JSON below it
    (``*.json``, and ``*.json.gz`` as a large run is kept).

    Anything that is not a regular file (a FIFO named ``*.json`` would block the read
    forever) is refused before it is opened; so is a path the system cannot even look up
    (a name too long, a loop of links).
    """
    try:
        files = [path]
        if path.is_dir():
            if not (files := sorted([*path.rglob("*.json"), *path.rglob("*.json.gz")])):
                raise ResultsError(f"{path}: no JSON files in this folder")
        elif not path.exists():
            raise ResultsError(f"{path}: no such file")
        for file in files:
            _regular(file)
        return files
    except OSError as error:
        raise ResultsError(f"{str(path)[:120]}: cannot read it ({error.strerror or type(error).__name__})") from None


def _regular(path: Path) -> None:
    try:
        mode = path.stat().st_mode
    except OSError as error:
        raise ResultsError(f"{path}: cannot read it ({error.__class__.__name__})") from None
    if not stat.S_ISREG(mode):
        raise ResultsError(f"{path}: not a regular file (a FIFO, device or socket); give a results file")


#: The most a run file may hold, read or decompressed: the full H200 run is 1.7 MB gzipped. Past it a file is no run
#: this suite wrote (a gzip bomb, a link to /dev/zero) and reading it would take the machine's memory.
MAX_RUN_BYTES = 256 * 2**20


def bounded_read(path: Path, limit: int | None = None, whole: bool = True) -> bytes:
    """At most ``limit`` bytes (default ``MAX_RUN_BYTES``) of a regular file, never blocking (a FIFO, a device or a
    socket is refused once opened, without waiting for a writer); ResultsError past ``limit`` when ``whole``, else its
    first bytes."""
    limit = MAX_RUN_BYTES if limit is None else limit  # read when called: a caller's bound moves with the module's
    try:
        return read_bounded(path, limit, whole=whole)
    except OSError as error:
        raise ResultsError(f"{path}: cannot read it ({error.strerror or type(error).__name__})") from None
    except NotRegular:
        raise ResultsError(f"{path}: not a regular file (a FIFO, device or socket); give a file") from None
    except TooLarge:
        raise ResultsError(f"{path}: larger than {limit // 2**20} MiB, which no run of this suite is; not read") from None


def read_text(path: Path) -> str:
    """The file's text; a gzipped file (a large run kept compressed: full.json.gz) decompressed. Told by its
    content, not its name: pytest writes plain JSON to ``--benchmark-json=run.json.gz``. Bounded: at most
    ``MAX_RUN_BYTES``, read or decompressed."""
    raw = bounded_read(path)
    try:
        if raw[:2] == b"\x1f\x8b":  # gzip's magic number
            with gzip.GzipFile(fileobj=io.BytesIO(raw)) as unzipped:
                raw = unzipped.read(MAX_RUN_BYTES + 1)
            if len(raw) > MAX_RUN_BYTES:
                raise ResultsError(f"{path}: decompresses past {MAX_RUN_BYTES // 2**20} MiB, which no run of this "
                                   "suite does (a gzip bomb?); not read")
        return raw.decode("utf-8")
    except (OSError, UnicodeDecodeError, EOFError, zlib.error) as error:  # BadGzipFile is an OSError
        raise ResultsError(f"{path}: cannot read it ({error.__class__.__name__})") from None


def _read(path: Path) -> dict[str, Any]:
    text = read_text(path)  # never from a FIFO, a device or a socket (the bounded reader)
    if not text.strip():
        raise ResultsError(f"{path}: the file is empty")
    if is_journal(path, text):
        return read_journal(path, text)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ResultsError(f"{path}: not JSON, or cut short (line {error.lineno}, column {error.colno}: {error.msg})") from None
    except (RecursionError, ValueError) as error:  # nesting past the stack; an integer of thousands of digits
        raise ResultsError(f"{path}: not a results file ({error.__class__.__name__}: nested too deeply "
                           "or a number too long)") from None
    return _checked(path, data)


def _checked(path: Path, data: Any) -> dict[str, Any]:
    """A parsed document checked as a pytest-benchmark run (the same checks, read from a file or not)."""
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list) or "machine_info" not in data:
        raise ResultsError(f"{path}: not a pytest-benchmark JSON file (it needs 'machine_info' and a 'benchmarks' list)")
    if not data["benchmarks"]:
        raise ResultsError(f"{path}: holds no benchmarks")
    _check_run_fields(path, data)
    data.pop("xfer_progress", None)  # only a journal's reading sets it; the saved field is xfer_completeness
    done = data.get("xfer_completeness")
    if isinstance(done, dict) and done.get("complete") is False:  # the run recorded it was cut short (journal.py)
        planned = done.get("planned")
        data["xfer_progress"] = (len(data["benchmarks"]), planned if type(planned) is int and planned > 0 else None)
    return data


def _check_run_fields(path: Path, data: dict[str, Any]) -> None:
    """The run-level fields the analysis reads, checked once; and every number of the run within what a float
    computes with (``bounded_read.out_of_range``), so that no reader converts a 401-digit count or a clock of 1e308."""
    if found := out_of_range(data):
        where, value = found
        shown = f"a number of {len(str(abs(value)))} digits" if isinstance(value, int) else repr(value)
        raise ResultsError(f"{path}: field {where!r:.80} is {shown}; every number of a run is within ±2**63, so the "
                           "file is not read")
    for name in ("machine_info", "commit_info"):
        if data.get(name) is not None and not isinstance(data[name], dict):
            raise ResultsError(f"{path}: field {name!r} must be an object, got {data[name]!r:.60}")
    # the page shows the first 12 characters of the commit's id
    for name, value in (("commit_info.id", (data.get("commit_info") or {}).get("id")), ("datetime", data.get("datetime"))):
        if value is not None and not isinstance(value, str):
            raise ResultsError(f"{path}: field {name!r} must be a string, got {value!r:.60}")
    if problem := fingerprint_problem(data.get("machine_info") or {}):
        raise ResultsError(f"{path}: field {problem}")


#: Numbers of a device's fingerprint (measure/hardware/machine.py) that the model and the report compute with.
_DEVICE_NUMBERS = ("memory_bytes", "l2_cache_bytes", "memory_peak_gbps", "sm_clock_max_mhz", "pcie_generation",
                   "pcie_width", "pcie_max_generation", "pcie_max_width", "nvlink_links")


def fingerprint_problem(machine_info: dict[str, Any]) -> str | None:
    """The first field of xferbench's fingerprint that the analysis reads and that is not of the kind
    measure/hardware/machine.py writes (``'machine_info.xferbench.devices' ..., got 5``), or None. Null is
    always allowed: a fingerprint says nothing it does not know."""
    def number(value: Any) -> bool:
        return value is None or (type(value) in (int, float) and 0 <= value <= MAX_BYTES)

    def objects(value: Any) -> bool:
        return value is None or (isinstance(value, list) and all(isinstance(v, dict) for v in value))

    # A section that is not an object at all (a foreign JSON's) reads as empty: it is left out at load (``machine_described``).
    block = Fingerprint.of(machine_info).section
    host = block.get("host")
    checks: list[tuple[str, Any, bool]] = []
    if block:
        caches = host.get("cache_bytes") if isinstance(host, dict) else None
        peers = block.get("peer_access")
        checks += [("xferbench.host", host, host is None or isinstance(host, dict)),
                   ("xferbench.host.cache_bytes", caches, caches is None
                    or (isinstance(caches, dict) and all(number(v) for v in caches.values()))),
                   ("xferbench.devices", block.get("devices"), objects(block.get("devices"))),
                   ("xferbench.peer_access", peers, peers is None or (isinstance(peers, list) and all(
                       isinstance(row, list) and all(type(v) is bool for v in row) for row in peers))),
                   ("xferbench.peer_plan", block.get("peer_plan"), plan_ok(block.get("peer_plan")))]
        for i, device in enumerate(block.get("devices") or [] if objects(block.get("devices")) else []):
            checks += [(f"xferbench.devices[{i}].device", device.get("device"),
                        device.get("device") is None or isinstance(device.get("device"), str)),
                       (f"xferbench.devices[{i}].nvlink_version", device.get("nvlink_version"),
                        device.get("nvlink_version") is None or type(device.get("nvlink_version")) in (str, int, float))]
            checks += [(f"xferbench.devices[{i}].{name}", device.get(name), number(device.get(name))) for name in _DEVICE_NUMBERS]
    return next((f"'machine_info.{name}' is not what xferbench writes there, got {value!r:.60}"
                 for name, value, ok in checks if not ok), None)


def is_journal(path: Path, text: str) -> bool:
    """A journal of a run (JSON Lines, ``measure/record/journal.py``): by its first line; a ``.jsonl`` name counts only
    when that line is not the start of a plain results file (pretty-printed ``{``, or one line with its benchmarks)."""
    head = text.lstrip()
    if head.startswith('{"xfer_journal"'):
        return True
    first = head.split("\n", 1)[0].strip()
    return path.suffix == ".jsonl" and first != "{" and '"benchmarks"' not in first


def read_journal(path: Path, text: str) -> dict[str, Any]:
    """A journal as a pytest-benchmark document, plus ``xfer_progress`` (finished, planned)
    when the run did not reach its end.

    A run killed mid-write leaves its last line cut short: that line is dropped (the
    benchmark it held was not finished); a bad line anywhere else is an error.
    """
    lines = text.splitlines()
    records: list[dict[str, Any]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (RecursionError, ValueError):  # JSONDecodeError is a ValueError
            if number == len(lines) and not text.endswith("\n"):
                break  # the write the interruption cut short
            raise ResultsError(f"{path}: journal line {number} is not JSON") from None
        if not isinstance(record, dict):
            raise ResultsError(f"{path}: journal line {number} is not a JSON object")
        records.append(record)
    header = records[0] if records else {}
    if not isinstance(header.get("xfer_journal"), int) or isinstance(header.get("xfer_journal"), bool):
        raise ResultsError(f"{path}: not an xferbench journal (its first line needs 'xfer_journal')")
    if not (benchmarks := [r["benchmark"] for r in records if "benchmark" in r]):
        raise ResultsError(f"{path}: the journal holds no finished benchmark (the run stopped before the first)")
    planned = header.get("planned")
    data: dict[str, Any] = {"machine_info": header.get("machine_info") or {}, "commit_info": header.get("commit_info") or {},
                            "datetime": header.get("datetime"), "benchmarks": benchmarks}
    _check_run_fields(path, data)
    ends = [r["end"] for r in records if isinstance(r.get("end"), dict)]
    if not ends or ends[-1].get("interrupted") is not False:
        total = planned if type(planned) is int and planned >= len(benchmarks) else None
        data["xfer_progress"] = (len(benchmarks), total)
    return data


def load_file(source: Path | Document, run: str | None = None) -> tuple[dict[str, Any], list[dict[str, Any]], int]:
    """One file's JSON (or a document's: checked the same, never parsed again, the caller's dict left unchanged),
    its xferbench rows (their run named ``run``, else the file's stem), and how many other benchmarks it held."""
    if isinstance(source, Document):
        path, data = source.path, _checked(source.path, dict(source.data) if isinstance(source.data, dict) else source.data)
    else:
        path, data = source, _read(source)
    run = path.stem if run is None else run
    ours, foreign = [], 0
    for bench in data["benchmarks"]:
        info = bench.get("extra_info") if isinstance(bench, dict) else None
        if not isinstance(info, dict) or "xfer_schema" not in info:
            foreign += 1
            continue
        name = bench.get("name")
        schema = info["xfer_schema"]
        if type(schema) is not int:
            raise ResultsError(f"{path}: benchmark {name!r:.80}: field 'xfer_schema' must be a whole number, got {schema!r:.60}")
        if schema > SCHEMA_VERSION:
            raise ResultsError(f"{path}: written by a newer xferbench (data schema {schema}); upgrade xferbench")
        ours.append(bench)
    try:
        # a case's blocks: one row from here on
        rows = rows_of(ours, run, data.get("datetime"), busy_load(run_facts(data)) is not None)
    except ContractError as error:
        raise ResultsError(f"{path}: {error}") from None
    if not rows:
        raise ResultsError(f"{path}: none of its {foreign} benchmarks are xferbench's (no extra_info.xfer_schema; "
                           f"{UNTRACKED_HINT})")
    if foreign:  # compare and history would otherwise drop them without a word
        print(f"xferbench: {path}: {foreign} benchmark(s) without an xferbench identity left out ({UNTRACKED_HINT})",
              file=sys.stderr)
    return data, rows, foreign


def load(paths: Sequence[Path | Document], prefer: str | None = None) -> Results:
    """Load results (files, folders of them, or documents already parsed); the last file's machine_info describes
    the run.

    When a case appears in several files, every instance is kept (``Results.measured``) and the rows every reader
    gets hold one per case: the one with more rounds, ties to the newest run, or the run ``prefer`` names where it
    measured the case (``one_per_case``); a note says how many cases and which run each reads. A journal of a run
    that did not finish is loaded with what it holds and labelled incomplete.
    """
    # A file named twice (run.json ./run.json, or a folder and a file in it) is one run, not a case measured again.
    unique: dict[tuple[int, int], Path | Document] = {}
    for file in (f for p in paths for f in ([p] if isinstance(p, Document) else find_json(Path(p)))):
        unique.setdefault(_file_identity(file), file)  # the first name given
    files = list(unique.values())
    named = [f.path if isinstance(f, Document) else f for f in files]
    return assemble([(path, *load_file(f, run)) for path, f, run in zip(named, files, run_names(named), strict=True)], prefer)


def run_names(paths: Sequence[Path]) -> list[str]:
    """Each file's run name: its stem, or where files share one (``a/run.json``, ``b/run.json``), its path from the
    folder they share, so that their rows stay apart and the CSV's ``run`` says which file each came from."""
    shared = {stem for stem, count in Counter(path.stem for path in paths).items() if count > 1}
    common = {stem: os.path.commonpath([os.path.abspath(p.parent) for p in paths if p.stem == stem]) for stem in shared}
    return [os.path.relpath(os.path.abspath(p), common[p.stem]) if p.stem in shared else p.stem for p in paths]


#: One file as ``load_file`` read it: its path, JSON, xferbench rows and count of other benchmarks.
Loaded = tuple[Path, dict[str, Any], list[dict[str, Any]], int]


def assemble(files: Sequence[Loaded], prefer: str | None = None) -> Results:
    """The Results of files already read (``load_file``), in the order given as sources: ``load``'s second half,
    for a caller that read a file for another purpose first (``history`` summarizing a folder)."""
    named = [path for path, _, _, _ in files]
    loaded = sorted(files, key=lambda item: str(item[1].get("datetime") or ""))
    _one_machine([(f, data.get("machine_info") or {}) for f, data, _, _ in loaded])
    every = frame_from_rows([row for _, _, file_rows, _ in loaded for row in file_rows])
    if prefer is not None and prefer not in set(every["run"]):
        raise ResultsError(f"no run named {prefer!r} among the files given (a run is a file's name without .json, or "
                           f"its path where files share one: {', '.join(sorted(set(every['run'])))})")
    every = every.assign(_row=np.arange(len(every)))
    frame = one_per_case(every, prefer)
    # Each measured row says whether it is the instance every reader reads (the CSV's ``read`` column).
    every = every.assign(read=every["_row"].isin(frame["_row"])).drop(columns="_row")
    frame = frame.drop(columns="_row")
    incomplete = [incomplete_label(f, data["xfer_progress"]) for f, data, _, _ in loaded if "xfer_progress" in data]
    notes = list(incomplete)
    frame, dropped = drop_invalid_device_times(frame)
    if dropped:
        notes.append(f"Left out, {count(dropped, 'device time')} the data contract does not count as measurements: "
                     "pageable copies (the host stages them) and blocking copies timed back to back by events "
                     "(the host paces them), recorded by an older xferbench.")
    if foreign := sum(item[3] for item in loaded):
        notes.append(f"Left out, not xferbench's: {count(foreign, 'benchmark')}.")
    if repeated := repeated_note(every, frame, prefer):
        notes.append(repeated)
    last = loaded[-1][1]
    return Results(frame=frame, machine_info=machine_described(last, notes),
                   commit_info=last.get("commit_info") or {}, sources=[str(f) for f in named], notes=notes,
                   incomplete=incomplete, boot_ids={file_rows[0]["run"]: boot_id(data) for _, data, file_rows, _ in loaded},
                   run=run_facts(last), measured=drop_invalid_device_times(every)[0] if repeated else None,
                   repeated=repeated, read_run=prefer)


def one_per_case(every: pd.DataFrame, prefer: str | None = None) -> pd.DataFrame:
    """One row per case of rows given oldest run first: the instance with the most rounds, ties to the newest run; the
    instance of the run ``prefer`` names wherever that run measured the case.

    A second run never displaces the first because it is newer: a short run after a full one (5-20 rounds against
    30-150, another boot of the machine) would replace the better-measured figures. The rows keep their order."""
    order = every.assign(_at=np.arange(len(every)), _named=every["run"].eq(prefer))  # a run is never named None
    chosen = order.sort_values(["_named", "rounds", "_at"]).drop_duplicates(subset="case_key", keep="last")
    return chosen.sort_values("_at").drop(columns=["_at", "_named"]).reset_index(drop=True)


def repeated_note(every: pd.DataFrame, frame: pd.DataFrame, prefer: str | None = None) -> str | None:
    """How many cases were measured in more than one run and which run each figure reads them from, or None."""
    counts = every["case_key"].value_counts()
    twice = counts[counts > 1].index
    if twice.empty:
        return None
    read = frame[frame["case_key"].isin(twice)]["run"].astype(str).value_counts()
    runs = ", ".join(f"{n} from {run}" for run, n in read.items())
    which = (f" the run named ({prefer}) where it measured the case, else" if prefer is not None else "") + \
        " the one with more rounds (ties: the newest run)"
    return (f"{count(len(twice), 'case')} {'was' if len(twice) == 1 else 'were'} measured in more than one run: each "
            f"figure and sentence reads one instance of each,{which}: {runs}. The others, "
            f"{count(others := len(every) - len(frame), 'instance')}, {'is' if others == 1 else 'are'} "
            "kept with the loaded data (a report's CSV lists every instance, its read column false for "
            "these), never averaged with these, drawn on one line with them nor divided by them.")


def boot_id(data: dict[str, Any]) -> str | None:
    """The boot id a run recorded (``xferbench_run.boot_id``: which boot of the machine it ran in), or None when
    it recorded none (a run from before, or a field not of the kind written there)."""
    run = data.get("xferbench_run")
    value = run.get("boot_id") if isinstance(run, dict) else None
    return value if isinstance(value, str) and value.strip() else None


def busy_load(facts: dict[str, Any]) -> str | None:
    """``load 9.1 on 2 CPUs, 63% of CPU time taken by other processes`` when the run's machine was
    busier than its cores (measure/hardware/machine.py records the load around each run, in the run's own facts
    ``facts``: ``run_facts``), else None."""
    found = facts.get("load")
    if not isinstance(found, dict):
        return None
    load: dict[str, Any] = found

    def number(name: str) -> float | None:  # a plain number from 0 up, not a bool, NaN nor an infinity
        value = load.get(name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
            return None
        return float(value)

    cpus = number("cpus")
    loads = [v for v in (number("load_before"), number("load_after")) if v is not None]
    if not cpus or not loads or max(loads) <= cpus:
        return None
    parts = [f"load {max(loads):g} on {cpus:g} CPUs"]
    for name, what in (("cpu_others", "taken by other processes"), ("cpu_steal", "stolen by the hypervisor")):
        shown = f"{number(name) or 0:.0%}"
        if shown != "0%":  # what prints as 0% says nothing (0.5% among them: it rounds to even)
            parts.append(f"{shown} of CPU time {what}")
    return ", ".join(parts)


def run_facts(data: dict[str, Any]) -> dict[str, Any]:
    """What a run recorded about itself rather than its machine: the top-level ``xferbench_run`` (``boot_id``,
    ``started``, ``load``). A run stored before it had that place kept its load in ``machine_info.xferbench.load``
    and no boot id: read from there, with ``boot_id`` None (each such file its own machine instance)."""
    facts = data.get("xferbench_run")
    if isinstance(facts, dict):
        return facts
    section = (data.get("machine_info") or {}).get("xferbench")
    load = section.get("load") if isinstance(section, dict) else None
    return {"boot_id": None, "started": None, "load": load} if isinstance(load, dict) else {}


def _file_identity(file: Path | Document) -> tuple[int, int]:
    """The file (device, inode): a document parsed from a file is that file; one never written is itself."""
    try:
        status = (file.path if isinstance(file, Document) else file).stat()
    except OSError:
        if isinstance(file, Document):
            return id(file), -1
        raise
    return status.st_dev, status.st_ino


def machine_described(data: dict[str, Any], notes: list[str] | None = None) -> dict[str, Any]:
    """A run's machine description without blocks that are not objects (a foreign JSON's ``cpu`` or
    ``xferbench``), which every reader takes for an object; a note says what was left out."""
    machine_info = data.get("machine_info") or {}
    odd = [name for name in ("cpu", "xferbench") if machine_info.get(name) is not None
           and not isinstance(machine_info[name], dict)]
    if odd and notes is not None:
        notes.append(f"machine_info.{' and '.join(odd)} not an object (a foreign or damaged JSON): left out, so "
                     "the machine's CPU, GPUs, links and caches are unknown here.")
    return {key: value for key, value in machine_info.items() if key not in odd}


def _one_machine(described: list[tuple[Path, dict[str, Any]]]) -> None:
    """Files merged into one report describe one machine: the page names one machine and reads one row of each
    case, so a run of another GPU, driver, torch or CPU would stand in for figures unnoticed."""
    newest, machine = described[-1]
    for path, other in described[:-1]:
        if differences := machine_differences(other, machine):
            raise ResultsError(f"{path} and {newest} come from different machines ({'; '.join(differences)}); "
                               "give them one at a time (xferbench compare sets two machines side by side)")


def incomplete_label(path: Path, progress: tuple[int, int | None]) -> str:
    """``Incomplete run: 12 of 58 cases finished before it stopped (run.journal.jsonl).``"""
    finished, planned = progress
    of = f" of {planned}" if planned is not None else ""
    return f"Incomplete run: {finished}{of} cases finished before it stopped ({path.name})."


def drop_invalid_device_times(frame: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """The frame with every device time ``device_time_valid`` refuses set to NaN, and how many were."""
    invalid = frame["device_seconds"].notna() & ~device_time_valid(frame)
    if not invalid.any():
        return frame, 0
    frame = frame.copy()
    frame.loc[invalid, "device_seconds"] = float("nan")
    return frame, int(invalid.sum())


def frame_from_rows(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    frame["device_seconds"] = pd.to_numeric(frame["device_seconds"], errors="coerce")
    # Text columns as plain objects: pandas keeps each string column a block of its own, so every row filter of the
    # report (hundreds a page) would take 40-odd blocks one by one; as objects they are one block, twice as fast.
    return frame.astype({c: object for c, dtype in frame.dtypes.items() if pd.api.types.is_string_dtype(dtype)}).copy()

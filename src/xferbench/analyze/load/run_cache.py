"""What ``history`` and ``compare`` need of each stored run, kept between commands so a folder of thousands of runs
is not parsed again every time.

Reading one stored run (parsing its JSON, checking every benchmark against the contract, summing up its rows) costs
about 4 ms of CPU, so 10,000 runs cost 40 s of it (shared among the cores the first time: ``history.load_storage``),
though each command needs only the newest run in full and, of the others, their time per case, their machine and
whether they finished (a ``RunSummary``). The summaries of a folder are kept in one JSON file in the user's cache
folder (``$XFERBENCH_CACHE_DIR``, else ``$XDG_CACHE_HOME/xferbench``, else ``~/.cache/xferbench``), never inside the
storage folder: an output is never an input, and a store's folder is committed as it is. A run's summary is used
only while its file keeps the size, modification and change times it had when it was summarized, and only while the
code that computed it is the same (a digest of the modules that read runs). The cache is never trusted: a file that
is damaged, of another version or of another folder, or holds one value of the wrong kind, is ignored as a whole and
written again; it is written atomically, and where it cannot be written (a read-only home) the commands work as
before, without it. Folders of fewer than ``CACHE_FROM`` runs, read in well under a second, keep no cache.

A cache folder may be shared (``$XFERBENCH_CACHE_DIR`` on a runner several jobs use), so what it holds must never
change a verdict from what the run files say: each cache file is signed (HMAC-SHA256) with a key of the user's own,
kept beside it readable by that user alone, and a file whose signature does not hold (forged, or written under another
key) is ignored. A link or a special file (a FIFO, /dev/zero) in the cache is neither followed nor read, and is
replaced, not written through, when the cache is saved; a cache that would lie inside the folder it describes is not
kept (it would be read as a run).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import secrets
import stat as stat_module
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ... import contract, families
from ...bounded_read import Refused, read_bounded
from . import blocks, case_time, results
from . import rows as bench_rows
from .results import fingerprint_problem

__all__ = ["CACHE_FROM", "Entry", "RunCache", "RunSummary", "Stamp", "cache_file", "read_entry", "read_summary",
           "summary_or_note"]

#: Folders of at least this many runs keep a cache of their summaries.
CACHE_FROM = 200
_FORMAT, _VERSION = "xferbench-run-summaries", 1


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


def read_summary(path: Path) -> tuple[RunSummary, results.Loaded]:
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
    summary = RunSummary(path, str(data.get("datetime") or ""), results.machine_described(data),
                         "xfer_progress" in data, times)
    return summary, (path, data, rows, foreign)


def read_entry(path: Path) -> tuple[Entry, results.Loaded | None]:
    """``read_summary``'s summary and what it read, or the one-line note that skips the file and None."""
    try:
        return read_summary(path)
    except results.ResultsError as error:
        return f"{error}; skipped", None


def summary_or_note(path: Path) -> Entry:
    """``read_entry``'s entry alone (picklable: run in worker processes, which send back no more than it)."""
    return read_entry(path)[0]


#: A file's identity in the cache: size, modification and change times (ns). A rewrite changes at least one.
Stamp = tuple[int, int, int]
#: What the cache holds for one file: its summary, or the one-line reason it is no readable run.
Entry = RunSummary | str


def stamp(path: Path) -> Stamp:
    status = path.stat()
    return status.st_size, status.st_mtime_ns, status.st_ctime_ns


def _cache_root() -> Path:
    root = os.environ.get("XFERBENCH_CACHE_DIR")
    return Path(root) if root else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "xferbench"


def cache_file(folder: Path) -> Path:
    """Where the summaries of ``folder`` are kept: one file per folder, named by a digest of its real path."""
    return _cache_root() / "runs" / (hashlib.sha256(os.path.realpath(folder).encode()).hexdigest()[:32] + ".json")


#: The largest cache file read: 10,000 runs of 600 cases take about 100 MB.
_MOST_BYTES = 1 << 30
_KEY_BYTES = 32


def _private_read(path: Path, limit: int) -> bytes | None:
    """A regular file of ours, not a link, at most ``limit`` bytes, read without ever blocking; else None."""
    try:
        return read_bounded(path, limit, follow_links=False, own_only=True)
    except (OSError, Refused):
        return None


def _key() -> bytes | None:
    """The user's signing key: made once (32 random bytes, mode 0600), used only while it is the user's own file
    that nobody else can read or write; None where there is none to be had (no cache then)."""
    path = _cache_root() / "key"
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(secrets.token_bytes(_KEY_BYTES))
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        if stat_module.S_IMODE(os.lstat(path).st_mode) & 0o077:
            return None
    except OSError:
        return None
    key = _private_read(path, _KEY_BYTES)
    return key if key is not None and len(key) == _KEY_BYTES else None


def _signed(key: bytes, body: bytes) -> bytes:
    return hmac.new(key, body, hashlib.sha256).hexdigest().encode() + b"\n" + body


def _verified(key: bytes, raw: bytes) -> bytes:
    """The body of a signed cache file; _Damaged when the signature does not hold."""
    mac, _, body = raw.partition(b"\n")
    _expect(hmac.compare_digest(mac, hmac.new(key, body, hashlib.sha256).hexdigest().encode()))
    return body


def _code_digest() -> str:
    """A digest of the modules whose code decides a summary: a summary computed by other code is not reused."""
    digest = hashlib.sha256()
    for module in (results, bench_rows, blocks, contract, families, case_time):
        digest.update(Path(str(module.__file__)).read_bytes())
    digest.update(Path(__file__).read_bytes())
    return digest.hexdigest()


class RunCache:
    """The summaries of one folder's runs, read from and written back to ``cache_file(folder)``; a run is named by
    its path below the folder, so ``runs`` and ``./runs`` share one cache."""

    def __init__(self, folder: Path) -> None:
        self.root = folder
        self.file = cache_file(folder)
        self.folder = os.path.realpath(folder)
        self.code = _code_digest()
        # A cache inside the folder it describes would be read as one of its runs: none is kept there.
        inside = Path(os.path.realpath(self.file.parent)).is_relative_to(self.folder)
        self.key = None if inside else _key()
        self.known: dict[str, tuple[Stamp, Entry]] = self._read()
        self.current: dict[str, tuple[Stamp, Entry]] = {}
        self.changed = False

    def get(self, path: Path, key: Stamp) -> Entry | None:
        """The file's summary (or why it is no run) when the file has not changed since; else None."""
        name = self._name(path)
        found = self.known.get(name)
        if found is None or found[0] != key:
            return None
        self.current[name] = found
        return found[1] if isinstance(found[1], str) else replace(found[1], path=path)

    def put(self, path: Path, key: Stamp, entry: Entry) -> None:
        self.current[self._name(path)] = (key, entry)
        self.changed = True

    def _name(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() if path.is_relative_to(self.root) else str(path)

    def save(self) -> None:
        """Write the summaries of the files seen this time (a file gone is forgotten), when any changed."""
        if not self.changed and len(self.current) == len(self.known):
            return
        machines: dict[str, int] = {}
        cases: dict[str, int] = {}
        runs = {name: _encoded(key, entry, machines, cases) for name, (key, entry) in self.current.items()}
        document = {"format": _FORMAT, "version": _VERSION, "code": self.code, "folder": self.folder,
                    "machines": [json.loads(text) for text in machines], "cases": list(cases), "runs": runs}
        if self.key is None:
            return
        try:
            self._replace(_signed(self.key, json.dumps(document, separators=(",", ":")).encode()))
        except OSError:  # a read-only or full cache folder: the next command reads the runs again
            pass

    def _replace(self, raw: bytes) -> None:
        """Write the cache file atomically, replacing whatever is at its name (a link is replaced, never followed:
        ``output.write_atomic`` would write through it, to the file it names)."""
        if self.file.parent.is_symlink():
            return
        self.file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=".xfb.", suffix=".tmp", dir=self.file.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(raw)
            os.replace(tmp, self.file)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _read(self) -> dict[str, tuple[Stamp, Entry]]:
        raw = None if self.key is None else _private_read(self.file, _MOST_BYTES)
        if raw is None:  # none yet, a link, a FIFO, another user's, too large, or no key
            return {}
        try:
            document = json.loads(_verified(self.key, raw)) if self.key else None
            return _decoded(document, self.code, self.folder)
        except (ValueError, RecursionError, _Damaged):  # unreadable, not JSON, forged, or not ours
            return {}


def _encoded(key: Stamp, entry: Entry, machines: dict[str, int], cases: dict[str, int]) -> dict[str, Any]:
    """One file's record; machine descriptions and case identities are stored once and named by their index."""
    if isinstance(entry, str):
        return {"stamp": list(key), "error": entry}
    machine = machines.setdefault(json.dumps(entry.machine_info, sort_keys=True, default=str), len(machines))
    times = [[cases.setdefault(case, len(cases)), time] for case, time in entry.times.items()]
    return {"stamp": list(key), "datetime": entry.datetime, "machine": machine,
            "incomplete": entry.incomplete, "times": times}


class _Damaged(ValueError):
    """A cache file that is not exactly what ``save`` writes."""


def _decoded(document: Any, code: str, folder: str) -> dict[str, tuple[Stamp, Entry]]:
    """Every record of a cache file, each value checked for its kind; _Damaged at the first that is not."""
    _expect(isinstance(document, dict) and document.get("format") == _FORMAT and document.get("version") == _VERSION
            and document.get("code") == code and document.get("folder") == folder)
    machines, cases, runs = document.get("machines"), document.get("cases"), document.get("runs")
    _expect(isinstance(machines, list) and isinstance(cases, list) and isinstance(runs, dict))
    _expect(all(_machine_ok(m) for m in machines) and all(isinstance(c, str) for c in cases))
    return {name: _record(name, record, machines, cases) for name, record in runs.items()}


def _machine_ok(machine: Any) -> bool:
    """A machine description the loader could have left: an object, its fingerprint of the kinds it checks."""
    return (isinstance(machine, dict) and fingerprint_problem(machine) is None
            and all(machine.get(block) is None or isinstance(machine[block], dict) for block in ("cpu", "xferbench")))


def _record(name: str, record: Any, machines: list[Any], cases: list[Any]) -> tuple[Stamp, Entry]:
    _expect(isinstance(record, dict))
    key = record.get("stamp")
    _expect(isinstance(key, list) and len(key) == 3 and all(type(v) is int for v in key))
    stamp_of: Stamp = (key[0], key[1], key[2])
    if "error" in record:
        _expect(isinstance(record["error"], str))
        return stamp_of, record["error"]
    when, machine, incomplete, times = (record.get(k) for k in ("datetime", "machine", "incomplete", "times"))
    _expect(isinstance(when, str) and type(incomplete) is bool)
    _expect(type(machine) is int and 0 <= machine < len(machines) and isinstance(times, list))
    found: dict[str, float] = {}
    for pair in times:
        _expect(isinstance(pair, list) and len(pair) == 2 and type(pair[0]) is int and 0 <= pair[0] < len(cases))
        _expect(type(pair[1]) is float and math.isfinite(pair[1]) and pair[1] > 0)
        found[cases[pair[0]]] = pair[1]
    return stamp_of, RunSummary(Path(name), when, machines[machine], incomplete, found)


def _expect(ok: bool) -> None:
    if not ok:
        raise _Damaged

"""The journal: each benchmark on disk the moment it is measured, so no interruption loses a run.

pytest-benchmark writes its JSON once, when the session ends: a run killed by a
timeout, the OOM killer or a GPU fault leaves nothing. This plugin appends every
finished benchmark, as the same dict pytest-benchmark would write, to a JSON Lines
file beside the results and flushes it to disk. ``xferbench report | compare``
read a journal like a results file and label a run that did not reach its end
incomplete ("12 of 58 cases"). On Ctrl-C, the benchmark that was cut off is dropped
so that pytest-benchmark's JSON holds exactly what finished.

It also records what the process holds after each benchmark (host RSS, pinned host
memory, device memory), so a long run that leaks shows it in its own results.

The saved JSON itself (``--benchmark-json`` and the autosaved history file) records whether
the run reached its end: ``xfer_completeness: {"planned", "finished", "complete"}``, so a run
cut short is labelled incomplete wherever it is read, journal or not.

A journal that cannot be written (a full disk) warns once and the run goes on: the JSON
written at the end still holds every finished case.

Lines: a header ``{"xfer_journal": 1, "datetime", "planned", "machine_info", "commit_info"}``,
then ``{"benchmark": {...}}`` per finished benchmark, ``{"failed": {"test", "reason"}}`` per test that
failed (its one-line reason: a stuck copy, a wrong result), and ``{"end": {"exitstatus",
"interrupted"}}`` when the session ends.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
import os
import re
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from ...output import OutputError, check_output, write_atomic
from ...units import first_line
from .pytest_benchmark_adapter import (
    benchmark_session,
    dumps,
    is_file_storage,
    next_storage_file,
    replace_save_json,
    replace_storage_save,
)

__all__ = ["JOURNAL_VERSION", "Journal", "journal_path", "memory_now", "unused_journal"]

JOURNAL_VERSION = 1
_JOURNAL = pytest.StashKey["Journal"]()
#: The benchmark tests collected (not skip-marked) and those that reached their end (passed, failed or skipped).
_PLANNED = pytest.StashKey[set[str]]()
_REACHED = pytest.StashKey[set[str]]()
_EXIT = pytest.StashKey[int]()
_SAVE_FAILED = pytest.StashKey[bool]()


class Journal:
    """An append-only JSON Lines file, each line flushed and fsync'd as it is written."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.finished: list[Any] = []  # pytest-benchmark's Metadata of each benchmark written
        self._handle: IO[str] | None = None
        self.failed: str | None = None  # why the journal stopped, once a write failed

    def open(self, header: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            try:  # never over an earlier run's journal, even one another run created since the name was chosen
                self._handle = open(self.path, "x", encoding="utf-8")
                break
            except FileExistsError:
                self.path = _next_name(self.path)
        self.write({"xfer_journal": JOURNAL_VERSION, **header})

    def write(self, record: dict[str, Any]) -> None:
        if self._handle is None:
            return
        try:
            # Non-finite floats as null: a journal line must stay strict JSON.
            self._handle.write(json.dumps(_finite(record), default=str) + "\n")
            self._handle.flush()
            os.fsync(self._handle.fileno())
        except OSError as error:  # a full disk, a file-size limit: the journal stops, the run goes on
            self._stop(error)

    def _stop(self, error: OSError) -> None:
        self.failed = f"{self.path}: {error.strerror or first_line(error)}"
        handle, self._handle = self._handle, None
        with contextlib.suppress(OSError):  # the same full disk refusing the buffered rest
            if handle is not None:
                handle.close()
        warnings.warn(pytest.PytestWarning(f"xferbench: the journal stopped ({self.failed}); the run goes on, and "
                                           "its JSON, written at the end, still holds every finished case"),
                      stacklevel=2)

    def close(self, record: dict[str, Any]) -> None:
        self.write(record)
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def journal_path(config: pytest.Config) -> Path | None:
    """Where this run's journal goes: ``--xfer-journal``; else beside ``--benchmark-json``
    (``run.json`` -> ``run.journal.jsonl``); else in the benchmark storage folder; a
    name already taken gets a counter, so an earlier journal is never overwritten."""
    given = config.getoption("xfer_journal")
    if given == "none":
        return None
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
    target = benchmark_json_path(config)
    if given:
        if Path(given).exists() and not Path(given).is_file():  # not DIR.jsonl beside a folder, nor /dev/null.jsonl
            raise OutputError(f"{given}: a folder or a device; give a file name, or 'none' for no journal")
        base = str(Path(given).with_suffix("")) if given.endswith(".jsonl") else given
    elif target:
        base = Path(target).with_suffix("").as_posix() + ".journal"
    else:
        storage = str(getattr(config.option, "benchmark_storage", "") or "file://./.benchmarks")
        if "://" in storage and not storage.startswith("file://"):
            return None  # elasticsearch storage: nowhere beside it on disk (a plain path is a folder, as for pytest-benchmark)
        base = str(Path(storage.removeprefix("file://")) / "journal" / stamp)
    return unused_journal(base)


def _next_name(path: Path) -> Path:
    """The journal name after ``path`` (``x.jsonl`` -> ``x.1.jsonl``, ``x.1.jsonl`` -> ``x.2.jsonl``)."""
    match = re.fullmatch(r"(.*)\.(\d+)\.jsonl", str(path))
    return unused_journal(match.group(1) if match else str(path)[: -len(".jsonl")])


def unused_journal(base: str) -> Path:
    """``base.jsonl``, or with a counter where that name is taken: an earlier journal is never overwritten."""
    path, counter = Path(base + ".jsonl"), 1
    while path.exists() or path.is_symlink():
        path, counter = Path(f"{base}.{counter}.jsonl"), counter + 1
    return path


def _trim_host_heap() -> None:
    """Hand freed heap memory back to the OS (glibc), so RSS shows what is held, not what the
    allocator kept after large payloads were freed; between benchmarks, outside any timing."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):  # musl and others have no malloc_trim
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)


def memory_now() -> dict[str, int]:
    """What the process holds now: resident host memory, pinned host memory and device
    memory allocated by torch (the last two only once CUDA is in use)."""
    memory: dict[str, int] = {}
    _trim_host_heap()
    try:
        with open("/proc/self/statm") as statm:
            memory["host_rss_bytes"] = int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # the peak: the best portable figure
        memory["host_rss_bytes"] = peak * (1 if sys.platform == "darwin" else 1024)
    torch = sys.modules.get("torch")  # never import it here: only report what the run already uses
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        if (stats := getattr(torch.cuda, "host_memory_stats", None)) is not None:
            memory["pinned_host_bytes"] = int(stats().get("allocated_bytes.current", 0))
        memory["device_bytes"] = sum(int(torch.cuda.memory_allocated(i)) for i in range(torch.cuda.device_count()))
    return memory


def benchmark_json_path(config: pytest.Config) -> Path | None:
    """Where ``--benchmark-json`` writes: a path from pytest-benchmark 5.3 on, an open file before."""
    if (target := getattr(config.option, "benchmark_json", None)) is None:
        return None
    return Path(target if isinstance(target, str | os.PathLike) else target.name)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("xferbench").addoption(
        "--xfer-journal", default=None, metavar="PATH",
        help="append each finished benchmark here as it is measured (default: beside --benchmark-json, else in the "
             "benchmark storage folder under journal/; 'none' turns it off)")


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    # After every configure (pytest-benchmark's makes its session last), before collection and measuring.
    config = session.config
    target = benchmark_json_path(config)
    if target:
        try:
            check_output(target, run=True)
        except OutputError as error:
            raise pytest.UsageError(f"--benchmark-json: {error}") from None
    bs = benchmark_session(config)
    if bs is not None:
        _save_json_atomically(bs)
    if bs is None or bs.disabled or bs.skip or getattr(config.option, "collectonly", False):
        return
    _check_storage(bs)
    try:
        path = journal_path(config)
        if path is None:
            return
        if target and os.path.realpath(path) == os.path.realpath(target):
            raise OutputError(f"{path}: is also --benchmark-json; the JSON written at the end would replace the journal")
        check_output(path, create_folder=True)
    except OutputError as error:
        raise pytest.UsageError(f"--xfer-journal: {error}") from None
    config.stash[_JOURNAL] = Journal(path)


def _check_storage(bs: Any) -> None:
    """With ``--benchmark-save`` / ``--benchmark-autosave``: the machine folder must be writable now, not found
    out after the whole run; and the save is made atomic and never over another run's file."""
    storage: Any = getattr(bs, "storage", None)
    if not (bs.save or bs.autosave) or not is_file_storage(storage):
        return  # no save, or not a folder (elasticsearch)
    try:
        check_output(storage.get(f"0000_{bs.save or bs.autosave}.json"), run=True, create_folder=True)
    except OutputError as error:
        raise pytest.UsageError(f"--benchmark-storage: {error}") from None

    def save(output_json: dict[str, Any], name: str) -> None:
        target = next_storage_file(storage, name)
        with _save_failure(bs, target):
            written = write_atomic(target, dumps(output_json), exclusive=True)
            storage.logger.info(f"Saved benchmark data in: {written}")

    replace_storage_save(storage, save)


@contextlib.contextmanager
def _save_failure(bs: Any, target: Path) -> Iterator[None]:
    """A save the disk refuses at the end (full, a file-size limit): one line naming the file, no traceback; the
    session's exit status then says the results were not all saved (see ``pytest_sessionfinish``)."""
    try:
        yield
    except OSError as error:
        journal = _journal(bs.config)
        kept = f"; the journal {journal.path} holds the finished cases" if journal and not journal.failed else ""
        bs.logger.error(f"xferbench: could not save {target} ({error.strerror or first_line(error)}); nothing was "
                        f"left half-written{kept}")
        bs.config.stash[_SAVE_FAILED] = True


def _save_json_atomically(bs: Any) -> None:
    """pytest-benchmark writes ``--benchmark-json`` with a plain open(): a run killed during that
    write would leave half a file over a whole one. Its session's ``save_json`` is replaced by the
    same serialization written atomically (the old file or the whole new one, never a mix). Before 5.3
    ``--benchmark-json`` is an open file: nothing is replaced."""

    def save_json(output_json: dict[str, Any]) -> None:
        with _save_failure(bs, Path(bs.json)):
            write_atomic(Path(bs.json), dumps(output_json))
            bs.logger.info(f"Wrote benchmark data in: {bs.json}", purple=True)

    replace_save_json(bs, save_json)


def _journal(config: pytest.Config) -> Journal | None:
    return config.stash.get(_JOURNAL, None)


def pytest_collection_finish(session: pytest.Session) -> None:
    planned = {item.nodeid for item in session.items
               if "benchmark" in getattr(item, "fixturenames", ()) and item.get_closest_marker("skip") is None}
    session.config.stash[_PLANNED], session.config.stash[_REACHED] = planned, set()
    journal = _journal(session.config)
    if journal is None:
        return
    bs = benchmark_session(session.config)
    header: dict[str, Any] = {"datetime": dt.datetime.now(dt.timezone.utc).isoformat(), "planned": len(planned),
                              "machine_info": {}, "commit_info": {}}
    try:
        header["machine_info"] = bs.get_machine_info()
        header["commit_info"] = session.config.hook.pytest_benchmark_generate_commit_info(config=session.config)
    except Exception as error:  # the journal never stops a run the JSON alone would survive
        header["header_error"] = first_line(error)
    try:
        journal.open(header)
    except OSError as error:  # a full disk at the start: measure all the same, the JSON is written at the end
        journal.failed = f"{journal.path}: {error.strerror or first_line(error)}"
        del session.config.stash[_JOURNAL]
        warnings.warn(pytest.PytestWarning(f"xferbench: no journal ({journal.failed}); the run goes on, and its JSON "
                                           "is written at the end"), stacklevel=1)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if call.when == "call" or report.skipped or report.failed:  # a test skipped or failed in setup ended too
        item.config.stash.setdefault(_REACHED, set()).add(item.nodeid)
    fixture = getattr(item, "funcargs", {}).get("benchmark")
    journal = _journal(item.config)
    if call.when == "call" and report.failed and call.excinfo is not None and journal is not None:
        journal.write({"failed": {"test": item.nodeid, "reason": first_line(call.excinfo.value)}})
    if call.when != "call" or fixture is None or not report.passed:
        return report
    if stats := getattr(fixture, "stats", None):  # a test that used the fixture but measured nothing has no stats
        fixture.extra_info.update(memory_now())  # with or without a journal
        if journal is not None:
            journal.write({"benchmark": stats.as_dict(include_data=True)})
            journal.finished.append(stats)
    return report


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> Any:
    journal = _journal(session.config)
    interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
    session.config.stash[_EXIT] = int(exitstatus)
    bs = benchmark_session(session.config)
    if interrupted and bs is not None and (journal is not None or _REACHED in session.config.stash):
        # The benchmark Ctrl-C cut off holds a few rounds: pytest-benchmark would save it as if finished.
        bs.benchmarks[:] = [b for b in bs.benchmarks if _reached(session.config, b)]
    try:
        result = yield
        if session.config.stash.get(_SAVE_FAILED, False):
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR  # never 0 (saved) nor 1 (tests failed)
        return result
    finally:
        if journal is not None:
            journal.close({"end": {"exitstatus": int(exitstatus), "interrupted": bool(interrupted),
                                   "finished": len(journal.finished)}})


def _reached(config: pytest.Config, benchmark: Any) -> bool:
    """Whether a benchmark's test reached its end (one Ctrl-C cut off did not)."""
    if (journal := _journal(config)) is not None:
        return any(benchmark is stats for stats in journal.finished)
    return getattr(benchmark, "fullname", None) in config.stash.get(_REACHED, set())


def completeness(config: pytest.Config, finished: int) -> dict[str, Any]:
    """Whether the run reached its end: every planned benchmark test ran (or was skipped) and nothing
    interrupted it. ``finished`` counts the benchmarks saved."""
    planned = config.stash.get(_PLANNED, set())
    interrupted = config.stash.get(_EXIT, 0) == pytest.ExitCode.INTERRUPTED
    complete = not interrupted and planned <= config.stash.get(_REACHED, set())
    return {"planned": len(planned), "finished": finished, "complete": complete}


def pytest_benchmark_update_json(config: pytest.Config, benchmarks: list[Any], output_json: dict[str, Any]) -> None:
    output_json["xfer_completeness"] = completeness(config, len(output_json.get("benchmarks") or []))

"""The journal: each benchmark on disk the moment it is measured, so no interruption loses a run.

pytest-benchmark writes its JSON once, when the session ends: a run killed by a
timeout, the OOM killer or a GPU fault leaves nothing. This plugin appends every
finished benchmark, as the same dict pytest-benchmark would write, to a JSON Lines
file beside the results and flushes it to disk. ``xferbench report | compare | check``
read a journal like a results file and label a run that did not reach its end
incomplete ("12 of 58 cases"). On Ctrl-C, the benchmark that was cut off is dropped
so that pytest-benchmark's JSON holds exactly what finished.

It also records what the process holds after each benchmark (host RSS, pinned host
memory, device memory), so a long run that leaks shows it in its own results.

Lines: a header ``{"xfer_journal": 1, "datetime", "planned", "machine_info", "commit_info"}``,
then ``{"benchmark": {...}}`` per finished benchmark, and ``{"end": {"exitstatus",
"interrupted"}}`` when the session ends.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import sys
from pathlib import Path
from typing import IO, Any

import pytest

from ..output import OutputError, check_output, write_atomic
from ..units import first_line

__all__ = ["JOURNAL_VERSION", "Journal", "journal_path", "memory_now", "unused_journal"]

JOURNAL_VERSION = 1
_JOURNAL = pytest.StashKey["Journal"]()


class Journal:
    """An append-only JSON Lines file, each line flushed and fsync'd as it is written."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.finished: list[Any] = []  # pytest-benchmark's Metadata of each benchmark written
        self._handle: IO[str] | None = None

    def open(self, header: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = open(self.path, "x", encoding="utf-8")  # never over an earlier run's journal
        self.write({"xfer_journal": JOURNAL_VERSION, **header})

    def write(self, record: dict[str, Any]) -> None:
        if self._handle is None:
            return
        # Non-finite floats as null: a journal line must stay strict JSON.
        self._handle.write(json.dumps(_finite(record), default=str) + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

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
        if not storage.startswith("file://"):
            return None  # elasticsearch storage: nowhere beside it on disk
        base = str(Path(storage.removeprefix("file://")) / "journal" / stamp)
    return unused_journal(base)


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
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # musl and others have no malloc_trim
        pass


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
        stats = getattr(torch.cuda, "host_memory_stats", None)
        if stats is not None:
            memory["pinned_host_bytes"] = int(stats().get("allocated_bytes.current", 0))
        memory["device_bytes"] = sum(int(torch.cuda.memory_allocated(i)) for i in range(torch.cuda.device_count()))
    return memory


def benchmark_json_path(config: pytest.Config) -> Path | None:
    """Where ``--benchmark-json`` writes: a path from pytest-benchmark 5.3 on, an open file before."""
    target = getattr(config.option, "benchmark_json", None)
    if target is None:
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
            check_output(target)
        except OutputError as error:
            raise pytest.UsageError(f"--benchmark-json: {error}") from None
    bs = getattr(config, "_benchmarksession", None)
    if bs is not None and callable(getattr(bs, "save_json", None)):
        _save_json_atomically(bs)
    if bs is None or bs.disabled or bs.skip or getattr(config.option, "collectonly", False):
        return
    try:
        path = journal_path(config)
        if path is None:
            return
        check_output(path, create_folder=True)
    except OutputError as error:
        raise pytest.UsageError(f"--xfer-journal: {error}") from None
    config.stash[_JOURNAL] = Journal(path)


def _save_json_atomically(bs: Any) -> None:
    """pytest-benchmark writes ``--benchmark-json`` with a plain open(): a run killed during that
    write would leave half a file over a whole one. Its session's ``save_json`` is replaced by the
    same serialization written atomically (the old file or the whole new one, never a mix)."""
    from pytest_benchmark.utils import safe_dumps

    if not isinstance(bs.json, str | os.PathLike):  # before 5.3: an open file, nothing to replace
        return

    def save_json(output_json: dict[str, Any]) -> None:
        write_atomic(Path(bs.json), safe_dumps(output_json, ensure_ascii=True, indent=4))
        bs.logger.info(f"Wrote benchmark data in: {bs.json}", purple=True)

    bs.save_json = save_json


def _journal(config: pytest.Config) -> Journal | None:
    return config.stash.get(_JOURNAL, None)


def pytest_collection_finish(session: pytest.Session) -> None:
    journal = _journal(session.config)
    if journal is None:
        return
    planned = sum(1 for item in session.items
                  if "benchmark" in getattr(item, "fixturenames", ()) and item.get_closest_marker("skip") is None)
    bs = session.config._benchmarksession  # type: ignore[attr-defined]
    header: dict[str, Any] = {"datetime": dt.datetime.now(dt.timezone.utc).isoformat(), "planned": planned,
                              "machine_info": {}, "commit_info": {}}
    try:
        header["machine_info"] = bs.get_machine_info()
        header["commit_info"] = session.config.hook.pytest_benchmark_generate_commit_info(config=session.config)
    except Exception as error:  # the journal never stops a run the JSON alone would survive
        header["header_error"] = first_line(error)
    journal.open(header)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    fixture = getattr(item, "funcargs", {}).get("benchmark")
    if call.when != "call" or fixture is None or not report.passed:
        return report
    stats = getattr(fixture, "stats", None)
    if stats:  # a test that used the fixture but measured nothing has no stats
        fixture.extra_info.update(memory_now())  # with or without a journal
        journal = _journal(item.config)
        if journal is not None:
            journal.write({"benchmark": stats.as_dict(include_data=True)})
            journal.finished.append(stats)
    return report


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> Any:
    journal = _journal(session.config)
    interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
    bs = getattr(session.config, "_benchmarksession", None)
    if journal is not None and interrupted and bs is not None:
        # The benchmark Ctrl-C cut off holds a few rounds: pytest-benchmark would save it as if finished.
        done = {id(stats) for stats in journal.finished}
        bs.benchmarks[:] = [b for b in bs.benchmarks if id(b) in done]
    try:
        return (yield)
    finally:
        if journal is not None:
            journal.close({"end": {"exitstatus": int(exitstatus), "interrupted": bool(interrupted),
                                   "finished": len(journal.finished)}})

"""Every place the suite reaches past pytest-benchmark's public hooks and fixture, in one module.

pytest-benchmark documents its hooks, the ``benchmark`` fixture and its JSON; what else the suite
needs (its session, its save functions, its statistics records) is private and may change in any
release. Each reach lives here, with why it is needed, so that a new pytest-benchmark is checked in
one place: ``tests/test_pytest_benchmark_adapter.py`` runs every one against the installed version,
which must lie in ``SUPPORTED`` (pyproject.toml declares the same range).

pytest_benchmark is imported inside each function: the plugin loads before pytest-benchmark's
session exists, and ``python -m xferbench.distributed`` starts faster without it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_benchmark.stats import Metadata

__all__ = ["MIN_PYTEST_BENCHMARK", "SUPPORTED", "benchmark_session", "commit_info", "dumps", "generate_json",
           "is_file_storage", "machine_info", "mark_used", "new_stats", "next_storage_file", "record",
           "replace_save_json", "replace_storage_save", "scale_rounds"]

#: The pytest-benchmark versions whose internals below were checked (pyproject.toml declares the same).
SUPPORTED = ">=5.3,<6"
#: The oldest pytest-benchmark whose API the suite uses (an older one fails mid-run): refused at configure.
MIN_PYTEST_BENCHMARK = (5, 3)


def benchmark_session(config: Any) -> Any:
    """pytest-benchmark's ``BenchmarkSession``, or None where the plugin is off (``-p no:benchmark``).

    Why: the measured benchmarks, the storage and the JSON writer are reached from no hook; the plugin
    keeps its session on the config as ``_benchmarksession``."""
    return getattr(config, "_benchmarksession", None)


def dumps(document: dict[str, Any]) -> str:
    """A run's JSON exactly as pytest-benchmark writes it (``safe_dumps``: non-serializable values as
    their repr, ASCII, indent 4). Why: a file written atomically in its place must read the same."""
    from pytest_benchmark.utils import safe_dumps

    return safe_dumps(document, ensure_ascii=True, indent=4)


def replace_save_json(session: Any, save: Callable[[dict[str, Any]], None]) -> bool:
    """Let ``save`` write ``--benchmark-json`` in place of the session's ``save_json``; False (nothing
    replaced) where the session has none or ``--benchmark-json`` is an open file (before 5.3).

    Why: pytest-benchmark writes it with a plain ``open()``, so a run killed during the write would leave
    half a file over a whole one, and it offers no hook for the write itself."""
    if not callable(getattr(session, "save_json", None)) or not isinstance(getattr(session, "json", None), str | os.PathLike):
        return False
    session.save_json = save
    return True


def is_file_storage(storage: Any) -> bool:
    """Whether ``--benchmark-storage`` is a folder (``FileStorage``), not elasticsearch."""
    return callable(getattr(storage, "get", None)) and hasattr(storage, "_next_num")


def next_storage_file(storage: Any, name: str) -> Path:
    """The file the next ``--benchmark-save NAME`` goes to (``0007_NAME.json``).

    Why: the number is the storage's private ``_next_num``; the suite checks the folder is writable up
    front and saves under that very name, never over another run's file."""
    return storage.get(f"{storage._next_num}_{name}.json")


def replace_storage_save(storage: Any, save: Callable[[dict[str, Any], str], None]) -> None:
    """Let ``save`` write each ``--benchmark-save`` / ``--benchmark-autosave`` file.

    Why: as with ``--benchmark-json``, the storage writes with a plain ``open()`` and has no hook."""
    storage.save = save


def scale_rounds(metadata: Any, times: int) -> None:
    """Turn a benchmark's statistics of ``times`` calls per iteration into per-call ones: each round's time
    divided by ``times``, and ``iterations`` counting calls. Nothing where nothing was timed
    (``--benchmark-disable``).

    Why: a call too short to time alone is timed ``times`` in a row, and the JSON, the table and
    ``--benchmark-compare`` must show one call. ``Stats`` keeps its rounds in ``data`` and caches what it
    derives from them (median, iqr, ...) as attributes: those caches are dropped so they are derived again."""
    if (stats := getattr(metadata, "stats", None)) is None:  # also where metadata is None
        return
    stats.data[:] = [duration / times for duration in stats.data]
    for name in vars(stats).copy():  # statistics derived (and cached) from the old data
        if name != "data":
            delattr(stats, name)
    metadata.iterations *= times


def mark_used(benchmark: Any, how: str) -> None:
    """Mark the ``benchmark`` fixture as used, as ``benchmark()`` or ``pedantic()`` would.

    Why: the distributed family times every rank itself; without the mark pytest-benchmark warns that the
    fixture was not used and leaves the test out."""
    benchmark._mode = how


def new_stats(benchmark: Any, iterations: int) -> Any:
    """The fixture's own statistics record for this test (``_make_stats``), to be filled with ``update``.

    Why: ``pedantic()`` would time rank 0 alone; with the record ``pedantic`` fills (one ``update`` of a
    round's total per round) the JSON, the table and ``--benchmark-compare`` see the slowest rank's
    rounds exactly as they see any other."""
    return benchmark._make_stats(iterations)


def record(fixture: Any, iterations: int, rounds: Iterable[float]) -> Metadata:
    """pytest-benchmark's record of one benchmark (``Metadata``) outside pytest, filled with ``rounds``
    (each the total time of ``iterations`` calls). ``fixture`` holds the names a ``BenchmarkFixture`` has.

    Why: ``python -m xferbench.distributed`` runs under torchrun, not pytest, yet writes the same JSON."""
    from pytest_benchmark.stats import Metadata

    metadata = Metadata(fixture, iterations=iterations, options={"timer": "perf_counter", "iterations": iterations})
    for seconds in rounds:
        metadata.update(seconds)
    return metadata


def machine_info() -> dict[str, Any]:
    """The ``machine_info`` pytest-benchmark records, outside pytest (torchrun)."""
    from pytest_benchmark.plugin import pytest_benchmark_generate_machine_info

    return pytest_benchmark_generate_machine_info()


def commit_info() -> dict[str, Any]:
    """The ``commit_info`` pytest-benchmark records, outside pytest (torchrun)."""
    from pytest_benchmark.utils import get_commit_info

    return get_commit_info()


def generate_json(records: list[Metadata], machine_info: dict[str, Any], commit_info: dict[str, Any]) -> dict[str, Any]:
    """The run's JSON document as pytest-benchmark builds it (its ``generate_json`` hook's own
    implementation, called without a pytest config), rounds included."""
    from pytest_benchmark.plugin import pytest_benchmark_generate_json

    return pytest_benchmark_generate_json(config=None, benchmarks=records, include_data=True, machine_info=machine_info,
                                          commit_info=commit_info)

"""measure/record/pytest_benchmark_adapter.py against the installed pytest-benchmark: the version lies in the range
pyproject.toml declares, and every reach into its internals still does what the suite relies on."""

import json
from importlib.metadata import version
from pathlib import Path
from types import SimpleNamespace

import pytest
import tomllib
from packaging.requirements import Requirement

from xferbench.measure.record import pytest_benchmark_adapter as adapter

ROOT = Path(__file__).resolve().parents[1]


def declared() -> Requirement:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return next(r for r in map(Requirement, project["dependencies"]) if r.name == "pytest-benchmark")


def test_the_installed_version_is_in_the_supported_range():
    assert str(declared().specifier) == str(Requirement(f"pytest-benchmark{adapter.SUPPORTED}").specifier)
    assert version("pytest-benchmark") in declared().specifier


def test_the_refused_versions_are_below_the_supported_range():
    lowest = ".".join(map(str, adapter.MIN_PYTEST_BENCHMARK))
    assert lowest in declared().specifier and f"{lowest}.0" in declared().specifier
    assert f"{adapter.MIN_PYTEST_BENCHMARK[0]}.{adapter.MIN_PYTEST_BENCHMARK[1] - 1}.99" not in declared().specifier


def fixture(name: str = "test_x[a]") -> SimpleNamespace:
    """The names pytest-benchmark's Metadata reads from a BenchmarkFixture."""
    return SimpleNamespace(name=name, fullname=f"t.py::{name}", has_error=False, group=None, param="a", params=None,
                           cprofile_stats=None, extra_info={})


def test_the_session_and_its_savers_are_where_the_suite_reaches(request, tmp_path):
    from pytest_benchmark.session import BenchmarkSession
    from pytest_benchmark.storage.file import FileStorage

    session = adapter.benchmark_session(request.config)
    assert isinstance(session, BenchmarkSession) and callable(session.save_json)
    storage = FileStorage(str(tmp_path), default_machine_id="m", logger=session.logger)
    assert adapter.is_file_storage(storage)
    assert adapter.next_storage_file(storage, "run") == storage.get("0001_run.json")
    assert adapter.benchmark_session(SimpleNamespace()) is None


def test_save_json_is_replaced_only_for_a_path():
    saved = []
    session = SimpleNamespace(json="run.json", save_json=lambda document: None)
    assert adapter.replace_save_json(session, saved.append)
    session.save_json({"a": 1})
    assert saved == [{"a": 1}]
    with open(__file__) as handle:  # before 5.3: an open file
        assert not adapter.replace_save_json(SimpleNamespace(json=handle, save_json=print), saved.append)


def test_dumps_is_what_pytest_benchmark_writes():
    from pytest_benchmark.utils import safe_dumps

    document = {"benchmarks": [{"name": "café", "time": 1.5, "odd": object}]}
    assert adapter.dumps(document) == safe_dumps(document, ensure_ascii=True, indent=4)
    assert json.loads(adapter.dumps(document))["benchmarks"][0]["name"] == "café"


def test_scaling_rounds_drops_every_statistic_derived_before():
    metadata = adapter.record(fixture(), 2, [4.0, 8.0, 6.0])
    assert metadata.stats.median == 3.0 and metadata.stats.min == 2.0  # per iteration, now cached
    adapter.scale_rounds(metadata, 10)
    assert metadata.iterations == 20
    assert metadata.stats.median == pytest.approx(0.3) and metadata.stats.max == pytest.approx(0.4)
    assert metadata.as_dict(include_data=True)["stats"]["data"] == pytest.approx([0.2, 0.4, 0.3])
    adapter.scale_rounds(None, 10)  # --benchmark-disable: nothing was timed


def test_a_run_built_outside_pytest():
    """What ``python -m xferbench.distributed`` writes: pytest-benchmark's own records and JSON, no pytest."""
    records = [adapter.record(fixture("test_x[a]"), 4, [4e-3, 8e-3]), adapter.record(fixture("test_x[b]"), 1, [1e-3])]
    document = adapter.generate_json(records, adapter.machine_info(), adapter.commit_info())
    assert document["machine_info"]["python_implementation"] and "id" in document["commit_info"]
    benchmarks = {b["name"]: b for b in json.loads(json.dumps(document))["benchmarks"]}
    assert benchmarks["test_x[a]"]["stats"]["median"] == pytest.approx(1.5e-3)
    assert benchmarks["test_x[a]"]["stats"]["data"] == pytest.approx([1e-3, 2e-3])
    assert benchmarks["test_x[b]"]["stats"]["rounds"] == 1 and benchmarks["test_x[b]"]["stats"]["iterations"] == 1


def test_the_fixture_records_rounds_it_did_not_time(pytester):
    """The distributed family's reach: mark the fixture used and fill its own record; the JSON holds those rounds."""
    pytester.makepyfile(test_one="""
from xferbench.measure.record.pytest_benchmark_adapter import mark_used, new_stats

def test_one(benchmark):
    mark_used(benchmark, "elsewhere")
    stats = new_stats(benchmark, 2)
    for seconds in (0.2, 0.4, 0.6):
        stats.update(seconds)
""")
    result = pytester.runpytest("--benchmark-json=run.json", "-p", "no:cacheprovider", "-W", "error::pytest.PytestWarning")
    result.assert_outcomes(passed=1)
    stats = json.loads((pytester.path / "run.json").read_text())["benchmarks"][0]["stats"]
    assert stats["rounds"] == 3 and stats["iterations"] == 2 and stats["median"] == pytest.approx(0.2)

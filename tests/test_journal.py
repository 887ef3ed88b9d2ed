"""The journal: a run killed or interrupted midway keeps every benchmark it finished."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch  # noqa: F401  loaded before pytester's in-process runs, which unload what they import

from xferbench.analyze.results import load
from xferbench.cli import main

SRC = Path(__file__).resolve().parents[1] / "src"
SAMPLE = Path(__file__).parent / "data" / "cpu-sample.json"
FAKE_CONFTEST = """
pytest_plugins = ("xferbench.measure.plugin",)
from fakes import FakeBackend

def pytest_xfer_make_backend(config):
    return FakeBackend(gpus=0)
"""

#: A real run: the host family for real, then a benchmark that never finishes.
BENCH = '''
import os, time
import pytest

@pytest.mark.xfer("host")
def test_host(xfer_case, xfer):
    xfer(xfer_case)

def test_zz_never_ends(benchmark):
    calls = []

    def step():  # three rounds recorded, then one that never ends
        calls.append(1)
        if len(calls) == 4:
            open(os.environ["XFER_MARK"], "w").close()
            time.sleep(600)

    benchmark.pedantic(step, rounds=10)
'''


def start_run(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
    (tmp_path / "conftest.py").write_text('pytest_plugins = ("xferbench.measure.plugin",)\n')
    (tmp_path / "test_run.py").write_text(BENCH)
    mark = tmp_path / "reached.mark"
    env = {**os.environ, "PYTHONPATH": str(SRC), "XFER_MARK": str(mark)}
    run = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--xfer-devices=cpu", "--xfer-sizes=4B,1KiB",
         "--benchmark-max-time=0.01", "test_run.py", *args],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while not mark.exists():
        if run.poll() is not None or time.monotonic() > deadline:
            run.kill()
            pytest.fail("the run ended or stalled before its last benchmark:\n" + run.communicate()[0].decode()[-3000:])
        time.sleep(0.1)
    return run, mark


def journal_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


class TestInterruptedRun:
    def test_sigkill_midway_leaves_a_journal_that_reports(self, tmp_path, capsys):
        """A run killed by SIGKILL in its last benchmark: the journal holds every finished case,
        and report, compare and check read it and label it incomplete (N of M)."""
        run, _ = start_run(tmp_path, f"--benchmark-json={tmp_path / 'run.json'}")
        run.send_signal(signal.SIGKILL)
        run.communicate()
        assert not (tmp_path / "run.json").exists()  # pytest-benchmark itself saved nothing
        journal = tmp_path / "run.journal.jsonl"
        lines = journal_lines(journal)
        finished = [line["benchmark"] for line in lines if "benchmark" in line]
        planned = lines[0]["planned"]
        assert len(finished) == planned - 1 >= 4
        assert not any("end" in line for line in lines)
        label = f"Incomplete run: {len(finished)} of {planned} cases finished before it stopped (run.journal.jsonl)."

        assert main(["report", str(journal), "-o", str(tmp_path / "report.html")]) == 0
        assert label in capsys.readouterr().out
        assert label in (tmp_path / "report.html").read_text()
        assert main(["check", str(journal)]) == 0
        assert label in capsys.readouterr().out
        assert main(["compare", str(journal), str(journal)]) == 0
        assert f"new: {label}" in capsys.readouterr().out
        assert len(load([journal]).frame) == len(finished)

    def test_ctrl_c_ends_with_valid_json_of_what_finished(self, tmp_path):
        """Ctrl-C in the last benchmark: the JSON holds exactly the finished cases, not the one cut off."""
        out = tmp_path / "run.json"
        run, _ = start_run(tmp_path, f"--benchmark-json={out}")
        run.send_signal(signal.SIGINT)
        run.communicate(timeout=120)
        names = [b["name"] for b in json.loads(out.read_text())["benchmarks"]]
        lines = journal_lines(tmp_path / "run.journal.jsonl")
        assert names == [line["benchmark"]["name"] for line in lines if "benchmark" in line]
        assert "test_zz_never_ends" not in names and len(names) >= 4
        assert lines[-1]["end"] == {"exitstatus": 2, "interrupted": True, "finished": len(names)}
        assert load([tmp_path / "run.journal.jsonl"]).incomplete
        assert load([out]).incomplete == []  # pytest-benchmark's JSON does not know the run was cut


HEADER = {"xfer_journal": 1, "datetime": "2026-01-01T00:00:00", "planned": 3, "machine_info": {}, "commit_info": {}}


class TestJournalFile:

    @pytest.fixture
    def bench(self):
        return json.loads(SAMPLE.read_text())["benchmarks"][:2]

    def write(self, tmp_path, lines, tail=""):
        path = tmp_path / "run.journal.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in lines) + tail)
        return path

    def test_cut_short_last_line_is_dropped(self, tmp_path, bench):
        """A kill in the middle of a write leaves half a line: it is the unfinished case, not an error."""
        path = self.write(tmp_path, [HEADER, {"benchmark": bench[0]}], tail=json.dumps({"benchmark": bench[1]})[:200])
        results = load([path])
        assert len(results.frame) == 1
        assert results.incomplete == ["Incomplete run: 1 of 3 cases finished before it stopped (run.journal.jsonl)."]

    def test_finished_run_is_not_labelled(self, tmp_path, bench):
        path = self.write(tmp_path, [HEADER, *({"benchmark": b} for b in bench),
                                     {"end": {"exitstatus": 0, "interrupted": False, "finished": 2}}])
        assert load([path]).incomplete == []

    @pytest.mark.parametrize(("lines", "tail", "message"), [
        ([{"benchmark": {}}], "", "not an xferbench journal"),
        ([HEADER], "", "holds no finished benchmark"),
        ([HEADER, {"xfer_journal": 1}], "{oops\n", "journal line 3 is not JSON"),
        ([HEADER, [1, 2]], "", "journal line 2 is not a JSON object"),
        ([{**HEADER, "machine_info": [1]}, {"benchmark": {}}], "", "field 'machine_info' must be an object"),
    ])
    def test_bad_journal_is_exit_2(self, tmp_path, capsys, lines, tail, message):
        path = self.write(tmp_path, lines, tail)
        assert main(["check", str(path)]) == 2
        assert message in capsys.readouterr().err

    def test_never_overwrites_an_earlier_journal(self, tmp_path, pytester):
        """A second run beside the same JSON gets a new journal name: the first run's stays as it was."""
        pytester.makeconftest(FAKE_CONFTEST)
        pytester.makepyfile(test_one="def test_one(benchmark):\n    benchmark(sum, [1, 2])\n")
        first = pytester.path / "run.journal.jsonl"
        first.write_text("earlier run\n")
        result = pytester.runpytest("--benchmark-json=run.json", "--benchmark-max-time=0.001")
        result.assert_outcomes(passed=1)
        assert first.read_text() == "earlier run\n"
        assert journal_lines(pytester.path / "run.journal.1.jsonl")[-1]["end"]["finished"] == 1

    def test_given_journal_that_exists_gets_a_counter(self, pytester):
        pytester.makeconftest(FAKE_CONFTEST)
        pytester.makepyfile(test_one="def test_one(benchmark):\n    benchmark(sum, [1, 2])\n")
        (pytester.path / "mine.jsonl").write_text("kept\n")
        pytester.runpytest("--xfer-journal=mine.jsonl", "--benchmark-max-time=0.001").assert_outcomes(passed=1)
        assert (pytester.path / "mine.jsonl").read_text() == "kept\n"
        assert journal_lines(pytester.path / "mine.1.jsonl")[-1]["end"]["finished"] == 1

    def test_unwritable_journal_folder_stops_before_measuring(self, pytester):
        pytester.makeconftest(FAKE_CONFTEST)
        pytester.makepyfile(test_one="def test_one(benchmark):\n    raise AssertionError('measured')\n")
        (pytester.path / "file").write_text("")
        result = pytester.runpytest("--xfer-journal=file/run.jsonl")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["*--xfer-journal: file/run.jsonl: file is not a folder*"])


def two_passes(ops: tuple[str, ...]) -> str:
    """A bench file with the families ``ops`` twice in one process: a pass, then the same cases again."""
    return "import os\nimport pytest\n\nLEAKED = []\n" + "\n".join(f'''
@pytest.mark.xfer("{op}")
def test_pass{n}_{op}(xfer_case, xfer):
    xfer(xfer_case)
    if os.environ.get("XFER_LEAK") and {n} == 2:  # only to show that this test sees a leak
        LEAKED.append(b"x" * int(os.environ["XFER_LEAK"]))
''' for n in (1, 2) for op in ops)


#: Host memory a second pass may add over the first: slack, not a payload per case (one 16 MiB
#: payload kept per case adds 16 MiB per case). Measured on a 2-core VM: 0.1 MiB, heap trimmed.
MAX_GROWTH = 16 * 2**20
HOST_FAMILIES = ("create", "host", "noop")
SIMULATED = ("--xfer-simulate=" + str(Path(__file__).resolve().parents[1] / "examples" / "sim-2gpu-pcie5-nvlink.toml"),)


class TestLongRun:
    @pytest.mark.parametrize(("ops", "machine"), [
        (HOST_FAMILIES, ("--xfer-devices=cpu",)),
        (("h2d", "d2h", "d2d", "peer", *HOST_FAMILIES), SIMULATED),
    ], ids=["cpu", "simulated-2gpu"])
    def test_second_pass_holds_no_more_memory_than_the_first(self, tmp_path, ops, machine):
        """Each benchmark records the host RSS after it; the second pass over the same cases ends
        each family within a bound of where the first pass ended it."""
        (tmp_path / "conftest.py").write_text('pytest_plugins = ("xferbench.measure.plugin",)\n')
        (tmp_path / "test_twice.py").write_text(two_passes(ops))
        out = tmp_path / "run.json"
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *machine, "--xfer-sizes=4B,16MiB",
             "--benchmark-max-time=0.01", f"--benchmark-json={out}", "test_twice.py"],
            cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(SRC)}, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-3000:]
        load([out])  # the recorded memory passes the loader's validation
        # Raw JSON, in run order (load would merge the two passes: they are the same cases).
        after: dict[tuple[str, str], int] = {}
        for bench in json.loads(out.read_text())["benchmarks"]:
            family, run = bench["extra_info"]["op"], bench["name"][len("test_pass"):][0]
            after[family, run] = bench["extra_info"]["host_rss_bytes"]  # the last one: where the family ended
        growth = {family: after[family, "2"] - after[family, "1"] for family in ops}
        assert all(g < MAX_GROWTH for g in growth.values()), f"host RSS grew in the second pass: {growth}"
        assert all(rss > 0 for rss in after.values())


class TestMemoryNow:
    def test_pinned_and_device_memory_once_cuda_is_in_use(self, monkeypatch):
        """With CUDA initialized, pinned host bytes (host allocator) and device bytes (all devices) are recorded."""
        import types

        from xferbench.measure.journal import memory_now

        cuda = types.SimpleNamespace(is_available=lambda: True, is_initialized=lambda: True, device_count=lambda: 2,
                                     host_memory_stats=lambda: {"allocated_bytes.current": 3 * 2**20},
                                     memory_allocated=lambda i: (i + 1) * 2**30)
        monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
        memory = memory_now()
        assert memory["pinned_host_bytes"] == 3 * 2**20
        assert memory["device_bytes"] == 3 * 2**30
        assert memory["host_rss_bytes"] > 0

    def test_cuda_never_initialized_by_recording(self, monkeypatch):
        """Before CUDA is in use, nothing is asked of it (asking would create a context on every GPU)."""
        import types

        from xferbench.measure.journal import memory_now

        def untouchable(*args):
            raise AssertionError("touched CUDA")

        cuda = types.SimpleNamespace(is_available=lambda: True, is_initialized=lambda: False,
                                     device_count=untouchable, host_memory_stats=untouchable, memory_allocated=untouchable)
        monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
        assert set(memory_now()) == {"host_rss_bytes"}


def test_benchmark_json_target_is_found_whether_a_path_or_an_open_file(tmp_path):
    """pytest-benchmark before 5.3 hands --benchmark-json over as an open file, 5.3 as a path:
    the journal goes beside it either way (a file object once crashed every run)."""
    from types import SimpleNamespace

    from xferbench.measure.journal import benchmark_json_path

    target = tmp_path / "run.json"
    with target.open("wb") as handle:
        for given in (str(target), target, handle):
            config = SimpleNamespace(option=SimpleNamespace(benchmark_json=given))
            assert benchmark_json_path(config) == target  # type: ignore[arg-type]
    assert benchmark_json_path(SimpleNamespace(option=SimpleNamespace())) is None  # type: ignore[arg-type]

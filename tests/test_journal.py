"""The journal: a run killed or interrupted midway keeps every benchmark it finished."""

import itertools
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch  # noqa: F401  loaded before pytester's in-process runs, which unload what they import

import xferbench.analyze.report.findings  # noqa: F401  likewise the run's summary (scipy: numpy.fft loads once only)
from xferbench.analyze.load.results import load
from xferbench.cli import main
from xferbench.measure.record import journal as jr
from xferbench.measure.session.blocks import BLOCKS

from fakes import CPU_ONLY_CONFTEST

SRC = Path(__file__).resolve().parents[1] / "src"
SAMPLE = Path(__file__).parent / "data" / "cpu-sample.json"

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


#: Starts the run as a shell starts a foreground job: SIGINT at its default (so that Python turns it
#: into KeyboardInterrupt) and no signal blocked, whatever this test process inherited or set up.
AS_A_SHELL_STARTS_IT = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                        "signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execv(sys.executable, sys.argv[1:])")


def start_run(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
    (tmp_path / "conftest.py").write_text('pytest_plugins = ("xferbench.measure.session.plugin",)\n')
    (tmp_path / "test_run.py").write_text(BENCH)
    mark = tmp_path / "reached.mark"
    env = {**os.environ, "PYTHONPATH": str(SRC), "XFER_MARK": str(mark)}
    run = subprocess.Popen(
        [sys.executable, "-c", AS_A_SHELL_STARTS_IT, sys.executable, "-X", "faulthandler", "-m", "pytest", "-q",
         "-p", "no:cacheprovider", "--xfer-devices=cpu", "--xfer-sizes=4B,1KiB", "--benchmark-max-time=0.01",
         "test_run.py", *args],
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
        last_blocks = 2  # the reference cases' (host copy_ at 4 B and 1 KiB) last blocks, after the one never ending
        assert len(finished) == planned - 1 - last_blocks >= 4
        assert not any("end" in line for line in lines)
        label = f"Incomplete run: {len(finished)} of {planned} cases finished before it stopped (run.journal.jsonl)."

        assert main(["report", str(journal), "-o", str(tmp_path / "report.html")]) == 0
        assert label in capsys.readouterr().out
        assert label in (tmp_path / "report.html").read_text()
        assert main(["compare", str(journal), str(journal)]) == 0
        assert f"new: {label}" in capsys.readouterr().out
        # each reference's other blocks finished: one row each
        assert len(load([journal]).frame) == len(finished) - last_blocks * (BLOCKS - 2)

    def test_ctrl_c_ends_with_valid_json_of_what_finished(self, tmp_path):
        """Ctrl-C in the last benchmark: the JSON holds exactly the finished cases, not the one cut off."""
        out = tmp_path / "run.json"
        run, _ = start_run(tmp_path, f"--benchmark-json={out}")
        run.send_signal(signal.SIGINT)
        try:
            run.communicate(timeout=120)
        except subprocess.TimeoutExpired:  # say where it is stuck: faulthandler prints every thread on SIGABRT
            run.send_signal(signal.SIGABRT)
            pytest.fail("the run did not end within 120 s of Ctrl-C:\n" + run.communicate()[0].decode()[-6000:])
        names = [b["name"] for b in json.loads(out.read_text())["benchmarks"]]
        lines = journal_lines(tmp_path / "run.journal.jsonl")
        assert names == [line["benchmark"]["name"] for line in lines if "benchmark" in line]
        assert "test_zz_never_ends" not in names and len(names) >= 4
        assert lines[-1]["end"] == {"exitstatus": 2, "interrupted": True, "finished": len(names)}
        assert load([tmp_path / "run.journal.jsonl"]).incomplete
        assert load([out]).incomplete  # the JSON itself records that the run was cut short (xfer_completeness)


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
        assert main(["compare", str(path), str(path)]) == 2
        assert message in capsys.readouterr().err

    def test_never_overwrites_an_earlier_journal(self, tmp_path, pytester):
        """A second run beside the same JSON gets a new journal name: the first run's stays as it was."""
        pytester.makeconftest(CPU_ONLY_CONFTEST)
        pytester.makepyfile(test_one="def test_one(benchmark):\n    benchmark(sum, [1, 2])\n")
        first = pytester.path / "run.journal.jsonl"
        first.write_text("earlier run\n")
        result = pytester.runpytest("--benchmark-json=run.json", "--benchmark-max-time=0.001")
        result.assert_outcomes(passed=1)
        assert first.read_text() == "earlier run\n"
        assert journal_lines(pytester.path / "run.journal.1.jsonl")[-1]["end"]["finished"] == 1

    def test_given_journal_that_exists_gets_a_counter(self, pytester):
        pytester.makeconftest(CPU_ONLY_CONFTEST)
        pytester.makepyfile(test_one="def test_one(benchmark):\n    benchmark(sum, [1, 2])\n")
        (pytester.path / "mine.jsonl").write_text("kept\n")
        pytester.runpytest("--xfer-journal=mine.jsonl", "--benchmark-max-time=0.001").assert_outcomes(passed=1)
        assert (pytester.path / "mine.jsonl").read_text() == "kept\n"
        assert journal_lines(pytester.path / "mine.1.jsonl")[-1]["end"]["finished"] == 1

    def test_unwritable_journal_folder_stops_before_measuring(self, pytester):
        pytester.makeconftest(CPU_ONLY_CONFTEST)
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


@pytest.mark.slow
class TestLongRun:
    @pytest.mark.parametrize(("ops", "machine"), [
        (HOST_FAMILIES, ("--xfer-devices=cpu",)),
        (("h2d", "d2h", "d2d", "peer", *HOST_FAMILIES), SIMULATED),
    ], ids=["cpu", "simulated-2gpu"])
    def test_second_pass_holds_no_more_memory_than_the_first(self, tmp_path, ops, machine):
        """Each benchmark records the host RSS after it; the second pass over the same cases ends
        each family within a bound of where the first pass ended it."""
        (tmp_path / "conftest.py").write_text('pytest_plugins = ("xferbench.measure.session.plugin",)\n')
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

        from xferbench.measure.record.journal import memory_now

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

        from xferbench.measure.record.journal import memory_now

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

    from xferbench.measure.record.journal import benchmark_json_path

    target = tmp_path / "run.json"
    with target.open("wb") as handle:
        for given in (str(target), target, handle):
            config = SimpleNamespace(option=SimpleNamespace(benchmark_json=given))
            assert benchmark_json_path(config) == target  # type: ignore[arg-type]
    assert benchmark_json_path(SimpleNamespace(option=SimpleNamespace())) is None  # type: ignore[arg-type]


# -- The journal's parts, unit by unit: fast, no pytest run inside ------------------------------------------------



def fake_config(tmp_path, given=None, json_path=None, storage=None, bs=None, collectonly=False):
    """What the journal reads of pytest's config: --xfer-journal, --benchmark-json/-storage, the benchmark session."""
    option = SimpleNamespace(benchmark_json=json_path, collectonly=collectonly)
    if storage is not None:
        option.benchmark_storage = storage
    return SimpleNamespace(getoption=lambda name: {"xfer_journal": given}[name], option=option,
                           stash=pytest.Stash(), _benchmarksession=bs)


class TestJournalPath:
    def test_none_turns_it_off(self, tmp_path):
        assert jr.journal_path(fake_config(tmp_path, given="none", json_path=str(tmp_path / "run.json"))) is None

    def test_given_path_wins_and_gets_jsonl(self, tmp_path):
        json_path = str(tmp_path / "run.json")
        assert jr.journal_path(fake_config(tmp_path, str(tmp_path / "mine.jsonl"), json_path)) == tmp_path / "mine.jsonl"
        assert jr.journal_path(fake_config(tmp_path, str(tmp_path / "mine"), json_path)) == tmp_path / "mine.jsonl"
        assert jr.journal_path(fake_config(tmp_path, str(tmp_path / "mine.log"), json_path)) == tmp_path / "mine.log.jsonl"

    def test_beside_the_benchmark_json(self, tmp_path):
        config = fake_config(tmp_path, json_path=str(tmp_path / "run.json"))
        assert jr.journal_path(config) == tmp_path / "run.journal.jsonl"

    def test_a_taken_name_gets_the_next_free_counter(self, tmp_path):
        """An earlier journal, or a link where one was, is never written over: .1, then .2."""
        config = fake_config(tmp_path, json_path=str(tmp_path / "run.json"))
        (tmp_path / "run.journal.jsonl").write_text("first\n")
        assert jr.journal_path(config) == tmp_path / "run.journal.1.jsonl"
        (tmp_path / "run.journal.1.jsonl").symlink_to(tmp_path / "gone")  # dangling: still taken
        assert jr.journal_path(config) == tmp_path / "run.journal.2.jsonl"

    def test_in_the_storage_folder_named_by_utc_time(self, tmp_path):
        path = jr.journal_path(fake_config(tmp_path, storage=f"file://{tmp_path / 'store'}"))
        assert path is not None and path.parent == tmp_path / "store" / "journal"
        assert re.fullmatch(r"20\d{6}T\d{6}\.jsonl", path.name), path.name

    def test_the_stamp_is_utc_whatever_the_local_zone(self, tmp_path, monkeypatch):
        """Journals of machines in different zones sort as the runs happened: the name is UTC."""
        import datetime as dt
        import time as time_module

        monkeypatch.setenv("TZ", "Asia/Kolkata")  # UTC+5:30, no daylight saving
        time_module.tzset()
        try:
            path = jr.journal_path(fake_config(tmp_path, storage=f"file://{tmp_path}"))
        finally:
            monkeypatch.undo()
            time_module.tzset()
        assert path is not None
        stamp = dt.datetime.strptime(path.stem, "%Y%m%dT%H%M%S").replace(tzinfo=dt.timezone.utc)
        assert abs(dt.datetime.now(dt.timezone.utc) - stamp) < dt.timedelta(hours=1)  # not 5.5 hours off

    def test_default_storage_is_dot_benchmarks(self, tmp_path):
        for storage in (None, ""):
            path = jr.journal_path(fake_config(tmp_path, storage=storage))
            assert path is not None and path.parent == Path(".benchmarks") / "journal"

    def test_no_journal_beside_elasticsearch_storage(self, tmp_path):
        assert jr.journal_path(fake_config(tmp_path, storage="elasticsearch+http://host:9200/bench")) is None


class TestJournalWrites:
    def test_header_first_then_records_each_on_disk_at_once(self, tmp_path):
        journal = jr.Journal(tmp_path / "new" / "folder" / "run.jsonl")
        assert journal.finished == []
        journal.open({"planned": 3, "where": tmp_path})
        journal.write({"benchmark": {"name": "a", "stats": {"data": [1.0, float("nan")], "max": float("inf"),
                                                           "ids": (1, -math.inf)}}})
        # Read while it is still open: a kill now would leave these lines.
        assert journal_lines(journal.path) == [
            {"xfer_journal": 1, "planned": 3, "where": str(tmp_path)},
            {"benchmark": {"name": "a", "stats": {"data": [1.0, None], "max": None, "ids": [1, None]}}}]
        journal.close({"end": {"finished": 1}})
        assert journal_lines(journal.path)[-1] == {"end": {"finished": 1}}
        journal.write({"after": "close"})  # nothing more once closed
        journal.close({"again": 1})
        assert len(journal_lines(journal.path)) == 3

    def test_json_is_strict(self, tmp_path):
        journal = jr.Journal(tmp_path / "run.jsonl")
        journal.open({})
        journal.write({"x": float("nan")})
        journal.close({})
        assert "NaN" not in journal.path.read_text()

    def test_never_opens_over_an_earlier_file(self, tmp_path):
        """A file made under its name since the name was chosen (another run): the journal takes the next name."""
        (tmp_path / "run.jsonl").write_text("earlier\n")
        journal = jr.Journal(tmp_path / "run.jsonl")
        journal.open({})
        assert (tmp_path / "run.jsonl").read_text() == "earlier\n" and journal.path == tmp_path / "run.1.jsonl"

    def test_nothing_is_written_before_open(self, tmp_path):
        journal = jr.Journal(tmp_path / "run.jsonl")
        journal.write({"benchmark": {}})
        journal.close({"end": {}})
        assert not journal.path.exists()

    def test_finite_keeps_every_finite_value(self):
        assert jr._finite({"a": [1, 2.5, "x", None, True], "b": {"c": (0.0,)}}) == {
            "a": [1, 2.5, "x", None, True], "b": {"c": [0.0]}}


class TestMemoryRecorded:
    def test_resident_memory_from_statm_pages(self, monkeypatch):
        import io
        import os as os_module

        monkeypatch.delitem(sys.modules, "torch", raising=False)
        monkeypatch.setattr(jr, "open", lambda path: io.StringIO("900 25 3 1 0 5 0\n") if path == "/proc/self/statm"
                            else open(path), raising=False)
        assert jr.memory_now() == {"host_rss_bytes": 25 * os_module.sysconf("SC_PAGE_SIZE")}

    @pytest.mark.parametrize("statm", [OSError("no /proc"), "", "x y"])
    def test_without_statm_the_peak_in_kib_is_used(self, monkeypatch, statm):
        import io
        import resource

        def fake_open(path):
            if isinstance(statm, Exception):
                raise statm
            return io.StringIO(statm)

        monkeypatch.delitem(sys.modules, "torch", raising=False)
        monkeypatch.setattr(jr, "open", fake_open, raising=False)
        monkeypatch.setattr(resource, "getrusage",
                            lambda who: SimpleNamespace(ru_maxrss=7 if who == resource.RUSAGE_SELF else 10**9))
        monkeypatch.setattr(jr.sys, "platform", "linux")
        assert jr.memory_now() == {"host_rss_bytes": 7 * 1024}
        monkeypatch.setattr(jr.sys, "platform", "darwin")  # macOS reports bytes
        assert jr.memory_now() == {"host_rss_bytes": 7}

    def test_freed_heap_is_handed_back_before_reading(self, monkeypatch):
        """Without malloc_trim the allocator keeps freed payloads and RSS reads as a leak."""
        import ctypes

        calls = []
        monkeypatch.setattr(ctypes, "CDLL", lambda name: SimpleNamespace(malloc_trim=lambda pad: calls.append((name, pad))))
        monkeypatch.setattr(jr.sys, "platform", "linux")
        jr._trim_host_heap()
        assert calls == [("libc.so.6", 0)]
        monkeypatch.setattr(jr.sys, "platform", "darwin")
        jr._trim_host_heap()
        assert len(calls) == 1

    def test_no_malloc_trim_is_no_error(self, monkeypatch):
        import ctypes

        def missing(name):
            raise OSError("no libc.so.6")

        monkeypatch.setattr(jr.sys, "platform", "linux")
        monkeypatch.setattr(ctypes, "CDLL", missing)
        jr._trim_host_heap()
        monkeypatch.setattr(ctypes, "CDLL", lambda name: SimpleNamespace())
        jr._trim_host_heap()

    def test_cuda_unavailable_or_without_host_stats(self, monkeypatch):
        import types

        cuda = types.SimpleNamespace(is_available=lambda: False, is_initialized=lambda: True)
        monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
        assert set(jr.memory_now()) == {"host_rss_bytes"}
        cuda = types.SimpleNamespace(is_available=lambda: True, is_initialized=lambda: True, device_count=lambda: 1,
                                     memory_allocated=lambda i: 5)
        monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
        memory = jr.memory_now()
        assert memory["device_bytes"] == 5 and "pinned_host_bytes" not in memory
        cuda.host_memory_stats = lambda: {}
        assert jr.memory_now()["pinned_host_bytes"] == 0


def test_the_option_as_help_shows_it():
    added = []
    parser = SimpleNamespace(getgroup=lambda name: SimpleNamespace(
        addoption=lambda *args, **kwargs: added.append((name, args, kwargs))))
    jr.pytest_addoption(parser)  # type: ignore[arg-type]
    assert added == [("xferbench", ("--xfer-journal",), {
        "default": None, "metavar": "PATH",
        "help": "append each finished benchmark here as it is measured (default: beside --benchmark-json, else in "
                "the benchmark storage folder under journal/; 'none' turns it off)"})]


def benchmark_session(**flags):
    return SimpleNamespace(**({"disabled": False, "skip": False, "benchmarks": [], "save": None, "autosave": False,
                               "get_machine_info": lambda: {"node": "box"}} | flags))


class TestSessionStart:
    def test_a_journal_is_made_ready_beside_the_json(self, tmp_path):
        config = fake_config(tmp_path, json_path=str(tmp_path / "run.json"), bs=benchmark_session())
        jr.pytest_sessionstart(SimpleNamespace(config=config))  # type: ignore[arg-type]
        journal = jr._journal(config)  # type: ignore[arg-type]
        assert journal is not None and journal.path == tmp_path / "run.journal.jsonl"
        assert not journal.path.exists()  # opened once the cases are known

    def test_the_storage_journal_folder_is_created_when_needed(self, tmp_path):
        """The first autosaved run has no storage folder yet: its journal folder is made, not refused."""
        config = fake_config(tmp_path, storage=f"file://{tmp_path / 'store'}", bs=benchmark_session())
        jr.pytest_sessionstart(SimpleNamespace(config=config))  # type: ignore[arg-type]
        journal = jr._journal(config)  # type: ignore[arg-type]
        assert journal is not None and journal.path.parent == tmp_path / "store" / "journal"

    @pytest.mark.parametrize("why", [{"bs": None}, {"bs": "disabled"}, {"bs": "skip"}, {"collectonly": True},
                                     {"given": "none"}])
    def test_no_journal_when_nothing_is_measured_or_it_is_off(self, tmp_path, why):
        bs = None if why.get("bs", "") is None else benchmark_session(**({why["bs"]: True} if "bs" in why else {}))
        config = fake_config(tmp_path, given=why.get("given"), json_path=str(tmp_path / "run.json"), bs=bs,
                             collectonly=why.get("collectonly", False))
        jr.pytest_sessionstart(SimpleNamespace(config=config))  # type: ignore[arg-type]
        assert jr._journal(config) is None  # type: ignore[arg-type]

    def test_the_json_is_saved_atomically(self, tmp_path):
        """pytest-benchmark's save_json is replaced: the same JSON, written whole by rename, and said."""
        said = []
        bs = benchmark_session(json=str(tmp_path / "run.json"), save_json=lambda data: None,
                               logger=SimpleNamespace(info=lambda text, **style: said.append((text, style))))
        (tmp_path / "run.json").write_text("an earlier run\n")
        jr.pytest_sessionstart(SimpleNamespace(config=fake_config(tmp_path, bs=bs)))  # type: ignore[arg-type]
        bs.save_json({"benchmarks": [{"name": "café", "time": 1.5}]})
        assert json.loads((tmp_path / "run.json").read_text()) == {"benchmarks": [{"name": "café", "time": 1.5}]}
        assert "caf\\u00e9" in (tmp_path / "run.json").read_text()  # ASCII, as pytest-benchmark writes it
        assert (tmp_path / "run.json").read_text().startswith('{\n    "benchmarks"')  # pytest-benchmark's layout
        assert said == [(f"Wrote benchmark data in: {tmp_path / 'run.json'}", {"purple": True})]

    def test_an_open_file_or_no_save_json_is_left_alone(self, tmp_path):
        """Before pytest-benchmark 5.3 --benchmark-json is an open file: nothing to replace; a session
        without save_json is not touched."""
        def original(data):
            return None

        with (tmp_path / "run.json").open("w") as handle:
            bs = benchmark_session(json=handle, save_json=original)
            jr.pytest_sessionstart(SimpleNamespace(config=fake_config(tmp_path, bs=bs)))  # type: ignore[arg-type]
            assert bs.save_json is original
        bs = benchmark_session(json=str(tmp_path / "run.json"), save_json="not callable")
        jr.pytest_sessionstart(SimpleNamespace(config=fake_config(tmp_path, bs=bs)))  # type: ignore[arg-type]
        assert bs.save_json == "not callable"

    def test_json_in_a_missing_folder_stops_before_measuring(self, tmp_path):
        config = fake_config(tmp_path, json_path=str(tmp_path / "nowhere" / "run.json"), bs=None)
        with pytest.raises(pytest.UsageError, match=rf"^--benchmark-json: {re.escape(str(tmp_path))}/nowhere/run\.json: "
                                                    r"the folder .*nowhere does not exist$"):
            jr.pytest_sessionstart(SimpleNamespace(config=config))  # type: ignore[arg-type]

    def test_a_journal_that_cannot_be_written_stops_before_measuring(self, tmp_path):
        (tmp_path / "file").write_text("")
        config = fake_config(tmp_path, given=str(tmp_path / "file" / "run.jsonl"), bs=benchmark_session())
        with pytest.raises(pytest.UsageError, match=r"^--xfer-journal: .*file/run\.jsonl: .*is not a folder$"):
            jr.pytest_sessionstart(SimpleNamespace(config=config))  # type: ignore[arg-type]


def item(fixtures=("benchmark",), skip=False):
    return SimpleNamespace(fixturenames=fixtures, get_closest_marker=lambda name: object() if skip and name == "skip"
                           else None, nodeid=f"test_x.py::test_{next(_IDS)}")


_IDS = itertools.count()


class TestCollectionFinish:
    def session(self, tmp_path, bs, commit=None):
        config = fake_config(tmp_path, bs=bs)
        commit = commit or (lambda config: {"id": "abc"} if config is this else {})
        this = config
        config.hook = SimpleNamespace(pytest_benchmark_generate_commit_info=commit)
        config.stash[jr._JOURNAL] = jr.Journal(tmp_path / "run.jsonl")
        items = [item(), item(), item(skip=True), item(fixtures=("tmp_path",)), SimpleNamespace()]
        return SimpleNamespace(config=config, items=items)

    def test_header_plans_the_benchmarks_that_will_run(self, tmp_path):
        session = self.session(tmp_path, benchmark_session())
        jr.pytest_collection_finish(session)  # type: ignore[arg-type]
        (header,) = journal_lines(tmp_path / "run.jsonl")
        assert header.pop("datetime").endswith("+00:00")  # UTC, ISO
        assert header == {"xfer_journal": 1, "planned": 2, "machine_info": {"node": "box"}, "commit_info": {"id": "abc"}}

    def test_a_failing_fingerprint_is_noted_not_fatal(self, tmp_path):
        def broken():
            raise RuntimeError("nvml gone\nsecond line")

        jr.pytest_collection_finish(self.session(tmp_path, benchmark_session(get_machine_info=broken)))  # type: ignore[arg-type]
        (header,) = journal_lines(tmp_path / "run.jsonl")
        assert (header["header_error"], header["machine_info"], header["commit_info"]) == ("nvml gone", {}, {})

    def test_a_failing_commit_info_keeps_the_machine(self, tmp_path):
        def broken(config):
            raise OSError("no git")

        jr.pytest_collection_finish(self.session(tmp_path, benchmark_session(), commit=broken))  # type: ignore[arg-type]
        (header,) = journal_lines(tmp_path / "run.jsonl")
        assert (header["header_error"], header["machine_info"], header["commit_info"]) == ("no git", {"node": "box"}, {})

    def test_no_journal_no_file(self, tmp_path):
        session = self.session(tmp_path, benchmark_session())
        del session.config.stash[jr._JOURNAL]
        jr.pytest_collection_finish(session)  # type: ignore[arg-type]
        assert not (tmp_path / "run.jsonl").exists()


class Stats:
    def __init__(self, name):
        self.name = name

    def as_dict(self, include_data):
        return {"name": self.name, "data": [1.0] if include_data else None}


def make_report(config, stats, when="call", passed=True, fixture=True, error=None):
    """Drive the makereport wrapper as pluggy does: up to the yield, then the report back in."""
    extra: dict = {}
    funcargs = {"benchmark": SimpleNamespace(stats=stats, extra_info=extra)} if fixture else {}
    hook = jr.pytest_runtest_makereport(SimpleNamespace(funcargs=funcargs, config=config,  # type: ignore[arg-type]
                                                        nodeid="test_x.py::test_a"),
                                        SimpleNamespace(when=when, excinfo=error and SimpleNamespace(value=error)))  # type: ignore[arg-type]
    next(hook)
    report = SimpleNamespace(passed=passed, skipped=False, failed=not passed)
    with pytest.raises(StopIteration) as done:
        hook.send(report)
    assert done.value.value is report
    return extra


class TestEachBenchmark:
    def journal(self, tmp_path):
        config = fake_config(tmp_path)
        config.stash[jr._JOURNAL] = journal = jr.Journal(tmp_path / "run.jsonl")
        journal.open({})
        return config, journal

    def test_a_finished_benchmark_is_written_with_its_rounds_and_memory(self, tmp_path, monkeypatch):
        monkeypatch.setattr(jr, "memory_now", lambda: {"host_rss_bytes": 42})
        config, journal = self.journal(tmp_path)
        stats = Stats("a")
        assert make_report(config, stats) == {"host_rss_bytes": 42}
        assert journal_lines(journal.path)[1:] == [{"benchmark": {"name": "a", "data": [1.0]}}]
        assert journal.finished == [stats]

    @pytest.mark.parametrize("skipped", [{"when": "setup"}, {"when": "teardown"}, {"passed": False},
                                         {"fixture": False}, {"stats": None}])
    def test_what_did_not_finish_is_not_written(self, tmp_path, monkeypatch, skipped):
        monkeypatch.setattr(jr, "memory_now", lambda: {"host_rss_bytes": 42})
        config, journal = self.journal(tmp_path)
        assert make_report(config, **({"stats": Stats("a")} | skipped)) == {}
        assert len(journal_lines(journal.path)) == 1 and journal.finished == []

    def test_a_failed_call_is_written_with_its_one_line_reason(self, tmp_path):
        """A case that failed (a stuck copy) leaves its reason in the journal, not a benchmark."""
        config, journal = self.journal(tmp_path)
        make_report(config, Stats("a"), passed=False, error=RuntimeError("cuda:1 stuck\nmore"))
        assert journal_lines(journal.path)[1:] == [{"failed": {"test": "test_x.py::test_a", "reason": "cuda:1 stuck"}}]
        assert journal.finished == []

    def test_memory_recorded_without_a_journal_too(self, tmp_path, monkeypatch):
        monkeypatch.setattr(jr, "memory_now", lambda: {"host_rss_bytes": 42})
        assert make_report(fake_config(tmp_path), Stats("a")) == {"host_rss_bytes": 42}


class TestSessionFinish:
    def finish(self, tmp_path, exitstatus, fail=False):
        first, cut = Stats("first"), Stats("cut off")
        bs = benchmark_session(benchmarks=[first, cut])
        config = fake_config(tmp_path, bs=bs)
        config.stash[jr._JOURNAL] = journal = jr.Journal(tmp_path / "run.jsonl")
        journal.open({})
        journal.finished.append(first)
        hook = jr.pytest_sessionfinish(SimpleNamespace(config=config), exitstatus)  # type: ignore[arg-type]
        next(hook)
        with pytest.raises(RuntimeError if fail else StopIteration) as done:
            hook.throw(RuntimeError("save failed")) if fail else hook.send("saved")
        if not fail:
            assert done.value.value == "saved"
        return [b.name for b in bs.benchmarks], journal_lines(journal.path)[-1]

    def test_ctrl_c_drops_the_benchmark_it_cut_off(self, tmp_path):
        saved, end = self.finish(tmp_path, pytest.ExitCode.INTERRUPTED)
        assert saved == ["first"]
        assert end == {"end": {"exitstatus": 2, "interrupted": True, "finished": 1}}

    def test_a_finished_session_keeps_every_benchmark(self, tmp_path):
        saved, end = self.finish(tmp_path, pytest.ExitCode.TESTS_FAILED)
        assert saved == ["first", "cut off"]
        assert end == {"end": {"exitstatus": 1, "interrupted": False, "finished": 1}}

    def test_the_end_is_written_even_when_saving_fails(self, tmp_path):
        _, end = self.finish(tmp_path, 0, fail=True)
        assert end == {"end": {"exitstatus": 0, "interrupted": False, "finished": 1}}

    def test_without_a_journal_nothing_is_dropped(self, tmp_path):
        bs = benchmark_session(benchmarks=["a", "b"])
        hook = jr.pytest_sessionfinish(SimpleNamespace(config=fake_config(tmp_path, bs=bs)), 2)  # type: ignore[arg-type]
        next(hook)
        with pytest.raises(StopIteration):
            hook.send(None)
        assert bs.benchmarks == ["a", "b"]


@pytest.mark.hostile
class TestOutputsNeverDestroyInputs:
    def test_benchmark_json_folder_checked_before_measuring(self, pytester):
        """pytest-benchmark would find a missing folder only when the run ends, after every measurement."""
        pytester.makeconftest('pytest_plugins = ("xferbench.measure.record.journal",)')
        pytester.makepyfile(test_one="def test_one(benchmark):\n    raise AssertionError('measured')\n")
        result = pytester.runpytest("--benchmark-json=missing/run.json")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["*--benchmark-json: missing/run.json: the folder missing does not exist*"])


@pytest.mark.hostile
class TestOptionValues:
    @pytest.mark.parametrize("kind", ["folder", "device"])
    def test_journal_onto_a_folder_or_device_is_refused(self, pytester, tmp_path, kind):
        """--xfer-journal=DIR used to write DIR.jsonl beside the folder (and /dev/null, /dev/null.jsonl)."""
        import stat

        target = tmp_path / "given"
        if kind == "folder":
            target.mkdir()
        else:
            try:
                os.mknod(target, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
            except PermissionError:
                pytest.skip("making a device node needs root")
        pytester.makeconftest('pytest_plugins = ("xferbench.measure.record.journal",)')
        pytester.makepyfile(test_one="def test_one(benchmark):\n    raise AssertionError('measured')\n")
        result = pytester.runpytest("--benchmark-only", f"--xfer-journal={target}")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([f"*--xfer-journal: {target}: a folder or a device*"])
        assert not Path(f"{target}.jsonl").exists()


class TestAJournalThatStops:
    """A disk that fills mid-run stops the journal, not the run; one that refuses it at the start leaves none."""

    class FullDisk:
        def __init__(self, refuse_close=False):
            self.refuse_close, self.closed = refuse_close, False

        def write(self, text):
            raise OSError(28, "No space left on device")

        def close(self):
            self.closed = True
            if self.refuse_close:
                raise OSError(28, "No space left on device")

    @pytest.mark.parametrize("refuse_close", [False, True])
    def test_a_full_disk_stops_the_journal_with_one_warning(self, tmp_path, refuse_close):
        journal = jr.Journal(tmp_path / "run.jsonl")
        journal.open({})
        real, disk = journal._handle, self.FullDisk(refuse_close)
        journal._handle = disk
        with pytest.warns(pytest.PytestWarning) as warned:
            journal.write({"benchmark": {}})
        real.close()
        assert journal.failed == f"{tmp_path / 'run.jsonl'}: No space left on device" and disk.closed
        assert [str(w.message) for w in warned] == [
            f"xferbench: the journal stopped ({journal.failed}); the run goes on, and its JSON, written at the end, "
            "still holds every finished case"]
        journal.write({"benchmark": {}})  # nothing more, and no second warning
        journal.close({"end": {}})
        assert len(journal_lines(journal.path)) == 1

    def test_an_error_without_a_reason_is_named_by_its_first_line(self, tmp_path):
        journal = jr.Journal(tmp_path / "run.jsonl")
        with pytest.warns(pytest.PytestWarning):
            journal._stop(OSError("file too large\nmore"))
        assert journal.failed == f"{tmp_path / 'run.jsonl'}: file too large"

    @pytest.mark.parametrize("error, why", [(OSError(28, "No space left on device"), "No space left on device"),
                                            (OSError("quota\nmore"), "quota")])
    def test_a_journal_refused_at_the_start_is_no_journal(self, tmp_path, monkeypatch, error, why):
        session = TestCollectionFinish().session(tmp_path, benchmark_session())
        journal = jr._journal(session.config)

        def refuse(header):
            raise error

        monkeypatch.setattr(journal, "open", refuse)
        with pytest.warns(pytest.PytestWarning) as warned:
            jr.pytest_collection_finish(session)  # type: ignore[arg-type]
        assert journal.failed == f"{tmp_path / 'run.jsonl'}: {why}" and jr._journal(session.config) is None
        assert [str(w.message) for w in warned] == [
            f"xferbench: no journal ({journal.failed}); the run goes on, and its JSON is written at the end"]


class TestJournalNames:
    def test_the_next_name_counts_on_from_a_counter(self, tmp_path):
        for name in ("run.jsonl", "run.1.jsonl"):
            (tmp_path / name).write_text("")
        assert jr._next_name(tmp_path / "run.1.jsonl") == tmp_path / "run.2.jsonl"
        assert jr._next_name(tmp_path / "run.jsonl") == tmp_path / "run.2.jsonl"
        assert jr._next_name(tmp_path / "run.v2.jsonl") == tmp_path / "run.v2.jsonl"


def reached_config(tmp_path, planned=None, reached=None, exit=None):
    config = fake_config(tmp_path)
    for key, value in ((jr._PLANNED, planned), (jr._REACHED, reached), (jr._EXIT, exit)):
        if value is not None:
            config.stash[key] = value
    return config


class TestCompleteness:
    """``xfer_completeness`` in the saved JSON: every planned test reached its end, and nothing interrupted it."""

    @pytest.mark.parametrize("planned, reached, exit, complete", [
        ({"a", "b"}, {"a", "b"}, 0, True),
        ({"a", "b"}, {"a", "b", "c"}, 1, True),  # a test that failed still reached its end
        ({"a", "b"}, {"a"}, 0, False),
        ({"a", "b"}, {"a", "b"}, pytest.ExitCode.INTERRUPTED, False),
        ({"a"}, None, None, False),  # collected, none reached
        (None, None, None, True),  # nothing was planned
    ])
    def test_complete_only_when_every_planned_test_ended_uninterrupted(self, tmp_path, planned, reached, exit,
                                                                       complete):
        config = reached_config(tmp_path, planned, reached, exit)
        assert jr.completeness(config, 7) == {"planned": len(planned or ()), "finished": 7,  # type: ignore[arg-type]
                                              "complete": complete}

    @pytest.mark.parametrize("benchmarks, finished", [([{}, {}], 2), (None, 0), ([], 0)])
    def test_the_saved_json_counts_what_it_holds(self, tmp_path, benchmarks, finished):
        output: dict = {"benchmarks": benchmarks}
        jr.pytest_benchmark_update_json(reached_config(tmp_path, {"a"}, {"a"}), [], output)  # type: ignore[arg-type]
        assert output["xfer_completeness"] == {"planned": 1, "finished": finished, "complete": True}

    def test_without_a_journal_ctrl_c_drops_the_test_that_did_not_reach_its_end(self, tmp_path):
        first, cut, nameless = (SimpleNamespace(fullname="t::first"), SimpleNamespace(fullname="t::cut"),
                                SimpleNamespace())
        bs = benchmark_session(benchmarks=[first, cut, nameless])
        config = reached_config(tmp_path, reached={"t::first"})
        config._benchmarksession = bs
        hook = jr.pytest_sessionfinish(SimpleNamespace(config=config), pytest.ExitCode.INTERRUPTED)  # type: ignore[arg-type]
        next(hook)
        with pytest.raises(StopIteration):
            hook.send(None)
        assert bs.benchmarks == [first]


class TestSaves:
    """``--benchmark-save``/``--benchmark-autosave`` and ``--benchmark-json`` are written whole, never over another
    run's file, and a save the disk refuses is one line and a failing exit, not a traceback."""

    def storage_session(self, tmp_path, **flags):
        from pytest_benchmark.storage.file import FileStorage

        said: list[str] = []
        logger = SimpleNamespace(info=said.append, error=said.append)
        storage = FileStorage(tmp_path / "store", logger, default_machine_id="Linux-CPython-3.11-64bit")
        bs = benchmark_session(storage=storage, logger=logger, **flags)
        config = fake_config(tmp_path, given="none", bs=bs)  # no journal (one would go in ./.benchmarks)
        bs.config = config
        return bs, config, said

    @pytest.mark.parametrize("flags, name", [({"save": "mine"}, "mine"), ({"autosave": "auto"}, "auto")])
    def test_a_save_goes_whole_to_the_next_number(self, tmp_path, flags, name):
        bs, config, said = self.storage_session(tmp_path, **flags)
        folder = tmp_path / "store" / "Linux-CPython-3.11-64bit"
        folder.mkdir(parents=True)
        (folder / f"0001_{name}.json").write_text("an earlier run\n")  # a run's own file is no stray output
        jr.pytest_sessionstart(SimpleNamespace(config=config))  # type: ignore[arg-type]
        bs.storage.save({"benchmarks": [], "name": "é"}, name)
        assert (folder / f"0001_{name}.json").read_text() == "an earlier run\n"
        assert json.loads((folder / f"0002_{name}.json").read_text()) == {"benchmarks": [], "name": "é"}
        assert said == [f"Saved benchmark data in: {folder / f'0002_{name}.json'}"]

    def test_a_run_saved_under_the_same_number_meanwhile_is_kept(self, tmp_path, monkeypatch):
        """Two runs saving at once may pick one number: the second takes ``.1``, never replacing the first."""
        bs, config, said = self.storage_session(tmp_path, save="mine")
        jr.pytest_sessionstart(SimpleNamespace(config=config))  # type: ignore[arg-type]
        folder = tmp_path / "store" / "Linux-CPython-3.11-64bit"
        (folder / "0001_mine.json").write_text("the other run\n")
        monkeypatch.setattr(jr, "next_storage_file", lambda storage, name: folder / "0001_mine.json")
        bs.storage.save({"benchmarks": []}, "mine")
        assert (folder / "0001_mine.json").read_text() == "the other run\n"
        assert said == [f"Saved benchmark data in: {folder / '0001_mine.1.json'}"]

    def test_no_save_or_no_folder_is_left_alone(self, tmp_path):
        bs, config, _ = self.storage_session(tmp_path)
        original = bs.storage.save
        jr.pytest_sessionstart(SimpleNamespace(config=config))  # type: ignore[arg-type]
        assert bs.storage.save == original  # nothing saved: pytest-benchmark's own stays
        bs = benchmark_session(save="mine", storage=SimpleNamespace(get=lambda name: tmp_path / name))  # elasticsearch
        jr.pytest_sessionstart(SimpleNamespace(config=fake_config(tmp_path, "none", bs=bs)))  # type: ignore[arg-type]
        assert not hasattr(bs.storage, "save")

    def test_a_storage_that_cannot_be_written_stops_before_measuring(self, tmp_path):
        (tmp_path / "store").mkdir()
        (tmp_path / "store" / "Linux-CPython-3.11-64bit").write_text("a file where the folder goes")
        _, config, _ = self.storage_session(tmp_path, save="mine")
        with pytest.raises(pytest.UsageError, match=r"^--benchmark-storage: .*Linux-CPython-3\.11-64bit/0000_mine\.json: "):
            jr.pytest_sessionstart(SimpleNamespace(config=config))  # type: ignore[arg-type]

    @pytest.fixture
    def full_disk(self, monkeypatch):
        def refuse(path, text, exclusive=False):
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(jr, "write_atomic", refuse)

    @pytest.mark.parametrize("journal", [False, True])
    def test_a_save_the_disk_refuses_is_one_line_and_a_failing_exit(self, tmp_path, journal, full_disk):
        bs, config, said = self.storage_session(tmp_path, save="mine")
        jr.pytest_sessionstart(SimpleNamespace(config=config))  # type: ignore[arg-type]
        if journal:
            config.stash[jr._JOURNAL] = jr.Journal(tmp_path / "run.jsonl")
        bs.storage.save({"benchmarks": []}, "mine")
        kept = f"; the journal {tmp_path / 'run.jsonl'} holds the finished cases" if journal else ""
        folder = tmp_path / "store" / "Linux-CPython-3.11-64bit"
        assert said == [f"xferbench: could not save {folder / '0001_mine.json'} (No space left on device); nothing "
                        f"was left half-written{kept}"]
        assert config.stash[jr._SAVE_FAILED] is True

    def test_a_json_the_disk_refuses_is_one_line_and_a_failing_exit(self, tmp_path, full_disk):
        said: list[str] = []
        bs = benchmark_session(json=str(tmp_path / "run.json"), save_json=lambda data: None,
                               logger=SimpleNamespace(info=said.append, error=said.append))
        config = fake_config(tmp_path, given="none", bs=bs)
        bs.config = config
        jr.pytest_sessionstart(SimpleNamespace(config=config))  # type: ignore[arg-type]
        bs.save_json({"benchmarks": []})
        assert said == [f"xferbench: could not save {tmp_path / 'run.json'} (No space left on device); nothing was "
                        "left half-written"]
        assert config.stash[jr._SAVE_FAILED] is True

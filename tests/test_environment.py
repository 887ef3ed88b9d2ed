"""What the environment does to a run and to the tools: full disks, read-only files, concurrent runs,
interrupted saves, ``python -O``, odd locales. Each case is injected for real: a patched write raising
ENOSPC, a file-size limit (RLIMIT_FSIZE), ``chmod 444``, processes racing for one name."""

import copy
import errno
import json
import multiprocessing
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch  # noqa: F401  loaded before pytester's in-process runs, which unload what they import
from hypothesis import example, given
from hypothesis import strategies as st

import xferbench
import xferbench.analyze.report.findings
from xferbench import output
from xferbench.analyze.load.results import load
from xferbench.measure.record import journal as jr
from xferbench.output import OutputError, check_output, write_atomic

from fakes import CPU_ONLY_CONFTEST
from hostile_inputs import property_settings
from hostile_inputs import run_cli as cli

SRC = Path(xferbench.__file__).resolve().parents[1]  # the code under test, for the subprocesses too
SAMPLE = Path(__file__).parent / "data" / "cpu-sample.json"
#: Three benchmarks; the second is interrupted (Ctrl-C) when XFER_INTERRUPT is set.
THREE = """
import os

def test_a(benchmark):
    benchmark(sum, [1, 2])

def test_b(benchmark):
    if os.environ.get("XFER_INTERRUPT"):
        raise KeyboardInterrupt
    benchmark(sum, [1, 2])

def test_c(benchmark):
    benchmark(sum, [1, 2])
"""


def sample(count: int = 3, **changes) -> dict:
    data = json.loads(SAMPLE.read_text())
    return {**data, "benchmarks": copy.deepcopy(data["benchmarks"][:count]), **changes}


def put(path: Path, document) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return path


def one_line(code: int, err: str, *fragments: str, exit_code: int = 2) -> None:
    assert code == exit_code, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for fragment in fragments:
        assert fragment in err, err


def storage_with(folder: Path, count: int = 3) -> Path:
    """A pytest-benchmark storage folder: ``folder/Linux-CPython-3.12-64bit/000N_run.json``."""
    machine = folder / "Linux-CPython-3.12-64bit"
    for i in range(1, count + 1):
        put(machine / f"{i:04d}_run.json", sample(datetime=f"2026-11-0{i}T00:00:00"))
    return folder


# -- 1. completeness is in the saved JSON itself -----------------------------------------------------------------

class TestCompleteness:
    def run(self, pytester, monkeypatch, interrupt: bool, *args: str) -> dict:
        pytester.makeconftest(CPU_ONLY_CONFTEST)
        pytester.makepyfile(test_three=THREE)
        if interrupt:
            monkeypatch.setenv("XFER_INTERRUPT", "1")
        pytester.runpytest("--benchmark-json=run.json", "--benchmark-max-time=0.001", "--xfer-journal=none", *args,
                           no_reraise_ctrlc=True)
        return json.loads((pytester.path / "run.json").read_text())

    def test_an_interrupted_run_says_so_in_its_json_without_a_journal(self, pytester, monkeypatch, capsys):
        data = self.run(pytester, monkeypatch, interrupt=True)
        assert data["xfer_completeness"] == {"planned": 3, "finished": 1, "complete": False}
        assert [b["name"] for b in data["benchmarks"]] == ["test_a"]

    def test_a_finished_run_says_complete(self, pytester, monkeypatch):
        data = self.run(pytester, monkeypatch, interrupt=False)
        assert data["xfer_completeness"] == {"planned": 3, "finished": 3, "complete": True}

    def test_the_autosaved_history_file_records_it_too(self, pytester, monkeypatch):
        self.run(pytester, monkeypatch, True, "--benchmark-autosave", "--benchmark-storage=hist")
        (saved,) = (pytester.path / "hist").rglob("0001_*.json")
        assert json.loads(saved.read_text())["xfer_completeness"]["complete"] is False

    @pytest.mark.parametrize("command", ["report", "compare", "report a folder"])
    def test_every_command_labels_a_saved_incomplete_run(self, tmp_path, capsys, command):
        cut = sample(xfer_completeness={"planned": 44, "finished": 3, "complete": False})
        run = put(tmp_path / "runs" / "0001_cut.json", cut)
        args = {"report": ["report", run, "-o", tmp_path / "r.html"], "compare": ["compare", run, run],
                "report a folder": ["report", tmp_path / "runs", "-o", tmp_path / "r.html"]}[command]
        code, out, err = cli(capsys, *args)
        assert code in (0, 1) and "Traceback" not in err
        assert "Incomplete run: 3 of 44 cases finished before it stopped (0001_cut.json)." in out

    def test_calibrate_refuses_an_incomplete_aa_run(self, tmp_path, capsys):
        for i in range(3):
            put(tmp_path / "aa" / f"aa-{i:03d}.json", sample(datetime=f"2026-11-0{i + 1}T00:00:00"))
        put(tmp_path / "aa" / "aa-003.json", sample(1, xfer_completeness={"planned": 3, "finished": 1, "complete": False}))
        code, _, err = cli(capsys, "calibrate", tmp_path / "aa", "-o", tmp_path / "noise.json")
        one_line(code, err, "did not reach its end", "aa-003.json")
        assert not (tmp_path / "noise.json").exists()

    def test_calibrate_of_runs_that_share_no_case_is_refused(self, tmp_path, capsys):
        data = sample(6)
        for i in range(6):
            run = {**data, "benchmarks": [copy.deepcopy(data["benchmarks"][i])], "datetime": f"2026-11-0{i + 1}"}
            put(tmp_path / "aa" / f"aa-{i:03d}.json", run)
        code, _, err = cli(capsys, "calibrate", tmp_path / "aa", "-o", tmp_path / "noise.json")
        one_line(code, err, "share no case")
        assert not (tmp_path / "noise.json").exists()


# -- 2. read-only targets, long names ----------------------------------------------------------------------------

class TestReadOnlyAndLongNames:
    def test_write_atomic_never_replaces_a_read_only_file(self, tmp_path):
        target = tmp_path / "kept.json"
        target.write_text("mine")
        target.chmod(0o444)
        with pytest.raises(OutputError, match="read-only"):
            write_atomic(target, "new")
        assert target.read_text() == "mine" and not list(tmp_path.glob(".xfb.*"))

    @pytest.mark.parametrize("flag", ["report -o", "compare --markdown", "compare --json", "calibrate -o"])
    def test_every_output_flag_refuses_a_read_only_target_before_working(self, tmp_path, capsys, flag):
        run = put(tmp_path / "run.json", sample())
        target = tmp_path / ("out.html" if flag == "report -o" else "out.json")
        target.write_text("mine")
        target.chmod(0o444)
        command, option = flag.split()
        inputs = {"report": [run], "compare": [run, run], "calibrate": [storage_with(tmp_path / "aa")]}[command]
        code, _, err = cli(capsys, command, *inputs, option, target)
        one_line(code, err, "read-only")
        assert target.read_text() == "mine"

    def test_benchmark_json_refuses_a_read_only_file_before_measuring(self, pytester):
        pytester.makeconftest(CPU_ONLY_CONFTEST)
        pytester.makepyfile(test_one="def test_one(benchmark):\n    raise AssertionError('measured')\n")
        (pytester.path / "run.json").write_text("an earlier run")
        (pytester.path / "run.json").chmod(0o444)
        result = pytester.runpytest("--benchmark-json=run.json")
        assert result.ret == pytest.ExitCode.USAGE_ERROR and "read-only" in result.stderr.str()
        assert (pytester.path / "run.json").read_text() == "an earlier run"

    def test_a_legal_long_name_is_written(self, tmp_path):
        target = tmp_path / ("r" * 240 + ".json")  # 245 bytes: the temporary name must not be longer than 255
        write_atomic(target, "{}")
        assert target.read_text() == "{}"

    def test_a_name_too_long_is_refused_before_any_work(self, tmp_path):
        with pytest.raises(OutputError, match="longer than this file system allows"):
            check_output(tmp_path / ("r" * 300 + ".json"))

    @property_settings(40)
    @given(st.integers(min_value=1, max_value=255 - len(".json")))
    @example(255 - len(".json"))  # the longest: no room left for a longer temporary name
    def test_any_name_the_check_accepts_can_be_written(self, tmp_path_factory, length):
        folder = tmp_path_factory.mktemp("long")
        target = folder / ("n" * length + ".json")
        check_output(target)
        write_atomic(target, "{}")
        assert target.read_text() == "{}" and len(list(folder.iterdir())) == 1


# -- 3. names claimed at the moment of writing ---------------------------------------------------------------------

def _race(target: str, text: str, start) -> str:
    start.wait()
    return str(write_atomic(Path(target), text, exclusive=True))


class TestClaimedNames:
    def test_four_processes_writing_one_name_lose_nothing(self, tmp_path):
        target = tmp_path / "b.json"
        context = multiprocessing.get_context("fork")
        with context.Manager() as manager:
            start = manager.Barrier(4)
            with context.Pool(4) as pool:
                written = pool.starmap(_race, [(str(target), f"run {i}", start) for i in range(4)])
        assert len(set(written)) == 4
        assert sorted(Path(w).read_text() for w in written) == [f"run {i}" for i in range(4)]
        assert sorted(p.name for p in tmp_path.iterdir()) == ["b.1.json", "b.2.json", "b.3.json", "b.json"]

    def test_a_name_taken_after_the_check_is_never_replaced(self, tmp_path):
        target = tmp_path / "b.json"
        check_output(target)
        target.write_text("the other run")  # another process wrote it meanwhile
        assert write_atomic(target, "this run", exclusive=True) == tmp_path / "b.1.json"
        assert target.read_text() == "the other run"

    def test_a_journal_name_taken_between_choice_and_creation_gets_the_next(self, tmp_path):
        path = jr.unused_journal(str(tmp_path / "run.journal"))
        path.write_text("another run's journal\n")  # a run started at the same second took it
        journal = jr.Journal(path)
        journal.open({})
        assert journal.path == tmp_path / "run.journal.1.jsonl"
        assert path.read_text() == "another run's journal\n"

    def test_two_calibrations_into_one_folder_keep_both_aa_runs(self, tmp_path, monkeypatch):
        from xferbench import cli as cli_module

        folder = tmp_path / "aa"
        folder.mkdir()
        source = put(tmp_path / "source.json", sample())
        command = f"cp {source} {{json}}"
        put(folder / "aa-000.json", sample(datetime="x"))  # the other calibrate claimed aa-000 first
        written = cli_module._aa_run(command, folder / "aa-000.json", 60.0)
        assert written == folder / "aa-000.1.json" and json.loads((folder / "aa-000.json").read_text())["datetime"] == "x"


# -- 4. storage folders: damaged files skipped, our outputs kept out, saves atomic -------------------------------

class TestStorage:
    @pytest.mark.parametrize("damage", [b'{"machine_info": {}, "benchm', b"", b"\x00" * 10, b'{"foreign": true}'])
    def test_a_damaged_or_foreign_file_is_skipped_with_a_note(self, tmp_path, capsys, damage):
        folder = storage_with(tmp_path / "hist")
        bad = folder / "Linux-CPython-3.12-64bit" / "0004_cut.json"
        bad.write_bytes(damage)
        from xferbench.analyze.load.history import load_storage

        stored = load_storage(folder)
        assert len(stored.runs) == 3 and len(stored.notes) == 1 and "0004_cut.json" in stored.notes[0]
        for command in (["report", folder, "-o", tmp_path / "r.html"], ["compare", folder, folder]):
            code, out, err = cli(capsys, *command)
            assert code == 0 and "Traceback" not in err
            assert (out + err).count("0004_cut.json") == (2 if command[0] == "compare" else 1)  # base and new

    def test_a_folder_with_no_readable_run_is_one_line(self, tmp_path, capsys):
        put(tmp_path / "hist" / "0001_x.json", "{")
        code, _, err = cli(capsys, "report", tmp_path / "hist", "-o", tmp_path / "r.html")
        one_line(code, err, "no readable run", "0001_x.json")

    @pytest.mark.parametrize("command", ["calibrate", "compare"])
    def test_our_outputs_never_land_in_a_storage_folder(self, tmp_path, capsys, command):
        folder = storage_with(tmp_path / "hist")
        run = folder / "Linux-CPython-3.12-64bit" / "0001_run.json"
        target = folder / "x.json"
        args = ["calibrate", storage_with(tmp_path / "aa"), "-o", target] if command == "calibrate" else [
            "compare", run, run, "--json", target]
        code, _, err = cli(capsys, *args)
        one_line(code, err, "storage folder")
        assert not target.exists()

    def test_an_unwritable_machine_folder_stops_the_run_before_measuring(self, pytester):
        pytester.makeconftest(CPU_ONLY_CONFTEST)
        pytester.makepyfile(test_one="def test_one(benchmark):\n    raise AssertionError('measured')\n")
        (pytester.path / "hist").mkdir()
        from pytest_benchmark.utils import get_machine_id

        (pytester.path / "hist" / get_machine_id()).write_text("a file where the machine folder goes")
        result = pytester.runpytest("--benchmark-autosave", "--benchmark-storage=hist", "--xfer-journal=none")
        assert result.ret == pytest.ExitCode.USAGE_ERROR and "--benchmark-storage" in result.stderr.str()
        assert "measured" not in result.stdout.str()

    def test_autosave_is_atomic_and_never_over_another_runs_file(self, pytester, monkeypatch):
        pytester.makeconftest(CPU_ONLY_CONFTEST)
        pytester.makepyfile(test_one="def test_one(benchmark):\n    benchmark(sum, [1, 2])\n")
        calls = []
        real = output._claim
        monkeypatch.setattr(output, "_claim", lambda tmp, target: calls.append(target) or real(tmp, target))
        result = pytester.runpytest("--benchmark-autosave", "--benchmark-storage=hist", "--benchmark-max-time=0.001")
        result.assert_outcomes(passed=1)
        (saved,) = (pytester.path / "hist").rglob("0001_*.json")
        assert calls == [saved] and json.loads(saved.read_text())["benchmarks"]


def _limited(limit: int):
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) instead of killing
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


@pytest.mark.slow
def test_a_disk_that_fills_during_the_save_leaves_no_truncated_history_file(tmp_path):
    """RLIMIT_FSIZE: each file may hold 2 KB. The journal stops with a warning, the run goes on; the history
    save fails whole, in one line naming the file, leaving no truncated 0001_*.json that would block the folder
    (before: a cut file and an INTERNALERROR traceback)."""
    (tmp_path / "conftest.py").write_text(CPU_ONLY_CONFTEST.replace("from fakes", "import sys; sys.path.insert(0, "
                                                                f"{str(Path(__file__).parent)!r})\nfrom fakes"))
    (tmp_path / "test_three.py").write_text(THREE)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--benchmark-max-time=0.001",
                          "--benchmark-autosave", "--benchmark-storage=hist", "test_three.py"],
                         cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(SRC)}, preexec_fn=_limited(2000),
                         capture_output=True, text=True, timeout=300)
    text = run.stdout + run.stderr
    assert "INTERNALERROR" not in text and "3 passed" in text, text[-3000:]
    assert "the journal stopped" in text and "could not save" in text and "0001_" in text
    assert run.returncode == pytest.ExitCode.INTERNAL_ERROR  # not 0: the results were not saved
    assert not list((tmp_path / "hist").rglob("*.json")), "a truncated history file was left"
    assert not list((tmp_path / "hist").rglob(".xfb.*"))


# -- 5. the journal beside a plain-path storage -----------------------------------------------------------------

def test_a_plain_storage_path_keeps_its_journal(tmp_path):
    from types import SimpleNamespace

    option = SimpleNamespace(benchmark_json=None, benchmark_storage=str(tmp_path / "hist"))
    config = SimpleNamespace(getoption=lambda name: None, option=option, stash=pytest.Stash())
    path = jr.journal_path(config)  # type: ignore[arg-type]
    assert path is not None and path.parent == tmp_path / "hist" / "journal"


# -- 6. the report's companions ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("output_name", "companion"), [("README.html", "README.md"), ("results.html", "results.csv")])
def test_the_report_never_replaces_an_unrelated_companion(tmp_path, capsys, output_name, companion):
    run = put(tmp_path / "run.json", sample())
    (tmp_path / companion).write_text("hand-written\n")
    code, _, err = cli(capsys, "report", run, "-o", tmp_path / output_name)
    one_line(code, err, companion, "is not a report xferbench wrote")
    assert (tmp_path / companion).read_text() == "hand-written\n" and not (tmp_path / output_name).exists()


def test_the_report_replaces_its_own_earlier_companions(tmp_path, capsys):
    run = put(tmp_path / "run.json", sample())
    assert cli(capsys, "report", run, "-o", tmp_path / "r.html")[0] == 0
    assert cli(capsys, "report", run, "-o", tmp_path / "r.html")[0] == 0


# -- 7. clocks ---------------------------------------------------------------------------------------------------

def test_compare_refuses_runs_timed_by_different_clocks(tmp_path, capsys):
    base = put(tmp_path / "base.json", sample())
    other = sample()
    for bench in other["benchmarks"]:
        bench["options"]["timer"] = "process_time"
    new = put(tmp_path / "new.json", other)
    code, _, err = cli(capsys, "compare", base, new)
    one_line(code, err, "different clocks", "process_time", "perf_counter")


# -- 8. PYTEST_ADDOPTS -------------------------------------------------------------------------------------------

def test_options_in_pytest_addopts_are_not_overridden_by_the_profile(pytester, monkeypatch):
    pytester.makeconftest(CPU_ONLY_CONFTEST)
    pytester.makepyfile(test_one="def test_one(request):\n"
                                 "    assert float(request.config.option.benchmark_max_time) == 0.02\n")
    monkeypatch.setenv("PYTEST_ADDOPTS", "--benchmark-max-time=0.02")
    pytester.runpytest().assert_outcomes(passed=1)


# -- 9. result checks survive python -O --------------------------------------------------------------------------

CHECK_UNDER_O = """
import torch
from xferbench.families.placement import run as placement
from xferbench.measure.families.registry import plan
case = next(c for c in plan("placement", ("cpu",), "quick") if getattr(c, "variant", "") == "convert_on_cpu")
prepared = placement.prepare(case, lambda: None)
try:
    prepared.check(torch.zeros(1, dtype=torch.float16))
except AssertionError:
    print("caught")
"""


@pytest.mark.slow
def test_a_wrong_result_is_caught_under_python_O(tmp_path):
    run = subprocess.run([sys.executable, "-O", "-c", CHECK_UNDER_O], env={**os.environ, "PYTHONPATH": str(SRC)},
                         capture_output=True, text=True, timeout=300)
    assert run.stdout.strip() == "caught", run.stderr[-2000:]


# -- 10. file kind by content ------------------------------------------------------------------------------------

def test_plain_json_named_gz_is_read(tmp_path):
    assert len(load([put(tmp_path / "run.json.gz", sample())]).frame) == 3


def test_plain_results_named_jsonl_are_not_read_as_a_journal(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps(sample(), indent=4))
    assert len(load([path]).frame) == 3
    path.write_text(json.dumps(sample()))
    assert len(load([path]).frame) == 3


def test_benchmark_json_equal_to_the_journal_is_refused(pytester):
    pytester.makeconftest(CPU_ONLY_CONFTEST)
    pytester.makepyfile(test_one="def test_one(benchmark):\n    raise AssertionError('measured')\n")
    result = pytester.runpytest("--benchmark-json=run.jsonl", "--xfer-journal=run.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR and "is also --benchmark-json" in result.stderr.str()


# -- 11. -OO, locales (exit codes, torch missing: tests/test_cli.py) ------------------------------------------------

def _xferbench(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "import sys; from xferbench.cli import main; sys.exit(main())", *args],
                          env={**os.environ, "PYTHONPATH": str(SRC), **env}, capture_output=True, timeout=300,
                          text=True, errors="replace")


@pytest.mark.slow
@pytest.mark.parametrize("env", [{"PYTHONIOENCODING": "ascii"}, {"LC_ALL": "C", "PYTHONUTF8": "0", "LANG": "C"}],
                         ids=["ascii", "C-locale"])
def test_compare_under_an_ascii_terminal_writes_its_outputs(tmp_path, env):
    base = put(tmp_path / "base.json", sample(20))
    run = _xferbench("compare", str(base), str(base), "--markdown", str(tmp_path / "c.md"),
                     "--json", str(tmp_path / "c.json"), **env)
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr[-2000:]
    assert (tmp_path / "c.md").exists() and json.loads((tmp_path / "c.json").read_text())


@pytest.mark.slow
def test_every_command_parses_under_python_OO(tmp_path):
    path = str(put(tmp_path / "run.json", sample()))
    run = _xferbench("compare", path, path, PYTHONOPTIMIZE="2")
    assert run.returncode in (0, 1) and "Traceback" not in run.stderr, run.stderr[-2000:]


# -- 12. the plugin and a failing environment -------------------------------------------------------------------

class TestJournalFailures:
    def test_a_full_disk_mid_run_warns_once_and_the_run_goes_on(self, tmp_path, monkeypatch):
        journal = jr.Journal(tmp_path / "run.jsonl")
        journal.open({})

        def full(fd):
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(jr.os, "fsync", full)
        with pytest.warns(pytest.PytestWarning, match="journal stopped.*No space left on device") as caught:
            journal.write({"benchmark": {"name": "a"}})
            journal.write({"benchmark": {"name": "b"}})
            journal.close({"end": {}})
        assert len(caught) == 1 and journal.failed

    def test_a_full_disk_at_the_start_still_measures(self, pytester, monkeypatch):
        pytester.makeconftest(CPU_ONLY_CONFTEST)
        pytester.makepyfile(test_three=THREE)

        def full(self, header):
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(jr.Journal, "open", full)
        result = pytester.runpytest("--benchmark-json=run.json", "--benchmark-max-time=0.001")
        result.assert_outcomes(passed=3)
        assert "no journal" in result.stdout.str()
        assert len(json.loads((pytester.path / "run.json").read_text())["benchmarks"]) == 3

    def test_an_old_pytest_benchmark_is_refused_at_configure(self, pytester, monkeypatch):
        import importlib.metadata

        real = importlib.metadata.version
        monkeypatch.setattr(importlib.metadata, "version",
                            lambda name: "5.2.0" if name == "pytest-benchmark" else real(name))
        pytester.makeconftest(CPU_ONLY_CONFTEST)
        pytester.makepyfile(test_one="def test_one(benchmark):\n    raise AssertionError('measured')\n")
        result = pytester.runpytest()
        assert result.ret == pytest.ExitCode.USAGE_ERROR and "pytest-benchmark 5.3 or newer, found 5.2.0" in result.stderr.str()

    def test_a_disk_full_error_names_the_file(self, tmp_path, monkeypatch):
        def full(fd):
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(output.os, "fsync", full)
        with pytest.raises(OSError) as caught:
            write_atomic(tmp_path / "r.html", "x")
        assert caught.value.filename == str(tmp_path / "r.html") and not list(tmp_path.iterdir())


# -- 14. Ctrl-C in the distributed family ------------------------------------------------------------------------

def test_a_ctrl_c_mid_case_is_forwarded_to_the_helper_ranks(monkeypatch):
    """Ctrl-C that reached only pytest, while it waits for the ranks' answers: the helper ranks, running the case
    or waiting in its collective, get it too (they would otherwise wait out the gloo timeout, about 60 s)."""
    from types import SimpleNamespace

    from xferbench.measure.distributed import pytest_world as w

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(w.World, "_collect", interrupted)
    world = w.World("gloo")
    # ranks blocked in a collective, SIGINT at its default even where the test command inherited it ignored (`cmd &`)
    world.helpers = [subprocess.Popen(["sleep", "600"], preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
                     for _ in range(world.size)]
    case = w.DistCase("all_reduce", 1024, "gloo", 2)
    with pytest.raises(KeyboardInterrupt):
        world.run(case, SimpleNamespace(disabled=False), SimpleNamespace(rounds=1, warmup=0))  # type: ignore[arg-type]
    helpers = list(world.helpers)
    assert [h.wait(timeout=60) for h in helpers] == [-signal.SIGINT] * world.size and world.broken == "interrupted"
    world.close()


# -- 15. smaller ---------------------------------------------------------------------------------------------------

def test_report_of_a_folder_with_itself_as_history_reports_the_newest_run_only(tmp_path, capsys):
    folder = tmp_path / "h"
    put(folder / "0001_old.json", sample(3, datetime="2026-11-01T00:00:00"))
    put(folder / "0002_new.json", sample(2, datetime="2026-11-02T00:00:00"))
    code, out, err = cli(capsys, "report", folder, "--history", folder, "-o", tmp_path / "r.html")
    assert code == 0 and "(2 benchmarks)" in out, out + err


def test_the_printed_report_command_is_shell_quoted(monkeypatch):
    from types import SimpleNamespace

    from xferbench.measure.session import summary

    config = SimpleNamespace(option=SimpleNamespace(benchmark_json="my run.json"))
    assert summary._where(config).startswith("xferbench report 'my run.json' -o 'my run.html'")  # type: ignore[arg-type]


@pytest.mark.parametrize("where", ["machine", "root", "flat"])
def test_an_output_inside_a_storage_is_refused(tmp_path, where):
    storage = tmp_path / "history"
    runs = storage / "Linux-CPython-3.11-64bit" if where != "flat" else storage
    runs.mkdir(parents=True)
    (runs / "0001_abc.json").write_text("{}")
    target = (runs if where != "root" else storage) / "noise.json"
    with pytest.raises(OutputError, match="inside the pytest-benchmark storage folder"):
        check_output(target)


def test_an_output_beside_a_storage_is_not_inside_it(tmp_path):
    """reports/compare.json beside reports/history/ (where tox -e bench autosaves), or a folder beside another
    folder's runs, is no storage: .ci/run writes exactly there."""
    (tmp_path / "history" / "Linux-CPython-3.11-64bit").mkdir(parents=True)
    (tmp_path / "history" / "Linux-CPython-3.11-64bit" / "0001_abc.json").write_text("{}")
    (tmp_path / "other-test").mkdir()
    (tmp_path / "other-test" / "0001_run.json").write_text("{}")
    (tmp_path / "mine").mkdir()
    assert check_output(tmp_path / "compare.json") == tmp_path.resolve() / "compare.json"
    assert check_output(tmp_path / "mine" / "n.json") == tmp_path.resolve() / "mine" / "n.json"

"""The command line as a user types it: argument handling, exit codes (0, 1 = regression, 2 = bad input,
one line), outputs that never replace an input. What a command computes is tested beside its module."""

import contextlib
import io
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from xferbench.cli import main

from hang import no_hang
from hostile_inputs import BASE, SLOW, assert_refused, dump, mutate, property_settings, put, run_cli, small


@pytest.mark.hostile
class TestOutputsNeverDestroyInputs:
    @pytest.fixture
    def run(self, tmp_path):
        return put(tmp_path / "run.json", small(3))

    @pytest.mark.parametrize("case", [
        "report -o the input", "report -o a symlink to the input", "compare --json the new run",
        "compare --markdown the base run", "report DIR -o DIR/x.json", "report DIR -o DIR/deeper/x.json",
        "report -o a device", "report -o a FIFO", "report -o a folder", "compare --markdown DIR/",
        "report -o below a file", "compare --json and --markdown the same file",
    ])
    def test_refused_before_any_work_inputs_byte_identical(self, tmp_path, capsys, run, case):
        """Each output that would replace an input, or cannot be a file, is refused with exit 2."""
        folder = tmp_path / "store"
        folder.mkdir()
        stored = put(folder / "0001.json", run.read_text())
        (folder / "deeper").mkdir()
        os.symlink(run, tmp_path / "link.html")
        os.mkfifo(tmp_path / "fifo.html")
        device = tmp_path / "device.html"  # never the real /dev/null: a regression would replace it
        if case == "report -o a device":
            try:
                os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
            except PermissionError:
                pytest.skip("making a device node needs root")
        args = {
            "report -o the input": ["report", run, "-o", run],
            "report -o a symlink to the input": ["report", run, "-o", tmp_path / "link.html"],
            "compare --json the new run": ["compare", stored, run, "--json", run],
            "compare --markdown the base run": ["compare", stored, run, "--markdown", stored],
            "report DIR -o DIR/x.json": ["report", folder, "-o", folder / "x.json"],
            "report DIR -o DIR/deeper/x.json": ["report", folder, "-o", folder / "deeper" / "x.json"],
            "report -o a device": ["report", run, "-o", device],
            "report -o a FIFO": ["report", run, "-o", tmp_path / "fifo.html"],
            "report -o a folder": ["report", run, "-o", folder],
            "compare --markdown DIR/": ["compare", run, run, "--markdown", f"{folder}/"],
            "report -o below a file": ["report", run, "-o", stored / "index.html"],
            "compare --json and --markdown the same file": ["compare", run, run, "--json", tmp_path / "c.out",
                                                            "--markdown", tmp_path / "c.out"],
        }[case]
        before = {p: p.read_bytes() for p in (run, stored)}
        code, out, err = run_cli(capsys, *args)
        assert_refused(code, err)
        assert out == ""  # refused before loading or comparing anything
        assert {p: p.read_bytes() for p in before} == before
        assert (tmp_path / "link.html").is_symlink() and (tmp_path / "fifo.html").is_fifo()
        assert case != "report -o a device" or device.is_char_device()
        assert not (folder / "x.json").exists() and not (tmp_path / "c.out").exists()

    @pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
    def test_unwritable_folder(self, tmp_path, capsys, run):
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        code, _, err = run_cli(capsys, "report", run, "-o", locked / "index.html")
        assert_refused(code, err, "is not writable")

    def test_symlinked_output_is_followed(self, tmp_path, capsys, run):
        """A link to an earlier report: the report it points to is replaced, the link stays a link."""
        target = tmp_path / "old.html"
        assert run_cli(capsys, "report", run, "-o", target)[0] == 0
        target.write_text(target.read_text().replace("</title>", "</title>old", 1))  # edited: the user's now
        os.symlink(target, tmp_path / "latest.html")
        assert run_cli(capsys, "report", run, "-o", tmp_path / "latest.html")[0] == 2  # refused, as for old.html
        assert run_cli(capsys, "report", run, "-o", target, "--force")[0] == 0
        code, _, _ = run_cli(capsys, "report", run, "-o", tmp_path / "latest.html")
        assert code == 0
        assert (tmp_path / "latest.html").is_symlink()
        assert target.read_text().startswith("<!DOCTYPE html>")


@pytest.mark.hostile
class TestCli:
    """The CLI on mutated real runs: 0 or 1 with a verdict, or 2 with one line; inputs untouched."""

    def run(self, args: list[str], inputs: list[Path]) -> tuple[int, str]:
        before = [p.read_bytes() for p in inputs]
        out, err = io.StringIO(), io.StringIO()
        with no_hang(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(args)
            except SystemExit as exit_:
                code = exit_.code
        assert [p.read_bytes() for p in inputs] == before
        assert code in (0, 1, 2)
        if code == 2:
            assert len(err.getvalue().strip().splitlines()) == 1, err.getvalue()
        else:
            assert err.getvalue() == "" or "Traceback" not in err.getvalue()
        return code, out.getvalue()

    @SLOW
    @given(data=st.data())
    def test_compare(self, tmp_path, data):
        base, new = tmp_path / "base.json", tmp_path / "new.json"
        base.write_text(dump(BASE))
        new.write_text(dump(mutate(BASE, data)))
        outputs = [tmp_path / "c.md", tmp_path / "c.json"]
        code, out = self.run(["compare", str(base), str(new), "--markdown", str(outputs[0]), "--json", str(outputs[1])],
                             [base, new])
        if code == 1:
            assert "regression" in out
        if code in (0, 1):
            assert all(p.exists() for p in outputs)
            json.loads(outputs[1].read_text())

    @SLOW
    @given(data=st.data(), threshold=st.sampled_from(["10%", "0", "-5%", "abc", "nan", "1e9", "0.5", "inf%", ""]))
    def test_compare_options(self, tmp_path, data, threshold):
        base, new = tmp_path / "base.json", tmp_path / "new.json"
        base.write_text(dump(mutate(BASE, data)))
        new.write_text(dump(BASE))
        self.run(["compare", str(base), str(new), f"--threshold={threshold}"], [base, new])

    @property_settings(12, HealthCheck.function_scoped_fixture, HealthCheck.too_slow)
    @pytest.mark.slow
    @given(data=st.data())
    def test_report(self, tmp_path, data):
        path = tmp_path / "run.json"
        path.write_text(dump(mutate(BASE, data)))
        output = tmp_path / "report.html"
        output.unlink(missing_ok=True)
        code, _ = self.run(["report", str(path), "-o", str(output)], [path])
        assert code in (0, 2)  # a report never finds a regression
        assert output.exists() == (code == 0)


@pytest.mark.parametrize("args", [
    [], ["report"], ["compare", "a.json"], ["nope"], ["compare", "a", "b", "--nope"], ["report", "x", "-o"],
])
@pytest.mark.hostile
def test_argparse_errors_are_exit_2(args, capsys):
    """A missing or unknown argument is argparse's usage error: exit 2, no traceback."""
    with pytest.raises(SystemExit) as exit_:
        main(args)
    assert exit_.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.hostile
class TestResultsNeverOverwritten:
    def test_calibrate_numbers_new_runs_after_the_highest_not_the_count(self, tmp_path, capsys):
        """With aa-000 gone, two runs remain (aa-001, aa-002): the next must be aa-003, not a second aa-002."""
        folder = tmp_path / "aa"
        folder.mkdir()
        for i in (1, 2):
            put(folder / f"aa-{i:03d}.json", small(4))
        before = {p.name: p.read_bytes() for p in folder.iterdir()}
        writer = tmp_path / "writer.py"
        writer.write_text("import shutil, sys\nshutil.copy(sys.argv[1], sys.argv[2].split('=', 1)[1])\n")
        command = f"{sys.executable} {writer} {folder / 'aa-001.json'}"
        _, out, err = run_cli(capsys, "calibrate", folder, "--run", command, "--times", "1", "-o", tmp_path / "n.json")
        assert "A/A run 1 of 1 done" in out, err
        assert {p.name: p.read_bytes() for p in folder.iterdir() if p.name in before} == before
        assert (folder / "aa-003.json").exists()

    @pytest.mark.parametrize("name", ["run.journal.jsonl", "RUN.JSON", "run.Json.GZ"])
    def test_report_never_written_as_a_results_file_or_journal(self, tmp_path, capsys, name):
        """A journal beside the run is a result too (an interrupted run's only one): -o onto it is refused."""
        run = put(tmp_path / "run.json", small(4))
        target = put(tmp_path / name, "a result")
        code, out, err = run_cli(capsys, "report", run, "-o", target)
        assert_refused(code, err, "the report is an HTML file")
        assert target.read_text() == "a result" and out == ""

    def test_report_of_a_link_loop_is_one_line(self, tmp_path, capsys):
        os.symlink(tmp_path / "b.json", tmp_path / "a.json")
        os.symlink(tmp_path / "a.json", tmp_path / "b.json")
        code, _, err = run_cli(capsys, "report", tmp_path / "a.json", "-o", tmp_path / "r.html")
        assert_refused(code, err, "a.json")


@pytest.mark.hostile
class TestOptionValues:
    @pytest.mark.parametrize("args", [["--per-side", "0"], ["--per-side", "-3"], ["--times", "0", "--run", "true"],
                                      ["--times", "-2", "--run", "true"]])
    def test_calibrate_counts_below_one(self, tmp_path, capsys, args):
        folder = tmp_path / "aa"
        folder.mkdir()
        for i in range(6):
            put(folder / f"aa-{i:03d}.json", small(4))
        code, out, err = run_cli(capsys, "calibrate", folder, "-o", tmp_path / "n.json", *args)
        assert_refused(code, err, args[0])
        assert out == "" and not (tmp_path / "n.json").exists()

    def test_calibrate_notes_reach_the_log_escaped(self, tmp_path, capsys):
        """A damaged run named with an OSC hyperlink and a workflow command: its note is one inert line."""
        folder = tmp_path / "aa"
        folder.mkdir()
        for i in range(4):
            put(folder / f"aa-{i:03d}.json", small(4))
        put(folder / "\x1b]8;;evil\x07x\x1b]8;;\x07\n::error::y.json", b"not json")
        _, out, err = run_cli(capsys, "calibrate", folder, "-o", tmp_path / "n.json")
        notes = [line for line in out.splitlines() if "evil" in line]
        assert len(notes) == 1 and "\x1b" not in out + err and "\n::error" not in out, out

    def test_ab_negative_confirm_refused_before_any_block_runs(self, tmp_path, capsys):
        code, _, err = run_cli(capsys, "ab", "--base", f"touch {tmp_path / 'ran'}", "--head", "true",
                                 "--confirm", "-1", "--keep", tmp_path / "ab")
        assert_refused(code, err, "--confirm -1")
        assert not (tmp_path / "ran").exists()


def test_an_unexpected_error_never_exits_1(tmp_path, capsys, monkeypatch):
    """A bug is exit 3 with a line saying so: never 1, which CI reads as a regression."""
    from xferbench.analyze.gate import compare

    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(compare, "compare", broken)
    run = put(tmp_path / "run.json", small(3))
    code, _, err = run_cli(capsys, "compare", run, run)
    assert code == 3 and "unexpected error" in err.splitlines()[-1]


def test_info_without_torch_is_one_line(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now raises ImportError
    code, _, err = run_cli(capsys, "info")
    assert_refused(code, err, "needs torch")


@pytest.mark.parametrize(("command", "blas"), [("report", "1"), ("compare", "1"), ("calibrate", "None"), ("run", "None")])
def test_only_the_reading_commands_run_blas_on_one_thread(command: str, blas: str, tmp_path: Path) -> None:
    """numpy's OpenBLAS threads spin idle beside a report's small fits (7% of its CPU time on 2 cores): the commands
    that only read runs take one thread, set before numpy loads; those that measure keep the user's environment."""
    args = {"report": ["missing.json"], "compare": ["a.json", "b.json"], "calibrate": ["missing.json"],
            "run": ["-o", str(tmp_path / "r.json"), "--collect-only", "-q", "-k", "no_such_test"]}[command]
    probe = ("import os, sys\nfrom xferbench.cli import main\nmain(sys.argv[1:])\n"
             "print('BLAS', os.environ.get('OPENBLAS_NUM_THREADS'))")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run([sys.executable, "-c", probe, command, *args], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)
    assert f"BLAS {blas}" in done.stdout.splitlines()[-1], done.stdout + done.stderr

"""Hostile inputs, one class per category: each is exit 2 with one line naming what is wrong,
never a traceback, never exit 1 (which CI reads as a regression), inputs untouched."""

import copy
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from xferbench.analyze.results import load
from xferbench.cli import main
from xferbench.units import mathtext_safe

from hang import no_hang

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = Path(__file__).parent / "data" / "cpu-sample.json"
FIRST = "test_create[empty-4B-float32-cpu]"  # the sample's first benchmark


@pytest.fixture(scope="module")
def sample() -> dict:
    return json.loads(SAMPLE.read_text())


def small(sample: dict, count: int = 3) -> dict:
    """The sample cut to a few benchmarks, so a report of it takes a moment."""
    return {**sample, "benchmarks": copy.deepcopy(sample["benchmarks"][:count])}


def put(path: Path, document) -> Path:
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return path


def run_cli(capsys, *args) -> tuple[int, str, str]:
    try:
        code = main([str(a) for a in args])
    except SystemExit as exit_:  # argparse's own usage errors
        code = exit_.code
    out, err = capsys.readouterr()
    return code, out, err


def assert_refused(code: int, err: str, *fragments: str) -> None:
    assert code == 2
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    for fragment in fragments:
        assert fragment in err


class TestOutputsNeverDestroyInputs:
    @pytest.fixture
    def run(self, tmp_path, sample):
        return put(tmp_path / "run.json", small(sample))

    @pytest.mark.parametrize("case", [
        "report -o the input", "report -o a symlink to the input", "compare --json the new run",
        "compare --markdown the base run", "history DIR -o DIR/x.json", "report DIR -o DIR/deeper/x.json",
        "report -o a device", "report -o a FIFO", "report -o a folder", "compare --markdown DIR/",
        "report -o in a missing folder", "compare --json and --markdown the same file",
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
            "history DIR -o DIR/x.json": ["history", folder, "-o", folder / "x.json"],
            "report DIR -o DIR/deeper/x.json": ["report", folder, "-o", folder / "deeper" / "x.json"],
            "report -o a device": ["report", run, "-o", device],
            "report -o a FIFO": ["report", run, "-o", tmp_path / "fifo.html"],
            "report -o a folder": ["report", run, "-o", folder],
            "compare --markdown DIR/": ["compare", run, run, "--markdown", f"{folder}/"],
            "report -o in a missing folder": ["report", run, "-o", tmp_path / "nope" / "index.html"],
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
        target = put(tmp_path / "old.html", "old")
        os.symlink(target, tmp_path / "latest.html")
        code, _, _ = run_cli(capsys, "report", run, "-o", tmp_path / "latest.html")
        assert code == 0
        assert (tmp_path / "latest.html").is_symlink()
        assert target.read_text().startswith("<!DOCTYPE html>")

    def test_benchmark_json_folder_checked_before_measuring(self, pytester):
        """pytest-benchmark would find a missing folder only when the run ends, after every measurement."""
        pytester.makeconftest('pytest_plugins = ("xferbench.measure.journal",)')
        pytester.makepyfile(test_one="def test_one(benchmark):\n    raise AssertionError('measured')\n")
        result = pytester.runpytest("--benchmark-json=missing/run.json")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["*--benchmark-json: missing/run.json: the folder missing does not exist*"])


#: (where, the value put there, what the message must say). "stats." means the first benchmark's
#: stats, "info." its extra_info, "run." the file's top level.
BAD_FIELDS = [
    ("info.xfer_schema", "1", "field 'xfer_schema' must be a whole number"),
    ("info.xfer_schema", 1.0, "field 'xfer_schema' must be a whole number"),
    ("info.xfer_schema", True, "field 'xfer_schema' must be a whole number"),
    ("info.xfer_schema", {"v": 1}, "field 'xfer_schema' must be a whole number"),
    ("run.machine_info", [1, 2], "field 'machine_info' must be an object"),
    ("run.commit_info", "abc", "field 'commit_info' must be an object"),
    ("run.datetime", {"y": 2026}, "field 'datetime' must be a string"),
    ("run.datetime", 20261130, "field 'datetime' must be a string"),
    ("info.src", ["cpu"], "field 'src' must be a non-empty string"),
    ("info.non_blocking", "false", "field 'non_blocking' must be true or false"),
    ("info.shape", "2x3", "field 'shape' must be a list of positive whole numbers"),
    ("info.nbytes", 10**30, "field 'nbytes' is not a plausible payload"),
    ("info.nbytes", -4, "field 'nbytes' must be a whole number >= 0"),
    ("info.device_seconds", 10**400, "field 'device_seconds' must be a finite number"),
    ("info.host_rss_bytes", "1GB", "field 'host_rss_bytes' must be a whole number"),
    ("stats.median", 0, "stats field 'median' must be above 0"),
    ("stats.median", 0.0, "stats field 'median' must be above 0"),
    ("stats.median", -5e-6, "stats field 'median' must be a finite number of seconds"),
    ("stats.median", float("nan"), "stats field 'median' must be a finite number of seconds"),
    ("stats.median", float("inf"), "stats field 'median' must be a finite number of seconds"),
    ("stats.median", "fast", "stats field 'median' must be a finite number of seconds"),
    ("stats.median", None, "stats field 'median' must be a finite number of seconds"),
    ("stats.median", 10**400, "stats field 'median' must be a finite number of seconds"),
    ("stats.median", 1e-300, "stats field 'median' must be above 0"),
    ("stats.min", 0, "stats field 'min' must be above 0"),
    ("stats.mean", float("-inf"), "stats field 'mean' must be a finite number of seconds"),
    ("stats.stddev", -1.0, "stats field 'stddev' must be a finite number of seconds"),
    ("stats.iqr", [1], "stats field 'iqr' must be a finite number of seconds"),
    ("stats.rounds", 0, "stats field 'rounds' must be a whole number >= 1"),
    ("stats.rounds", 1.5, "stats field 'rounds' must be a whole number >= 1"),
    ("stats.iterations", 0, "stats field 'iterations' must be a whole number >= 1"),
    ("stats.data", ["a"], "stats field 'data' must be a list of finite times"),
    ("stats.data", [1e-6, float("nan")], "stats field 'data' must be a list of finite times"),
    ("stats.data", "1,2,3", "stats field 'data' must be a list of finite times"),
    ("bench.stats", [1, 2], "'stats' must be an object"),
    ("bench.name", ["x"], "'name' must be a string"),
]


class TestOneValidationAtLoad:
    @pytest.mark.parametrize(("where", "value", "message"), BAD_FIELDS,
                             ids=[f"{w}={v!r:.20}" for w, v, _ in BAD_FIELDS])
    @pytest.mark.parametrize("command", ["check", "compare", "report"])
    def test_bad_field_is_exit_2_naming_file_benchmark_field(self, tmp_path, capsys, sample, where, value, message, command):
        document = small(sample)
        part, name = where.split(".")
        holder = {"run": document, "bench": document["benchmarks"][0], "info": document["benchmarks"][0]["extra_info"],
                  "stats": document["benchmarks"][0]["stats"]}[part]
        holder[name] = value
        bad = put(tmp_path / "bad.json", json.dumps(document))  # NaN and Infinity as Python's json writes them
        good = put(tmp_path / "good.json", small(sample))
        args = {"check": ["check", bad], "report": ["report", bad, "-o", tmp_path / "r.html"],
                "compare": ["compare", good, bad]}[command]
        code, _, err = run_cli(capsys, *args)
        benchmark = "" if part == "run" else f"benchmark {document['benchmarks'][0]['name']!r}"
        assert_refused(code, err, f"{bad}: ", benchmark, message)

    @pytest.mark.parametrize(("name", "content", "message"), [
        ("latin1.json", "caf\xe9".encode("latin-1"), "cannot read it (UnicodeDecodeError)"),
        ("bom16.json", "{}".encode("utf-16"), "cannot read it (UnicodeDecodeError)"),
        ("long.json", b'{"benchmarks": [' + b"9" * 5000 + b"]}", "a number too long"),
        ("deep.json", b"[" * 100000, "nested too deeply"),
        ("nul.json", b"\x00\x00", "not JSON"),
    ])
    def test_unreadable_file_in_a_folder(self, tmp_path, capsys, sample, name, content, message):
        """One bad file among good runs in a storage folder is named and skipped, the rest reported; given alone it
        is refused; nothing crashes."""
        put(tmp_path / "0001_good.json", small(sample))
        (tmp_path / name).write_bytes(content)
        code, _, err = run_cli(capsys, "check", tmp_path / name)
        assert_refused(code, err, name)
        code, _, err = run_cli(capsys, "report", tmp_path, "-o", tmp_path.parent / "r.html")
        assert code == 0 and "Traceback" not in err and len(err.strip().splitlines()) == 1
        assert name in err and "skipped" in err
        code, _, err = run_cli(capsys, "check", tmp_path / name)
        assert message in err

    def test_fifo_in_a_storage_folder_does_not_hang(self, tmp_path, capsys, sample):
        """A FIFO named *.json would block its reader forever: it is never opened; given alone it is refused, in a
        storage folder it is skipped with a note naming it."""
        put(tmp_path / "0001_good.json", small(sample))
        os.mkfifo(tmp_path / "0002_pipe.json")
        with no_hang(60):
            code, _, err = run_cli(capsys, "check", tmp_path / "0002_pipe.json")
        assert_refused(code, err, "0002_pipe.json: not a regular file")
        for args in (["history", tmp_path, "-o", tmp_path.parent / "r.html"], ["compare", tmp_path, tmp_path]):
            with no_hang(60):
                code, out, err = run_cli(capsys, *args)
            assert code == 0 and "Traceback" not in err
            assert "0002_pipe.json: skipped, not a regular file" in out + err


class TestCompareNeverSeesBadData:
    @pytest.mark.parametrize(("median", "side"), [
        (0.0, "base"), (float("nan"), "base"), (-1e-6, "base"), (0.0, "new"), (float("nan"), "new"), (-1e-6, "new"),
    ])
    def test_bad_median_is_exit_2_not_a_verdict(self, tmp_path, capsys, sample, median, side):
        """A zero, NaN or negative median is bad input (2), never 'unchanged' (0) nor a crash (1)."""
        bad = small(sample)
        bad["benchmarks"][0]["stats"]["median"] = median
        paths = {"base": put(tmp_path / "base.json", json.dumps(bad if side == "base" else small(sample))),
                 "new": put(tmp_path / "new.json", json.dumps(bad if side == "new" else small(sample)))}
        code, out, err = run_cli(capsys, "compare", paths["base"], paths["new"])
        assert_refused(code, err, f"{side}.json: benchmark {FIRST!r}: stats field 'median'")
        assert "faster" not in out and "unchanged" not in out


class TestPlotLabels:
    @pytest.mark.parametrize("label", ["$", "cost in $", "$x$", "a $ b $ c", "\\$", "$$"])
    def test_dollar_drawn_as_written(self, label):
        """A '$' in a label is drawn as a dollar sign, not parsed as mathtext (a lone one raises)."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots()
        text = ax.set_title(mathtext_safe(label))
        fig.canvas.draw()
        plt.close(fig)
        assert not text._text.replace("\\$", "").count("$")  # every dollar escaped: no mathtext


class TestOptionsUpFront:
    def test_without_pytest_benchmark_a_clear_message(self, pytester):
        """-p no:benchmark: one usage error saying what is missing, not an unknown-hook traceback."""
        pytester.makeconftest('pytest_plugins = ("xferbench.measure.plugin",)')
        pytester.makepyfile(test_one="def test_one():\n    pass\n")
        result = pytester.runpytest_subprocess("-p", "no:benchmark")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["*xferbench times with pytest-benchmark*-p no:benchmark*"])
        assert "Traceback" not in result.stderr.str()

    @pytest.mark.parametrize("requirement", ["", "  ", "-e.", "--index-url=http://example.invalid/simple", "-r x.txt"])
    def test_ensure_torch_refuses_what_pip_would_read_as_an_option(self, requirement):
        """Without torch (python -S hides site-packages), a requirement that is empty or an option is refused."""
        done = subprocess.run([sys.executable, "-S", str(ROOT / "bench" / "ensure_torch.py")], capture_output=True,
                              text=True, env={**os.environ, "XFERBENCH_TORCH": requirement}, timeout=60)
        assert done.returncode == 2
        assert "is not a requirement" in done.stderr
        assert "installing" not in done.stdout


class TestNoSilentMerge:
    def test_cases_differing_only_by_shape_are_both_kept(self, tmp_path, sample):
        """2x3 and 24 B hold the same bytes; they are different cases, so neither replaces the other."""
        document = small(sample, 1)
        twin = copy.deepcopy(document["benchmarks"][0])
        twin["extra_info"]["shape"] = [2, 3]
        twin["name"] = "twin"
        document["benchmarks"].append(twin)
        results = load([put(tmp_path / "run.json", document)])
        assert len(results.frame) == 2 and results.notes == []

    def test_non_blocking_as_a_string_is_refused_not_merged(self, tmp_path, capsys, sample):
        document = small(sample, 1)
        twin = copy.deepcopy(document["benchmarks"][0])
        twin["extra_info"]["non_blocking"] = "False"
        document["benchmarks"].append(twin)
        code, _, err = run_cli(capsys, "check", put(tmp_path / "run.json", document))
        assert_refused(code, err, "field 'non_blocking' must be true or false")

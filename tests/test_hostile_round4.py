"""Hostile inputs, fourth pass: the side files of compare, the other tools' outputs, odd
machine descriptions, option values, scenario figures and the mutation-score script.

Each class names what a user would see go wrong: a traceback or exit 1 where bad input must be
one line and exit 2, a hang, a result file replaced, a figure that hides a bar.
"""

import copy
import json
import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xferbench.cli import main

from hang import no_hang

DATA = Path(__file__).parent / "data"
SAMPLE = json.loads((DATA / "cpu-sample.json").read_text())


def small(count: int = 4) -> dict:
    """The sample cut to a few benchmarks, a copy of its own (tests change its machine_info)."""
    return copy.deepcopy({**SAMPLE, "benchmarks": SAMPLE["benchmarks"][:count]})


def put(path: Path, document) -> Path:
    if isinstance(document, bytes):
        path.write_bytes(document)
    else:
        path.write_text(document if isinstance(document, str) else json.dumps(document))
    return path


def run_cli(capsys, *args) -> tuple[int, str, str]:
    try:
        code = main([str(a) for a in args])
    except SystemExit as exit_:
        code = exit_.code
    out, err = capsys.readouterr()
    return code, out, err


def assert_refused(code: int, err: str, *fragments: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    for fragment in fragments:
        assert fragment in err, err


@pytest.fixture
def runs(tmp_path) -> tuple[Path, Path]:
    return put(tmp_path / "base.json", small()), put(tmp_path / "new.json", small())


def noise_file(tmp_path: Path, **change) -> Path:
    """A noise file as calibrate writes it (same fields), with ``change`` applied."""
    document = {"xferbench_noise": 1, "machine": {}, "runs": 10, "target": 0.05, "per_side": 3, "z_bound": 4.0,
                "floors": {"bandwidth": 0.25, "latency": 1.0}, "cases": {}, "false_alarm_rate": {}, "confirmed": True,
                "note": ""} | change
    return put(tmp_path / "noise.json", json.dumps(document))


class TestCompareSideFiles:
    """--noise and --confirm files are inputs too: read safely, and a noise file that would switch the gate off
    (a NaN z bound: |z| > NaN is never true) or make it fire on anything (a negative floor) is refused."""

    @pytest.mark.parametrize("flag", ["--noise", "--confirm"])
    @pytest.mark.parametrize(("content", "message"), [
        ("caf\xe9".encode("latin-1"), "cannot read it (UnicodeDecodeError)"),
        (b"[" * 100000, "not a"),
    ])
    def test_unreadable_side_file(self, tmp_path, capsys, runs, flag, content, message):
        side = put(tmp_path / "side.json", content)
        code, _, err = run_cli(capsys, "compare", *runs, flag, side)
        assert_refused(code, err, f"{side}: ", message)

    @pytest.mark.parametrize("flag", ["--noise", "--confirm"])
    def test_fifo_side_file_is_refused_not_read(self, tmp_path, capsys, runs, flag):
        os.mkfifo(tmp_path / "side.json")
        with no_hang(60):
            code, _, err = run_cli(capsys, "compare", *runs, flag, tmp_path / "side.json")
        assert_refused(code, err, "not a regular file")

    @pytest.mark.parametrize(("field", "value"), [
        ("z_bound", float("nan")), ("z_bound", -4.0), ("z_bound", "4"),
        ("floors", {"bandwidth": -0.1, "latency": 1.0}), ("floors", {"bandwidth": float("nan"), "latency": 1.0}),
        ("floors", {"latency": 1.0}), ("floors", "25%"),
        ("cases", [1]), ("cases", {"k": None}), ("cases", {"k": {"spread": -1.0}}), ("cases", {"k": {"spread": "x"}}),
        ("cases", {"k": {"spread": 0.1, "floor": "10%"}}), ("cases", {"k": {"spread": 0.1, "floor": 0}}),
        ("machine", None), ("machine", [1]), ("per_side", 0), ("runs", True), ("confirmed", "no"), ("note", 5),
        ("target", 1.5), ("false_alarm_rate", [0.1]),
    ])
    def test_noise_field_no_calibration_writes_is_refused(self, tmp_path, capsys, runs, field, value):
        code, out, err = run_cli(capsys, "compare", *runs, "--noise", noise_file(tmp_path, **{field: value}))
        assert_refused(code, err, "noise.json: not a usable noise file", f"field {field!r}")
        assert "regression" not in out

    def test_a_noise_file_as_calibrate_writes_it_is_used(self, tmp_path, capsys, runs):
        """The checks refuse only what calibrate never writes: infinite floors ("not gated") pass."""
        path = noise_file(tmp_path, floors={"bandwidth": float("inf"), "latency": 1.0},
                          cases={"k": {"spread": 0.0, "floor": float("inf")}})
        code, out, _ = run_cli(capsys, "compare", *runs, "--noise", path)
        assert code == 0 and "calibration file" in out

    def test_noise_version_true_is_not_version_1(self, tmp_path, capsys, runs):
        code, _, err = run_cli(capsys, "compare", *runs, "--noise", noise_file(tmp_path, xferbench_noise=True))
        assert_refused(code, err, "not a noise file written by xferbench calibrate")


NVBANDWIDTH_H2D = {"name": "host_to_device_memcpy_ce", "status": "Passed",
                   "bandwidth_description": "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)",
                   "bandwidth_matrix": [["12.5"]]}


class TestOtherToolsOutputs:
    """nvbandwidth and nccl-tests files given beside the suite's JSON are told apart by content: reading
    them must neither hang, nor crash, nor turn "nan" into a figure."""

    def test_fifo_beside_the_run_does_not_hang(self, tmp_path, capsys):
        run = put(tmp_path / "run.json", small())
        os.mkfifo(tmp_path / "nvbandwidth.txt")
        with no_hang(60):
            code, _, err = run_cli(capsys, "report", run, tmp_path / "nvbandwidth.txt", "-o", tmp_path / "r.html")
        assert_refused(code, err, "nvbandwidth.txt: not a regular file")

    @pytest.mark.parametrize(("content", "message"), [
        (b"[" * 100000, "nested too deeply"),
        (b'{"nvbandwidth": ' + b"9" * 5000 + b"}", "a number too long"),
    ])
    def test_json_no_parser_can_hold(self, tmp_path, capsys, content, message):
        run = put(tmp_path / "run.json", small())
        other = put(tmp_path / "other.json", content)
        code, _, err = run_cli(capsys, "report", run, other, "-o", tmp_path / "r.html")
        assert_refused(code, err, "other.json: ", message)

    def test_nvbandwidth_testcase_name_not_a_string(self, tmp_path, capsys):
        run = put(tmp_path / "run.json", small())
        other = put(tmp_path / "nv.json", {"nvbandwidth": {"testcases": [{**NVBANDWIDTH_H2D, "name": ["x"]}]}})
        code, _, err = run_cli(capsys, "report", run, other, "-o", tmp_path / "r.html")
        assert_refused(code, err, "nv.json: no nvbandwidth testcase in it has a counterpart")

    def test_nvbandwidth_nan_and_inf_cells_are_not_figures(self):
        from xferbench.analyze.peers import parse_nvbandwidth

        case = {**NVBANDWIDTH_H2D, "bandwidth_matrix": [["nan", "inf", "1e999", "-3", "N/A", "25"]]}
        figures = parse_nvbandwidth({"nvbandwidth": {"testcases": [case]}}, "nv.json")
        assert [(f.dst, f.gbps) for f in figures] == [("cuda:5", 25.0)]

    def test_nccl_line_with_an_impossible_size_or_bandwidth_is_not_a_figure(self):
        from xferbench.analyze.peers import parse_nccl_tests

        head = "# nccl-tests version 2.19\n#  size count type redop root time algbw busbw #wrong\n"
        rows = [f" {'9' * 5000} 256 float sum -1 1.0 1.0 2.0 0", " 1024 256 float sum -1 1.0 1.0 1e999 0",
                " 2048 512 float sum -1 1.0 1.0 3.5 0"]
        figures = parse_nccl_tests(head + "\n".join(rows) + "\n", "all_reduce_perf.txt")
        assert [(f.nbytes, f.gbps) for f in figures] == [(2048, 3.5)]

    @pytest.mark.slow
    def test_suite_rows_of_zero_bytes_beside_nvbandwidth(self, tmp_path, capsys):
        """A copy of 0 bytes has no place on the log size scale the nearest size is found on; it used to crash."""
        sim = json.loads((DATA / "sim-2gpu.json").read_text())
        for bench in sim["benchmarks"]:
            if bench["extra_info"]["op"] == "h2d" and bench["extra_info"]["nbytes"] < 2**20:
                bench["extra_info"]["nbytes"] = 0
        run = put(tmp_path / "sim.json", sim)
        other = put(tmp_path / "nv.json", {"nvbandwidth": {"testcases": [NVBANDWIDTH_H2D]}})
        code, _, err = run_cli(capsys, "report", run, other, "-o", tmp_path / "r.html")
        assert code == 0, err
        assert "nvbandwidth&#39;s host_to_device_memcpy_ce (cpu→cuda:0)" in (tmp_path / "r.html").read_text()


class TestResultsNeverOverwritten:
    def test_calibrate_numbers_new_runs_after_the_highest_not_the_count(self, tmp_path, capsys):
        """With aa-000 gone, two runs remain (aa-001, aa-002): the next must be aa-003, not a second aa-002."""
        folder = tmp_path / "aa"
        folder.mkdir()
        for i in (1, 2):
            put(folder / f"aa-{i:03d}.json", small())
        before = {p.name: p.read_bytes() for p in folder.iterdir()}
        writer = tmp_path / "writer.py"
        writer.write_text("import shutil, sys\nshutil.copy(sys.argv[1], sys.argv[2].split('=', 1)[1])\n")
        command = f"{sys.executable} {writer} {folder / 'aa-001.json'}"
        _, out, err = run_cli(capsys, "calibrate", folder, "--run", command, "--times", "1", "-o", tmp_path / "n.json")
        assert "A/A run 1 of 1 done" in out, err
        assert {p.name: p.read_bytes() for p in folder.iterdir() if p.name in before} == before
        assert (folder / "aa-003.json").exists()

    def test_ab_keeps_an_earlier_comparisons_blocks(self, tmp_path):
        """A second `xferbench ab` into the same --keep folder numbers its blocks after the first one's."""
        from xferbench.analyze.ab import run_ab
        from xferbench.analyze.results import load

        sample = put(tmp_path / "sample.json", small())
        keep = tmp_path / "ab"
        keep.mkdir()
        earlier = put(keep / "block000-base.json", "an earlier comparison's block")
        written: list[str] = []

        def runner(command: str, out: Path):
            assert not out.exists(), f"{out.name} would be overwritten"
            written.append(out.name)
            out.write_bytes(sample.read_bytes())
            return load([out])

        run_ab("base", "head", 6, keep, confirm=0, runner=runner, seed=1)
        assert earlier.read_text() == "an earlier comparison's block"
        assert sorted(written)[:2] == ["block001-base.json", "block001-head.json"] and len(written) == 12

    @pytest.mark.parametrize("name", ["run.journal.jsonl", "RUN.JSON", "run.Json.GZ"])
    def test_report_never_written_as_a_results_file_or_journal(self, tmp_path, capsys, name):
        """A journal beside the run is a result too (an interrupted run's only one): -o onto it is refused."""
        run = put(tmp_path / "run.json", small())
        target = put(tmp_path / name, "a result")
        code, out, err = run_cli(capsys, "report", run, "-o", target)
        assert_refused(code, err, "the report is an HTML file")
        assert target.read_text() == "a result" and out == ""

    def test_report_of_a_link_loop_is_one_line(self, tmp_path, capsys):
        os.symlink(tmp_path / "b.json", tmp_path / "a.json")
        os.symlink(tmp_path / "a.json", tmp_path / "b.json")
        code, _, err = run_cli(capsys, "report", tmp_path / "a.json", "-o", tmp_path / "r.html")
        assert_refused(code, err, "a.json")


class TestOptionValues:
    @pytest.mark.parametrize("args", [["--per-side", "0"], ["--per-side", "-3"], ["--times", "0", "--run", "true"],
                                      ["--times", "-2", "--run", "true"]])
    def test_calibrate_counts_below_one(self, tmp_path, capsys, args):
        folder = tmp_path / "aa"
        folder.mkdir()
        for i in range(6):
            put(folder / f"aa-{i:03d}.json", small())
        code, out, err = run_cli(capsys, "calibrate", folder, "-o", tmp_path / "n.json", *args)
        assert_refused(code, err, args[0])
        assert out == "" and not (tmp_path / "n.json").exists()

    def test_ab_negative_confirm_refused_before_any_block_runs(self, tmp_path, capsys):
        code, _, err = run_cli(capsys, "ab", "--base", f"touch {tmp_path / 'ran'}", "--head", "true",
                                 "--confirm", "-1", "--keep", tmp_path / "ab")
        assert_refused(code, err, "--confirm -1")
        assert not (tmp_path / "ran").exists()

    @pytest.mark.parametrize(("option", "message"), [
        ("--xfer-sizes=0B", "argument --xfer-sizes: '0B' is not a positive size"),
        ("--xfer-dtypes=float8", "argument --xfer-dtypes: 'float8' is not a supported dtype"),
        ("--xfer-profile=slow", "argument --xfer-profile: invalid choice: 'slow'"),
        ("--xfer-dist-timeout=nan", "argument --xfer-dist-timeout: 'nan': must be a finite number"),
        ("--xfer-dist-backend=mpi", "argument --xfer-dist-backend: invalid choice: 'mpi'"),
        ("--xfer-dist-rounds=0", "argument --xfer-dist-rounds: '0': must be between"),
    ])
    def test_pytest_option_value_is_one_line_exit_4(self, pytester, option, message):
        """pytest prints argparse's own refusal as usage + error + inifile + rootdir; ours is one line."""
        pytester.makeconftest('pytest_plugins = ("xferbench.measure.plugin",)')
        pytester.makepyfile(test_one="def test_one():\n    pass\n")
        result = pytester.runpytest_subprocess(option)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        errors = [line for line in result.errlines if line.strip()]
        assert len(errors) == 1 and errors[0].startswith(f"ERROR: {message}"), errors

    def test_pytest_option_values_still_parsed(self, pytester):
        pytester.makeconftest('pytest_plugins = ("xferbench.measure.plugin",)')
        pytester.makepyfile(test_one="def test_one(request):\n    o = request.config.option\n"
                                     "    assert o.xfer_sizes == [4, (2, 3)] and o.xfer_dtypes == ['float16']\n"
                                     "    assert o.xfer_dist_timeout == 5.0 and o.xfer_dist_rounds == 3\n")
        result = pytester.runpytest_subprocess("--xfer-sizes=4B,2x3", "--xfer-dtypes=float16,torch.float16",
                                               "--xfer-dist-timeout=5", "--xfer-dist-rounds=3", "--xfer-devices=cpu")
        result.assert_outcomes(passed=1)

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
        pytester.makeconftest('pytest_plugins = ("xferbench.measure.journal",)')
        pytester.makepyfile(test_one="def test_one(benchmark):\n    raise AssertionError('measured')\n")
        result = pytester.runpytest("--benchmark-only", f"--xfer-journal={target}")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([f"*--xfer-journal: {target}: a folder or a device*"])
        assert not Path(f"{target}.jsonl").exists()


def sim_run() -> dict:
    """The simulated 2-GPU run cut to a few benchmarks of each family: a full fingerprint, a quick report."""
    document = json.loads((DATA / "sim-2gpu.json").read_text())
    seen: dict[str, int] = {}
    keep = []
    for bench in document["benchmarks"]:
        op = bench["extra_info"]["op"]
        seen[op] = seen.get(op, 0) + 1
        if seen[op] <= 2:
            keep.append(bench)
    return {**document, "benchmarks": keep}


class TestMachineDescription:
    """machine_info.xferbench is read by the model (links, caches), the report and check: a damaged one is
    named at load (exit 2), a foreign one (not an object) is left out with a note; never a traceback."""

    @pytest.mark.parametrize(("where", "value"), [
        ("devices", 5), ("devices", [5]), ("devices", {"cuda:0": {}}), ("host", "x"), ("host.cache_bytes", [1]),
        ("host.cache_bytes.L3", "32MiB"), ("host.cache_bytes.L1d", 1e308), ("peer_access", "yes"),
        ("peer_access", [[1, 0], [0, 1]]), ("devices.0.pcie_max_width", "16"), ("devices.0.memory_bytes", -1),
        ("devices.0.l2_cache_bytes", {"a": 1}), ("devices.0.nvlink_version", [4]), ("devices.0.device", 0),
    ])
    @pytest.mark.parametrize("command", ["report", "check"])
    def test_damaged_fingerprint_is_named(self, tmp_path, capsys, where, value, command):
        document = sim_run()
        holder = document["machine_info"]["xferbench"]
        *parents, name = where.split(".")
        for part in parents:
            holder = holder[int(part)] if part.isdigit() else holder[part]
        holder[name] = value
        run = put(tmp_path / "run.json", document)
        args = ["report", run, "-o", tmp_path / "r.html"] if command == "report" else ["check", run]
        code, _, err = run_cli(capsys, *args)
        assert_refused(code, err, "run.json: field 'machine_info.xferbench.")
        assert not (tmp_path / "r.html").exists()

    @pytest.mark.parametrize("machine", [{"cpu": "AMD", "xferbench": [1]}, {"xferbench": 5}, {"cpu": ["x"]}])
    def test_foreign_blocks_left_out_with_a_note(self, tmp_path, capsys, machine):
        document = small()
        document["machine_info"] |= machine
        run = put(tmp_path / "run.json", document)
        code, _, err = run_cli(capsys, "report", run, "-o", tmp_path / "r.html")
        assert code == 0, err
        assert "not an object (a foreign or damaged JSON): left out" in (tmp_path / "r.html").read_text()

    def test_runs_of_two_machines_are_not_merged_into_one_report(self, tmp_path, capsys):
        """One page names one machine, and a case keeps its newest row: another CPU's figures would
        silently replace this one's under this one's name."""
        ours = put(tmp_path / "ours.json", small())
        theirs = small()
        theirs["machine_info"]["cpu"]["brand_raw"] = "Another CPU"
        theirs["datetime"] = "2099-01-01T00:00:00"
        other = put(tmp_path / "theirs.json", theirs)
        for args in (["report", ours, other, "-o", tmp_path / "r.html"], ["check", ours, other]):
            code, _, err = run_cli(capsys, *args)
            assert_refused(code, err, "come from different machines", "Another CPU")
        assert not (tmp_path / "r.html").exists()

    def test_runs_of_one_machine_still_merge(self, tmp_path, capsys):
        first, second = small(2), small(4)
        second["benchmarks"] = second["benchmarks"][2:]
        code, out, err = run_cli(capsys, "report", put(tmp_path / "a.json", first), put(tmp_path / "b.json", second),
                                 "-o", tmp_path / "r.html")
        assert code == 0, err
        assert "(4 benchmarks)" in out


class TestMutationScoreArguments:
    """bench/mutation_score.py is the gate of `tox -e mutation`: an argument that silently disables it
    (--fail-under nan: every score compares False against NaN) or that mutmut cannot run is refused."""

    @pytest.fixture
    def script(self, monkeypatch):
        import importlib.util

        path = Path(__file__).resolve().parent.parent / "bench" / "mutation_score.py"
        spec = importlib.util.spec_from_file_location("mutation_score", path)
        module = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, "mutation_score", module)
        spec.loader.exec_module(module)
        scored: list[str] = []

        def run(name: str, max_children: int):
            scored.append(name)
            return module.Score(name, 5, 10, {"killed": 5, "survived": 5, "no_tests": 0, "timeout": 0}, [])

        monkeypatch.setattr(module, "run", run)
        module.scored = scored
        return module

    @pytest.mark.parametrize("args", [["--fail-under", "nan"], ["--fail-under", "inf"], ["--fail-under", "-5"],
                                      ["--fail-under", "101"], ["--fail-under", "85%"], ["--max-children", "0"],
                                      ["--max-children", "-1"], ["--max-children", "2.5"]])
    def test_refused_before_any_module_is_scored(self, script, capsys, args):
        with pytest.raises(SystemExit) as stop:
            script.main(["units", *args])
        assert stop.value.code == 2
        err = capsys.readouterr().err
        assert f"argument {args[0]}" in err and "Traceback" not in err
        assert script.scored == []

    def test_a_50_percent_score_fails_an_85_bar(self, script):
        """What --fail-under nan used to let through."""
        assert script.main(["units", "--fail-under", "85"]) == 1

    def test_a_module_named_twice_is_scored_once(self, script):
        assert script.main(["units", "units", "contract"]) == 0
        assert script.scored == ["units", "contract"]


class TestScenarioFiguresOnOddFrames:
    """Two cases whose paths read the same (a path names neither dtype, call nor shape) each keep a bar
    and a line of their own: on one category label the second bar was drawn over the first."""

    @pytest.fixture
    def frame(self):
        from xferbench.analyze.results import load

        return load([DATA / "sim-2gpu.json"]).frame

    @staticmethod
    def twin(rows, **change):
        """The first row again, as another case that reads the same path (e.g. in float16)."""
        import pandas as pd

        extra = rows.iloc[[0]].copy()
        for name, value in change.items():
            extra[name] = value
        return pd.concat([rows, extra], ignore_index=True)

    @pytest.mark.parametrize("op", ["bidir", "copy_kind", "sync_stall"])
    def test_bars_of_cases_sharing_a_path_do_not_overprint(self, frame, op):
        import matplotlib.pyplot as plt

        from xferbench.analyze import plots

        rows = self.twin(frame[frame["op"] == op], dtype="float16", median_s=frame[frame["op"] == op]["median_s"].iloc[0] * 3)
        rows.loc[rows.index[-1], "bandwidth_gbps"] = rows["bandwidth_gbps"].iloc[0] / 3
        fig = plots.scenario_plot(rows, op)
        ax = fig.axes[0]
        positions = [round(bar.get_y(), 6) for bar in ax.patches]
        labels = [t.get_text() for t in ax.get_yticklabels()]
        assert len(set(positions)) == len(rows) == len(set(labels))
        assert sum("dtype=float16" in label for label in labels) == 1
        plt.close(fig)

    def test_lines_of_cases_sharing_a_path_are_two_lines(self, frame):
        import matplotlib.pyplot as plt
        import pandas as pd

        from xferbench.analyze import plots

        rows = frame[frame["op"] == "module_to"]
        paths = rows["path"].nunique()
        twin = rows[rows["path"] == rows["path"].iloc[0]].assign(method="cuda")  # the same sizes, another call
        fig = plots.scenario_plot(pd.concat([rows, twin], ignore_index=True), "module_to")
        labels = [t.get_text() for t in fig.legends[0].get_texts()]
        assert len(labels) == paths + 1 == len(set(labels))
        plt.close(fig)

    @pytest.mark.parametrize("change", [{"nbytes": 0}, {"bandwidth_gbps": 0.0}, {"median_s": 1e-15}])
    @pytest.mark.parametrize("op", ["bidir", "sync_stall", "module_to"])
    def test_zero_and_extreme_values_draw(self, frame, op, change):
        import warnings

        import matplotlib.pyplot as plt

        from xferbench.analyze import plots

        rows = frame[frame["op"] == op].copy()
        for name, value in change.items():
            rows.loc[rows.index[0], name] = value
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            svg = plots.to_svg(plots.scenario_plot(rows, op))
        assert svg.startswith("<svg")
        plt.close("all")


class TestHistoryOfOneMachine:
    def test_runs_of_another_machine_are_no_points_of_the_trend(self, tmp_path):
        """A storage folder that moved to a new GPU or CPU: the old machine's runs are left out of the trend
        (as compare leaves them out of a baseline), not drawn as a lasting step."""
        from xferbench.analyze.history import history_plots

        for i in range(4):
            run = small()
            run["datetime"] = f"2026-01-0{i + 1}T00:00:00"
            if i == 0:
                run["machine_info"]["cpu"]["brand_raw"] = "Old CPU"
                for bench in run["benchmarks"]:  # ten times slower there: a "step" if it were drawn
                    bench["stats"] |= {k: bench["stats"][k] * 10 for k in ("min", "max", "mean", "median", "q1", "q3")}
            put(tmp_path / f"{i:04d}_run.json", run)
        plot, = history_plots(tmp_path)
        assert plot.svg is not None
        assert "1 run(s) of another machine than the newest run's are left out." in plot.caption
        assert "0000_run" not in plot.svg and "0003_run" in plot.svg

    def test_only_the_newest_machine_left_says_so(self, tmp_path):
        from xferbench.analyze.history import history_plots

        for i in range(3):
            run = small()
            run["datetime"] = f"2026-01-0{i + 1}T00:00:00"
            run["machine_info"]["cpu"]["brand_raw"] = "New CPU" if i == 2 else "Old CPU"
            put(tmp_path / f"{i:04d}_run.json", run)
        plot, = history_plots(tmp_path)
        assert plot.svg is None and plot.missing.startswith("1 run in ")
        assert "2 run(s) of another machine" in plot.caption


values = st.recursive(st.none() | st.booleans() | st.integers(-(10**20), 10**20)
                      | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=6),
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                      max_leaves=8)


class TestProperties:
    """Hypothesis, modest example counts (the cores are shared): any noise file is used or refused in one
    line; any nvbandwidth document gives finite positive figures or one ResultsError."""

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(field=st.sampled_from(["machine", "runs", "target", "per_side", "z_bound", "floors", "cases",
                                  "false_alarm_rate", "confirmed", "note"]), value=values)
    def test_noise_file_with_any_field(self, tmp_path, field, value):
        import contextlib
        import io

        from xferbench.analyze.noise import Noise
        from xferbench.analyze.results import ResultsError

        text = json.dumps({"xferbench_noise": 1, "machine": {}, "runs": 10, "target": 0.05, "per_side": 3,
                           "z_bound": 4.0, "floors": {"bandwidth": 0.25, "latency": 1.0}, "cases": {},
                           "false_alarm_rate": {}, "confirmed": True, "note": ""} | {field: value})
        try:
            noise = Noise.from_json(text, "noise.json")
        except ResultsError as error:
            assert str(error).startswith("noise.json: ") and "\n" not in str(error)
            return
        assert noise.z_bound > 0 and all(noise.floors[c] > 0 for c in ("bandwidth", "latency"))
        base = tmp_path / "base.json"
        if not base.exists():
            put(base, small())
        path = put(tmp_path / "noise.json", text)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["compare", str(base), str(base), "--noise", str(path)])
        assert code == 0, err.getvalue()  # a run against itself: no change, whatever the usable file says

    @settings(max_examples=80, deadline=None)
    @given(matrix=st.lists(st.lists(st.one_of(values, st.sampled_from(["12.5", "nan", "inf", "-1", "1e999", "N/A"])),
                                    max_size=4), max_size=4),
           description=st.sampled_from(["memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)",
                                        "memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)", "", "x"]),
           name=st.sampled_from(["host_to_device_memcpy_ce", "device_local_copy", "device_to_device_memcpy_read_ce"]))
    def test_nvbandwidth_matrix_of_anything(self, matrix, description, name):
        import math

        from xferbench.analyze.peers import parse_nvbandwidth
        from xferbench.analyze.results import ResultsError

        case = {"name": name, "status": "Passed", "bandwidth_description": description, "bandwidth_matrix": matrix}
        try:
            figures = parse_nvbandwidth({"nvbandwidth": {"testcases": [case]}}, "nv.json")
        except ResultsError as error:
            assert "\n" not in str(error)
            return
        assert all(math.isfinite(f.gbps) and f.gbps > 0 for f in figures)


SPEC = {"gpus": 2, "sync_us": 5.0, "dispatch_ns": 400.0, "launch_us": 4.0,
        "paths": {name: {"alpha_us": 2.0, "GBps": 50.0}
                  for name in ("h2d_pinned", "h2d_pageable", "d2h_pinned", "d2h_pageable", "d2d", "peer")}}


class TestSimulatedSpecBounds:
    @pytest.mark.parametrize(("change", "message"), [
        ({"gpus": 10**9}, "gpus must be at most 64"),
        ({"launch_us": 1e308}, "launch_us must be at most"),
        ({"sync_us": 1e7}, "sync_us must be at most"),
        ({"dispatch_ns": 1e300}, "dispatch_ns must be at most"),
        ({"paths": {**SPEC["paths"], "peer": {"alpha_us": 1e300, "GBps": 50.0}}}, "paths.peer.alpha_us must be at most"),
    ])
    def test_a_typo_sized_spec_is_refused_before_planning(self, change, message):
        """gpus = 1000000000 used to exhaust the host's memory while the case matrix was planned (killed,
        not refused); a launch of 1e308 us overflows the simulated clock."""
        from xferbench.measure.simulate import SpecError, parse_spec

        with pytest.raises(SpecError, match=message):
            parse_spec(SPEC | change)

    def test_the_largest_allowed_spec_loads(self):
        from xferbench.measure.simulate import parse_spec

        spec = parse_spec(SPEC | {"gpus": 64, "launch_us": 1e6, "dispatch_ns": 1e9})
        assert spec.gpus == 64


def test_a_file_named_twice_is_one_run(tmp_path, capsys):
    """run.json ./run.json (or a link to it) is one run: not 'older results of a case measured again replaced'."""
    run = put(tmp_path / "run.json", small())
    os.symlink(run, tmp_path / "link.json")
    from xferbench.analyze.results import load

    results = load([run, tmp_path / "." / "run.json", tmp_path / "link.json"])
    assert len(results.frame) == 4 and results.notes == [] and results.sources == [str(run)]

"""Hostile inputs, fourth pass: the side files of compare, the other tools' outputs, odd
machine descriptions, option values, scenario figures and the mutation-score script.

Each class names what a user would see go wrong: a traceback or exit 1 where bad input must be
one line and exit 2, a hang, a result file replaced, a figure that hides a bar.
"""

import copy
import json
import os
from pathlib import Path

import pytest

from xferbench.cli import main

from hang import no_hang

DATA = Path(__file__).parent / "data"
SAMPLE = json.loads((DATA / "cpu-sample.json").read_text())


def small(count: int = 4) -> dict:
    return {**SAMPLE, "benchmarks": copy.deepcopy(SAMPLE["benchmarks"][:count])}


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

    def test_suite_rows_of_zero_bytes_beside_nvbandwidth(self, tmp_path, capsys):
        """A copy of 0 bytes has no place on the log size scale the nearest size is found on; it used to crash."""
        sim = json.loads((DATA / "sim-2gpu.json").read_text())
        for bench in sim["benchmarks"]:
            if bench["extra_info"]["op"] == "h2d" and bench["extra_info"]["nbytes"] < 2**20:
                bench["extra_info"]["nbytes"] = 0
        run = put(tmp_path / "sim.json", sim)
        other = put(tmp_path / "nv.json", {"nvbandwidth": {"testcases": [NVBANDWIDTH_H2D]}})
        code, out, err = run_cli(capsys, "report", run, other, "-o", tmp_path / "r.html")
        assert code == 0, err
        assert "nvbandwidth&#39;s host_to_device_memcpy_ce (cpu→cuda:0)" in (tmp_path / "r.html").read_text()

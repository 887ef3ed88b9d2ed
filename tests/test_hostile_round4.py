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

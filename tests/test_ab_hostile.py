"""A hostile A/B (analyze/gate/ab.py): a side that writes the other's result, a command that never ends, a
simulated side against a measured one. Each is one line and exit 2, never a verdict."""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
from pathlib import Path

import pytest

from xferbench.analyze.gate import ab

from hang import no_hang
from hostile_inputs import assert_refused, run_cli

pytestmark = pytest.mark.hostile

DATA = Path(__file__).parent / "data"
#: Writes its own result, and a slowed copy wherever the other side's result of every block would go.
PLANTER = """
import json, pathlib, sys
out = pathlib.Path(sys.argv[2].removeprefix("--benchmark-json="))
data = json.loads(pathlib.Path(sys.argv[1]).read_text())
out.write_text(json.dumps(data))
for bench in data["benchmarks"]:
    stats = bench["stats"]
    stats["data"] = [t * 3 for t in stats["data"]]
    for key in ("min", "max", "mean", "median", "q1", "q3", "iqr", "stddev"):
        stats[key] *= 3
for block in range(40):
    (out.parent / f"block{block:03d}-head.json").write_text(json.dumps(data))
"""


def _command(tmp_path: Path, script: str, source: Path) -> str:
    path = tmp_path / "planter.py"
    path.write_text(script)
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(path))} {shlex.quote(str(source))}"


def test_the_head_is_judged_only_on_what_it_wrote(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Head ``true`` writes nothing; the base writes the head's path: no verdict, one line, exit 2."""
    base = _command(tmp_path, PLANTER, DATA / "cpu-sample.json")
    code, out, err = run_cli(capsys, "ab", "--base", base, "--head", "true", "--blocks", "6", "--keep", tmp_path / "ab",
                             "--seed", "2")  # the base runs first in the first block
    assert_refused(code, err, "'true' failed")
    assert "regression" not in out


def test_a_command_past_its_timeout_is_stopped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with no_hang(60):
        code, _, err = run_cli(capsys, "ab", "--base", "sleep 300 # {json}", "--head", "sleep 300 # {json}", "--blocks", "6",
                               "--keep", tmp_path / "ab", "--timeout", "1")
    assert_refused(code, err, "ran past --timeout 1 s")
    with no_hang(60):
        code, _, err = run_cli(capsys, "calibrate", tmp_path / "aa", "--run", "sleep 300 # {json}", "--times", "1",
                               "--timeout", "1", "-o", tmp_path / "noise.json")
    assert_refused(code, err, "ran past --timeout 1 s")


def test_a_simulated_side_against_a_measured_one_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same cases, one side a simulated machine's: compare refuses it whatever it is told, and so does ab."""
    sample = json.loads((DATA / "cpu-sample.json").read_text())
    spec = json.loads((DATA / "sim-2gpu.json").read_text())["machine_info"]["xferbench"]["simulated"]
    sample["machine_info"]["xferbench"]["simulated"] = spec
    simulated = tmp_path / "simulated.json"
    simulated.write_text(json.dumps(sample))
    copy = "cp {} {{json}}"
    code, out, err = run_cli(capsys, "ab", "--base", copy.format(shlex.quote(str(simulated))),
                             "--head", copy.format(shlex.quote(str(DATA / "cpu-sample.json"))), "--blocks", "6",
                             "--keep", tmp_path / "ab", "--seed", "1")
    assert_refused(code, err, "simulated")
    assert "regression" not in out


def test_no_command_changes_a_block_after_it_was_judged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The head overwrites every block kept so far: the blocks kept are still the runs the commands wrote."""
    keep = tmp_path / "ab"
    sample = shlex.quote(str(DATA / "cpu-sample.json"))
    vandal = (f"cp {sample} {{json}}; for f in {shlex.quote(str(keep))}/block*.json; "
              "do [ -e \"$f\" ] && echo x > \"$f\"; done; true")
    code, _, err = run_cli(capsys, "ab", "--base", f"cp {sample} {{json}}", "--head", vandal, "--blocks", "6",
                           "--keep", keep, "--seed", "1")
    assert code == 0, err
    kept = sorted(keep.glob("block*.json"))
    assert len(kept) == 12 and all(json.loads(path.read_text())["benchmarks"] for path in kept)


@pytest.fixture
def orphan(tmp_path: Path):
    """A shell line that leaves ``sleep 90`` in a session of its own holding the command's stdout and stderr (out of
    reach of the kill of the command's group); that process is killed when the test ends. (90 s: waited for, it
    fails the test's 30 s guard in bounded time.)"""
    pid_file = tmp_path / "orphan.pid"
    yield f"setsid sleep 90 & echo $! > {shlex.quote(str(pid_file))}; "
    try:
        pid = int(pid_file.read_text())
        if Path(f"/proc/{pid}/cmdline").read_bytes() == b"sleep\x0090\x00":  # still ours, not a number reused since
            os.kill(pid, signal.SIGKILL)
    except (OSError, ValueError):
        pass


def test_a_timeout_stops_a_command_whose_orphan_holds_its_output(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                  orphan: str) -> None:
    """The group is killed at --timeout; the orphan's pipes are read a few seconds more, never until it ends."""
    with no_hang(30):
        code, _, err = run_cli(capsys, "ab", "--base", orphan + "sleep 300 # {json}", "--head", "true",
                               "--blocks", "6", "--keep", tmp_path / "ab", "--timeout", "1", "--seed", "2")
    assert_refused(code, err, "ran past --timeout 1 s")


def test_calibrate_run_stops_at_its_timeout_despite_an_orphan(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              orphan: str) -> None:
    with no_hang(30):
        code, _, err = run_cli(capsys, "calibrate", tmp_path / "aa", "--run", orphan + "sleep 300 # {json}",
                               "--times", "1", "--timeout", "1", "-o", tmp_path / "noise.json")
    assert_refused(code, err, "ran past --timeout 1 s")


def test_a_command_that_ends_is_read_though_its_orphan_lives_on(tmp_path: Path, orphan: str) -> None:
    """The command wrote its run and ended; what it left behind holds stdout: read, not waited for until --timeout."""
    command = orphan + f"cp {shlex.quote(str(DATA / 'cpu-sample.json'))} {{json}}"
    with no_hang(30):
        results = ab.run_command(command, tmp_path / "out.json", timeout=120)
    assert len(results.frame) > 0

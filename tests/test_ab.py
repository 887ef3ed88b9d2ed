"""``xferbench ab``: interleaved blocks, signed-rank test, Hodges-Lehmann estimate, confirmation."""

import math
import re
import shlex
import sys
from pathlib import Path

import numpy as np
import pytest

import synthetic_runs as syn
from xferbench.analyze import ab
from xferbench.analyze.ab import CommandFailed, hodges_lehmann, run_ab, run_command, signed_rank
from xferbench.analyze.results import Results
from xferbench.cli import main

SAMPLE = Path(__file__).parent / "data" / "cpu-sample.json"
TARGET = "host pageable copy_ cpu"


def drifting_runner(seed: int, slow: float) -> ab.Runner:
    """Synthetic commands on a drifting machine: each block shares a level (SD 0.3 in log) that
    interleaving must cancel; "head" is ``slow`` times slower on the 16 MiB host copy."""
    rng = np.random.default_rng(seed)
    state = {"drift": 0.0, "calls": 0}

    def run(command: str, out: Path) -> Results:
        if state["calls"] % 2 == 0:
            state["drift"] = float(rng.normal(0, 0.3))
        state["calls"] += 1
        result = syn.run(int(rng.integers(1 << 30)), spread={"bandwidth": 0.05, "latency": 0.12},
                         slow=slow if command == "head" else 1.0,
                         which=lambda row: row["path"] == TARGET and row["nbytes"] == 16 * 2**20)
        result.frame["data"] = [[t * math.exp(state["drift"]) for t in d] for d in result.frame["data"]]
        return result

    return run


def test_detects_1_25x_and_stays_quiet_on_a_a(tmp_path):
    """20 A/B trials with a 1.25x slowdown of one bandwidth-bound case, and 20 A/A trials, 8 blocks each
    (+8 to confirm) on a machine that drifts 30% between blocks: every slowdown found, no false regression."""
    found = false = 0
    for trial in range(20):
        cases = run_ab("base", "head", 8, tmp_path, runner=drifting_runner(trial, 1.25), seed=trial)
        found += [(c.path, c.nbytes) for c in cases if c.regression] == [(TARGET, 16 * 2**20)]
        cases = run_ab("base", "base", 8, tmp_path, runner=drifting_runner(100 + trial, 1.25), seed=trial)
        false += any(c.regression for c in cases)
    assert found >= 18 and false == 0


def test_confirmation_needs_the_fresh_blocks_to_agree(tmp_path):
    """A case flagged on the first blocks but not slower on the fresh ones is 'not confirmed', exit 0 material."""
    calls = {"n": 0}
    inner = drifting_runner(0, 1.5)

    def first_blocks_only(command: str, out: Path) -> Results:
        calls["n"] += 1
        return inner(command if calls["n"] <= 16 else "base", out)

    cases = run_ab("base", "head", 8, tmp_path, runner=first_blocks_only, seed=0)
    (target,) = [c for c in cases if c.path == TARGET and c.nbytes == 16 * 2**20]
    assert target.verdict == "not confirmed" and target.confirm_p is not None and target.confirm_p >= 0.05
    assert target.p_value < 0.05 and calls["n"] == 32
    assert not any(c.regression for c in cases)


def test_no_confirmation_asked(tmp_path):
    cases = run_ab("base", "head", 6, tmp_path, confirm=0, runner=drifting_runner(1, 2.0), seed=1)
    (target,) = [c for c in cases if c.regression]
    assert (target.path, target.confirm_p, target.blocks) == (TARGET, None, 6)
    assert target.low <= target.ratio <= target.high and 1.7 < target.ratio < 2.3


def test_hodges_lehmann():
    """Median of the Walsh averages; a 95% interval from the signed-rank critical values."""
    assert hodges_lehmann([1.0, 2.0, 3.0]) == (2.0, 1.0, 3.0)  # too few values: the whole range
    estimate, low, high = hodges_lehmann([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 100.0])
    assert estimate == 4.5 and low == 2.0 and high == 50.5  # 100 does not drag the estimate, only the upper end
    x = np.random.default_rng(0).normal(0.3, 0.1, 40)
    estimate, low, high = hodges_lehmann(x)
    assert low < 0.3 < high and estimate == pytest.approx(0.3, abs=0.05)


def test_signed_rank():
    assert signed_rank([0.0] * 6) == 1.0
    assert signed_rank([0.1, 0.2, 0.3, 0.4, 0.5, 0.6]) == pytest.approx(2 / 64)
    assert signed_rank([0.1, 0.2, 0.3, 0.4, 0.5, 0.6], "greater") == pytest.approx(1 / 64)
    assert signed_rank([0.1, 0.2, 0.3, 0.4, 0.5, 0.6], "less") == pytest.approx(1.0)


def test_too_few_blocks(tmp_path):
    with pytest.raises(ValueError, match="at least 6 blocks"):
        run_ab("base", "head", 5, tmp_path, runner=drifting_runner(0, 1.0))


WRITER = """
import json, random, sys
source, out = sys.argv[1], sys.argv[2].removeprefix("--benchmark-json=")
data = json.load(open(source))
for bench in data["benchmarks"]:  # each copy gets a little noise of its own, so a test has ranks to work with
    bench["stats"]["data"] = [t * random.uniform(0.97, 1.03) for t in bench["stats"]["data"]]
json.dump(data, open(out, "w"))
"""


def writer(tmp_path: Path, source: Path) -> str:
    """A shell command that writes a noisy copy of ``source`` where it is told to."""
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))} {shlex.quote(str(source))}"


def test_run_command_writes_and_loads(tmp_path):
    """A real shell command: {json} is replaced by the block's path, or --benchmark-json= is appended."""
    assert len(run_command(writer(tmp_path, SAMPLE) + " {json}", tmp_path / "a.json").frame) == 58
    assert len(run_command(writer(tmp_path, SAMPLE), tmp_path / "b.json").frame) == 58


def test_failing_command_is_bad_input(tmp_path, capsys):
    with pytest.raises(CommandFailed, match=r"'exit 3' failed \(exit 3\)"):
        run_command("exit 3", tmp_path / "x.json")
    assert main(["ab", "--base", "echo nothing written", "--head", "echo nothing written here", "--blocks", "6", "--keep",
                 str(tmp_path), "--seed", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("xferbench ab: 'echo nothing written") and err.count("\n") == 1


def test_cli_end_to_end(tmp_path, capsys):
    """Two real commands (copies of one run and of a 3x slower one): exit 1, the case named, blocks kept."""
    import json

    data = json.loads(SAMPLE.read_text())
    for bench in data["benchmarks"]:
        if bench["name"] == "test_host[pageable-copy_-16MiB-float32-cpu->cpu]":
            bench["stats"]["data"] = [t * 3 for t in bench["stats"]["data"]]
    slow = tmp_path / "slow.json"
    slow.write_text(json.dumps(data))
    base, head = writer(tmp_path, SAMPLE), writer(tmp_path, slow)
    assert main(["ab", "--base", base, "--head", head, "--blocks", "6", "--keep", str(tmp_path / "ab"),
                 "--seed", "3"]) == 1
    out = capsys.readouterr().out
    assert "1 confirmed regression(s) in 58 case(s) over 6 interleaved blocks" in out
    assert re.search(r"host pageable copy_ cpu +16 MiB +bandwidth +(2\.9\d|3\.0\d)\d*x .* regression", out)  # 3x, estimated
    assert len(list((tmp_path / "ab").glob("block*-base.json"))) == 12  # 6 blocks + 6 to confirm, all kept

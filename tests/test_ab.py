"""``xferbench ab``: interleaved blocks, signed-rank test, Hodges-Lehmann estimate, confirmation."""

import copy
import json
import math
import re
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import synthetic_runs as syn
from strict_json import strict_loads
from xferbench.analyze.gate import ab
from xferbench.analyze.gate.ab import CommandFailed, hodges_lehmann, run_command, signed_rank
from xferbench.analyze.load.results import Results
from xferbench.cli import main

from hang import no_hang
from hostile_inputs import put, small


def run_ab(*args, **kwargs):
    """ab_run's cases alone (worst verdicts first)."""
    return ab.ab_run(*args, **kwargs).cases


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


@pytest.mark.slow
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


def test_hodges_lehmann_interval_at_nine_blocks():
    """Nine blocks: the interval's ends are the 6th Walsh average from each end (critical rank 5, as
    the exact signed-rank table has it), so a wrong variance in the normal approximation shows."""
    assert hodges_lehmann(list(range(9))) == (4.0, 1.5, 6.5)


def test_signed_rank():
    assert signed_rank([0.0] * 6) == 1.0
    assert signed_rank([1.0] * 6) == pytest.approx(2 / 64)  # e times slower in every block: as far from 0 as it gets
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
    ranked = sorted(bench["stats"]["data"])  # the median stays that of the rounds, as pytest-benchmark writes it
    bench["stats"]["median"] = (ranked[(len(ranked) - 1) // 2] + ranked[len(ranked) // 2]) / 2
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


def recording_runner(slow: float, seed: int = 0, drop_on_call: int | None = None) -> tuple[ab.Runner, list[str]]:
    """Synthetic commands without drift; records each file it is asked to write. "head" is ``slow`` times
    slower on the 16 MiB host copy; from call ``drop_on_call`` on, that case is not run at all."""
    rng = np.random.default_rng(seed)
    calls: list[str] = []

    def run(command: str, out: Path) -> Results:
        calls.append(f"{command}:{out.name}")
        result = syn.run(int(rng.integers(1 << 30)), spread={"bandwidth": 0.02, "latency": 0.05},
                         slow=slow if command == "head" else 1.0,
                         which=lambda row: row["path"] == TARGET and row["nbytes"] == 16 * 2**20)
        if drop_on_call is not None and len(calls) > drop_on_call:
            keep = ~((result.frame["path"] == TARGET) & (result.frame["nbytes"] == 16 * 2**20))
            result.frame = result.frame[keep].reset_index(drop=True)
        return result

    return run, calls


class TestBlocks:
    def test_each_block_runs_both_sides_in_the_order_it_says(self, tmp_path):
        """Every block runs base and head once, into files named by block and side, in the order reported;
        a flagged case is confirmed on as many fresh blocks as asked, numbered on from the first ones."""
        runner, calls = recording_runner(1.5)
        said: list[str] = []
        cases = run_ab("base", "head", 6, tmp_path, confirm=7, runner=runner, seed=5, say=said.append)
        assert [c.path for c in cases if c.regression] == [TARGET]
        assert said[6] == "1 case(s) flagged; confirming on 7 fresh block(s)" and len(said) == 14
        for block in range(13):
            pair = calls[2 * block: 2 * block + 2]
            assert sorted(pair) == [f"base:block{block:03d}-base.json", f"head:block{block:03d}-head.json"]
            first, second = (name.split(":")[0] for name in pair)
            assert said[block + (block >= 6)] == f"block {block + 1}: ran {first} then {second}"
        orders = {tuple(c.split(":")[0] for c in calls[i: i + 2]) for i in range(0, 26, 2)}
        assert orders == {("base", "head"), ("head", "base")}  # the order is drawn, not fixed

    def test_seed_replays_the_order_and_the_block_folder_is_made(self, tmp_path):
        """--seed gives the same order of sides again (a run can be replayed); --keep's folder is created."""
        orders = []
        for attempt in range(2):
            runner, calls = recording_runner(1.0)
            run_ab("base", "head", 6, tmp_path / f"new{attempt}" / "ab", runner=runner, seed=11)
            orders.append([c.split(":")[0] for c in calls])
            assert (tmp_path / f"new{attempt}" / "ab").is_dir()
        assert orders[0] == orders[1]

    def test_confirmation_defaults_to_as_many_blocks(self, tmp_path):
        runner, calls = recording_runner(1.5)
        cases = run_ab("base", "head", 7, tmp_path, runner=runner, seed=1)
        assert len(calls) == 28 and [c.regression for c in cases].count(True) == 1
        (target,) = [c for c in cases if c.regression]
        assert target.blocks == 7 and target.confirm_p is not None and target.confirm_p < 0.05

    def test_nothing_flagged_runs_no_fresh_blocks(self, tmp_path):
        runner, calls = recording_runner(1.0)
        said: list[str] = []
        cases = run_ab("base", "head", 6, tmp_path, runner=runner, seed=2, say=said.append)
        assert len(calls) == 12 and len(said) == 6 and {c.verdict for c in cases} == {"unchanged"}
        assert all(c.confirm_p is None for c in cases)

    def test_too_few_blocks_message(self, tmp_path):
        with pytest.raises(ValueError, match=r"^--blocks 5: at least 6 blocks are needed for the signed-rank test to "
                                             r"reach p < 0\.05$"):
            run_ab("base", "head", 5, tmp_path, runner=recording_runner(1.0)[0])
        assert run_ab("base", "head", 6, tmp_path, confirm=0, runner=recording_runner(1.0)[0])


class TestVerdicts:
    def test_faster_head_is_an_improvement(self, tmp_path):
        runner, _ = recording_runner(0.5)
        cases = run_ab("base", "head", 6, tmp_path, runner=runner, seed=3)
        assert (cases[0].path, cases[0].nbytes, cases[0].verdict) == (TARGET, 16 * 2**20, "improvement")
        assert 0.45 < cases[0].ratio < 0.55 and cases[0].high < 1 and not any(c.regression for c in cases)
        assert [c.verdict for c in cases[1:]] == ["unchanged"] * 57
        assert "0 confirmed regression(s) in 58 case(s)" in ab.to_text(cases)

    def test_floor_and_alpha_are_honoured(self, tmp_path):
        """A 1.5x slowdown is no regression at a 60% floor (unchanged: inside it), nor at alpha 1e-6 (6 blocks cannot
        reach it): there it is "can't tell", never "unchanged", since its interval lies past the 10% floor."""
        assert any(c.regression for c in run_ab("base", "head", 6, tmp_path, runner=recording_runner(1.5)[0], seed=4))
        cases = run_ab("base", "head", 6, tmp_path, floor=0.6, runner=recording_runner(1.5)[0], seed=4)
        assert {c.verdict for c in cases} == {"unchanged"}
        cases = run_ab("base", "head", 6, tmp_path, alpha=1e-6, runner=recording_runner(1.5)[0], seed=4)
        assert [(c.path, c.verdict) for c in cases if c.verdict != "unchanged"] == [(TARGET, "can't tell")]
        cases = run_ab("base", "head", 6, tmp_path, floor=0.4, runner=recording_runner(1.5)[0], seed=4)
        assert [c.verdict for c in cases].count("regression") == 1

    def test_p_must_be_below_alpha_not_equal_to_it(self, tmp_path):
        """Six blocks all slower give p = 2/64 exactly, the smallest six blocks can give: at alpha = 2/64
        nothing is flagged (p < alpha is the rule); just above it the slowdown is found."""
        cases = run_ab("base", "head", 6, tmp_path, alpha=2 / 64, runner=recording_runner(1.5)[0], seed=4)
        assert {c.verdict for c in cases} == {"unchanged", "can't tell"}  # not flagged: the 1.5x can't tell
        assert min(c.p_value for c in cases) == 2 / 64
        cases = run_ab("base", "head", 6, tmp_path, alpha=2 / 64 * 1.001, runner=recording_runner(1.5)[0], seed=4)
        assert [c.verdict for c in cases].count("regression") == 1

    def test_confirmation_is_one_sided_in_the_direction_found(self, tmp_path):
        """Six fresh blocks all slower confirm a slowdown at p = 1/64 (one-sided), which passes alpha 0.02;
        a two-sided test (2/64) would not."""
        cases = run_ab("base", "head", 8, tmp_path, confirm=6, alpha=0.02, runner=recording_runner(1.5)[0], seed=4)
        (target,) = [c for c in cases if c.path == TARGET and c.nbytes == 16 * 2**20]
        assert (target.verdict, target.confirm_p) == ("regression", 1 / 64)
        cases = run_ab("base", "head", 8, tmp_path, confirm=6, alpha=1 / 64, runner=recording_runner(1.5)[0], seed=4)
        (target,) = [c for c in cases if c.path == TARGET and c.nbytes == 16 * 2**20]
        assert (target.verdict, target.confirm_p) == ("not confirmed", 1 / 64)  # p must be below alpha here too
        unchanged = [c.ratio for c in cases if c.verdict == "unchanged"]
        assert unchanged == sorted(unchanged, reverse=True)  # the slowest first within a verdict

    def test_one_confirming_block_cannot_confirm(self, tmp_path):
        """--confirm 1 runs one fresh block; one value cannot reach p < 0.05, so the case is not confirmed."""
        runner, calls = recording_runner(1.5)
        cases = run_ab("base", "head", 6, tmp_path, confirm=1, runner=runner, seed=4)
        assert len(calls) == 14
        (target,) = [c for c in cases if c.path == TARGET and c.nbytes == 16 * 2**20]
        assert (target.verdict, target.confirm_p) == ("not confirmed", 0.5)

    def test_latency_floor_is_wider(self, tmp_path):
        """1.2x on a bandwidth-bound case is beyond its 10% floor; on a latency-bound one it is within 25%."""
        def runner_for(size: int) -> ab.Runner:
            rng = np.random.default_rng(7)

            def run(command: str, out: Path) -> Results:
                return syn.run(int(rng.integers(1 << 30)), spread={"bandwidth": 0.01, "latency": 0.01},
                               slow=1.2 if command == "head" else 1.0,
                               which=lambda row: row["path"] == TARGET and row["nbytes"] == size)
            return run

        big = run_ab("base", "head", 6, tmp_path, runner=runner_for(16 * 2**20), seed=0)
        assert [(c.nbytes, c.case_class) for c in big if c.regression] == [(16 * 2**20, "bandwidth")]
        small = run_ab("base", "head", 6, tmp_path, runner=runner_for(4), seed=0)
        (case,) = [c for c in small if c.path == TARGET and c.nbytes == 4]
        assert case.case_class == "latency" and case.verdict == "unchanged" and 1.15 < case.ratio < 1.25

    def test_case_missing_from_the_fresh_blocks_is_not_confirmed(self, tmp_path):
        runner, _ = recording_runner(1.5, drop_on_call=12)
        cases = run_ab("base", "head", 6, tmp_path, runner=runner, seed=5)
        (target,) = [c for c in cases if c.path == TARGET and c.nbytes == 16 * 2**20]
        assert (target.verdict, target.confirm_p) == ("not confirmed", 1.0)
        assert cases[0] is target  # not confirmed comes before unchanged

    def test_no_case_in_common(self, tmp_path):
        def run(command: str, out: Path) -> Results:
            result = syn.run(1)
            if command == "head":
                result.frame["case_key"] = result.frame["case_key"] + "-other"
            return result

        with pytest.raises(ab.ResultsError, match=r"^the base and head commands ran no case in common in every block$"):
            run_ab("base", "head", 6, tmp_path, runner=run)


class TestText:
    def test_table_exact(self):
        cases = [ab.AbCase(TARGET, 16 * 2**20, "bandwidth", 8, 1.25, 1.2, 1.31, 0.0078125, 0.0039, "regression"),
                 ab.AbCase("noop .cpu() on cpu", 4, "latency", 8, 0.99, 0.9, 1.1, 0.64, None, "unchanged")]
        assert ab.to_text(cases, 0.01).splitlines() == [
            "case                     size    class      head/base (HL)  95% CI        p       confirm p  verdict",
            "host pageable copy_ cpu  16 MiB  bandwidth  1.250x          1.200-1.310x  0.0078  0.0039     regression",
            "noop .cpu() on cpu       4 B     latency    0.990x          0.900-1.100x  0.64    -          unchanged",
            "",
            "1 confirmed regression(s) in 2 case(s) over 8 interleaved blocks (Wilcoxon signed-rank p < 0.01 and "
            "beyond the floor, then again on fresh blocks)",
        ]

    def test_one_case(self):
        """A run of one case reports it and its blocks."""
        case = ab.AbCase(TARGET, 16 * 2**20, "bandwidth", 9, 1.0, 0.9, 1.1, 0.5, None, "unchanged")
        assert ab.to_text([case]).splitlines()[-1].startswith("0 confirmed regression(s) in 1 case(s) over 9 "
                                                              "interleaved blocks")

    def test_no_cases(self):
        assert ab.to_text([]).endswith("0 confirmed regression(s) in 0 case(s) over 0 interleaved blocks (Wilcoxon "
                                       "signed-rank p < 0.05 and beyond the floor, then again on fresh blocks)")


class TestCommands:
    def test_failure_names_the_last_line_of_stderr(self, tmp_path):
        with pytest.raises(CommandFailed, match=r"^'echo a; echo boom >&2; echo c >&2; exit 4' failed \(exit 4\): c$"):
            run_command("echo a; echo boom >&2; echo c >&2; exit 4", tmp_path / "x.json")

    def test_failure_falls_back_to_stdout_then_to_no_output(self, tmp_path):
        with pytest.raises(CommandFailed, match=r"failed \(exit 1\): " + "y" * 200 + "$"):
            run_command(f"echo {'y' * 300}; exit 1", tmp_path / "x.json")
        with pytest.raises(CommandFailed, match=r"^'true' failed \(exit 0\): no output$"):
            run_command("true", tmp_path / "x.json")

    def test_json_path_is_quoted(self, tmp_path):
        """A block folder with a space still receives its file (the path is shell-quoted)."""
        folder = tmp_path / "with space"
        folder.mkdir()
        assert len(run_command(writer(tmp_path, SAMPLE) + " {json}", folder / "a.json").frame) == 58
        assert len(run_command(writer(tmp_path, SAMPLE), folder / "b.json").frame) == 58


def test_cases_are_listed_by_what_needs_a_look_first():
    """A flag that did not reproduce, or an unchanged case with a large (insignificant) ratio, never sits
    above a confirmed improvement or regression in the table."""
    def case(verdict, ratio):
        return ab.AbCase(f"{verdict} {ratio}", 4, "latency", 12, ratio, ratio, ratio, 0.5, None, verdict)
    cases = [case("unchanged", 1.5), case("not confirmed", 1.4), case("improvement", 0.8),
             case("regression", 1.1), case("regression", 1.3), case("unchanged", 0.9)]
    assert [c.path for c in ab.by_verdict(cases)] == [
        "regression 1.3", "regression 1.1", "improvement 0.8", "not confirmed 1.4", "unchanged 1.5", "unchanged 0.9"]


def upgraded_runner(torch: str) -> ab.Runner:
    """Synthetic commands without drift whose "head" side records another torch; head 2x slower on the host copy."""
    inner, _ = recording_runner(2.0)

    def run(command: str, out: Path) -> Results:
        result = inner(command, out)
        if command == "head":
            result.machine_info = copy.deepcopy(result.machine_info)
            result.machine_info["xferbench"]["torch"] = torch
        return result

    return run


class TestOutputs:
    """Issue 26, item 7: ab writes JSON and the PR comment's Markdown, and says what differs between the sides."""

    def test_the_sides_environment_difference(self, tmp_path):
        run = ab.ab_run("base", "head", 6, tmp_path, seed=1, runner=upgraded_runner("2.99.0"))
        torch = syn._BASE.machine_info["xferbench"]["torch"]
        assert run.differences == [f"torch {torch} → 2.99.0"]
        text = ab.to_text(run.cases, differences=run.differences)
        assert text.splitlines()[-1] == f"What differs between the two sides: torch {torch} → 2.99.0"
        same = ab.ab_run("base", "head", 6, tmp_path, seed=1, runner=recording_runner(1.0)[0])
        assert same.differences == []
        assert ab.to_text(same.cases, differences=[]).splitlines()[-1] == (
            "The two sides ran on the same machine and software (as far as their runs record).")

    def test_markdown_is_compares_format(self, tmp_path):
        run = ab.ab_run("base", "head", 6, tmp_path, seed=1, runner=upgraded_runner("2.99.0"))
        md = ab.to_markdown(run).splitlines()
        assert md[:2] == ["### xferbench A/B", ""]
        assert md[2].startswith("1 confirmed regression(s) in 58 case(s) over 6 interleaved blocks")
        assert md[4].startswith("What differs between the two sides: torch ") and md[4].endswith(" → 2.99.0")
        assert md[6:8] == ["| case | size | class | head/base (HL) | 95% CI | p | confirm p | verdict |",
                           "|---|---|---|---|---|---|---|---|"]
        assert md[8].startswith(f"| {TARGET} | 16 MiB | bandwidth | ") and md[8].endswith(" | 🔴 regression |")
        assert len(md) == 8 + 58

    def test_json_is_strict_and_complete(self, tmp_path):

        run = ab.ab_run("base", "head", 6, tmp_path, seed=1, runner=upgraded_runner("2.99.0"))
        report = strict_loads(ab.to_json(run))
        assert report["regressions"] == 1 and report["blocks"] == 6 and report["alpha"] == 0.05
        assert report["differences"] == run.differences and len(report["cases"]) == 58
        first = report["cases"][0]
        assert (first["path"], first["nbytes"], first["verdict"]) == (TARGET, 16 * 2**20, "regression")
        assert set(first) == {"path", "nbytes", "case_class", "blocks", "ratio", "low", "high", "p_value", "confirm_p",
                              "verdict"}

    def test_cli_writes_both(self, tmp_path, capsys):
        import json

        data = json.loads(SAMPLE.read_text())
        data["machine_info"]["xferbench"]["torch"] = "2.99.0"
        other = tmp_path / "other.json"
        other.write_text(json.dumps(data))
        md, js = tmp_path / "ab.md", tmp_path / "ab.json"
        assert main(["ab", "--base", writer(tmp_path, SAMPLE), "--head", writer(tmp_path, other), "--blocks", "6",
                     "--keep", str(tmp_path / "ab"), "--seed", "3", "--markdown", str(md), "--json", str(js)]) == 0
        said = "What differs between the two sides: torch 2.13.0+cpu → 2.99.0"
        assert said in capsys.readouterr().out and said in md.read_text()
        assert json.loads(js.read_text())["differences"] == ["torch 2.13.0+cpu → 2.99.0"]

    def test_an_output_among_the_kept_blocks_is_refused_before_any_block(self, tmp_path, capsys):
        (tmp_path / "ab").mkdir()
        marker = tmp_path / "ran"
        code = main(["ab", "--base", f"touch {marker}", "--head", "true", "--blocks", "6", "--keep",
                     str(tmp_path / "ab"), "--json", str(tmp_path / "ab" / "verdicts.json")])
        assert code == 2 and not marker.exists()
        assert "would be read as a run" in capsys.readouterr().err


@pytest.mark.hostile
class TestResultsNeverOverwritten:
    def test_ab_keeps_an_earlier_comparisons_blocks(self, tmp_path):
        """A second `xferbench ab` into the same --keep folder numbers its blocks after the first one's."""
        from xferbench.analyze.load.results import load

        sample = put(tmp_path / "sample.json", small(4))
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


class TestRefusalRules:
    """ab's refusals are rules of compare's shape, each kind in one ordered list; where the check is compare's, the
    rule is compare's own (gate/compare.py), said with ab's side names."""

    def test_the_rules_in_order_and_compares_where_the_check_is_the_same(self):
        from xferbench.analyze.gate import compare

        assert [type(rule).__name__ for rule in ab.ASKED] == ["EnoughBlocks", "FreshBlocks"]
        assert [type(rule) for rule in ab.BLOCK_REFUSALS] == [compare.SameSimulation, compare.SameClock]

    def test_what_is_asked(self):
        from xferbench.analyze.gate.compare import refusal

        assert refusal(ab.Blocks(5, -1), ab.ASKED) == ("--blocks 5: at least 6 blocks are needed for the signed-rank "
                                                       "test to reach p < 0.05")
        assert refusal(ab.Blocks(6, -1), ab.ASKED) == "--confirm -1: give the number of fresh blocks, 0 or more"
        assert refusal(ab.Blocks(6, 0), ab.ASKED) is None
        with pytest.raises(ValueError, match=r"^--confirm -1: give the number of fresh blocks, 0 or more$"):
            run_ab("base", "head", 6, Path("never-made"), confirm=-1, runner=recording_runner(1.0)[0])

    def test_sides_timed_by_different_clocks_are_refused_after_the_first_block(self, tmp_path):
        calls = []

        def runner(command: str, out: Path) -> Results:
            calls.append(command)
            result = syn.run(len(calls))
            result.frame["timer"] = "time.process_time" if command == "head" else "perf_counter"
            return result

        with pytest.raises(ValueError, match=r"^the runs were timed by different clocks \(base: perf_counter; head: "
                                             r"time\.process_time: --benchmark-timer\); rerun one with the other's clock$"):
            run_ab("base", "head", 6, tmp_path, seed=1, runner=runner)
        assert len(calls) == 2


class TestWrittenForms:
    """The PR comment's and the JSON's exact forms, from cases made by hand."""

    @staticmethod
    def case(verdict: str, blocks: int = 6) -> ab.AbCase:
        return ab.AbCase(f"{verdict} case", 4, "latency", blocks, 1.5, 1.2, 1.9, 0.01, None, verdict)

    def test_markdown_lines_blanks_and_a_quiet_row_without_icon(self):
        from xferbench import escape

        run = ab.AbRun([self.case("regression"), self.case("unchanged")], ["torch *2.12* → [2.13](x)", "CUDA 12 → 13"])
        md = ab.to_markdown(run).splitlines()
        assert md[0:2] == ["### xferbench A/B", ""] and md[3] == "" and md[5] == ""
        assert md[4] == ("What differs between the two sides: " + escape.markdown("torch *2.12* → [2.13](x)")
                         + ", CUDA 12 → 13")
        assert md[8].endswith("| 🔴 regression |") and md[9].endswith("| unchanged |")

    def test_json_begins_as_ab_knows_its_own_output_and_counts_blocks(self):
        one = json.loads(written := ab.to_json(ab.AbRun([self.case("regression", blocks=8)])))
        assert written.startswith(ab.STARTS["--json"]) and one["blocks"] == 8 and one["regressions"] == 1
        assert json.loads(ab.to_json(ab.AbRun([])))["blocks"] == 0


class TestRunCommand:
    def test_a_path_already_there_is_never_read_as_the_commands_result(self, tmp_path):
        taken, dangling = tmp_path / "taken.json", tmp_path / "dangling.json"
        taken.write_text("an earlier run")
        dangling.symlink_to(tmp_path / "nowhere")
        for out in (taken, dangling):
            with pytest.raises(CommandFailed) as error:
                run_command("true", out)
            assert str(error.value) == f"{out}: already exists; a command's result is read only from a path it wrote"
        assert taken.read_text() == "an earlier run"

    def test_output_that_is_not_utf8_is_said_with_replacement(self, tmp_path):
        with pytest.raises(CommandFailed) as error:
            run_command(r": {json}; printf 'bad \377\376 bytes\n' >&2; exit 5", tmp_path / "x.json")
        assert str(error.value).endswith("failed (exit 5): bad \ufffd\ufffd bytes")

    def test_a_command_past_its_timeout_is_stopped_with_every_process_it_started(self, tmp_path):
        """The shell and the process it left running in the background both end (one process group)."""
        pid_file = tmp_path / "pid"
        command = f": {{json}}; sleep 300 > /dev/null 2>&1 & echo $! > {pid_file}; wait"
        with pytest.raises(CommandFailed) as error:
            run_command(command, tmp_path / "x.json", timeout=3)  # ample for the shell to start the sleep
        assert str(error.value) == f"{command!r} ran past --timeout 3 s; stopped"
        status = Path(f"/proc/{int(pid_file.read_text())}/status")

        def alive() -> bool:  # dead: gone, or a zombie not yet reaped
            try:
                return "\nState:\tZ" not in status.read_text()
            except FileNotFoundError:
                return False

        # SIGKILL reaches a running process when it is next scheduled, which may be after the shell was reaped.
        # The guard only ends the wait for a process the signal missed (it would sleep 300 s): no speed bound.
        with no_hang(60):
            while alive():
                time.sleep(0.05)


def test_what_differs_is_read_from_each_sides_newest_run():
    def runs(*versions: str) -> list[Results]:
        made = [copy.deepcopy(syn.run(i)) for i in range(len(versions))]
        for run, version in zip(made, versions, strict=True):
            run.machine_info["xferbench"]["torch"] = version
        return made

    assert ab.sides_differ(runs("2.10.0", "2.11.0", "2.12.0"), runs("2.20.0", "2.21.0", "2.22.0")) == [
        "torch 2.12.0 → 2.22.0"]


def test_a_kept_block_never_replaces_a_file_of_its_name(tmp_path):
    (tmp_path / "block000-base.json").write_text("mine")
    ab._keep(tmp_path, [("block000-base.json", b"the block's")])
    assert (tmp_path / "block000-base.json").read_text() == "mine"
    assert (tmp_path / "block000-base.1.json").read_text() == "the block's"


def test_each_command_writes_into_a_folder_of_its_own_removed_after(tmp_path):
    seen: list[Path] = []

    def runner(command: str, out: Path) -> Results:
        seen.append(out)
        out.write_text("{}")
        return syn.run(0)

    kept: list[tuple[str, bytes]] = []
    ab._private(runner, "cmd", "block000-base.json", kept)
    (out,) = seen
    assert out.name == "block000-base.json" and out.parent.name.startswith("xferbench-ab-")
    assert not out.parent.exists() and kept == [("block000-base.json", b"{}")]


def test_confirming_blocks_are_numbered_after_an_earlier_abs_and_this_ones(tmp_path):
    (tmp_path / "block005-base.json").write_text("an earlier comparison's block")
    runner, calls = recording_runner(2.0)
    run = ab.ab_run("base", "head", 6, tmp_path, seed=1, runner=runner)
    assert any(c.confirm_p is not None for c in run.cases)  # the slowed case was confirmed on fresh blocks
    names = sorted(call.split(":")[1] for call in calls)
    assert names == sorted(f"block{n:03d}-{side}.json" for n in range(6, 18) for side in ("base", "head"))

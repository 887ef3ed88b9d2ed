"""Confirmation by interleaving: ``ab --only`` judges the cases a comparison flagged, base and head in blocks on
the same machine at the same time; fake runners, no clocks."""

import json
import shlex
import sys
from pathlib import Path

import numpy as np
import pytest

import synthetic_runs as syn
from xferbench.analyze.gate import ab
from xferbench.analyze.gate.ab import Flagged, flagged_of, selection_file, suspect, with_selection
from xferbench.analyze.gate.compare import compare, to_json
from xferbench.analyze.load.results import Results, ResultsError
from xferbench.cli import main

from fakes import CPU_ONLY_CONFTEST, HOST_BENCH


def run_ab(*args, **kwargs):
    """ab_run's cases alone (worst verdicts first)."""
    return ab.ab_run(*args, **kwargs).cases


SAMPLE = Path(__file__).parent / "data" / "cpu-sample.json"
SIXTEEN = 16 * 2**20
COPY, CLONE = "host pageable copy_ cpu", "host pageable clone cpu"


class TestSelection:
    """ab selects by test name through the plugin's --xfer-only file: any count, a case's blocks with it."""

    def test_select_becomes_a_quoted_file_whatever_the_count(self, tmp_path):
        names = tuple(f"test_h2d[pinned-to-{i}B-float32-cpu->cuda:0]" for i in range(3000))
        (tmp_path / "my folder").mkdir()
        path = selection_file(Flagged(frozenset(names), names), tmp_path / "my folder")
        assert path.read_text().splitlines() == list(names)
        words = shlex.split(with_selection("xferbench run -o {json} {select}", path))
        assert words == ["xferbench", "run", "-o", "{json}", f"--xfer-only={path}"]  # as short for 3,000 as for one
        assert with_selection("xferbench run {select}", None) == "xferbench run "

    def test_a_name_across_lines_is_refused(self, tmp_path):
        with pytest.raises(ResultsError, match="across lines"):
            selection_file(Flagged(frozenset({"k"}), ("test_a[x]\ntest_b[y]",)), tmp_path)

    def test_the_plugin_runs_exactly_the_named_tests_a_case_s_blocks_with_it(self, pytester):
        pytester.makeconftest(CPU_ONLY_CONFTEST)
        pytester.makepyfile(test_host=HOST_BENCH)
        names = ["test_host[pageable-clone-16MiB-float32-cpu->cpu]", "test_host[pageable-copy_-1KiB-float32-cpu->cpu]"]
        pytester.path.joinpath("only.txt").write_text("\n".join(names) + "\n")
        result = pytester.runpytest("--collect-only", "-q", "--xfer-sizes=1KiB,16MiB", "--xfer-only=only.txt")
        ids = sorted(line.split("::")[1] for line in result.outlines if "::test_host[" in line)
        # clone at 16 MiB is a paired case, copy_ at 1 KiB a reference: each runs with all its blocks
        assert ids == sorted(f"{name[:-1]}-block{k}of6]" for name in names for k in range(1, 7))

    def test_a_name_no_test_has_is_a_usage_error_naming_it(self, pytester):
        pytester.makeconftest(CPU_ONLY_CONFTEST)
        pytester.makepyfile(test_host=HOST_BENCH)
        pytester.path.joinpath("only.txt").write_text("test_host[pageable-clone-1KiB-float32-cpu->cpu]\ntest_gone[x]\n")
        result = pytester.runpytest("--collect-only", "-q", "--xfer-sizes=1KiB", "--xfer-only=only.txt")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert "argument --xfer-only: 1 test(s) in only.txt were not collected: test_gone[x]" in "\n".join(
            result.errlines)

    @pytest.mark.hostile
    @pytest.mark.parametrize(("text", "said"), [
        (b"", "names no test"), (b"  \n\r\n", "names no test"),
        (b"\xff\xfe", "cannot read it ('utf-8' codec can't decode"),
        (b"\x1b[31mred\x07\n", "not collected: \\x1b[31mred\\x07"),  # escaped, not sent to the terminal
    ])
    def test_an_empty_binary_or_unknown_file_is_one_line(self, pytester, text, said):
        pytester.makeconftest(CPU_ONLY_CONFTEST)
        pytester.makepyfile(test_host=HOST_BENCH)
        pytester.path.joinpath("only.txt").write_bytes(text)
        result = pytester.runpytest("--collect-only", "-q", "--xfer-sizes=1KiB", "--xfer-only=only.txt")
        errors = [line for line in result.errlines if "--xfer-only" in line]
        assert result.ret == pytest.ExitCode.USAGE_ERROR and len(errors) == 1 and said in errors[0], result.errlines

    def test_a_byte_order_mark_and_repeated_names_select_the_test_once(self, pytester):
        pytester.makeconftest(CPU_ONLY_CONFTEST)
        pytester.makepyfile(test_host=HOST_BENCH)
        name = "test_host[pageable-clone-1KiB-float32-cpu->cpu]"
        pytester.path.joinpath("only.txt").write_text(f"\ufeff{name}\r\n{name}\n", encoding="utf-8")
        result = pytester.runpytest("--collect-only", "-q", "--xfer-sizes=1KiB", "--xfer-only=only.txt")
        assert [line.split("::")[1] for line in result.outlines if "::test_host[" in line] == [name]




def runner(slow: dict[str, float], seed: int = 0) -> tuple[ab.Runner, list[str]]:
    """Fake commands: "head" is slow[path] times slower on the 16 MiB case of that path; records each call."""
    rng = np.random.default_rng(seed)
    calls: list[str] = []

    def run(command: str, out: Path) -> Results:
        calls.append(command)
        return syn.run(int(rng.integers(1 << 30)), spread={"bandwidth": 0.02, "latency": 0.05},
                       slow=1.0 if command == "base" else 2.0,
                       which=lambda row: row["nbytes"] == SIXTEEN and row["path"] in slow)

    return run, calls


def first_comparison(slowed: set[str]) -> str:
    """compare's --json: a store of 8 runs against a candidate whose 16 MiB cases of ``slowed`` are 2x slower."""
    new = [syn.run(99, slow=2.0, spread={"bandwidth": 0.02, "latency": 0.05},
                   which=lambda row: row["nbytes"] == SIXTEEN and row["path"] in slowed)]
    rows = compare(syn.runs(0, 8, spread={"bandwidth": 0.02, "latency": 0.05}), new)
    assert {r.path for r in rows if r.regression} == slowed
    return to_json(rows, 8, 1)


class TestOnlyTheFlagged:
    def test_only_the_flagged_cases_are_judged_each_in_interleaved_blocks(self, tmp_path):
        flagged = flagged_of(first_comparison({COPY}), "first.json")
        run, calls = runner({COPY, CLONE})  # the clone is slower too, but compare did not flag it
        cases = run_ab("base", "head", 6, tmp_path, runner=run, seed=1, only=flagged.keys)
        assert [(c.path, c.nbytes, c.verdict) for c in cases] == [(COPY, SIXTEEN, "regression")]
        assert len(calls) == 24 and calls.count("base") == 12  # 6 blocks and 6 to confirm, both sides in each

    def test_a_flag_the_blocks_do_not_reproduce_is_not_a_regression(self, tmp_path):
        flagged = flagged_of(first_comparison({COPY}), "first.json")
        run, _ = runner(set())  # head and base the same code: the first comparison met a busy neighbour
        cases = run_ab("base", "head", 6, tmp_path, runner=run, seed=2, only=flagged.keys)
        assert [c.path for c in cases] == [COPY] and not cases[0].regression

    @pytest.mark.parametrize(("verdict", "ratio", "floor", "moved", "sent"), [
        ("regression", 1.5, 0.25, None, True),
        ("not gated", 0.93, None, None, True),  # the stored runs cannot gate it: side by side can, faster or not
        ("can't tell", 1.5, 0.25, None, True),  # the store's spread cannot tell
        ("can't tell", 1.1, 0.25, None, True),  # within the floor, but a 2x slowdown once read 1.17x against a store
        ("can't tell", 0.5, 0.25, None, False),  # faster: no regression to confirm
        ("can't tell", None, None, None, False),  # nothing compared
        ("slower, within the floor", 1.2, 0.25, None, False),
        ("unchanged", 1.01, 0.25, 1.5, True),  # against a baseline a step moved slower: a store may fake one
        ("unchanged", 1.01, 0.25, 0.7, False),
        ("new", None, None, None, False),
    ])
    def test_what_compare_sends_ab(self, verdict, ratio, floor, moved, sent):
        case = {"verdict": verdict, "ratio": ratio, "floor": floor, "moved": moved, "key": "k", "name": "test_x",
                "case_class": "bandwidth", "path": "host pageable copy_ cpu", "nbytes": 2**26}
        assert suspect(case) is sent
        assert flagged_of(json.dumps({"cases": [case]}), "f").keys == (frozenset({"k"}) if sent else frozenset())

    def test_names_and_keys_come_from_the_comparison_and_junk_is_refused(self):
        flagged = flagged_of(first_comparison({COPY, CLONE}), "first.json")
        assert len(flagged.keys) == 2 and set(flagged.names) == {
            "test_host[pageable-copy_-16MiB-float32-cpu->cpu]", "test_host[pageable-clone-16MiB-float32-cpu->cpu]"}
        with pytest.raises(ResultsError, match=r"first\.json: not a comparison"):
            flagged_of('{"cases": [{"verdict": "regression"}]}', "first.json")


WRITER = """
import json, sys
out = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--benchmark-json="))
only = [open(a.split("=", 1)[1]).read().splitlines() for a in sys.argv if a.startswith("--xfer-only=")]
open(sys.argv[1] + ".args", "a").write(json.dumps(only) + "\\n")
run = json.load(open(sys.argv[1]))
run["benchmarks"] = [b for b in run["benchmarks"] if b["name"] not in sys.argv[2:]]  # a name given here: not run
json.dump(run, open(out, "w"))
"""


class TestCommandLine:
    def command(self, tmp_path: Path, side: str) -> str:
        source = tmp_path / f"{side}.json"
        source.write_text(SAMPLE.read_text())
        script = tmp_path / "writer.py"
        script.write_text(WRITER)
        return f"{shlex.quote(sys.executable)} {script} {source} {{select}}"

    def test_the_commands_run_only_the_flagged_tests(self, tmp_path, capsys):
        first = tmp_path / "first.json"
        first.write_text(first_comparison({COPY}))
        code = main(["ab", "--only", str(first), "--base", self.command(tmp_path, "base"), "--head",
                     self.command(tmp_path, "head"), "--blocks", "6", "--keep", str(tmp_path / "ab"), "--seed", "0"])
        assert code == 0  # the same run on both sides: nothing confirmed
        args = [json.loads(line) for line in (tmp_path / "head.json.args").read_text().splitlines()]
        assert args == [[["test_host[pageable-copy_-16MiB-float32-cpu->cpu]"]]] * 6
        assert "0 confirmed regression(s) in 1 case(s)" in capsys.readouterr().out

    def test_a_case_sent_and_not_run_is_named_and_bad_input(self, tmp_path, capsys):
        first = tmp_path / "first.json"
        first.write_text(first_comparison({COPY, CLONE}))
        head = self.command(tmp_path, "head") + " 'test_host[pageable-clone-16MiB-float32-cpu->cpu]'"
        code = main(["ab", "--only", str(first), "--base", self.command(tmp_path, "base"), "--head", head,
                     "--blocks", "6", "--keep", str(tmp_path / "ab"), "--seed", "0"])
        assert code == 2
        assert capsys.readouterr().err == ("xferbench ab: 1 case(s) --only sends were not run by both commands in every "
                                           f"block: {CLONE}\n")

    def test_nothing_flagged_runs_nothing(self, tmp_path, capsys):
        first = tmp_path / "first.json"
        first.write_text(first_comparison(set()))
        assert main(["ab", "--only", str(first), "--base", "exit 3", "--head", "exit 3", "--blocks", "6",
                     "--keep", str(tmp_path / "ab")]) == 0
        assert "sends no case (no regression, no case not gated, none slower that it could not tell); nothing to " \
               "confirm" in capsys.readouterr().out

    def test_a_file_compare_did_not_write_is_bad_input(self, tmp_path, capsys):
        first = tmp_path / "first.json"
        first.write_text("[]")
        assert main(["ab", "--only", str(first), "--base", "exit 3", "--head", "exit 3", "--keep",
                     str(tmp_path / "ab")]) == 2
        assert capsys.readouterr().err.count("\n") == 1


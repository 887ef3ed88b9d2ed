"""Confirmation by interleaving: ``ab --only`` judges the cases a comparison flagged, base and head in blocks on
the same machine at the same time; fake runners, no clocks."""

import json
import shlex
import sys
from pathlib import Path

import numpy as np
import pytest
from _pytest.mark.expression import Expression

import synthetic_runs as syn
from xferbench.analyze.gate import ab
from xferbench.analyze.gate.ab import Flagged, flagged_of, run_ab, select_expression, suspect, with_selection
from xferbench.analyze.gate.compare import compare, to_json
from xferbench.analyze.load.results import Results, ResultsError
from xferbench.cli import main

SAMPLE = Path(__file__).parent / "data" / "cpu-sample.json"
NAMES = [b["name"] for b in json.loads(SAMPLE.read_text())["benchmarks"]]
SIXTEEN = 16 * 2**20
COPY, CLONE = "host pageable copy_ cpu", "host pageable clone cpu"


def selected(expression: str) -> list[str]:
    """The sample's tests pytest's -k ``expression`` selects (its own parser; a substring of the name matches)."""
    found = Expression.compile(expression)

    def matches(name: str) -> bool:
        return found.evaluate(lambda word, **_: word.lower() in name.lower())

    return [n for n in NAMES if matches(n)]


class TestSelection:
    def test_the_expression_selects_exactly_the_flagged_tests(self):
        chosen = ["test_host[pageable-copy_-16MiB-float32-cpu->cpu]", "test_noop[to-4B-float32-cpu]"]
        assert "->" in chosen[0]  # a character -k cannot read: the words around it are required instead
        assert sorted(selected(select_expression(chosen))) == sorted(chosen)

    def test_every_single_test_of_the_sample_is_selected_alone(self):
        for name in NAMES:
            assert selected(select_expression([name])) == [name]

    def test_select_is_a_shell_quoted_k_and_nothing_without_only(self):
        flagged = Flagged(frozenset({"k"}), ("test_host[pageable-copy_-16MiB-float32-cpu->cpu]",))
        command = with_selection("xferbench run -o {json} {select}", flagged)
        words = shlex.split(command)
        assert words[:4] == ["xferbench", "run", "-o", "{json}"] and words[4] == "-k"
        assert selected(words[5]) == list(flagged.names)
        assert with_selection("xferbench run {select}", None) == "xferbench run "


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

    @pytest.mark.parametrize(("verdict", "ratio", "floor", "confirmed"), [
        ("regression", 1.5, 0.25, True),
        ("can't tell", 1.1, 0.25, True),  # the store's spread cannot tell: side by side may
        ("can't tell", 3.0, None, True),  # not gated by compare: ab may gate it
        ("can't tell", 0.5, 0.25, True),  # faster against a store that met more load, say: unknown all the same
        ("can't tell", None, None, False),  # nothing compared
        ("slower, within the floor", 1.2, 0.25, False),
        ("unchanged", 1.01, 0.25, False),
        ("new", None, None, False),
    ])
    def test_regressions_and_cases_compare_could_not_tell_are_confirmed(self, verdict, ratio, floor, confirmed):
        case = {"verdict": verdict, "ratio": ratio, "floor": floor, "key": "k", "name": "test_x"}
        assert suspect(case) is confirmed
        assert flagged_of(json.dumps({"cases": [case]}), "f").keys == (frozenset({"k"}) if confirmed else frozenset())

    def test_names_and_keys_come_from_the_comparison_and_junk_is_refused(self):
        flagged = flagged_of(first_comparison({COPY, CLONE}), "first.json")
        assert len(flagged.keys) == 2 and set(flagged.names) == {
            "test_host[pageable-copy_-16MiB-float32-cpu->cpu]", "test_host[pageable-clone-16MiB-float32-cpu->cpu]"}
        with pytest.raises(ResultsError, match=r"first\.json: not a comparison"):
            flagged_of('{"cases": [{"verdict": "regression"}]}', "first.json")


WRITER = """
import json, sys
out = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--benchmark-json="))
open(sys.argv[1] + ".args", "a").write(json.dumps(sys.argv[2:]) + "\\n")
json.dump(json.load(open(sys.argv[1])), open(out, "w"))
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
        assert len(args) == 6 and all(a[0] == "-k" for a in args)
        assert selected(args[0][1]) == ["test_host[pageable-copy_-16MiB-float32-cpu->cpu]"]
        assert "0 confirmed regression(s) in 1 case(s)" in capsys.readouterr().out

    def test_nothing_flagged_runs_nothing(self, tmp_path, capsys):
        first = tmp_path / "first.json"
        first.write_text(first_comparison(set()))
        assert main(["ab", "--only", str(first), "--base", "exit 3", "--head", "exit 3", "--blocks", "6",
                     "--keep", str(tmp_path / "ab")]) == 0
        assert "names no regression and no case it could not tell; nothing to confirm" in capsys.readouterr().out

    def test_a_file_compare_did_not_write_is_bad_input(self, tmp_path, capsys):
        first = tmp_path / "first.json"
        first.write_text("[]")
        assert main(["ab", "--only", str(first), "--base", "exit 3", "--head", "exit 3", "--keep",
                     str(tmp_path / "ab")]) == 2
        assert capsys.readouterr().err.count("\n") == 1

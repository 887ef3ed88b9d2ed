"""The verdicts' one table: what compare, noise and ab can say is in it, in order, with its icon and exit status,
and words outside it are refused where a row is made, never met later as a missing key of an order."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from xferbench.analyze.gate import ab, compare, noise, verdicts
from xferbench.analyze.gate.verdicts import TABLE, Verdict, of, rank

GATE = Path(compare.__file__).parent


def _row(verdict: str, ratio: float = 1.0) -> compare.Comparison:
    return compare.Comparison("p", 4, "latency", 1e-6, 1e-6, ratio, None, None, None, None, None, None, verdict)


def _ab_case(verdict: str, ratio: float = 1.0) -> ab.AbCase:
    return ab.AbCase("p", 4, "latency", 8, ratio, ratio, ratio, 0.5, None, verdict)


class TestTable:
    def test_every_verdict_worst_first_with_its_icon_and_exit_status(self):
        """Only a regression fails the gate (exit 1); colour only where a change was seen."""
        assert [(v.words, v.icon, v.fails) for v in TABLE] == [
            ("regression", "🔴", True), ("not gated", "🟠", False), ("improvement", "🟢", False), ("not reproduced", "", False),
            ("not confirmed", "", False), ("slower, within the floor", "🟡", False),
            ("faster, within the floor", "🟡", False), ("can't tell", "⚪", False), ("unchanged", "", False),
            ("not compared", "", False), ("new", "", False), ("gone", "", False)]

    def test_each_named_verdict_is_in_the_table_once(self):
        named = {getattr(verdicts, name) for name in verdicts.__all__ if name.isupper() and name != "TABLE"}
        assert named == {v.words for v in TABLE} and len(TABLE) == len(named)

    @pytest.mark.parametrize("verdict", TABLE, ids=lambda v: v.words)
    def test_words_find_their_verdict_and_its_place(self, verdict: Verdict):
        assert of(verdict.words) is verdict and rank(verdict.words) == TABLE.index(verdict)

    @pytest.mark.parametrize("words", ["regressed", "", "Regression", "regression "])
    def test_words_no_verdict_has_are_refused_with_where_to_add_them(self, words: str):
        with pytest.raises(ValueError, match=r"is not a verdict of xferbench\.analyze\.gate\.verdicts\.TABLE: add it"):
            of(words)
        with pytest.raises(ValueError):
            rank(words)

    def test_a_verdict_is_frozen(self):
        with pytest.raises(dataclasses.FrozenInstanceError):
            TABLE[0].fails = False  # type: ignore[misc]


class TestEveryVerdictIsTheTables:
    def test_every_rule_of_compare_and_noise_gives_a_verdict_of_the_table(self):
        """compare.VERDICTS ends with noise.JUDGED: together every verdict a compared case can get."""
        assert {rule.verdict for rule in compare.VERDICTS} | {rule.verdict for rule in noise.JUDGED} <= set(
            v.words for v in TABLE)

    @pytest.mark.parametrize("module", ["compare.py", "comparison.py", "noise.py", "ab.py"])
    def test_the_gates_never_spell_a_verdict_out(self, module: str):
        """The words are written once, in verdicts.py: a gate names them (REGRESSION, ...), so a verdict it gives
        is always one of the table's (a bare "regresion" would be a verdict no order or icon knows)."""
        words = {v.words for v in TABLE} - {"new"}  # "new" is also a side of a comparison ("base", "new")
        literals = [node.value for node in ast.walk(ast.parse((GATE / module).read_text()))
                    if isinstance(node, ast.Constant) and isinstance(node.value, str)]
        assert not [s for s in literals if s in words]

    def test_words_outside_the_table_cannot_make_a_row(self):
        with pytest.raises(ValueError, match="add it there"):
            _row("regressed")
        with pytest.raises(ValueError, match="add it there"):
            _ab_case("regressed")

    def test_every_verdict_sorts_worst_first_in_compare_and_ab(self):
        """Sorting never meets a verdict it has no place for: every one of the table's is ordered, by the table."""
        words = [v.words for v in TABLE]
        assert [r.verdict for r in compare._sorted([_row(w) for w in reversed(words)])] == words
        assert [c.verdict for c in ab.by_verdict([_ab_case(w) for w in reversed(words)])] == words

    @pytest.mark.parametrize("verdict", TABLE, ids=lambda v: v.words)
    def test_a_row_fails_and_shows_its_icon_as_its_verdict_says(self, verdict: Verdict):
        row, case = _row(verdict.words), _ab_case(verdict.words)
        assert row.regression is verdict.fails and case.regression is verdict.fails
        cell = compare.to_markdown([row], 1, 1).splitlines()[-1].split(" | ")[-1]
        assert cell.startswith(f"{verdict.icon} {verdict.words}".strip()) and cell.endswith(" |")

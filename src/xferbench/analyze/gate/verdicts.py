"""The verdicts compare, noise and ab give a case, in one table: the words written (text, Markdown and JSON:
scripts and earlier comparisons read them, so they are never reworded), the order cases are listed in (worst
first), the icon of a Markdown row, and whether the case fails the gate (exit status 1).

A verdict is its words everywhere else (a ``Comparison``'s or ``AbCase``'s ``verdict`` field, a rule's
``verdict``), so the JSON stays plain strings; every property of one is read here, and words not in the table are
refused (``of``), never met later as a missing key of an order.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CANT_TELL",
    "FASTER_WITHIN",
    "GONE",
    "IMPROVEMENT",
    "NEW",
    "NOT_COMPARED",
    "NOT_CONFIRMED",
    "NOT_GATED",
    "NOT_REPRODUCED",
    "REGRESSION",
    "SLOWER_WITHIN",
    "TABLE",
    "UNCHANGED",
    "Verdict",
    "Verdicted",
    "of",
    "rank",
]

#: Significant and beyond the case's floor, slower: the one verdict that fails the gate.
REGRESSION = "regression"
IMPROVEMENT = "improvement"
#: A case whose floor its runs cannot support (the stored runs swing past the store's bound, or a calibration found it
#: too noisy): no change is ruled out, so never "unchanged"; compare fails on it unless told such cases may pass.
NOT_GATED = "not gated"
#: compare --reproduced: a regression the earlier comparison did not flag (a busy neighbour, not the code).
NOT_REPRODUCED = "not reproduced"
#: ab: flagged by the interleaved blocks, not by the fresh confirming ones.
NOT_CONFIRMED = "not confirmed"
#: A change beyond the case's noise (|z| past the bound) that its floor does not count as a regression: said as
#: such, never "unchanged" (a 1.4x slowdown at z +9 inside a 2x floor is a slowdown).
SLOWER_WITHIN, FASTER_WITHIN = "slower, within the floor", "faster, within the floor"
#: A case the runs cannot decide (neither a change beyond the floor nor an interval within it).
CANT_TELL = "can't tell"
UNCHANGED = "unchanged"
#: A peer case only one side measured because the sides planned their peer pairs differently (--xfer-peer-pairs):
#: no change is known, and none is implied.
NOT_COMPARED = "not compared"
#: A case only the new (base) side measured.
NEW, GONE = "new", "gone"


@dataclass(frozen=True)
class Verdict:
    """One verdict: its words, its icon before them in a Markdown table, and whether its case fails the gate."""

    words: str
    icon: str = ""
    fails: bool = False


#: Every verdict, worst first: what needs a look first leads compare's and ab's tables (within a verdict, the
#: biggest slowdown first). Colour only where a change was seen or could not be ruled out: red fails, orange is not
#: gated, green is better, yellow a change the floor allows, white a change the runs could neither confirm nor rule out.
TABLE: tuple[Verdict, ...] = (
    Verdict(REGRESSION, "🔴", fails=True),
    Verdict(NOT_GATED, "🟠"),
    Verdict(IMPROVEMENT, "🟢"),
    Verdict(NOT_REPRODUCED),
    Verdict(NOT_CONFIRMED),
    Verdict(SLOWER_WITHIN, "🟡"),
    Verdict(FASTER_WITHIN, "🟡"),
    Verdict(CANT_TELL, "⚪"),
    Verdict(UNCHANGED),
    Verdict(NOT_COMPARED),
    Verdict(NEW),
    Verdict(GONE),
)

_BY_WORDS = {v.words: v for v in TABLE}


def of(words: str) -> Verdict:
    """The verdict these words say; ValueError for words no verdict has (a new verdict belongs in ``TABLE``)."""
    if (found := _BY_WORDS.get(words)) is None:
        raise ValueError(f"{words!r} is not a verdict of xferbench.analyze.gate.verdicts.TABLE: add it there")
    return found


class Verdicted:
    """A case that carries its verdict's words (compare's, ab's): words no verdict has are refused as the case is made,
    not later where it is sorted or printed; ``regression`` is whether its verdict fails the gate."""

    verdict: str

    def __post_init__(self) -> None:
        of(self.verdict)

    @property
    def regression(self) -> bool:
        return of(self.verdict).fails


def rank(words: str) -> int:
    """Where these words' verdict is listed: 0 for the worst (``TABLE``'s order)."""
    return TABLE.index(of(words))

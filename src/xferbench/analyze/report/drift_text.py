"""The run's drift floor in words (analyze/drift.py decides it): the floor stated once, the clause a "can't tell"
carries, and a family's same-code pairs each held against the others. No torch here."""

from __future__ import annotations

from ...units import format_bytes
from ..drift import Drift, Pair

__all__ = ["clause", "label", "statement", "verdict"]


def label(pair: Pair) -> str:
    """``.cpu() and .to('cpu') (d2h) at 256 MiB``."""
    return f"{pair.calls} ({pair.op}) at {format_bytes(pair.nbytes)}"


def clause(drift: Drift) -> str:
    """``within this run's drift floor (29.8%)`` for a "can't tell"."""
    floor = drift.floor()
    return f"within this run's drift floor ({floor:.1%})" if floor is not None else ""


def statement(drift: Drift) -> str:
    """The floor in one sentence, for the page to state once."""
    if not drift.pairs:
        return ("This run measured no two calls that run the same code at one size, so it gives no drift floor: its "
                "comparisons carry no drift verdict.")
    widest = drift.pairs[0]
    return (f"This run's drift floor: {widest.spread:.1%}, from its {len(drift.pairs)} same-code pairs (calls that "
            f"run the same code, measured at different times: the largest, {label(widest)}); the run has no "
            "repeated reference cases, so the floor rests on those pairs alone. A difference between two of its "
            "cases within it is \"can't tell\"; a sentence about a same-code pair judges it against the other "
            "pairs.")


def verdict(drift: Drift, op: str) -> str | None:
    """A family's same-code pairs in one sentence: what they measure is the run's drift, each held against the
    other pairs' floor; None when the family has none."""
    pairs = sorted(drift.pairs_of(op), key=lambda p: p.nbytes)
    if not pairs:
        return None
    parts = []
    for pair in pairs:
        floor = drift.floor(pair)
        if floor is None:
            parts.append(f"{pair.spread:.1%} at {format_bytes(pair.nbytes)} (no other pair to hold it against)")
        elif pair.spread <= floor:
            parts.append(f"{pair.spread:.1%} at {format_bytes(pair.nbytes)}, within the other pairs' "
                         f"{floor:.1%}: can't tell")
        else:
            parts.append(f"{pair.spread:.1%} at {format_bytes(pair.nbytes)}, beyond the other pairs' {floor:.1%}: "
                         "the run drifted more there")
    return f"Held against this run's other same-code pairs ({pairs[0].calls}): {'; '.join(parts)}."

"""The run's drift floor in words (analyze/drift.py decides it): the floor stated once, the clause a "can't tell"
carries, and a family's same-code pairs each held against the others. No torch here."""

from __future__ import annotations

from ...units import format_bytes
from ..drift import Drift, Pair, Repeat

__all__ = ["clause", "label", "statement", "verdict"]


def label(pair: Pair | Repeat) -> str:
    """``.cpu() and .to('cpu') (d2h) at 256 MiB``; a repeated reference: ``h2d pinned to cpu->cuda:0 at 4 B``."""
    if isinstance(pair, Repeat):
        return f"{pair.path} at {format_bytes(pair.nbytes)}"
    return f"{pair.calls} ({pair.op}) at {format_bytes(pair.nbytes)}"


def clause(drift: Drift) -> str:
    """``within this run's drift floor (29.8%)`` for a "can't tell"."""
    floor = drift.floor()
    return f"within this run's drift floor ({floor:.1%})" if floor is not None else ""


def statement(drift: Drift) -> str:
    """The floor in one sentence, for the page to state once: what it rests on, repeated references and/or same-code
    pairs."""
    if not drift.pairs and not drift.repeats:
        return ("This run measured no two calls that run the same code at one size, so it gives no drift floor: its "
                "comparisons carry no drift verdict.")
    tail = (" A difference between two of its cases within it is \"can't tell\"; a sentence about a same-code pair "
            "judges it against the other pairs" + (" and the references." if drift.repeats else "."))
    if not drift.repeats:
        widest = drift.pairs[0]
        return (f"This run's drift floor: {widest.spread:.1%}, from its {len(drift.pairs)} same-code pairs (calls that "
                f"run the same code, measured at different times: the largest, {label(widest)}); the run has no "
                "repeated reference cases, so the floor rests on those pairs alone." + tail)
    repeat = drift.repeats[0]
    repeats = (f"its {len(drift.repeats)} repeated references (cases measured again in blocks spread over the run: "
               f"the widest, {label(repeat)}, {repeat.spread:.1%} over {repeat.blocks} blocks)")
    if not drift.pairs:
        return f"This run's drift floor: {drift.floor():.1%}, from {repeats} alone (it measured no same-code pair)." + tail
    pairs = (f"its {len(drift.pairs)} same-code pairs (calls that run the same code, measured at different times: the "
             f"largest, {label(drift.pairs[0])}, {drift.pairs[0].spread:.1%})")
    return f"This run's drift floor: {drift.floor():.1%}, from {repeats} and {pairs}." + tail


def verdict(drift: Drift, op: str) -> str | None:
    """A family's same-code pairs in one sentence: what they measure is the run's drift, each held against the
    other pairs' floor; None when the family has none."""
    pairs = sorted(drift.pairs_of(op), key=lambda p: p.nbytes)
    if not pairs:
        return None
    parts, others = [], "the other pairs'" if not drift.repeats else "the references' and other pairs'"
    for pair in pairs:
        floor = drift.floor(pair)
        if floor is None:
            parts.append(f"{pair.spread:.1%} at {format_bytes(pair.nbytes)} (no other pair to hold it against)")
        elif pair.spread <= floor:
            parts.append(f"{pair.spread:.1%} at {format_bytes(pair.nbytes)}, within {others} {floor:.1%}: can't tell")
        else:
            parts.append(f"{pair.spread:.1%} at {format_bytes(pair.nbytes)}, beyond {others} {floor:.1%}: "
                         "the run drifted more there")
    return f"Held against this run's other same-code pairs ({pairs[0].calls}): {'; '.join(parts)}."

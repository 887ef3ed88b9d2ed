"""What the report says of the peer plan a run recorded (analyze/load/peer_plan.py reads it): the mode and why, each
link class and the pair that stands for it, and which pairs were measured at which sizes. No torch here."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from ...families.core import peer_plan_summary
from ...units import format_bytes
from ..load.peer_plan import UNKNOWN, RecordedPlan, pair_order

__all__ = ["named", "sentences"]

#: Pairs named in one sentence before the rest are counted.
NAMED = 8


def named(pairs: Iterable[str]) -> str:
    """``a, b, c`` or ``a, ..., h and 48 more``."""
    listed = list(pairs)
    shown = ", ".join(listed[:NAMED])
    return shown + (f" and {len(listed) - NAMED} more" if len(listed) > NAMED else "")


def sentences(plan: RecordedPlan, frame: pd.DataFrame) -> list[str]:
    """What the report says of the plan: the mode and why, each link class and the pair that stands for it,
    and which pairs were measured at which sizes (from the rows, so a size skipped or not run shows)."""
    lines = [f"Peer pairs: {_summary(plan)}"
             + ("." if len(plan.swept) == len(plan.classes) else
                f"; the other {len(plan.classes) - len(plan.swept)} at the smallest, the geometric middle and the two "
                "largest sizes (enough for their own α and β).")]
    lines += [_class_sentence(plan, cls, pairs) for cls, pairs in plan.by_class().items()]
    return [*lines, _measured_sentence(plan, frame)]


def _class_sentence(plan: RecordedPlan, cls: str, pairs: list[str]) -> str:
    swept = [p for p in pairs if p in plan.swept]
    others = [p for p in pairs if p not in plan.swept]
    what = f"Link class {cls}" if cls != UNKNOWN else "Link unknown"
    if not others:
        return f"{what}: {len(pairs)} pair(s), every one swept ({named(pairs)})."
    if plan.mode == "one-per-class" and len(swept) == 1:
        return f"{what}: {swept[0]} swept, standing for its {len(others)} other pair(s) ({named(others)})."
    return (f"{what}: {len(swept)} pair(s) swept ({named(swept) or 'none'}), {len(others)} at the fit sizes "
            f"({named(others)}).")


def _measured_sentence(plan: RecordedPlan, frame: pd.DataFrame) -> str:
    """Pairs grouped by the sizes the run has rows of; a planned pair without any row is named too."""
    rows = frame[frame["op"] == "peer"] if {"op", "src", "dst", "nbytes"} <= set(frame.columns) else frame.iloc[0:0]
    sizes: dict[str, tuple[int, ...]] = {}
    for (src, dst), group in ([] if rows.empty else rows.groupby(["src", "dst"])):
        sizes[f"{src}->{dst}"] = tuple(sorted({int(n) for n in group["nbytes"]}))
    groups: dict[tuple[int, ...], list[str]] = {}
    for pair in sorted(sizes, key=pair_order):
        groups.setdefault(sizes[pair], []).append(pair)
    parts = [f"{named(pairs)} at {len(s)} size(s) ({', '.join(format_bytes(n) for n in s)})"
             for s, pairs in sorted(groups.items(), key=lambda item: -len(item[0]))]
    missing = [p for p in plan.pairs if p not in sizes]
    if missing:
        parts.append(f"{named(missing)} not measured (planned, no result)")
    return "Measured: " + ("; ".join(parts) if parts else "no peer copy") + "."


def _summary(plan: RecordedPlan) -> str:
    return peer_plan_summary(plan.mode, plan.reason, len(plan.swept), len(plan.classes))

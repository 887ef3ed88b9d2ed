"""Compare's sentence when the two sides planned their peer pairs differently (analyze/load/peer_plan.py reads each
side's plan). No torch here."""

from __future__ import annotations

from ...families.core import peer_plan_summary
from ..load.peer_plan import RecordedPlan, same_cases

__all__ = ["difference"]


def difference(base: RecordedPlan | None, new: RecordedPlan | None) -> str | None:
    """A sentence when the two sides planned their peer pairs differently (other pairs, or other pairs swept),
    else None: a mode or reason in other words that plans the same cases is the same plan."""
    if same_cases(base, new):
        return None

    def side(plan: RecordedPlan | None) -> str:
        if plan is None:
            return "no peer plan recorded (fewer than two GPUs, or an older run)"
        return peer_plan_summary(plan.mode, plan.reason, len(plan.swept), len(plan.classes))

    return (f"Peer plans differ: base {side(base)}; new {side(new)}. A peer case measured on one side only is "
            "not compared.")

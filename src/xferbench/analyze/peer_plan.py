"""The peer family's plan as a run recorded it (``machine_info.xferbench.peer_plan``, --xfer-peer-pairs): the
plan's facts in one place, read by the loader, the report and compare.

A run sweeps every size on some GPU pairs only and measures the others at the sizes that fit their α and β;
which pairs, why, and which pair stands for each link class is what the report says (families/core.py's
``peer_plan_sentences``, with the peer family's other words), and two runs that planned differently cannot compare a
case only one of them measured (``difference``). No torch here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..contract import Fingerprint
from ..families.core import pair_order, plans_differ

__all__ = ["RecordedPlan", "difference", "plan_ok", "same_cases"]

def plan_ok(plan: Any) -> bool:
    """Is a recorded plan what measure/cases.PeerPlan.as_json writes (or absent)? results.fingerprint_problem's check:
    a damaged one is refused at load, naming the field."""
    if plan is None:
        return True
    if not isinstance(plan, dict):
        return False
    swept, classes = plan.get("swept_pairs"), plan.get("classes")
    return (isinstance(plan.get("mode"), str) and isinstance(plan.get("reason"), str)
            and isinstance(swept, list) and all(isinstance(p, str) for p in swept)
            and isinstance(classes, dict) and all(v is None or isinstance(v, str) for v in classes.values()))


@dataclass(frozen=True)
class RecordedPlan:
    """One run's peer plan: its mode and why, the pairs swept at every size, each planned pair's link class."""

    mode: str
    reason: str
    swept: frozenset[str]  # "cuda:0->cuda:1"
    classes: Mapping[str, str | None]  # every planned pair, swept or not

    @classmethod
    def of(cls, machine_info: dict[str, Any]) -> RecordedPlan | None:
        """The run's plan; None for a run without one (fewer than two GPUs, or an older run)."""
        return cls.of_fingerprint(Fingerprint.of(machine_info))

    @classmethod
    def of_fingerprint(cls, fingerprint: Fingerprint) -> RecordedPlan | None:
        """``of``, from the machine's fingerprint already read."""
        plan = fingerprint.section.get("peer_plan")
        if plan is None or not plan_ok(plan):
            return None
        return cls(plan["mode"], plan["reason"], frozenset(plan["swept_pairs"]), dict(plan["classes"]))

    @property
    def pairs(self) -> list[str]:
        return sorted(self.classes, key=pair_order)

def same_cases(one: RecordedPlan | None, other: RecordedPlan | None) -> bool:
    """Whether two plans measure the same pairs at the same sizes (the sizes themselves aside)."""
    def cases(plan: RecordedPlan | None) -> tuple[frozenset[str], frozenset[str]] | None:
        return None if plan is None else (plan.swept, frozenset(plan.classes))
    return cases(one) == cases(other)


def difference(base: RecordedPlan | None, new: RecordedPlan | None) -> str | None:
    """Compare's sentence when the two sides planned their peer pairs differently (other pairs, or other pairs swept),
    else None: a mode or reason in other words that plans the same cases is the same plan."""
    return None if same_cases(base, new) else plans_differ(base, new)

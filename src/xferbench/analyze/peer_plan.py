"""The peer family's plan as a run recorded it (``machine_info.xferbench.peer_plan``, --xfer-peer-pairs), and what
the report and compare say of it: the concept's one home.

A run sweeps every size on some GPU pairs only and measures the others at the sizes that fit their α and β;
which pairs, why, and which pair stands for each link class is what the report says (``sentences``), and two runs
that planned differently cannot compare a case only one of them measured (``difference``). No torch here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..contract import Fingerprint
from ..families.core import peer_plan_summary
from ..units import format_bytes

__all__ = ["UNKNOWN", "RecordedPlan", "difference", "named", "pair_order", "plan_ok", "same_cases", "sentences"]

#: How a pair whose link class is unknown is named.
UNKNOWN = "link unknown"


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

    def by_class(self) -> dict[str, list[str]]:
        """The pairs of each link class, classes in the order of their first pair."""
        found: dict[str, list[str]] = {}
        for pair in self.pairs:
            found.setdefault(self.classes[pair] or UNKNOWN, []).append(pair)
        return found

def pair_order(pair: str) -> tuple[tuple[int, int, str], ...]:
    """cuda:2->cuda:10 after cuda:2->cuda:9: by device index where there is one, a name without one after them."""
    return tuple(_end_order(end) for end in pair.split("->"))


def _end_order(end: str) -> tuple[int, int, str]:
    index = end.rsplit(":", 1)[-1]
    return (0, int(index), "") if index.isdigit() else (1, 0, end)


def same_cases(one: RecordedPlan | None, other: RecordedPlan | None) -> bool:
    """Whether two plans measure the same pairs at the same sizes (the sizes themselves aside)."""
    def cases(plan: RecordedPlan | None) -> tuple[frozenset[str], frozenset[str]] | None:
        return None if plan is None else (plan.swept, frozenset(plan.classes))
    return cases(one) == cases(other)


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


def _summary(plan: RecordedPlan | None) -> str:
    if plan is None:
        return "no peer plan recorded (fewer than two GPUs, or an older run)"
    return peer_plan_summary(plan.mode, plan.reason, len(plan.swept), len(plan.classes))


def difference(base: RecordedPlan | None, new: RecordedPlan | None) -> str | None:
    """A sentence when the two sides planned their peer pairs differently (other pairs, or other pairs swept),
    else None: a mode or reason in other words that plans the same cases is the same plan."""
    if same_cases(base, new):
        return None
    return (f"Peer plans differ: base {_summary(base)}; new {_summary(new)}. A peer case measured on one side only is "
            "not compared.")

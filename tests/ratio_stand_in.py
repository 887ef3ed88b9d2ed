"""A stand-in for the run's comparison rule (``rows.attrs["ratio"]``, ratios-api: ``Ratio`` with value, low, high,
resolved, could_see, text), for findings tested on hand-fed rows: A's median over B's, its interval from the two
rows' quartiles where they have them (exactly the ratio where they do not: a noise-free simulated run)."""

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class StandInRatio:
    value: float
    low: float
    high: float

    @property
    def resolved(self) -> bool:
        return self.low > 1.0 or self.high < 1.0

    @property
    def could_see(self) -> float:
        return math.sqrt(self.high / self.low)

    def text(self) -> str:
        if not self.resolved:
            return f"can't tell (could see ≥ {self.could_see:.2f}x)"
        return f"{self.value:.2f}x ({self.low:.2f}-{self.high:.2f})"


def ratio(a, b) -> StandInRatio:
    value = a["median_s"] / b["median_s"]
    if "q1_s" not in a or "q1_s" not in b:
        return StandInRatio(value, value, value)
    return StandInRatio(value, a["q1_s"] / b["q3_s"], a["q3_s"] / b["q1_s"])


def with_rule(rows):
    """``rows`` with the stand-in as their comparison rule."""
    rows.attrs["ratio"] = ratio
    return rows

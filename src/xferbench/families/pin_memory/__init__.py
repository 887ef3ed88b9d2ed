"""pin_memory: is pinning worth it? ``t.pin_memory()`` cold and cached, pin-then-move against a reused
pinned buffer, and the DMA from a tensor pinned once (the break-even).

Its record and what the report says about it (torch-free); what it runs is ``run.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base import Family, ratios

if TYPE_CHECKING:
    import pandas as pd


def finding(rows: pd.DataFrame) -> list[str]:
    # The caption's question (pin every transfer, or move pageable memory) first, then each against a reused buffer.
    return (ratios(rows, "to", "pin_cached_then_to", "Host to device")
            + ratios(rows, "pin_cached_then_to", "reused_pinned_to", "Host to device")
            + ratios(rows, "to", "reused_pinned_to", "Host to device"))


RECORD = Family("pin_memory", "Scenario: is pinning worth it?",
                "t.pin_memory() cold and from the host cache, pin-then-move against a reused buffer, and the DMA from "
                "a tensor pinned once (the break-even: how many reuses pay for pinning)",
                "scenario", "tab:cyan", finding=finding, break_even=True,
                caption="pin_cold: t.pin_memory() with the pinned host cache emptied before each round, so it should page-lock "
                        "fresh memory (what the first pin of a size costs); where it took under twice pin_cached, most "
                        "rounds locked no fresh page: the break-even table prices the rounds that did, or says it "
                        "cannot. pin_cached: the caching host "
                        "allocator still holds a freed pinned block of that size, so the call is a memcpy into it (what a "
                        "loop that pins every batch pays after its first). Whether pinning every transfer pays is read "
                        "from the run's two largest cases, by size then GPU (the figure holds every size): "
                        "pin_cached_then_to (pin from the cache, then move) against to. "
                        "pinned_to: the DMA from a tensor pinned once, what each reuse costs; pin_cold / (to - pinned_to) "
                        "reuses pay for pinning it.")

"""d2h_registered: ``.cpu()`` taken apart. A device-to-host copy into fresh pageable memory (``.cpu()``), into a
pageable buffer touched before timing (``copy_``), into that kind of buffer registered with the driver
(``cudaHostRegister`` through ``torch.cuda.cudart()``, as ``torch.cuda._pin_memory_utils`` does), and into
pinned memory (``cudaHostAlloc``).

Its record and what the report says about it (torch-free); what it runs is ``run.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...units import format_bytes, format_seconds
from ..base import Family

if TYPE_CHECKING:
    import pandas as pd


#: A step of a ladder smaller than this share of the call is read as none.
NEGLIGIBLE = 0.01


def finding(rows: pd.DataFrame) -> list[str]:
    """The .cpu() ladder at the largest size on each GPU: the call, then each factor it removes (the fresh
    destination, the staging copy), from this family's own rows."""
    out = []
    for src, on_gpu in rows.groupby("src"):
        at = on_gpu[on_gpu["nbytes"] == on_gpu["nbytes"].max()]
        median = {v: at.loc[at["variant"] == v, "median_s"].iloc[0] for v in at["variant"]}
        if not {"cpu", "pageable", "registered"} <= median.keys():
            continue
        call = median["cpu"]
        steps = (f".cpu() from {src} took {format_seconds(call)} at {format_bytes(at['nbytes'].iloc[0])}: "
                 f"the fresh destination {_step(call - median['pageable'], call)}, the driver's staging copy "
                 f"{_step(median['pageable'] - median['registered'], call)}, the copy into registered memory "
                 f"{format_seconds(median['registered'])}")
        pinned = f" (into pinned memory: {format_seconds(median['pinned'])})" if "pinned" in median else ""
        out.append(steps + pinned + ".")
    return out


def _step(seconds: float, call: float) -> str:
    """A step of a ladder: what it adds to the call, or none where that is within NEGLIGIBLE of the call
    (no median's noise can tell so little from nothing)."""
    return format_seconds(seconds) if seconds > NEGLIGIBLE * call else f"none (within {NEGLIGIBLE:.0%} of the call)"


RECORD = Family("d2h_registered", "Scenario: .cpu() taken apart",
                ".cpu() against copy_ into a touched pageable buffer, the same kind of buffer registered with the driver "
                "(cudaHostRegister), and pinned memory", "scenario", "tab:cyan", finding=finding,
                caption="cpu: .cpu(), a copy into fresh pageable memory; pageable: copy_ into a pageable buffer touched "
                        "before timing; registered: copy_ into such a buffer page-locked in place with cudaHostRegister "
                        "(torch.cuda.cudart()); pinned: copy_ into memory allocated pinned. cpu - pageable is what the "
                        "fresh destination costs (allocation, page faults), pageable - registered what the driver's "
                        "staging copy through its own pinned buffer costs; registered near pinned means registering a "
                        "buffer you already have is as good as allocating it pinned.")

"""cuda_vs_to: ``.cuda(i)``, ``.to('cuda:i')``, ``.to(torch.device)`` and ``Module.to``/``.cuda``, side by side.

Its record and what the report says about it (torch-free); what it runs is ``run.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...units import format_bytes
from ..base import Family

if TYPE_CHECKING:
    import pandas as pd


def finding(rows: pd.DataFrame) -> list[str]:
    """How far .cuda(i), .to('cuda:i') and .to(device) lie apart, size by size: across sizes the spread is
    the payload's, not the call's."""
    tensors = rows[rows["variant"].isin(("cuda", "to_str", "to_device"))]
    spreads = [f"{tensors_at['median_s'].max() / tensors_at['median_s'].min() - 1:.1%} at {format_bytes(size)}"
               for size, tensors_at in tensors.groupby("nbytes") if len(tensors_at) > 1]
    if not spreads:
        return []
    return [f".cuda(i), .to('cuda:i') and .to(torch.device) run the same code: they differed by {', '.join(spreads)} "
            "(slowest over fastest of the same size), which measures the run's drift, not a cost of the call."]


RECORD = Family("cuda_vs_to", "Scenario: .cuda() against .to()", ".cuda(i), .to('cuda:i'), .to(torch.device), Module.to/.cuda",
                "scenario", "tab:cyan", finding=finding,
                caption="Tensor.cuda(i), .to('cuda:i') and .to(torch.device) have the same semantics; what each costs is "
                        "measured below, size by size. "
                        "Module.to and Module.cuda both move parameters in place and return the module itself.")

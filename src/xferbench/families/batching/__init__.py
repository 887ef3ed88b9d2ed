"""batching: 1024 small ``.to(device)`` calls against ``torch.cat`` then one copy, and one contiguous copy.

Its record and what the report says about it (torch-free); what it runs is ``run.py``.
"""

from __future__ import annotations

from ..base import Family

RECORD = Family("batching", "Scenario: many small copies or one batched copy",
                "1024 x 4 KiB .to(device) against torch.cat then one copy, and one copy of a contiguous buffer",
                "scenario", "tab:cyan",
                caption="many_small: one blocking .to() per 4 KiB piece of pageable memory, each paying the fixed cost "
                        "of a copy; cat_then_one: torch.cat on the host, then one copy; one_copy: the same bytes already "
                        "contiguous, one copy. Bytes are the total moved, counted once.")

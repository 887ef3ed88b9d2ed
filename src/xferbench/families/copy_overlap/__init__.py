"""copy_overlap: a pinned non_blocking copy on a side stream while a kernel runs, against both in sequence.

Its record and what the report says about it (torch-free); what it runs is ``run.py``.
"""

from __future__ import annotations

from ..base import Family

RECORD = Family("copy_overlap", "Scenario: copy/compute overlap", "a non-blocking pinned host-to-device copy on a side stream "
                "while a kernel runs, against the two in sequence on one stream", "scenario", "tab:cyan",
                caption="kernel_alone: a kernel of about 1 ms (torch.cuda._sleep); copy_alone: the pinned non-blocking copy; "
                        "sequential: both on the default stream, one after the other; overlapped: the copy on a side stream "
                        "while the kernel runs. Near the longer of the two alone is full overlap; near their sum is none.")

"""all_gpus_host: every GPU copying to (or from) the host at once, next to one GPU alone: a shared PCIe
switch or root complex shows as a lower aggregate.

Its record and what the report says about it (torch-free); what it runs is ``run.py``.
"""

from __future__ import annotations

from ..base import Family

RECORD = Family("all_gpus_host", "Every GPU and the host at once", "pinned copies from (or to) every GPU at once, and one alone",
                "concurrent", "tab:cyan",
                caption="The _all figure is the sum over every GPU copying at once; _one is one GPU alone. An aggregate "
                        "well below the number of GPUs times one GPU's figure is a shared PCIe switch, root complex or "
                        "host memory, which data loaders feeding all GPUs at once will meet.")

"""bidir: host-to-device and device-to-host at the same time on two streams of one GPU, next to each alone.

Its record and what the report says about it (torch-free); what it runs is ``run.py``.
"""

from __future__ import annotations

from ..base import Family

RECORD = Family("bidir", "Host and device copying both ways at once", "h2d and d2h on two streams of one GPU, and each alone",
                "concurrent", "tab:cyan",
                caption="A GPU has copy engines for each direction, so host-to-device and device-to-host can run at once. "
                        "h2d+d2h is the sum of both directions' bytes over the time both take; near twice one direction "
                        "means the link and the engines are duplex, near one direction means something is shared.")

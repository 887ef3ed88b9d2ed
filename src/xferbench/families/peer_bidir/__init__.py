"""peer_bidir: GPU a to GPU b and b to a at the same time, next to each direction alone, for the pairs the
peer plan sweeps (nvbandwidth's device_to_device_bidirectional).

Its record and what the report says about it (torch-free); what it runs is ``run.py``.
"""

from __future__ import annotations

from ..base import Family

RECORD = Family("peer_bidir", "GPU to GPU both ways at once", "a copy from GPU a to GPU b and one from b to a on streams "
                "of their own at once, and each alone, for the pairs the peer plan sweeps", "concurrent", "tab:purple",
                link="nvlink",
                caption="both_ways is the sum of both directions' bytes over the time both take; near twice the faster "
                        "direction alone means the link between the two GPUs is duplex, near one direction alone that "
                        "both share it. Pairs: those --xfer-peer-pairs sweeps at every size (one per link class on a "
                        "node whose links are known).")

"""peer_all: every GPU copying to the next one at once (a ring): every GPU's link sends and receives
while the fabric (an NVSwitch, a PCIe switch) carries them all.

Its record and what the report says about it (torch-free); what it runs is ``run.py``.
"""

from __future__ import annotations

from ..base import Family

RECORD = Family("peer_all", "Every GPU to the next at once", "every GPU copying to the next one at once (a ring: each "
                "sends one copy and receives one)", "concurrent", "tab:purple", link="nvlink",
                caption="The figure is the sum over every copy of the ring. Compared with the sum of each pair's one-way "
                        "figure (peer and peer_bidir rows of the same payload): near it, the fabric (an NVSwitch) carries "
                        "every pair at full speed; well below it, the pairs share a switch or a link.")

"""numa: pinned copies with the host buffer on the GPU's NUMA node against one on another node (placed by
allocating from a thread bound to that node's CPUs, and checked in ``/proc/self/numa_maps``).

Its record and what the report says about it (torch-free); what it runs is ``run.py``.
"""

from __future__ import annotations

from ..base import Family

RECORD = Family("numa", "Host buffer near or far from the GPU (NUMA)", "pinned copies with the host buffer on the GPU's NUMA "
                "node and on another", "concurrent", "tab:cyan",
                caption="The host buffer is allocated from a thread bound to the GPU's NUMA node (local) or to another node "
                        "(remote); the node that holds it, read back from /proc/self/numa_maps, is in each benchmark's "
                        "host_numa_node. A remote buffer crosses the link between sockets.")

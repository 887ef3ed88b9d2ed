"""peer_all: every GPU copying to the next one at once (a ring): every GPU's link sends and receives
while the fabric (an NVSwitch, a PCIe switch) carries them all."""

from __future__ import annotations

from collections.abc import Sequence

from ...measure.cases import PeerPlan
from ...measure.families.base import MiB, ScenarioFamily, sizes
from ...measure.families.concurrent import Concurrent, Planned
from ...measure.families.peer_copies import peer_gpus, prepare_peer, price_peer


def plan(devices: Sequence[str], sizes: Sequence[int], peers: PeerPlan | None = None) -> list[Planned]:
    gpus, skip = peer_gpus("peer_all", devices, 3, "has every GPU copy to the next one at once (a ring); on two "
                                                   "GPUs that is peer_bidir's both_ways")
    return skip + [Concurrent("peer_all", "ring", "all:cuda", "all:cuda", size, tuple(gpus)) for size in sizes if gpus]


# A ring's call launches and synchronizes every GPU in turn: at 256 MiB (0.7 ms at 370 GB/s) that costs it a
# few percent against one copy alone, at 64 MiB a third.
FAMILY = ScenarioFamily("peer_all", sizes((256 * MiB,), (256 * MiB, 2**30)), plan, prepare_peer, price_peer, peers=True)

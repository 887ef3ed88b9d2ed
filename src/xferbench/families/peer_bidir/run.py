"""peer_bidir: GPU a to GPU b and b to a at the same time, next to each direction alone, for the pairs the
peer plan sweeps (nvbandwidth's device_to_device_bidirectional)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ...measure.cases import PeerPlan
from ...measure.families.base import MiB, ScenarioFamily, sizes
from ...measure.families.concurrent import Concurrent, Pair, Planned
from ...measure.families.peer_copies import peer_gpus, prepare_peer, price_peer


def duplex_pairs(gpus: Sequence[str], swept: Iterable[Pair] | None) -> list[Pair]:
    """The GPU pairs peer_bidir times, each once, in device order: those the peer plan sweeps at every
    size (in either direction; one per link class keeps an 8-GPU node to one pair), every pair without one."""
    order = {gpu: i for i, gpu in enumerate(gpus)}
    wanted = [(s, d) for s in gpus for d in gpus if s != d] if swept is None else swept
    pairs = {(s, d) if order[s] < order[d] else (d, s) for s, d in wanted if s in order and d in order}
    return sorted(pairs, key=lambda pair: (order[pair[0]], order[pair[1]]))


def plan(devices: Sequence[str], sizes: Sequence[int], peers: PeerPlan | None = None) -> list[Planned]:
    gpus, skip = peer_gpus("peer_bidir", devices, 2, "copies between two GPUs both ways at once")
    pairs = duplex_pairs(gpus, None if peers is None else peers.swept)
    return skip + [Concurrent("peer_bidir", variant, *ends, size, (a, b)) for size in sizes for a, b in pairs
                   for variant, ends in (("one_way", (a, b)), ("other_way", (b, a)), ("both_ways", (a, b)))]


# Between GPUs: sizes where the copies are at their bandwidth, not the peer family's whole sweep. Its figures
# alone at the ring's sizes are peer_all's one-way reference. Pairs: the peer plan's.
FAMILY = ScenarioFamily("peer_bidir", sizes((256 * MiB,), (64 * MiB, 256 * MiB, 2**30)),
                        plan, prepare_peer, price_peer, peers=True)

"""What a distributed world costs before it runs: each call priced by its op's algorithm at the world's size, each
case's own overhead, and the world's start-up once.

A call is ``call_s + steps x step_s + traffic x nbytes / bandwidth`` on the slowest link it crosses, with the
steps and the share of the payload each rank moves as the ring algorithms (nccl's, and gloo's
on loopback) have them at ``n`` ranks: all_reduce 2(n-1) steps and 2(n-1)/n of the bytes; all_gather,
reduce_scatter and all_to_all n-1 and (n-1)/n; broadcast n-1 and the whole payload (pipelined); overlap's 4
all_reduces of a quarter 4 x 2(n-1) steps; a ping-pong 2 steps and the payload both ways, whatever ``n``; the
send_recv ring 1 and 1. gloo does its copies and sums on the CPU: on a host with fewer CPUs than the ranks it
runs (loopback worlds, two "nodes" on one machine), each call takes ranks / CPUs times as long, and so does
the start-up's importing.

gloo's constants were fitted to loopback worlds of 2 and 4 ranks on the 2-CPU build machine
(tools/estimate_check.py --calibrate); nothing here measured nccl's, so its links' constants are assumptions,
below the hardware's peaks so that the estimate errs long, and labelled so (``Link.measured``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .operations import IN_FLIGHT, RING, DistCase, calls_for

__all__ = ["Link", "Price", "call_seconds", "case_seconds", "price_of", "shape", "world_seconds"]


@dataclass(frozen=True)
class Link:
    """One kind of link a call crosses: its fixed cost a call, its latency a step, its bandwidth."""

    name: str
    call_s: float  # a call's fixed cost: dispatch, waking the rank, its sync's share
    step_s: float  # one message's latency: a step of the algorithm
    gbps: float  # 1e9 bytes a second through the slowest link a rank's traffic crosses
    measured: bool  # False: an assumption, measured nowhere


#: gloo on loopback, 2 and 4 ranks, 4 B to 16 MiB, the build machine (2 CPUs) at load 2-6: the fit's constants
#: rounded up (a fitted fixed cost of 0.64 ms, 0.07 ms a step, 1.34 GB/s; see tools/estimate_check.py).
GLOO_LOOPBACK = Link("gloo on loopback", 0.8e-3, 0.15e-3, 1.0, measured=True)
#: Assumptions (nccl, and gloo between hosts): below what the links carry (NVLink 4: 450 GB/s a direction; PCIe 4
#: x16 25; an HDR InfiniBand rail 25; 10 GbE 1.25), so that the estimate errs long.
NVLINK = Link("NVLink (assumed)", 30e-6, 5e-6, 100.0, measured=False)
PCIE = Link("PCIe (assumed)", 30e-6, 10e-6, 10.0, measured=False)
INFINIBAND = Link("InfiniBand/RoCE (assumed)", 30e-6, 10e-6, 10.0, measured=False)
ETHERNET = Link("Ethernet (assumed)", 50e-6, 50e-6, 1.0, measured=False)
#: gloo between hosts: its loopback costs, over the assumed Ethernet where that is slower.
GLOO_BETWEEN_HOSTS = Link("gloo between hosts (assumed)", GLOO_LOOPBACK.call_s,
                          max(GLOO_LOOPBACK.step_s, ETHERNET.step_s), min(GLOO_LOOPBACK.gbps, ETHERNET.gbps), False)

#: A case's own seconds besides its calls (building and freeing its buffers, the check, each round's line-up and
#: the record): the loopback worlds' wall time less their start-up and their calls, over their cases (0.09 s).
CASE_S = 0.12
#: A world's start-up, once: launching the ranks, importing torch, the rendezvous, the process group, the roll call
#: and each node's fingerprint. The --plan-only worlds took 4.3 s (1x2), 6.5 s (1x4) and 14.7 s (2x2 on one host)
#: at load 2-5: a fixed part, and the importing of each process on a host (its ranks and each node's torchrun
#: agent), which the host's CPUs share: STARTUP_PROCESS_S a process a CPU.
STARTUP_S, STARTUP_PROCESS_S = 1.0, 2.2
#: nccl's communicators, formed in the roll call: an assumption (nothing here measured it).
NCCL_STARTUP_S = 10.0


@dataclass(frozen=True)
class Price:
    """What a world's calls cost: the link a world-wide op crosses, those of a pair on one node and across nodes,
    and how many times the ranks outnumber a host's CPUs (gloo's work is the CPU's)."""

    backend: str
    collective: Link
    intra: Link
    inter: Link
    share: float = 1.0  # ranks over CPUs on the most crowded host, at least 1 (gloo only)
    startup_s: float = STARTUP_S

    def links(self) -> str:
        used = dict.fromkeys([self.collective, self.intra, self.inter])
        return ", ".join(f"{link.name} {link.gbps:g} GB/s" for link in used)


def shape(op: str, variant: str | None, world_size: int) -> tuple[float, float]:
    """A call's steps and the bytes each rank sends, as a multiple of the payload, at ``world_size`` ranks."""
    n = world_size
    if op in ("send_recv", "isend_irecv"):
        return (1, 1) if variant == RING else (2, 2)  # a ping-pong: there and back
    if op == "broadcast":
        return n - 1, 1
    if op == "all_reduce":
        return 2 * (n - 1), 2 * (n - 1) / n
    if op == "overlap":
        return IN_FLIGHT * 2 * (n - 1), 2 * (n - 1) / n
    return n - 1, (n - 1) / n  # all_gather, reduce_scatter, all_to_all


def _link(case: DistCase, price: Price) -> Link:
    if case.point_to_point:
        return price.inter if case.crosses == "inter-node" else price.intra
    return price.collective


def call_seconds(case: DistCase, price: Price) -> float:
    """One call of ``case``."""
    link = _link(case, price)
    steps, traffic = shape(case.op, case.variant, case.world_size)
    return price.share * (link.call_s + steps * link.step_s + traffic * case.nbytes / (link.gbps * 1e9))


def case_seconds(case: DistCase, rounds: int, warmup: int, price: Price, overhead_s: float = CASE_S) -> float:
    """One case: its warm-up calls, its rounds of ``calls_for(nbytes)`` calls, one checked call and its overhead."""
    calls = warmup + rounds * calls_for(case.nbytes) + 1
    return calls * call_seconds(case, price) + overhead_s


def world_seconds(cases: Iterable[DistCase], rounds: int, warmup: int, price: Price) -> float:
    """A whole world: its start-up once, then every case."""
    return price.startup_s + sum(case_seconds(case, rounds, warmup, price) for case in cases)


def _host_links(fingerprint: Mapping[str, Any] | None) -> tuple[Link, Link]:
    """A node's links between its GPUs and to other nodes, from its fingerprint (``torchrun._node_fingerprint``):
    NVLink where a GPU has links, else PCIe; InfiniBand/RoCE where the node has an HCA, else Ethernet."""
    devices = ((fingerprint or {}).get("xferbench") or {}).get("devices") or []
    nics = (fingerprint or {}).get("nics") or []
    intra = NVLINK if any((d.get("nvlink_links") or 0) > 0 for d in devices) else PCIE
    inter = INFINIBAND if any(nic.get("kind") == "hca" for nic in nics) else ETHERNET
    return intra, inter


def _slowest(links: Iterable[Link]) -> Link:
    return min(links, key=lambda link: link.gbps)


def _crowds(nodes: Sequence[str], fingerprints: Mapping[str, Mapping[str, Any]], cpus: int | None,
            ) -> tuple[float, float]:
    """On the most crowded host: its ranks over its CPUs, and its processes (ranks and each node's torchrun agent)
    over its CPUs. Nodes whose fingerprints name one host (two "nodes" on loopback) share its CPUs; a node without
    a fingerprint has ``cpus`` (unknown: as many as its ranks)."""
    ranks: Counter[str] = Counter()
    agents: Counter[str] = Counter()
    host_cpus: dict[str, int] = {}
    for node, count in Counter(nodes).items():
        found = fingerprints.get(node) or {}
        host = str((found.get("machine") or {}).get("node") or node)
        ranks[host] += count
        agents[host] += 1
        known = ((found.get("xferbench") or {}).get("host") or {}).get("cpu_count") or cpus
        host_cpus[host] = int(known) if known else count
    return (max(ranks[host] / host_cpus[host] for host in ranks),
            max((ranks[host] + agents[host]) / host_cpus[host] for host in ranks))


def price_of(backend: str, nodes: Sequence[str], fingerprints: Mapping[str, Mapping[str, Any]] | None = None,
             cpus: int | None = None) -> Price:
    """The price of a world whose ranks sit on ``nodes`` (each rank's node), on ``backend``; ``fingerprints``: each
    node's, where known (unknown links are priced as the slowest kind); ``cpus``: a host's CPUs where its
    fingerprint does not say."""
    fingerprints = fingerprints or {}
    many = len(set(nodes)) > 1
    ranks, processes = _crowds(nodes, fingerprints, cpus)
    startup = STARTUP_S + STARTUP_PROCESS_S * max(1.0, processes)
    # One node: no pair crosses to another, so its network is not priced (nor named in the plan line).
    if backend == "gloo":
        inter = GLOO_BETWEEN_HOSTS if many else GLOO_LOOPBACK
        return Price(backend, inter, GLOO_LOOPBACK, inter, max(1.0, ranks), startup)
    found = [_host_links(fingerprints.get(node)) for node in sorted(set(nodes))]
    intra = _slowest(links[0] for links in found)
    inter = _slowest(links[1] for links in found) if many else intra
    return Price(backend, _slowest([intra, inter]), intra, inter, 1.0, startup + NCCL_STARTUP_S)

"""The torchrun world says what it will run and about how long before it measures, as the pytest path does."""

import re

import pytest

from test_distributed_price import node
from xferbench.measure.distributed.operations import cases_for, plateau_sizes
from xferbench.measure.distributed.options import PROFILES
from xferbench.measure.distributed.price import price_of
from xferbench.measure.distributed.torchrun import parser, plan_line, swept_sizes
from xferbench.units import parse_sizes

ONE, TWO = ["a"] * 8, ["a"] * 8 + ["b"] * 8
#: 2 nodes x 8 GPUs with NVLink and an InfiniBand HCA each, and the same with only Ethernet adapters.
FAST = {"a": node("a"), "b": node("b")}
ETHERNET = {"a": node("a", hca=False), "b": node("b", hca=False)}


def minutes(line: str) -> float:
    found = re.search(r"about ([\d.]+) (min|s)", line)
    assert found, line
    return float(found.group(1)) / (1 if found.group(2) == "min" else 60)


def test_the_full_profile_on_8_and_16_gpus_is_priced_before_it_runs():
    """The profile's sweep (x16 steps) on to the 1 GiB plateau, priced on the links the fingerprints name."""
    full = PROFILES["full"]
    sizes = plateau_sizes([s for s in parse_sizes(full.sizes) if isinstance(s, int)], 140 * 2**30)
    assert isinstance(sizes, list)
    one = plan_line(cases_for(8, ONE, "nccl", "cuda", sizes), full.warmup, full.rounds, 8, price_of("nccl", ONE, FAST))
    two = plan_line(cases_for(16, TWO, "nccl", "cuda", sizes), full.warmup, full.rounds, 16,
                    price_of("nccl", TWO, FAST))
    assert one.startswith("126 cases on 8 ranks (nccl, 4B to 1GiB, 10 rounds each): about ")
    assert one.endswith("s of it start-up, priced on NVLink (assumed) 100 GB/s")
    assert two.startswith("162 cases on 16 ranks (nccl, 4B to 1GiB, 10 rounds each): about ")
    assert "priced on InfiniBand/RoCE (assumed) 10 GB/s, NVLink (assumed) 100 GB/s" in two
    assert minutes(one) < minutes(two)


@pytest.mark.parametrize("links", [FAST, ETHERNET], ids=["infiniband", "ethernet"])
def test_the_cluster_profile_fits_fifteen_minutes_on_two_nodes_of_eight_with_rails(links):
    """--profile cluster --pairs rails on 2 nodes x 8 GPUs with nccl: its own sizes, not swept on to the plateau
    whatever memory is free, every op and link at each but the rails other than rank 0's, which stop at 16 MiB;
    within 15 min at the price of the fingerprints' links, InfiniBand or only Ethernet."""
    cluster = PROFILES["cluster"]
    args = parser().parse_args(["--profile", "cluster", "--pairs", "rails"])
    sizes = [s for s in parse_sizes(cluster.sizes) if isinstance(s, int)]
    notes: list[str] = []
    assert swept_sizes(args, cluster, "nccl", sizes, 140 * 2**30, notes) == sizes and not notes
    cases = cases_for(16, TWO, "nccl", "cuda", sizes, rails=True, rails_most=cluster.rails_most)
    line = plan_line(cases, cluster.warmup, cluster.rounds, 16, price_of("nccl", TWO, links))
    assert line.startswith("248 cases on 16 ranks (nccl, 4B to 256MiB, 10 rounds each)") and minutes(line) <= 15
    rails = [case for case in cases if case.point_to_point and 0 not in case.pair]
    assert len({case.pair for case in rails}) == 14 and max(case.nbytes for case in rails) == 2**24
    assert max(case.nbytes for case in cases if case.point_to_point) == 2**28  # rank 0's rail at every size
    # Without the trim, every rail at 256 MiB too: over 15 min on Ethernet.
    untrimmed = plan_line(cases_for(16, TWO, "nccl", "cuda", sizes, rails=True), cluster.warmup, cluster.rounds, 16,
                          price_of("nccl", TWO, ETHERNET))
    assert untrimmed.startswith("276 cases") and minutes(untrimmed) > 15
    # The full profile on the same world goes on to the plateau: 1 GiB.
    full = parser().parse_args(["--profile", "full"])
    assert max(swept_sizes(full, PROFILES["full"], "nccl", sizes, 140 * 2**30, [])) == 2**30


def test_plan_only_is_an_option():
    assert parser().parse_args(["--plan-only"]).plan_only and not parser().parse_args([]).plan_only

"""The torchrun world says what it will run and about how long before it measures, as the pytest path does."""

import re

from xferbench.measure.distributed.operations import DIST_CALL_S, cases_for, dist_case_seconds, plateau_sizes
from xferbench.measure.distributed.options import PROFILES
from xferbench.measure.distributed.torchrun import parser, plan_line, swept_sizes
from xferbench.units import parse_sizes


def test_the_estimate_counts_every_call_of_every_case():
    """4 B: 2 warm-up calls, 30 rounds of 100 calls, one checked call, each at the fixed per-call price."""
    assert dist_case_seconds(4, 30, 2) == (2 + 30 * 100 + 1) * (DIST_CALL_S + 4 / 0.5e9)


def test_the_full_profile_on_8_and_16_gpus_is_priced_before_it_runs():
    """The profile's sweep (x16 steps) on to the 1 GiB plateau: about 30 min on 1x8 and 38 min on 2x8 at gloo's price
    (70 and 96 min at the 30 rounds and x4 steps it had, without the ring and the in-place variants)."""
    full = PROFILES["full"]
    sizes = plateau_sizes([s for s in parse_sizes(full.sizes) if isinstance(s, int)], 140 * 2**30)
    assert isinstance(sizes, list)
    one = plan_line(cases_for(8, ["a"] * 8, "nccl", "cuda", sizes), full.warmup, full.rounds, 8, "nccl")
    two = plan_line(cases_for(16, ["a"] * 8 + ["b"] * 8, "nccl", "cuda", sizes), full.warmup, full.rounds, 16, "nccl")
    assert one == ("126 cases on 8 ranks (nccl, 4B to 1GiB, 10 rounds each): about 29.7 min at the suite's per-call "
                   "price on gloo (an upper bound for nccl)")
    assert two.startswith("162 cases on 16 ranks (nccl, 4B to 1GiB, 10 rounds each): about 38.2 min")


def test_the_cluster_profile_fits_fifteen_minutes_on_two_nodes_of_eight():
    """--profile cluster on 2 nodes x 8 GPUs with nccl: its own sizes, not swept on to the plateau whatever memory
    is free, every op and link at each; under 15 min at gloo's per-call price (an upper bound for nccl)."""
    cluster = PROFILES["cluster"]
    args = parser().parse_args(["--profile", "cluster"])
    sizes = [s for s in parse_sizes(cluster.sizes) if isinstance(s, int)]
    notes: list[str] = []
    assert swept_sizes(args, cluster, "nccl", sizes, 140 * 2**30, notes) == sizes and not notes
    line = plan_line(cases_for(16, ["a"] * 8 + ["b"] * 8, "nccl", "cuda", sizes), cluster.warmup, cluster.rounds, 16,
                     "nccl")
    minutes = float(re.search(r"about ([\d.]+) min", line).group(1))
    assert line.startswith("108 cases on 16 ranks (nccl, 4B to 256MiB, 10 rounds each)") and minutes < 15
    # The full profile on the same world goes on to the plateau: 1 GiB.
    full = parser().parse_args(["--profile", "full"])
    assert max(swept_sizes(full, PROFILES["full"], "nccl", sizes, 140 * 2**30, [])) == 2**30


def test_plan_only_is_an_option():
    assert parser().parse_args(["--plan-only"]).plan_only and not parser().parse_args([]).plan_only

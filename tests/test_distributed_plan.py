"""The torchrun world says what it will run and about how long before it measures, as the pytest path does."""

from xferbench.measure.distributed.operations import DIST_CALL_S, cases_for, dist_case_seconds, plateau_sizes
from xferbench.measure.distributed.options import PROFILES
from xferbench.measure.distributed.torchrun import parser, plan_line
from xferbench.units import parse_sizes


def test_the_estimate_counts_every_call_of_every_case():
    """4 B: 2 warm-up calls, 30 rounds of 100 calls, one checked call, each at the fixed per-call price."""
    assert dist_case_seconds(4, 30, 2) == (2 + 30 * 100 + 1) * (DIST_CALL_S + 4 / 0.5e9)


def test_the_full_profile_on_8_and_16_gpus_is_priced_before_it_runs():
    """The profile's sweep on to the 1 GiB plateau: about 70 min on 1x8 and 96 min on 2x8 at gloo's price."""
    full = PROFILES["full"]
    sizes = plateau_sizes([s for s in parse_sizes(full.sizes) if isinstance(s, int)], 140 * 2**30)
    assert isinstance(sizes, list)
    one = plan_line(cases_for(8, ["a"] * 8, "nccl", "cuda", sizes), full.warmup, full.rounds, 8, "nccl")
    two = plan_line(cases_for(16, ["a"] * 8 + ["b"] * 8, "nccl", "cuda", sizes), full.warmup, full.rounds, 16, "nccl")
    assert one == ("165 cases on 8 ranks (nccl, 4B to 1GiB, 30 rounds each): about 70.4 min at the suite's per-call "
                   "price on gloo (an upper bound for nccl)")
    assert two.startswith("225 cases on 16 ranks (nccl, 4B to 1GiB, 30 rounds each): about 96.1 min")


def test_plan_only_is_an_option():
    assert parser().parse_args(["--plan-only"]).plan_only and not parser().parse_args([]).plan_only

"""The torchrun world says what it will run before it measures: its cases, ranks, sizes and rounds."""

from xferbench.measure.distributed.operations import cases_for, plateau_sizes
from xferbench.measure.distributed.options import PROFILES
from xferbench.measure.distributed.torchrun import parser, plan_line, swept_sizes
from xferbench.units import parse_sizes

ONE, TWO = ["a"] * 8, ["a"] * 8 + ["b"] * 8


def test_the_full_profile_on_8_and_16_gpus_is_said_before_it_runs():
    """The profile's sweep (x16 steps) on to the 1 GiB plateau."""
    full = PROFILES["full"]
    sizes = plateau_sizes([s for s in parse_sizes(full.sizes) if isinstance(s, int)], 140 * 2**30)
    assert isinstance(sizes, list)
    assert plan_line(cases_for(8, ONE, "nccl", "cuda", sizes), full.rounds, 8, "nccl") == (
        "126 cases on 8 ranks (nccl, 4B to 1GiB, 10 rounds each)")
    assert plan_line(cases_for(16, TWO, "nccl", "cuda", sizes), full.rounds, 16, "nccl") == (
        "162 cases on 16 ranks (nccl, 4B to 1GiB, 10 rounds each)")
    assert plan_line([], full.rounds, 2, "gloo") == "0 cases on 2 ranks (gloo, no sizes, 10 rounds each)"


def test_the_cluster_profile_on_two_nodes_of_eight_with_rails():
    """--profile cluster --pairs rails on 2 nodes x 8 GPUs with nccl: its own sizes, not swept on to the plateau
    whatever memory is free, every op and link at each but the rails other than rank 0's, which stop at 16 MiB."""
    cluster = PROFILES["cluster"]
    args = parser().parse_args(["--profile", "cluster", "--pairs", "rails"])
    sizes = [s for s in parse_sizes(cluster.sizes) if isinstance(s, int)]
    notes: list[str] = []
    assert swept_sizes(args, cluster, "nccl", sizes, 140 * 2**30, notes) == sizes and not notes
    cases = cases_for(16, TWO, "nccl", "cuda", sizes, rails=True, rails_most=cluster.rails_most)
    line = plan_line(cases, cluster.rounds, 16, "nccl")
    assert line == "248 cases on 16 ranks (nccl, 4B to 256MiB, 10 rounds each)"
    rails = [case for case in cases if case.point_to_point and 0 not in case.pair]
    assert len({case.pair for case in rails}) == 14 and max(case.nbytes for case in rails) == 2**24
    assert max(case.nbytes for case in cases if case.point_to_point) == 2**28  # rank 0's rail at every size
    # Without the trim, every rail at 256 MiB too.
    assert len(cases_for(16, TWO, "nccl", "cuda", sizes, rails=True)) == 276
    # The full profile on the same world goes on to the plateau: 1 GiB.
    full = parser().parse_args(["--profile", "full"])
    assert max(swept_sizes(full, PROFILES["full"], "nccl", sizes, 140 * 2**30, [])) == 2**30


def test_plan_only_is_an_option():
    assert parser().parse_args(["--plan-only"]).plan_only and not parser().parse_args([]).plan_only


def test_a_rank_says_its_line_in_one_write(monkeypatch):
    """A node's ranks share one stderr, unbuffered: print's two writes (the text, then the newline) of two ranks ran
    together into "...--ntasks-per-node)xferbench.distributed: the nodes ..." (a slow test saw it). One write each,
    so a line of one rank is whole (a pipe keeps a write under 4 KiB in one piece)."""
    import sys

    from xferbench.measure.distributed import torchrun

    writes: list[str] = []

    class Stderr:
        def write(self, text: str) -> int:
            writes.append(text)
            return len(text)

        def flush(self) -> None:
            pass

    monkeypatch.setattr(sys, "stderr", Stderr())
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("SLURM_PROCID", raising=False)
    assert torchrun.main([]) == 2
    assert len(writes) == 1 and writes[0].startswith("xferbench.distributed: not started by torchrun")
    assert writes[0].endswith("\n") and writes[0].count("\n") == 1

"""The cost of a full run on a big box: the peer family's plan per topology (--xfer-peer-pairs), printed before the
run with its cases."""

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from xferbench.measure.cases import PROFILES, Case, build_cases, default_peer_pairs, fit_shapes, peer_plan
from xferbench.measure.simulate import SimBackend, SimClock, load_spec
from xferbench.units import parse_sizes

ROOT = Path(__file__).resolve().parents[1]
EIGHT = ROOT / "examples" / "sim-8gpu-nvswitch-2socket.toml"
TWO = ROOT / "examples" / "sim-2gpu-pcie5-nvlink.toml"
GPUS = [f"cuda:{i}" for i in range(8)]
FULL = parse_sizes(PROFILES["full"])


def peer_cases(mode: str | None, classes=None) -> list[Case]:
    classes = SimBackend(load_spec(EIGHT), SimClock()).peer_link_classes(GPUS) if classes is None else classes
    planned = build_cases("peer", ["cpu", *GPUS], FULL, ["float32"], peer_plan(GPUS, classes, mode))
    return [c for c in planned if isinstance(c, Case)]


def sizes_per_pair(cases: list[Case]) -> dict[tuple[str, str], set[int]]:
    found: dict[tuple[str, str], set[int]] = {}
    for case in cases:
        found.setdefault((case.src, case.dst), set()).add(case.nbytes)
    return found


class TestPeerPlan:
    @pytest.mark.parametrize(("mode", "count", "swept"), [("all", 2128, 56), ("ring", 928, 16),
                                                          ("one-per-class", 478, 1)])
    def test_full_profile_counts_on_eight_gpus(self, mode, count, swept):
        """The 8-GPU spec's full profile (19 sizes, 2 methods): every pair swept (56 x 2 x 19), the ring's
        16 pairs swept and 40 at 4 sizes, or one pair swept and 55 at 4 sizes."""
        cases = peer_cases(mode)
        assert len(cases) == count
        per_pair = sizes_per_pair(cases)
        assert len(per_pair) == 56
        assert sum(len(s) == len(FULL) for s in per_pair.values()) == swept

    @pytest.mark.parametrize("mode", ["all", "ring", "one-per-class"])
    def test_every_pair_keeps_the_sizes_that_fit_alpha_and_beta(self, mode):
        """An unswept pair still has the smallest size (α), the two largest (β) and one between: the fit
        needs three (analyze.model.fit_alpha_beta)."""
        smallest, largest = min(c.nbytes for c in peer_cases("all")), max(c.nbytes for c in peer_cases("all"))
        for sizes in sizes_per_pair(peer_cases(mode)).values():
            assert len(sizes) >= 4 and smallest in sizes and largest in sizes

    def test_ring_is_each_gpu_and_its_neighbours(self):
        plan = peer_plan(GPUS, {}, "ring")
        assert ("cuda:7", "cuda:0") in plan.swept and ("cuda:0", "cuda:7") in plan.swept
        assert ("cuda:0", "cuda:2") not in plan.swept and len(plan.swept) == 16

    def test_fit_shapes_are_the_ends_and_the_middle(self):
        shapes = [(n,) for n in (1, 4, 16, 64, 256, 1024, 4096)]
        assert fit_shapes(shapes) == [(1,), (64,), (1024,), (4096,)]
        assert fit_shapes(shapes[:3]) == shapes[:3]


class TestDefaultPerTopology:
    def test_two_gpus_or_fewer_sweep_every_pair(self):
        assert default_peer_pairs(GPUS[:2], {("cuda:0", "cuda:1"): "nvlink", ("cuda:1", "cuda:0"): "nvlink"})[0] == "all"

    def test_one_link_class_for_every_pair_sweeps_one_pair(self):
        classes = {(s, d): "nvswitch" for s in GPUS for d in GPUS if s != d}
        assert default_peer_pairs(GPUS, classes)[0] == "one-per-class"

    def test_an_unknown_link_sweeps_every_pair(self):
        """A real machine whose pairs' links are not known: nothing is assumed alike."""
        classes = {(s, d): "nvswitch" for s in GPUS for d in GPUS if s != d} | {("cuda:0", "cuda:5"): None}
        assert default_peer_pairs(GPUS, classes)[0] == "all"
        assert default_peer_pairs(GPUS, {})[0] == "all"

    def test_one_pair_per_class_on_a_mixed_box(self):
        """Two NVLink islands (0-3, 4-7) joined by PCIe across the sockets: one pair swept per class."""
        classes = {(s, d): "nvlink" if (int(s[-1]) < 4) == (int(d[-1]) < 4) else "pcie-sys"
                   for s in GPUS for d in GPUS if s != d}
        plan = peer_plan(GPUS, classes)
        assert plan.mode == "one-per-class" and plan.swept == {("cuda:0", "cuda:1"), ("cuda:0", "cuda:4")}


def collect(spec: Path, *args: str) -> str:
    """What pytest prints when it collects bench/ on a simulated machine."""
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    proc = subprocess.run([sys.executable, "-m", "pytest", "bench", "--benchmark-only", "--collect-only", "-q",
                           "-p", "no:cacheprovider", f"--xfer-simulate={spec}", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


class TestBeforeTheRun:
    @pytest.mark.slow  # collects all of bench/ for 8 GPUs: about 6 s
    def test_default_and_plan_printed_on_the_eight_gpu_spec(self):
        """The 8-GPU NVSwitch spec's full profile plans one pair per class by default, and says how long
        the simulated clock is not priced before it starts."""
        output = collect(EIGHT, "--xfer-profile=full")
        assert "peer pairs one-per-class (default:" in output
        assert re.search(r"xferbench: \d+ cases planned \(.*peer 478,", output)
        # Every collected case is in the plan (none is skipped on this machine): core, scenario, concurrent, distributed.
        planned = int(re.search(r"xferbench: (\d+) cases planned", output).group(1))
        # A case measured in blocks (blocks.py: the paired and reference cases, 95 here, 6 blocks each) is a test a
        # block and one case in the plan. 39 dataloader, 144 d2h_kept.
        blocks = re.findall(r"^(\S+)-block\d+of(\d+)\]$", output, re.MULTILINE)
        cases = Counter(case for case, _ in blocks)
        assert blocks and all(cases[case] == int(count) for case, count in blocks)  # every block of each collected
        collected = int(re.search(r"(\d+) tests collected", output).group(1))
        assert planned == collected - len(blocks) + len(cases) == 5918
        assert "xferbench: no run time estimated: the simulated machine's cases run on its own clock" in output

    def test_two_gpus_default_to_every_pair(self):
        assert "peer pairs all (default: 2 GPUs" in collect(TWO, "bench/test_peer.py")

    def test_a_bad_choice_is_one_line(self):
        env = dict(os.environ, PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
        proc = subprocess.run([sys.executable, "-m", "pytest", "bench/test_peer.py", "--benchmark-only", "-q",
                               "-p", "no:cacheprovider", f"--xfer-simulate={EIGHT}", "--xfer-peer-pairs=some"],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == pytest.ExitCode.USAGE_ERROR
        assert "argument --xfer-peer-pairs: invalid choice: 'some'" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_a_simulated_run_records_its_peer_plan(tmp_path):
    """A simulated run of every kind of core call on the 8-GPU spec (a peer copy, a same-device copy, a
    no-op, a synchronize) records the peer plan it used; it estimates no run time, and says its wall clock."""
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    out = tmp_path / "run.json"
    proc = subprocess.run([sys.executable, "-m", "pytest", *(f"bench/test_{f}.py" for f in ("peer", "d2d", "noop", "sync")),
                           "--benchmark-only", "-q", "-p", "no:cacheprovider", f"--xfer-simulate={EIGHT}",
                           "--xfer-devices=cuda:0,cuda:1", "--xfer-sizes=4B,16MiB", "--xfer-peer-pairs=ring",
                           f"--benchmark-json={out}"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "xferbench: no run time estimated" in proc.stdout and re.search(r"xferbench: wall clock [\d.]+ (min|s)\n",
                                                                          proc.stdout), proc.stdout[-2000:]
    plan = json.loads(out.read_text())["machine_info"]["xferbench"]["peer_plan"]
    assert plan["mode"] == "ring" and plan["reason"] == "given"
    assert plan["swept_pairs"] == ["cuda:0->cuda:1", "cuda:1->cuda:0"]


class TestAdaptiveRounds:
    @pytest.mark.slow
    def test_full_profile_stops_when_the_mean_is_stable(self, tmp_path):
        """The full profile runs pytest-benchmark's adaptive rounds (±1% at 99%): on the 8-GPU spec (1% noise)
        a few rounds each, against a hundred and more with fixed rounds (a --benchmark-max-time of one's own)."""
        env = dict(os.environ, PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
        found = {}
        for name, extra in (("adaptive", []), ("fixed", ["--benchmark-max-time=0.02"])):
            out = tmp_path / f"{name}.json"
            proc = subprocess.run([sys.executable, "-m", "pytest", "bench/test_d2d.py", "--benchmark-only", "-q",
                                   "-p", "no:cacheprovider", f"--xfer-simulate={EIGHT}", "--xfer-devices=cuda:0",
                                   "--xfer-sizes=4B,1MiB,64MiB", "--xfer-profile=full", f"--benchmark-json={out}", *extra],
                                  cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
            assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
            found[name] = [b["stats"]["rounds"] for b in json.loads(out.read_text())["benchmarks"]]
        assert len(found["adaptive"]) == 6 and max(found["adaptive"]) <= 20 and min(found["adaptive"]) >= 5
        assert min(found["fixed"]) >= 100


class TestLinkClasses:
    spec = load_spec(EIGHT)

    def test_every_pair_is_one_link_class(self):
        classes = SimBackend(self.spec, SimClock()).peer_link_classes(GPUS)
        assert len(classes) == 56 and len(set(classes.values())) == 1

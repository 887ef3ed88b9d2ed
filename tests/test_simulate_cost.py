"""The cost of a full run on a big box: the peer family's plan per topology (--xfer-peer-pairs), and the
run-time estimate printed before a run and read back against the simulated clock at its end."""

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from xferbench.measure.cases import PROFILES, Case, build_cases, default_peer_pairs, fit_shapes, peer_plan
from xferbench.measure.session.estimate import Rounds, benchmark_seconds
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
    def test_default_and_estimate_printed_on_the_eight_gpu_spec(self):
        """The 8-GPU NVSwitch spec's full profile plans one pair per class by default, and says how long
        the run will take before it starts."""
        output = collect(EIGHT, "--xfer-profile=full")
        assert "peer pairs one-per-class (default:" in output
        assert re.search(r"xferbench: \d+ cases planned \(.*peer 478,", output)
        # Every collected case is in the plan (none is skipped on this machine): core, scenario, concurrent, distributed.
        planned = int(re.search(r"xferbench: (\d+) cases planned", output).group(1))
        # The 4 reference cases run in 3 blocks each: 8 tests more than cases (blocks.py). 39 dataloader, 144 d2h_kept.
        assert planned == int(re.search(r"(\d+) tests collected", output).group(1)) - 8 == 5918
        # The whole profile fits 15 minutes: the spec's clock and the real one (the harness, host and distributed cases).
        found = re.search(r"estimated run time ([\d.]+) min of simulated clock \+ ([\d.]+) min on the real clock", output)
        assert found and float(found.group(1)) + float(found.group(2)) < 15, output[-2000:]

    def test_two_gpus_default_to_every_pair(self):
        assert "peer pairs all (default: 2 GPUs" in collect(TWO, "bench/test_peer.py")

    def test_a_bad_choice_is_one_line(self):
        env = dict(os.environ, PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
        proc = subprocess.run([sys.executable, "-m", "pytest", "bench/test_peer.py", "--benchmark-only", "-q",
                               "-p", "no:cacheprovider", f"--xfer-simulate={EIGHT}", "--xfer-peer-pairs=some"],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == pytest.ExitCode.USAGE_ERROR
        assert "argument --xfer-peer-pairs: invalid choice: 'some'" in proc.stderr and "Traceback" not in proc.stderr


class TestBenchmarkSeconds:
    def test_follows_pytest_benchmarks_rounds_rule(self):
        """A call of 1 ms with min_time 0.1 ms: calibrated at once, max(ceil(20 ms / 1 ms), 5) = 20 rounds."""
        assert benchmark_seconds(1e-3, Rounds(0.02, 1e-4, 5)) == pytest.approx(21e-3)
        # A slow call: five rounds whatever max_time says.
        assert benchmark_seconds(0.1, Rounds(0.02, 1e-4, 5)) == pytest.approx(0.6)


#: The estimate of a simulated run is read back against the simulated clock within this factor.
ESTIMATE_FACTOR = 1.25


@pytest.mark.slow
def test_estimate_met_on_the_simulated_clock(tmp_path):
    """A simulated run of every kind of core call on the 8-GPU spec (a peer copy, a same-device copy, a
    no-op, a synchronize) ends within ESTIMATE_FACTOR of what it estimated before it started, and the
    JSON records the peer plan the run used."""
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    out = tmp_path / "run.json"
    proc = subprocess.run([sys.executable, "-m", "pytest", *(f"bench/test_{f}.py" for f in ("peer", "d2d", "noop", "sync")),
                           "--benchmark-only", "-q", "-p", "no:cacheprovider", f"--xfer-simulate={EIGHT}",
                           "--xfer-devices=cuda:0,cuda:1", "--xfer-sizes=4B,16MiB", "--xfer-peer-pairs=ring",
                           f"--benchmark-json={out}"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    estimated = re.search(r"estimated run time ([\d.]+) (min|s) of simulated clock", proc.stdout)
    spent = re.search(r"simulated clock ([\d.]+) (min|s) against ([\d.]+) (min|s) estimated", proc.stdout)
    assert estimated and spent, proc.stdout[-2000:]
    ratio = float(re.search(r"simulated clock .* \(actual / estimate = ([\d.]+)\)", proc.stdout).group(1))
    assert 1 / ESTIMATE_FACTOR <= ratio <= ESTIMATE_FACTOR
    plan = json.loads(out.read_text())["machine_info"]["xferbench"]["peer_plan"]
    assert plan["mode"] == "ring" and plan["reason"] == "given"
    assert plan["swept_pairs"] == ["cuda:0->cuda:1", "cuda:1->cuda:0"]


class TestAdaptiveRounds:
    def test_needed_rounds_follow_pytest_benchmarks_precision_rule(self):
        """z x spread / sqrt(n) <= precision: at 99% (z = 2.576), 1% spread to ±1% needs 7 rounds; none known
        or no precision: every round max_time allows."""
        adaptive = Rounds(0.25, 1e-3, 5, precision=0.01)
        assert adaptive.needed(250, 0.01) == 7
        assert adaptive.needed(250, 0.0) == 5 and adaptive.needed(250, None) == 250 and adaptive.needed(6, 0.05) == 6
        assert Rounds(0.25, 1e-3, 5).needed(250, 0.01) == 250

    @pytest.mark.slow
    def test_full_profile_stops_when_the_mean_is_stable(self, tmp_path):
        """The full profile runs pytest-benchmark's adaptive rounds (±1% at 99%): on the 8-GPU spec (1% noise)
        a few rounds each, against a hundred and more with fixed rounds (a --benchmark-max-time of one's own);
        the estimate holds either way."""
        env = dict(os.environ, PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
        found = {}
        for name, extra in (("adaptive", []), ("fixed", ["--benchmark-max-time=0.02"])):
            out = tmp_path / f"{name}.json"
            proc = subprocess.run([sys.executable, "-m", "pytest", "bench/test_d2d.py", "--benchmark-only", "-q",
                                   "-p", "no:cacheprovider", f"--xfer-simulate={EIGHT}", "--xfer-devices=cuda:0",
                                   "--xfer-sizes=4B,1MiB,64MiB", "--xfer-profile=full", f"--benchmark-json={out}", *extra],
                                  cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
            assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
            ratio = float(re.search(r"simulated clock .* \(actual / estimate = ([\d.]+)\)", proc.stdout).group(1))
            assert 1 / ESTIMATE_FACTOR <= ratio <= ESTIMATE_FACTOR
            found[name] = [b["stats"]["rounds"] for b in json.loads(out.read_text())["benchmarks"]]
        assert len(found["adaptive"]) == 6 and max(found["adaptive"]) <= 20 and min(found["adaptive"]) >= 5
        assert min(found["fixed"]) >= 100


class TestCallSeconds:
    spec = load_spec(EIGHT)

    def test_a_timed_call_is_launch_device_time_and_a_synchronize_per_device(self):
        sim = SimBackend(self.spec, SimClock())
        peer = Case("peer", "copy_", "cuda:0", "cuda:5", (2**20,))
        device = self.spec.paths["peer"].seconds(4 * 2**20)
        call, queued = sim.call_seconds(peer)
        assert call == pytest.approx(4e-6 + device + 2 * 5e-6)
        assert queued == pytest.approx(max(4e-6, device))  # a peer copy returns at once: the device paces the queue
        noop = sim.call_seconds(Case("noop", "to", "cuda:0", "cuda:0", (1,)))
        assert noop == pytest.approx((400e-9, 400e-9))
        assert sim.clock.now == 0.0  # pricing charges nothing

    def test_every_pair_is_one_link_class(self):
        classes = SimBackend(self.spec, SimClock()).peer_link_classes(GPUS)
        assert len(classes) == 56 and len(set(classes.values())) == 1


def test_conservative_estimate_of_the_h200_sample_errs_long_within_3x():
    """The 512 cases of the real H200 run (reports/samples/h200, --benchmark-max-time 0.15) priced by the
    conservative figure: above the 393 s the whole reference script took (log.txt: "done in 393s", the harness
    check and the report included), and within 3x of it."""
    import gzip

    from xferbench.measure.session.estimate import estimate

    sample = ROOT / "reports" / "samples" / "h200"
    data = json.loads(gzip.open(sample / "full.json.gz").read())
    assert "== done in 393s" in (sample / "log.txt").read_text()
    cases = [Case(e["op"], e["method"], e["src"], e["dst"], tuple(e["shape"]), e["dtype"], e.get("host_memory"),
                  e.get("non_blocking", False), e.get("variant")) for e in (b["extra_info"] for b in data["benchmarks"])]
    real_machine = type("Real", (), {"simulated": False})()
    found = estimate(cases, real_machine, Rounds(0.15, 1e-3, 5))
    assert len(cases) == 512 and found.simulated_s == 0
    assert 393 <= found.real_s <= 3 * 393


class TestHarnessOnTheRealClock:
    """The harness's real seconds in the estimate follow what a simulated case does for real: it moves its
    payload once per host call (transfers._verify_once), not once per case."""

    sim = SimBackend(load_spec(EIGHT), SimClock())
    rounds = Rounds(0.02, 1e-4, 5)

    def test_every_pair_of_one_size_passes_over_the_bytes_once(self):
        from xferbench.measure.session.estimate import CONSERVATIVE_GBPS, HARNESS_COPIES, SIMULATED_HARNESS_S, estimate

        pairs = [Case("peer", "to", s, d, (2**28,)) for s in GPUS for d in GPUS if s != d]
        found = estimate(pairs, self.sim, self.rounds)
        once = HARNESS_COPIES * 2**30 / (CONSERVATIVE_GBPS * 1e9)
        assert found.real_s == pytest.approx(56 * SIMULATED_HARNESS_S + once)
        # Another method is another host call: its bytes once more.
        copies = [Case("peer", "copy_", s, d, (2**28,)) for s, d in (("cuda:0", "cuda:1"), ("cuda:2", "cuda:3"))]
        assert estimate(pairs + copies, self.sim, self.rounds).real_s == pytest.approx(58 * SIMULATED_HARNESS_S + 2 * once)

    def test_a_priced_scenario_moves_nothing_and_a_host_case_is_priced_as_before(self):
        from xferbench.measure.families.scenario import Scenario
        from xferbench.measure.session.estimate import HARNESS_S, SIMULATED_HARNESS_S, estimate

        scenario = Scenario("pin_memory", "to", "cpu", "cuda:3", 2**26, "bytes")
        assert estimate([scenario], self.sim, self.rounds).real_s == pytest.approx(SIMULATED_HARNESS_S)
        host = estimate([Case("host", "clone", "cpu", "cpu", (4,), host_memory="pageable")], self.sim, self.rounds)
        assert host.real_s > HARNESS_S  # the harness, and the call timed on the real clock

    def test_a_distributed_case_is_priced_by_its_own_rounds(self):
        """The 2-rank world times its own rounds (World.run: warm-up, rounds of calls_for(nbytes) calls, one
        verified call), not pytest-benchmark's; the profile's rounds unless --xfer-dist-rounds says otherwise. Its
        start-up is counted once, with its first case."""
        import os

        from xferbench.measure.distributed.operations import DistCase
        from xferbench.measure.distributed.price import call_seconds, price_of
        from xferbench.measure.session.estimate import HARNESS_COPIES, HARNESS_S, estimate

        price = price_of("gloo", ["this node"] * 2, cpus=os.cpu_count())
        small, large = DistCase("all_reduce", 4, "gloo", 2), DistCase("all_reduce", 2**26, "gloo", 2)

        def seconds(cases, rounds):
            harness = sum(HARNESS_S + HARNESS_COPIES * case.nbytes / (2e9) for case in cases)
            return estimate(cases, self.sim, rounds).real_s - harness - price.startup_s

        full = Rounds(0.02, 1e-4, 5, dist_rounds=30, dist_warmup=2)
        assert seconds([small], full) == pytest.approx((2 + 30 * 100 + 1) * call_seconds(small, price))
        assert seconds([large], full) == pytest.approx((2 + 30 * 4 + 1) * call_seconds(large, price))  # 4 a round
        assert seconds([small, large], full) == pytest.approx(seconds([small], full) + seconds([large], full))
        assert seconds([small], Rounds(0.02, 1e-4, 5, dist_rounds=5)) == pytest.approx(
            (2 + 5 * 100 + 1) * call_seconds(small, price))


class Charged:
    """pytest-benchmark's fixture as far as a family's timing uses it, which keeps what each timed call (or,
    with a setup, each whole round) charged to the simulated clock, as the run's clock charges it."""

    CALLS = 5

    def __init__(self, clock: SimClock) -> None:
        self.clock, self.charges, self.extra_info, self.group, self.rounds = clock, [], {}, None, None

    def _charged(self, *steps):
        before, result = self.clock.now, None
        for step in steps:
            if step is not None:
                result = step()
        self.charges.append(self.clock.now - before)
        return result

    def __call__(self, target):
        return [self._charged(target) for _ in range(self.CALLS)][-1]

    def pedantic(self, target, setup=None, teardown=None, rounds=1, warmup_rounds=0):
        self.rounds = rounds + warmup_rounds
        results = [self._charged(setup, target, teardown) for _ in range(self.CALLS)]
        return results[-1]


def family_cases(profile: str = "full") -> list:
    """Every scenario and concurrent case the 8-GPU spec plans on its accelerators, by the default peer plan."""
    from xferbench.measure.families.registry import SCENARIO_FAMILIES, plan
    from xferbench.measure.hardware.devices import accelerator_index

    classes = SimBackend(load_spec(EIGHT), SimClock()).peer_link_classes(GPUS)
    peers = peer_plan(GPUS, classes)
    planned = [case for op in SCENARIO_FAMILIES for case in plan(op, ["cpu", *GPUS], profile, peers)]
    return [c for c in planned if hasattr(c, "devices") and any(accelerator_index(d) is not None for d in c.devices)]


def run_price(case, rounds: Rounds) -> float | None:
    """What the run's simulated clock charges ``case``: each call's median price through the family's own timing
    (families.registry.run on the spec's machine, its noise included), in the rounds the run gives it; None
    where the run skips it."""
    from xferbench.measure.families.registry import run
    from xferbench.measure.session.estimate import WARMUP_CALLS
    from xferbench.measure.transfers import CannotRun

    machine = SimBackend(load_spec(EIGHT), SimClock())
    benchmark = Charged(machine.clock)
    try:
        run(case, benchmark, machine, rounds.profile)
    except CannotRun:
        return None
    median = sorted(benchmark.charges)[len(benchmark.charges) // 2]
    if benchmark.rounds is not None:
        return benchmark.rounds * median
    return benchmark_seconds(median, rounds, machine.spec.noise) + WARMUP_CALLS * median


class TestFamiliesPricedBySpec:
    """The estimate of the scenario and concurrent families on a simulated machine is what its clock charges
    them (each family's price, in its rounds), not a flat conservative figure: the 8-GPU spec's full profile."""

    rounds = Rounds(0.02, 1e-4, 5, precision=0.01, profile="full")  # the plugin's simulated full profile

    @pytest.mark.slow  # prices every case of the plan twice: about 15 s
    def test_within_a_fifth_of_the_priced_total_of_the_plan(self):
        from xferbench.measure.session.estimate import estimate

        cases = family_cases()
        priced = [(case, run_price(case, self.rounds)) for case in cases]
        total = sum(p for _, p in priced if p is not None)
        found = estimate(cases, SimBackend(load_spec(EIGHT), SimClock()), self.rounds)
        assert len(cases) > 1000 and sum(p is None for _, p in priced) == 24  # forward on a GPU: no price for compute
        assert 0.8 <= found.simulated_s / total <= 1.2, (found.simulated_s, total)

    def test_each_family_within_a_fifth(self):
        """Family by family on the quick profile, so that no family's error hides behind another's."""
        from xferbench.measure.session.estimate import estimate

        quick = dataclasses.replace(self.rounds, profile="quick")
        by_family: dict[str, list] = {}
        for case in family_cases("quick"):
            by_family.setdefault(case.op, []).append(case)
        for op, cases in by_family.items():
            total = sum(p for p in (run_price(c, quick) for c in cases) if p is not None)
            found = estimate(cases, SimBackend(load_spec(EIGHT), SimClock()), quick).simulated_s
            assert (found == total == 0) or 0.8 <= found / total <= 1.2, (op, found, total)

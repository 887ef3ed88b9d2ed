import dataclasses

import pytest
import torch
from torch import nn

from xferbench.families.batching import run as batching
from xferbench.families.pin_memory import run as pin_memory
from xferbench.families.sync_stall.run import STALL_SECONDS
from xferbench.measure.cases import Skipped
from xferbench.measure.families import scenario as shared
from xferbench.measure.families.base import Prepared
from xferbench.measure.families.registry import SCENARIO_FAMILIES, plan, run
from xferbench.measure.families.scenario import DeviceMismatch, Scenario, checked_forward, mlp, sleep_cycles
from xferbench.measure.hardware.faults import fault_calls

from fakes import FakeBackend, FakeBenchmark


def ids(planned):
    return [p.id for p in planned if isinstance(p, Scenario)]


def skips(planned):
    return {p.id: p.reason for p in planned if isinstance(p, Skipped)}


def patch_prepare(monkeypatch, op, prepare):
    """Run ``op``'s cases with ``prepare`` instead of its own (its registered object, replaced for the test),
    on a fake backend's GPUs too (the check that torch sees them is part of what is replaced)."""
    monkeypatch.setitem(SCENARIO_FAMILIES, op, dataclasses.replace(SCENARIO_FAMILIES[op], prepare=prepare))
    monkeypatch.setattr(shared, "missing_cuda", lambda devices: None)


class TestMatrix:
    def test_cpu_runs_what_it_can(self):
        """On the CPU: module_to (again), forward and placement's CPU half run; the rest skip."""
        assert ids(plan("module_to", ["cpu"], "quick")) == ["again-1e3params-cpu", "again-1e5params-cpu",
                                                                      "again-1e7params-cpu"]
        assert ids(plan("forward", ["cpu"], "quick")) == ["forward-64batch-cpu"]
        placement = plan("placement", ["cpu"], "quick")
        assert ids(placement) == ["convert_on_cpu-8images-cpu", "convert_on_cpu-64images-cpu"]
        assert skips(placement) == {"placement-gpu-half": "placement's move-then-convert half needs an accelerator"}
        for op in ("sync_stall", "pin_memory", "cuda_vs_to"):
            assert skips(plan(op, ["cpu"], "quick")) == {
                f"{op}-no-accelerator": f"{op} needs an accelerator; the devices measured are: cpu"}

    def test_one_gpu(self):
        """With a GPU: first moves, both placement variants, stalls from the GPU to the host."""
        devices = ["cpu", "cuda:0"]
        assert "first-1e7params-cpu->cuda:0" in ids(plan("module_to", devices, "quick"))
        assert "move_then_convert-64images-cpu->cuda:0" in ids(plan("placement", devices, "quick"))
        stall = plan("sync_stall", devices, "quick")
        assert ids(stall) == ["item-4B-cuda:0->cpu", "cpu-4B-cuda:0->cpu", "tolist-4B-cuda:0->cpu", "str-4B-cuda:0->cpu",
                              "nonblocking_event-4B-cuda:0->cpu"]
        assert len(ids(plan("cuda_vs_to", devices, "full"))) == 12

    def test_extra_info_names_the_scenario(self):
        info = Scenario("placement", "move_then_convert", "cpu", "cuda:0", 64, "images").extra_info()
        assert info["op"] == "placement" and info["variant"] == "move_then_convert"
        assert info["nbytes"] == 64 * 3 * 224 * 224
        assert info["xfer_schema"] == 1

    def test_unknown(self):
        with pytest.raises(ValueError, match="unknown scenario"):
            plan("teleport", ["cpu"], "quick")


class TestLessonSemantics:
    def test_mlp_parameter_count(self):
        """The stacks hold about the asked number of parameters, in 4 Linear layers."""
        for target in (10**3, 10**5, 10**7):
            net = mlp(target)
            count = sum(p.numel() for p in net.parameters())
            assert 0.8 * target < count < 1.25 * target
            assert len(net) == 4 and all(isinstance(layer, nn.Linear) for layer in net)

    @pytest.mark.slow
    def test_mismatched_devices_clear_error(self):
        """A module and its input on different devices: the error says what to move."""
        net = mlp(1000, "meta")
        width = net[0].in_features
        with pytest.raises(DeviceMismatch, match=r"the module is on meta but its input is on cpu: move the input with "
                                                 r"x.to\('meta'\)"):
            checked_forward(net, torch.ones(2, width))
        with pytest.raises(RuntimeError, match="meta"):
            net(torch.ones(2, width))  # torch's own error, for comparison

    def test_tensor_to_returns_self_or_a_new_tensor(self):
        """Tensor.to: the same object when nothing changes, a new tensor otherwise."""
        t = torch.ones(4)
        assert t.to("cpu") is t and t.to(torch.device("cpu")) is t and t.cpu() is t
        moved = t.to(torch.float64)
        assert moved is not t and t.dtype == torch.float32

    def test_module_to_moves_in_place_and_returns_itself(self):
        """Module.to moves every parameter in place and returns the module (net[0].weight.device)."""
        net = mlp(1000)
        assert net.to("meta") is net
        assert net[0].weight.device == torch.device("meta")
        assert all(p.device.type == "meta" for p in net.parameters())
        assert net.to(torch.float64) is net and net[0].weight.dtype == torch.float64


class TestRunScenario:
    @pytest.mark.parametrize("scenario", [
        Scenario("module_to", "again", "cpu", "cpu", 10**3, "params"),
        Scenario("forward", "forward", "cpu", "cpu", 2, "batch"),
        Scenario("placement", "convert_on_cpu", "cpu", "cpu", 2, "images"),
    ], ids=lambda s: s.id)
    def test_cpu_scenarios_fill_the_contract(self, scenario):
        bench = FakeBenchmark(calls=2)
        info = run(scenario, bench, FakeBackend())
        assert info == scenario.extra_info() | {"clock": "wall+sync", "minor_faults_per_call": info["minor_faults_per_call"]}
        assert type(info["minor_faults_per_call"]) is float
        assert bench.group == f"{scenario.op} cpu->cpu"

    def test_setup_scenarios_use_fixed_rounds_and_sync(self, monkeypatch):
        """A scenario with an untimed setup runs pedantic rounds; the GPU is synchronized."""
        backend = FakeBackend(gpus=1)
        order = []
        prepared = Prepared(target=lambda: order.append("target"), setup=lambda: order.append("setup"),
                            teardown=lambda: order.append("teardown"), extra={"queued_seconds": 0.002})
        patch_prepare(monkeypatch, "sync_stall", lambda s, sync: (sync(), prepared)[1])
        bench = FakeBenchmark()
        info = run(Scenario("sync_stall", "item", "cuda:0", "cpu", 4, "bytes"), bench, backend, "full")
        assert bench.pedantic_rounds == 30
        # 2 warm-up and 30 timed rounds, then the calls whose faults are counted, each with its setup.
        assert order[:3] == ["setup", "target", "teardown"] and order.count("target") == 32 + fault_calls(1e-3)
        assert order.count("setup") == order.count("target")
        assert backend.syncs() == [0, 0]
        assert info["queued_seconds"] == 0.002

    def test_calibrated_scenarios_warm_up_first(self, monkeypatch):
        """pytest-benchmark calibrates on its first call: the one-time costs are paid before it starts."""
        calls = []
        patch_prepare(monkeypatch, "forward", lambda s, sync: Prepared(target=lambda: calls.append("call")))

        class Recording(FakeBenchmark):
            def __call__(self, fn):
                self.calls_before = len(calls)
                return super().__call__(fn)
        bench = Recording(calls=5)
        run(Scenario("forward", "forward", "cpu", "cpu", 2, "batch"), bench, FakeBackend())
        assert bench.calls_before == 3 and len(calls) == 3 + 5 + fault_calls(1e-3)

    def test_faults_are_counted_around_the_target_alone(self, monkeypatch):
        """A setup that faults (a module moved home, a cache emptied) is not the scenario's cost."""
        from xferbench.measure.hardware import faults

        counter = {"faults": 0}
        monkeypatch.setattr(faults, "minor_faults", lambda: counter["faults"])

        def add(n):
            counter["faults"] += n
        prepared = Prepared(target=lambda: add(3), setup=lambda: add(100), teardown=lambda: add(1000))
        patch_prepare(monkeypatch, "module_to", lambda s, sync: prepared)
        info = run(Scenario("module_to", "first", "cpu", "cpu", 10**3, "params"), FakeBenchmark(), FakeBackend())
        assert info["minor_faults_per_call"] == 3.0

    def test_pin_cold_empties_the_host_cache_before_each_round(self, monkeypatch):
        """Cold pinning: every round starts with the pinned host cache emptied; the cached variant never empties it."""
        order = []
        monkeypatch.setattr(shared, "empty_host_cache", lambda: order.append("empty"))
        monkeypatch.setattr(torch.Tensor, "pin_memory", lambda self: order.append("pin") or self.clone())
        for variant in ("pin_cold", "pin_cached"):
            order.clear()
            prepared = pin_memory.prepare(Scenario("pin_memory", variant, "cpu", "cuda:0", 1024, "bytes"), lambda: None)
            bench = FakeBenchmark(calls=4)
            if prepared.setup is None:
                bench(prepared.target)
            else:
                bench.pedantic(prepared.target, setup=prepared.setup, rounds=3)
            calls = order[1:]  # the reused staging buffer is pinned once, up front
            assert calls == (["empty", "pin"] * 3 if variant == "pin_cold" else ["pin"] * 4)

    @pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without a real CUDA device")
    def test_gpu_scenario_on_a_backend_without_real_cuda_is_a_skip_reason(self):
        """A backend that only claims a GPU (a fake, a simulated machine): a reason, not a crash in CUDA calls."""
        from xferbench.measure.transfers import CannotRun

        scenario = Scenario("sync_stall", "item", "cuda:0", "cpu", 4, "bytes")
        with pytest.raises(CannotRun, match=r"sync_stall needs real CUDA devices \(cuda:0\); torch sees no CUDA"):
            run(scenario, FakeBenchmark(), FakeBackend(gpus=1))

    def test_wrong_module_placement_fails(self, monkeypatch):
        """The check after timing fails a module that did not end up on the target."""
        check = shared.on_device("meta")
        with pytest.raises(AssertionError, match="parameters are elsewhere"):
            check(mlp(1000))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU: the hazard is a GPU race")
def test_non_blocking_read_before_sync_is_stale():
    """Reading a non_blocking device-to-host copy before synchronizing sees old data."""
    # A fill queued behind STALL_SECONDS of GPU work is copied non-blocking into pinned memory that starts as
    # zeros: read before synchronizing, the buffer still holds zeros; after, it holds the fill.
    src, host = torch.zeros(1 << 20, device="cuda:0"), torch.zeros(1 << 20, pin_memory=True)
    cycles = sleep_cycles("cuda:0", STALL_SECONDS)
    torch.cuda.synchronize(0)
    with torch.cuda.device(0):
        torch.cuda._sleep(cycles)
        src.fill_(7)  # written late: behind the queued work
        host.copy_(src, non_blocking=True)
        stale = bool((host != 7).any())  # read without synchronizing: the hazard
        torch.cuda.synchronize(0)
    assert stale and bool((host == 7).all())


class TestWorkloadFamilies:
    """batching, copy_overlap and state_dict (bench/test_workloads.py): planned where a GPU is."""

    def test_planned_per_gpu_and_skipped_without_one(self):
        devices = ["cpu", "cuda:0"]
        assert ids(plan("batching", devices, "quick")) == [
            "many_small-4MiB-cpu->cuda:0", "cat_then_one-4MiB-cpu->cuda:0", "one_copy-4MiB-cpu->cuda:0"]
        assert ids(plan("copy_overlap", devices, "quick")) == [
            "kernel_alone-64MiB-cpu->cuda:0", "copy_alone-64MiB-cpu->cuda:0", "sequential-64MiB-cpu->cuda:0",
            "overlapped-64MiB-cpu->cuda:0"]
        assert ids(plan("state_dict", devices, "quick")) == [
            "cpu-1e5params-cuda:0->cpu", "nonblocking-1e5params-cuda:0->cpu",
            "cpu-1e7params-cuda:0->cpu", "nonblocking-1e7params-cuda:0->cpu"]
        for op in ("batching", "copy_overlap", "state_dict"):
            assert skips(plan(op, ["cpu"], "quick")) == {
                f"{op}-no-accelerator": f"{op} needs an accelerator; the devices measured are: cpu"}

    def test_identity(self):
        """1024 pieces of 4 KiB in the quick batching case; a non-blocking state_dict says so."""
        assert SCENARIO_FAMILIES["batching"].sizes["quick"] == (1024 * batching.BATCH_PIECE,)
        info = Scenario("state_dict", "nonblocking", "cuda:0", "cpu", 10**5, "params").extra_info()
        assert info["non_blocking"] is True and info["nbytes"] == 4 * sum(p.numel() for p in mlp(10**5).parameters())
        assert Scenario("state_dict", "cpu", "cuda:0", "cpu", 10**5, "params").extra_info()["non_blocking"] is False

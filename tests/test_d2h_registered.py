"""d2h_registered (measure/families/d2h_registered.py): .cpu() taken apart by a copy into a pageable buffer
registered with the driver; its plan, its rows' identity, its price on the simulated machine, its real calls on
a stand-in for the driver, and its finding."""

import gc

import pandas as pd
import pytest
import torch

from xferbench.families import FAMILIES
from xferbench.families.d2h_registered import run as d2h_registered
from xferbench.families.d2h_registered.run import RegisteredCopy
from xferbench.measure.families.registry import SCENARIO_FAMILIES, plan, run
from xferbench.measure.simulate import PATHS, SimBackend, parse_spec
from xferbench.measure.transfers import CannotRun

from fakes import FakeBenchmark, priced_seconds

MiB = 2**20
US = 1e-6


class TestPlan:
    def test_every_step_of_the_ladder_on_each_gpu(self):
        planned = plan("d2h_registered", ["cpu", "cuda:0", "cuda:1"], "quick")
        assert [c.id for c in planned] == [f"{v}-64MiB-cuda:{i}->cpu" for i in (0, 1)
                                           for v in ("cpu", "pageable", "registered", "pinned")]
        assert SCENARIO_FAMILIES["d2h_registered"].sizes["full"] == (MiB, 64 * MiB, 2**30)

    def test_skipped_without_an_accelerator(self):
        assert [(s.id, s.reason) for s in plan("d2h_registered", ["cpu"], "quick")] == [
            ("d2h_registered-no-accelerator", "d2h_registered needs an accelerator; the devices measured are: cpu")]

    @pytest.mark.parametrize(("variant", "method", "memory"), [
        ("cpu", "cpu", "pageable"), ("pageable", "copy_", "pageable"), ("registered", "copy_", "registered"),
        ("pinned", "copy_", "pinned")])
    def test_each_row_says_its_call_and_host_memory(self, variant, method, memory):
        """What the report's ladder reads: the call and the host memory, in the identity."""
        info = RegisteredCopy("d2h_registered", variant, "cuda:0", "cpu", MiB, "bytes").extra_info()
        assert {k: info[k] for k in ("op", "method", "host_memory", "variant", "src", "dst", "nbytes", "non_blocking")} \
            == {"op": "d2h_registered", "method": method, "host_memory": memory, "variant": variant, "src": "cuda:0",
                "dst": "cpu", "nbytes": MiB, "non_blocking": False}

    def test_its_record_names_its_finding(self):
        assert FAMILIES["d2h_registered"].kind == "scenario"
        assert FAMILIES["d2h_registered"].finding is not None


class TestPricedOnTheSimulatedMachine:
    """Launch 4 µs, synchronize 5 µs; pageable paths 2 µs + n / 10 GB/s, pinned ones 1 µs + n / 40 GB/s."""

    @staticmethod
    def spec():
        paths = {p: {"alpha_us": 2.0, "GBps": 10.0} for p in PATHS} | {"d2h_pinned": {"alpha_us": 1.0, "GBps": 40.0}}
        return parse_spec({"gpus": 2, "sync_us": 5.0, "dispatch_ns": 400, "launch_us": 4.0, "paths": paths})

    def seconds(self, variant):
        case = RegisteredCopy("d2h_registered", variant, "cuda:1", "cpu", 4 * MiB, "bytes")
        return priced_seconds(case, SimBackend(self.spec()), 1)

    def test_registration_takes_the_pinned_path_and_pageable_the_staged_one(self):
        pageable, pinned = 4 * US + 2 * US + 4 * MiB / 10e9 + 5 * US, 4 * US + 1 * US + 4 * MiB / 40e9 + 5 * US
        assert {v: self.seconds(v) for v in ("cpu", "pageable", "registered", "pinned")} == pytest.approx(
            {"cpu": pageable, "pageable": pageable, "registered": pinned, "pinned": pinned})

    def test_rows_say_simulated(self):
        info = run(RegisteredCopy("d2h_registered", "registered", "cuda:0", "cpu", MiB, "bytes"), FakeBenchmark(calls=2),
                   SimBackend(self.spec()))
        assert info["clock"] == "simulated" and info["host_memory"] == "registered"
        assert "minor_faults_per_call" not in info


class FakeCudart:
    """torch.cuda.cudart()'s two calls the family makes, recorded; registration returns ``error``."""

    def __init__(self, error=0):
        self.error, self.calls = error, []

    def cudaHostRegister(self, ptr, nbytes, flags):
        self.calls.append(("register", ptr, nbytes, flags))
        return self.error

    def cudaHostUnregister(self, ptr):
        self.calls.append(("unregister", ptr))
        return 0


class TestRealCallsOnAStandIn:
    """The real calls, with the host standing in for the GPU and a stand-in for the driver's registration."""

    @pytest.fixture
    def cudart(self, monkeypatch):
        fake = FakeCudart()
        monkeypatch.setattr(torch.cuda, "cudart", lambda: fake)
        return fake

    @staticmethod
    def case(variant):
        return RegisteredCopy("d2h_registered", variant, "cpu", "cpu", 4096, "bytes")

    def test_the_buffer_is_registered_once_in_place_and_unregistered_when_dropped(self, cudart, monkeypatch):
        monkeypatch.setattr(torch.Tensor, "is_pinned", lambda self: True)
        prepared = d2h_registered.prepare(self.case("registered"), lambda: None)
        (kind, ptr, nbytes, flags), = cudart.calls
        assert (kind, nbytes, flags) == ("register", 4096, d2h_registered.PORTABLE)
        out = prepared.target()
        assert out.data_ptr() == ptr  # copy_ into the registered buffer itself
        prepared.check(out)
        del prepared, out
        gc.collect()
        assert cudart.calls[1:] == [("unregister", ptr)]

    def test_the_other_steps_register_nothing(self, cudart):
        for variant in ("cpu", "pageable"):
            prepared = d2h_registered.prepare(self.case(variant), lambda: None)
            prepared.check(prepared.target())
        assert cudart.calls == []

    def test_a_refused_registration_is_a_skip_reason(self, monkeypatch):
        monkeypatch.setattr(torch.cuda, "cudart", lambda: FakeCudart(error=2))
        with pytest.raises(CannotRun, match=r"^cudaHostRegister of 4096 bytes failed with cudaError 2$"):
            d2h_registered.prepare(self.case("registered"), lambda: None)

    def test_the_check_sees_a_buffer_that_is_not_page_locked(self, cudart):
        prepared = d2h_registered.prepare(self.case("registered"), lambda: None)
        with pytest.raises(AssertionError, match="the registered buffer is not page-locked"):
            prepared.check(prepared.target())

    def test_the_check_sees_values_that_did_not_arrive(self, cudart):
        prepared = d2h_registered.prepare(self.case("pageable"), lambda: None)
        with pytest.raises(AssertionError, match="the host buffer does not hold the device's values"):
            prepared.check(torch.zeros(1024))


def rows(medians, src="cuda:0", nbytes=64 * MiB):
    return pd.DataFrame([{"variant": v, "src": src, "nbytes": nbytes, "median_s": m} for v, m in medians.items()])


class TestFinding:
    def test_the_ladder_at_the_largest_size(self):
        small = rows({"cpu": 1.0, "pageable": 0.5, "registered": 0.2}, nbytes=MiB)
        big = rows({"cpu": 0.2, "pageable": 0.02, "registered": 0.005, "pinned": 0.0049})
        assert FAMILIES["d2h_registered"].finding(pd.concat([small, big])) == [
            ".cpu() from cuda:0 took 200 ms at 64 MiB: the fresh destination 180 ms, the driver's staging copy 15 ms, "
            "the copy into registered memory 5 ms (into pinned memory: 4.9 ms)."]

    def test_a_step_within_a_percent_of_the_call_is_none(self):
        same = rows({"cpu": 0.1, "pageable": 0.0995, "registered": 0.1002})
        assert FAMILIES["d2h_registered"].finding(same) == [
            ".cpu() from cuda:0 took 100 ms at 64 MiB: the fresh destination none (within 1% of the call), the "
            "driver's staging copy none (within 1% of the call), the copy into registered memory 100 ms."]

    def test_nothing_without_the_registered_step(self):
        assert FAMILIES["d2h_registered"].finding(rows({"cpu": 0.1, "pageable": 0.05})) == []

"""d2h_kept (families/d2h_kept): .to('cpu', non_blocking=True) with its results freed and kept; its plan, its rows'
identity, its price on the simulated machine (the kept call pays the cold pin of its bytes), its real calls on a
stand-in for the GPU, and its finding."""

import gc
import weakref

import pandas as pd
import pytest
import torch

from xferbench.families import FAMILIES
from xferbench.families.d2h_kept import run as d2h_kept
from xferbench.families.d2h_kept.run import KeptCopy
from xferbench.measure.families.registry import SCENARIO_FAMILIES, plan, run
from xferbench.measure.families.scenario import SETUP_ROUNDS
from xferbench.measure.simulate import PATHS, SimBackend, parse_spec

from fakes import FakeBenchmark, priced_seconds

MiB = 2**20
US = 1e-6


class TestPlan:
    def test_freed_and_kept_on_each_gpu(self):
        planned = plan("d2h_kept", ["cpu", "cuda:0", "cuda:1"], "quick")
        assert [c.id for c in planned] == [f"{v}-64MiB-cuda:{i}->cpu" for i in (0, 1) for v in ("freed", "kept")]
        assert SCENARIO_FAMILIES["d2h_kept"].sizes["full"] == (MiB, 64 * MiB, 256 * MiB)

    def test_skipped_without_an_accelerator(self):
        assert [(s.id, s.reason) for s in plan("d2h_kept", ["cpu"], "quick")] == [
            ("d2h_kept-no-accelerator", "d2h_kept needs an accelerator; the devices measured are: cpu")]

    @pytest.mark.parametrize("variant", ["freed", "kept"])
    def test_each_row_names_the_call_users_write(self, variant):
        info = KeptCopy("d2h_kept", variant, "cuda:0", "cpu", MiB, "bytes").extra_info()
        assert {k: info[k] for k in ("op", "method", "host_memory", "non_blocking", "variant", "src", "dst")} == {
            "op": "d2h_kept", "method": "to", "host_memory": "pinned", "non_blocking": True, "variant": variant,
            "src": "cuda:0", "dst": "cpu"}
        assert FAMILIES["d2h_kept"].kind == "scenario" and FAMILIES["d2h_kept"].finding is not None


class TestPricedOnTheSimulatedMachine:
    """Launch 4 µs, synchronize 5 µs; d2h pinned 1 µs + n / 40 GB/s; pinning fresh memory n / 5 GB/s."""

    @staticmethod
    def spec():
        paths = {p: {"alpha_us": 2.0, "GBps": 10.0} for p in PATHS} | {"d2h_pinned": {"alpha_us": 1.0, "GBps": 40.0}}
        return parse_spec({"gpus": 2, "sync_us": 5.0, "dispatch_ns": 400, "launch_us": 4.0, "pin_GBps": 5.0,
                           "paths": paths})

    def seconds(self, variant, n=4 * MiB):
        return priced_seconds(KeptCopy("d2h_kept", variant, "cuda:1", "cpu", n, "bytes"), SimBackend(self.spec()), 1)

    def test_kept_pays_the_pin_of_its_bytes_on_top_of_the_freed_call(self):
        freed = 4 * US + 1 * US + 4 * MiB / 40e9 + 5 * US
        assert self.seconds("freed") == pytest.approx(freed)
        assert self.seconds("kept") == pytest.approx(freed + 4 * MiB / 5e9)

    def test_kept_runs_fixed_rounds_after_an_untimed_setup_and_says_simulated(self):
        benchmark = FakeBenchmark(calls=2)
        info = run(KeptCopy("d2h_kept", "kept", "cuda:0", "cpu", MiB, "bytes"), benchmark, SimBackend(self.spec()))
        assert benchmark.pedantic_rounds == SETUP_ROUNDS["quick"] and info["clock"] == "simulated"
        freed = FakeBenchmark(calls=2)
        run(KeptCopy("d2h_kept", "freed", "cuda:0", "cpu", MiB, "bytes"), freed, SimBackend(self.spec()))
        assert not hasattr(freed, "pedantic_rounds")  # calibrated by pytest-benchmark, as the core d2h row


class TestRealCallsOnAStandIn:
    """The real calls with the host standing in for the GPU: ``.to`` returns a fresh tensor, as a copy to the CPU
    does (on the CPU it would return the tensor itself)."""

    @pytest.fixture
    def emptied(self, monkeypatch):
        monkeypatch.setattr(torch.Tensor, "to", lambda self, *a, **k: self.clone())
        calls = []
        monkeypatch.setattr(d2h_kept, "empty_host_cache", lambda: calls.append("empty"))
        return calls

    def results(self, variant, calls=6):
        case = KeptCopy("d2h_kept", variant, "cpu", "cpu", 4096, "bytes")
        prepared = d2h_kept.prepare(case, lambda: None)
        refs = [weakref.ref(prepared.target()) for _ in range(calls)]
        gc.collect()
        return prepared, [ref() is not None for ref in refs]

    def test_kept_holds_the_last_few_results_and_freed_none(self, emptied):
        prepared, alive = self.results("freed")
        assert prepared.setup is None and alive == [False] * 6
        prepared, alive = self.results("kept")
        assert alive == [False] * (6 - d2h_kept.HELD) + [True] * d2h_kept.HELD  # bounded: memory stays small

    def test_the_setup_gives_the_kept_results_back_to_the_driver(self, emptied):
        case = KeptCopy("d2h_kept", "kept", "cpu", "cpu", 4096, "bytes")
        prepared = d2h_kept.prepare(case, lambda: None)
        ref = weakref.ref(prepared.target())
        prepared.setup()
        gc.collect()
        assert ref() is None and emptied == ["empty"]


def test_the_finding_says_what_the_fix_costs_in_each_use():
    rows = pd.DataFrame({"op": "d2h_kept", "src": "cuda:0", "nbytes": 64 * MiB, "variant": ["freed", "kept"],
                         "median_s": [2e-3, 12e-3]})
    [sentence] = FAMILIES["d2h_kept"].finding(rows)
    assert "took 2 ms a call with each result freed" in sentence and "12 ms with the results kept (6.00x" in sentence
    assert "costs 2 ms in a loop that lets each result go, and 12 ms in one that keeps them" in sentence

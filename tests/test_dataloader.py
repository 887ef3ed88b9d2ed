"""dataloader (families/dataloader/): a DataLoader feeding the GPU. Its plan on a CPU-only machine and on the
simulated 2-GPU spec, its prices there, its finding on hand-fed rows, a real CPU run end to end, and its worker
processes ended with each case, timed or failed."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from xferbench.families import FAMILIES
from xferbench.families.dataloader import finding
from xferbench.families.dataloader.run import batch, prepare
from xferbench.measure.families.registry import SCENARIO_FAMILIES, plan, run
from xferbench.measure.families.scenario import time_scenario
from xferbench.measure.simulate import SimBackend, load_spec

from fakes import FakeBenchmark, warm_call_seconds
from processes import live_children

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "examples" / "sim-2gpu-pcie5-nvlink.toml"
IMAGES = 32 * 3 * 224 * 224  # the quick profile's image batch, uint8
TOKENS = 8 * 2048 * 8  # 8 sequences of 2048 int64 tokens
HOST = ["w0-32images-cpu", "w2-32images-cpu", "startup-w2-32images-cpu", "first-w0-32images-cpu",
        "first-w2-32images-cpu", "w0-8x2048tokens-cpu", "w2-8x2048tokens-cpu", "first-w0-8x2048tokens-cpu",
        "first-w2-8x2048tokens-cpu"]
LOOPS = [f"w{w}-{memory}-{blocking}" for w in (0, 2) for memory in ("pageable", "pinned")
         for blocking in ("blocking", "nonblocking")]


class TestPlan:
    def test_a_cpu_only_machine_gets_the_loader_alone_and_one_skip_line(self):
        planned = plan("dataloader", ["cpu"], "quick")
        assert [c.id for c in planned] == [*HOST, "dataloader-gpu-half"]
        assert planned[-1].reason == ("dataloader's pin_memory and .to(device) cases need an accelerator; the devices "
                                      "measured are: cpu")

    def test_the_simulated_2gpu_spec_gets_every_loop_on_each_gpu(self):
        planned = plan("dataloader", ["cpu", "cuda:0", "cuda:1"], "quick")
        assert [c.id for c in planned] == HOST + [f"{loop}-{size}-cpu->cuda:{i}" for size in ("32images", "8x2048tokens")
                                                  for i in (0, 1) for loop in LOOPS]
        assert SCENARIO_FAMILIES["dataloader"].sizes == {"quick": (32,), "full": (64, 256)}

    def test_each_row_says_its_batch_and_loop(self):
        info = batch("images", 256, "cuda:0", "steady", 2, pinned=True, non_blocking=True).extra_info()
        assert {k: info[k] for k in ("op", "variant", "src", "dst", "nbytes", "dtype", "shape", "host_memory",
                                     "non_blocking", "size_unit")} == {
            "op": "dataloader", "variant": "w2-pinned-nonblocking", "src": "cpu", "dst": "cuda:0",
            "nbytes": 256 * 3 * 224 * 224, "dtype": "uint8", "shape": [256, 3, 224, 224], "host_memory": "pinned",
            "non_blocking": True, "size_unit": "images"}
        tokens = batch("tokens", 8, "cpu", "first", 0).extra_info()
        assert (tokens["nbytes"], tokens["dtype"], tokens["shape"], tokens["host_memory"]) == (TOKENS, "int64",
                                                                                                 [8, 2048], None)


class TestPricedOnTheSimulatedMachine:
    """examples/sim-2gpu-pcie5-nvlink.toml: launch 4 µs, synchronize 5 µs, host copies 40 GB/s; pinned 2 µs +
    n / 55 GB/s, pageable 6 µs + n / 20 GB/s."""

    @staticmethod
    def seconds(case):
        return warm_call_seconds(case, load_spec(SPEC))

    @pytest.mark.parametrize("non_blocking", [False, True])
    def test_each_loop_is_collation_pinning_and_its_copy(self, non_blocking):
        n, us = IMAGES, 1e-6
        host = n / 40e9
        pageable, pinned = 4 * us + 6 * us + n / 20e9 + 5 * us, 4 * us + 2 * us + n / 55e9 + 5 * us
        priced = {(w, p): self.seconds(batch("images", 32, "cuda:1", "steady", w, p, non_blocking))
                  for w in (0, 2) for p in (False, True)}
        assert priced == pytest.approx({
            (0, False): host + pageable,  # the main process collates, then copies
            (0, True): 2 * host + pinned,  # and pins in turn
            (2, False): max(host / 2, pageable),  # two workers collate beside the main loop's copy
            (2, True): max(host, pinned),  # the pin-memory thread copies every batch beside it
        })

    def test_a_simulated_run_prices_the_gpu_loops_and_says_so(self):
        backend = SimBackend(load_spec(SPEC))
        info = run(batch("tokens", 8, "cuda:0", "steady", 2, True, True), FakeBenchmark(calls=2), backend)
        assert info["clock"] == "simulated" and info["variant"] == "w2-pinned-nonblocking"


def row(variant, median, spread=0.0, dst="cuda:0", nbytes=IMAGES, shape="32x3x224x224", dtype="uint8"):
    return {"op": "dataloader", "variant": variant, "dst": dst, "src": "cpu", "nbytes": nbytes, "shape": shape,
            "dtype": dtype, "median_s": median, "q1_s": median - spread / 2, "q3_s": median + spread / 2}


class TestFinding:
    def test_what_pin_memory_and_non_blocking_did_per_batch_and_what_the_spread_cannot_tell(self):
        rows = pd.DataFrame([
            row("w0-pageable-blocking", 10e-3, 0.2e-3), row("w0-pinned-blocking", 7e-3, 0.2e-3),
            row("w0-pinned-nonblocking", 6.95e-3, 0.2e-3),  # 50 µs apart, inside a 200 µs spread
            row("w2-pageable-blocking", 5e-3, 0.1e-3), row("w2-pinned-blocking", 5.5e-3, 0.1e-3),
            row("w2-pinned-nonblocking", 5.5e-3),
            row("w0-pinned-blocking", 9e-3, dst="cuda:1"),  # another GPU: the first one speaks
        ])
        assert finding(rows) == [
            "Batches of 32x3x224x224 uint8 (4.59 MiB) to cuda:0, per batch: pin_memory=True: saved 3 ms with 0 "
            "workers (10 ms to 7 ms) and added 500 µs with 2 workers (5 ms to 5.5 ms); non_blocking=True on the pinned "
            "batch: can't tell with 0 workers (7 ms against 6.95 ms, within their spread) and can't tell with 2 "
            "workers (5.5 ms against 5.5 ms, within their spread)."]

    def test_the_loader_alone_and_its_cold_start(self):
        tokens = {"nbytes": TOKENS, "shape": "8x2048", "dtype": "int64", "dst": "cpu"}
        rows = pd.DataFrame([row("w0", 20e-6, **tokens), row("w2", 2e-3, **tokens), row("first-w0", 30e-6, **tokens),
                             row("first-w2", 150e-3, **tokens), row("startup-w2", 50e-3, **tokens)])
        assert finding(rows) == [
            "The loader alone, batches of 8x2048 int64 (128 KiB) to the host: 20 µs with 0 workers and 2 ms with 2 "
            "workers per batch; 30 µs with 0 workers and 150 ms with 2 workers for a fresh iterator's first batch; "
            "50 ms for iter() alone, starting the 2 workers."]

    def test_its_record_names_its_finding(self):
        assert FAMILIES["dataloader"].kind == "scenario" and FAMILIES["dataloader"].finding is finding


class TestWorkersEnd:
    """Every worker process a case starts is ended with it (joined, not left to the garbage collector)."""

    @pytest.mark.parametrize("phase", ["steady", "startup", "first"])
    def test_after_a_timed_case(self, phase):
        before = live_children()
        case = batch("tokens", 8, "cpu", phase, 2)
        # a median of 1 s: the page faults are counted on one call after timing (faults.fault_calls)
        info = time_scenario(case, lambda sync: prepare(case, sync), FakeBenchmark(calls=3, median=1.0), None, None)
        assert info["variant"] == case.variant
        assert live_children() == before

    def test_after_a_case_whose_timing_fails(self):
        class Failing(FakeBenchmark):
            def __call__(self, fn):
                fn()
                raise RuntimeError("timing failed")

        before = live_children()
        case = batch("tokens", 8, "cpu", "steady", 2)
        with pytest.raises(RuntimeError, match="timing failed"):
            time_scenario(case, lambda sync: prepare(case, sync), Failing(), None, None)
        assert live_children() == before


@pytest.mark.slow
def test_a_real_cpu_run_end_to_end(tmp_path):
    """The bench file on this machine's CPU, as a user runs it: every host case timed for real, the GPU half a
    skip line, and rows the report reads into the family's sentences."""
    out = tmp_path / "cpu.json"
    ran = subprocess.run([sys.executable, "-m", "pytest", "bench/test_dataloader.py", "--benchmark-only", "-q",
                          "-p", "no:cacheprovider", "--xfer-devices=cpu", "--benchmark-max-time=0.05", "-rs",
                          f"--benchmark-json={out}"], cwd=ROOT, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert "9 passed, 1 skipped" in ran.stdout and "dataloader's pin_memory and .to(device) cases need" in ran.stdout
    rows = json.loads(out.read_text())["benchmarks"]
    assert sorted(b["extra_info"]["variant"] for b in rows) == sorted(
        ["w0", "w2", "startup-w2", "first-w0", "first-w2", "w0", "w2", "first-w0", "first-w2"])
    assert {b["extra_info"]["clock"] for b in rows} == {"wall+sync"}
    from xferbench.analyze.load.results import load

    frame = load([out]).frame
    said = finding(frame[frame["op"] == "dataloader"])
    assert [s.split(":")[0] for s in said] == ["The loader alone, batches of 8x2048 int64 (128 KiB) to the host",
                                               "The loader alone, batches of 32x3x224x224 uint8 (4.59 MiB) to the host"]

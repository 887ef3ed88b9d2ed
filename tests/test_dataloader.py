"""dataloader (families/dataloader/): an input pipeline as a training loop runs it. Its plan on a CPU-only machine and
on the simulated 2-GPU spec, the loader each case builds, its steps priced by the worker model and read back as the
share of the step the GPU waits for input, its finding on hand-fed rows, its worker processes ended with each case,
timed or failed, and with the run when the run is killed; a real CPU run end to end."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

from ratio_stand_in import with_rule
from xferbench.families import FAMILIES
from xferbench.families.dataloader import STEP_S, finding
from xferbench.families.dataloader.run import ON_GPU, Batch, die_with_run, loader, prepare
from xferbench.measure.families.registry import SCENARIO_FAMILIES, plan
from xferbench.measure.families.scenario import time_scenario
from xferbench.measure.simulate import PATHS, SimBackend, parse_spec

from fakes import FakeBenchmark, priced_seconds
from processes import live_children, until

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "examples" / "sim-2gpu-pcie5-nvlink.toml"
IMAGES = 32 * 3 * 224 * 224 * 4  # the quick profile's batch, decoded to float32
HOST = ["w0", "w1", "w2", "w4", "w2-prefetch4", "first-w0", "first-w2", "epoch-w2", "epoch-w2-persistent",
        "startup-w2", "epoch-w2-forkserver", "epoch-w2-spawn"]


def case(variant: str, dst: str = "cpu", size: int = 32) -> Batch:
    return Batch("dataloader", variant, "cpu", dst, size, "images")


class TestPlan:
    def test_a_cpu_only_machine_gets_the_loader_alone_and_one_skip_line(self):
        planned = plan("dataloader", ["cpu"], "quick")  # the other start methods' seconds-long epochs: full only
        assert [c.id for c in planned] == [f"{v}-32images-cpu" for v in HOST[:-2]] + ["dataloader-gpu-half"]
        assert planned[-1].reason == "dataloader's training steps need an accelerator; the devices measured are: cpu"

    def test_the_simulated_spec_gets_the_training_steps_on_its_first_gpu(self):
        planned = plan("dataloader", ["cpu", "cuda:0", "cuda:1"], "full")
        assert [c.id for c in planned] == ([f"{v}-{n}images-cpu->cuda:0" for n in (32, 128) for v in ON_GPU] + [
            f"{v}-32images-cpu" for v in HOST] + [f"{v}-128images-cpu" for v in HOST[:9]])
        assert SCENARIO_FAMILIES["dataloader"].sizes == {"quick": (32,), "full": (32, 128)}

    @pytest.mark.parametrize(("variant", "dst", "memory", "non_blocking"), [
        ("w2", "cuda:0", "pinned", True), ("w2-pageable", "cuda:0", "pageable", True),
        ("w2-blocking", "cuda:0", "pinned", False), ("alone", "cuda:0", "pageable", True), ("w2", "cpu", None, False)])
    def test_each_row_says_its_batch_and_loop(self, variant, dst, memory, non_blocking):
        info = case(variant, dst, 256).extra_info()
        assert {k: info[k] for k in ("op", "variant", "dst", "nbytes", "dtype", "shape", "host_memory",
                                     "non_blocking", "size_unit")} == {
            "op": "dataloader", "variant": variant, "dst": dst, "nbytes": 256 * 3 * 224 * 224 * 4, "dtype": "float32",
            "shape": [256, 3, 224, 224], "host_memory": memory, "non_blocking": non_blocking, "size_unit": "images"}

    @pytest.mark.parametrize(("variant", "options"), [
        ("w0", (0, None, False, None)), ("w2", (2, 2, False, "fork")), ("w2-prefetch4", (2, 4, False, "fork")),
        ("epoch-w2-persistent", (2, 2, True, "fork")), ("epoch-w2-forkserver", (2, 2, False, "forkserver")),
        ("epoch-w2-spawn", (2, 2, False, "spawn"))])
    def test_each_variant_builds_the_loader_it_names_its_workers_dying_with_the_run(self, variant, options):
        data = loader(case(variant))
        context = data.multiprocessing_context
        assert (data.num_workers, data.prefetch_factor, data.persistent_workers,
                context and context.get_start_method()) == options
        assert data.pin_memory is False and len(data) == (4 if variant.startswith("epoch") else 2**40 // 32)
        init = data.worker_init_fn
        assert (init is None) if not options[0] else (init.func is die_with_run and init.args == (os.getpid(),))
        sample = data.dataset[5]  # decoded: uint8 bytes to float32, normalised per channel
        assert (tuple(sample.shape), str(sample.dtype)) == ((3, 224, 224), "torch.float32")
        assert -2.2 < float(sample.min()) < float(sample.max()) < 2.7


class TestTheStepOnTheSimulatedMachine:
    """A spec whose workers make a batch (18.4 MiB of float32) at 2 GB/s, 9.63 ms, longer than the 5 ms step; pinning
    at 40 GB/s (0.48 ms); pinned copies 2 µs + n / 55 GB/s (0.35 ms), pageable 6 µs + n / 20 GB/s; launch 4 µs."""

    MAKE, PIN = IMAGES / 2e9, IMAGES / 40e9
    PINNED, PAGEABLE, LAUNCH = 2e-6 + IMAGES / 55e9, 6e-6 + IMAGES / 20e9, 4e-6

    @staticmethod
    def spec():
        paths = {p: {"alpha_us": 2.0, "GBps": 55.0} for p in PATHS} | {"h2d_pageable": {"alpha_us": 6.0, "GBps": 20.0}}
        return parse_spec({"gpus": 1, "sync_us": 5.0, "dispatch_ns": 400, "launch_us": 4.0, "decode_GBps": 2.0,
                           "host_copy_GBps": 40.0, "paths": paths})

    def steps(self):
        """Each loop's time per step in steady state, as the run's calls are charged (the price pulls what the
        workers made ahead before its first call)."""
        return {v: priced_seconds(case(v, "cuda:0"), SimBackend(self.spec()), 0) for v in ON_GPU}

    def test_each_loop_is_what_the_worker_model_says(self):
        """No workers: the host makes and pins each batch in turn (the input is longer than the step); 1 worker: one
        batch per make; 2 or 4: the step and its copy on one stream; pageable: the slower copy; a side stream: the
        copy beside the step, which alone sets the pace; prefetch_factor changes nothing without noise."""
        device = self.PINNED + STEP_S
        assert self.steps() == pytest.approx({
            "alone": STEP_S, "w0": self.MAKE + self.PIN + 2 * self.LAUNCH, "w1": self.MAKE, "w2": device, "w4": device,
            "w2-pageable": self.PAGEABLE + STEP_S + self.LAUNCH, "w2-blocking": device + self.LAUNCH,
            "w2-prefetch4": device, "w2-sidestream": STEP_S}, rel=1e-3)

    def test_the_page_reads_the_gpus_wait_for_input_as_the_model_says(self):
        """Input longer than the step: the GPU waits 51% of it with no workers; pinning and non_blocking with 2
        workers bring it to the copy's share alone, 1 - step / (copy + step)."""
        rows = with_rule(pd.DataFrame([{"op": "dataloader", "variant": v, "src": "cpu", "dst": "cuda:0",
                                        "nbytes": IMAGES, "shape": "32x3x224x224", "median_s": t}
                                       for v, t in self.steps().items()]))
        said = finding(rows)
        assert said[0] == (f"A training step of 5 ms of GPU work on cuda:0, fed 32 decoded images a batch (18.4 MiB): "
                           f"with 2 workers, pin_memory and non_blocking it took 5.35 ms a step, and the GPU waits for "
                           f"input {1 - STEP_S / (STEP_S + self.PINNED):.0%} (7-7%) of the step.")
        assert said[1].startswith("Per step, against 2 workers (5.35 ms): no workers 1.89x (1.89-1.89); 1 worker ")
        assert said[2].startswith("What pays here: the copy on a side stream, a step ahead, 5 ms a step (0.93x "
                                  "(0.93-0.93) the base), where the GPU waits for input no share of the step")
        w0 = rows[rows["variant"] == "w0"].iloc[0]
        from xferbench.families.dataloader import waits

        assert waits(rows.attrs["ratio"], w0, rows[rows["variant"] == "alone"].iloc[0]) == (
            "the GPU waits for input 51% (51-51%) of the step")


def row(variant, median, spread=0.0, dst="cuda:0"):
    return {"op": "dataloader", "variant": variant, "dst": dst, "src": "cpu", "nbytes": IMAGES, "shape": "32x3x224x224",
            "median_s": median, "q1_s": median - spread / 2, "q3_s": median + spread / 2}


class TestFinding:
    def test_on_the_gpu_each_option_against_the_base_and_what_pays(self):
        rows = with_rule(pd.DataFrame([
            row("alone", 5e-3, 0.1e-3), row("w2", 12e-3, 1e-3), row("w0", 8e-3, 0.5e-3), row("w1", 20e-3, 1e-3),
            row("w2-pageable", 12.2e-3, 1e-3), row("alone", 9e-3, dst="cuda:1")]))  # another GPU: the first one speaks
        assert finding(rows) == [
            "A training step of 5 ms of GPU work on cuda:0, fed 32 decoded images a batch (18.4 MiB): with 2 workers, "
            "pin_memory and non_blocking it took 12 ms a step, and the GPU waits for input 58% (56-60%) of the step.",
            "Per step, against 2 workers (12 ms): no workers 0.67x (0.62-0.72); 1 worker 1.67x (1.56-1.78); pin_memory "
            "off can't tell (could see ≥ 1.09x).",
            "What pays here: no workers, 8 ms a step (0.67x (0.62-0.72) the base), where the GPU waits for input 38% "
            "(35-40%) of the step."]

    def test_no_option_beating_the_base_is_said(self):
        rows = with_rule(pd.DataFrame([row("alone", 5e-3), row("w2", 6e-3, 1e-3), row("w0", 5.9e-3, 1e-3)]))
        assert finding(rows)[-1] == "No option beats 2 workers with pin_memory and non_blocking by what this run can tell."

    def test_on_a_cpu_only_machine_per_step_times_and_start_up_without_gpu_words(self):
        rows = with_rule(pd.DataFrame([row(v, t, t / 10, dst="cpu") for v, t in (
            ("w0", 3e-3), ("w1", 20e-3), ("w2", 12e-3), ("w2-prefetch4", 12.1e-3), ("startup-w2", 25e-3),
            ("first-w0", 4e-3), ("first-w2", 80e-3), ("epoch-w2", 150e-3), ("epoch-w2-persistent", 60e-3),
            ("epoch-w2-spawn", 2.5))]))
        said = finding(rows)
        assert said == [
            "The loader alone to the host, 32 decoded images a batch (18.4 MiB): iter() starting 2 workers took 25 ms.",
            "Per step, against no workers (3 ms): 1 worker 6.67x (6.03-7.37); 2 workers 4.00x (3.62-4.42).",
            "Per step, against 2 workers (12 ms): prefetch_factor 4 can't tell (could see ≥ 1.11x).",
            "To a fresh iterator's first batch, against no workers (4 ms): 2 workers 20.00x (18.10-22.11).",
            "Per short epoch (4 batches, start-up and shut-down included), against 2 forked workers (150 ms): "
            "persistent_workers 0.40x (0.36-0.44); spawn 16.67x (15.08-18.42)."]
        assert not any("GPU" in s for s in said)

    def test_nothing_is_compared_without_the_runs_rule(self):
        assert finding(pd.DataFrame([row("alone", 5e-3), row("w2", 6e-3)])) == []
        assert FAMILIES["dataloader"].kind == "scenario" and FAMILIES["dataloader"].finding is finding


class TestWorkersEnd:
    """Every worker process a case starts is ended with it (joined, not left to the garbage collector)."""

    @pytest.mark.parametrize("variant", ["w2", "startup-w2", "first-w2", "epoch-w2", "epoch-w2-persistent"])
    def test_after_a_timed_case(self, variant):
        before = live_children()
        timed = case(variant, size=4)
        # a median of 1 s: the page faults are counted on one call after timing (faults.fault_calls)
        info = time_scenario(timed, lambda sync: prepare(timed, sync), FakeBenchmark(calls=3, median=1.0), None, None)
        assert info["variant"] == variant
        assert live_children() == before

    def test_after_a_case_whose_timing_fails(self):
        class Failing(FakeBenchmark):
            def __call__(self, fn):
                fn()
                raise RuntimeError("timing failed")

        before = live_children()
        failing = case("w2", size=4)
        with pytest.raises(RuntimeError, match="timing failed"):
            time_scenario(failing, lambda sync: prepare(failing, sync), Failing(), None, None)
        assert live_children() == before


RUN = """
import sys, time
from xferbench.families.dataloader import run

run.Images.__getitem__ = lambda self, index: time.sleep(600)  # each worker busy: torch's own watch never looks
iterator = iter(run.loader(run.Batch("dataloader", "w2", "cpu", "cpu", 1, "images")))
time.sleep(0.5)
print(" ".join(str(worker.pid) for worker in iterator._workers), flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_workers_die_with_a_run_that_is_killed(sig):
    """A run (here a plain process standing for pytest) killed while its workers are busy in a sample: the workers
    die with it (their parent-death signal), not when their sample ends."""
    run = subprocess.Popen([sys.executable, "-c", RUN], stdout=subprocess.PIPE, text=True,
                           env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    try:
        workers = [int(pid) for pid in run.stdout.readline().split()]
        assert len(workers) == 2 and all(live(pid) for pid in workers)
        run.send_signal(sig)
        run.wait(60)
        assert until(lambda: not any(live(pid) for pid in workers)), "workers outlived their run"
    finally:
        run.kill()
        run.wait()


def live(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, ended but not yet reaped, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.mark.slow
def test_a_real_cpu_run_end_to_end(tmp_path):
    """The bench file on this machine's CPU, as a user runs it (the quick profile: no forkserver nor spawn): every
    host case timed for real or skipped with its reason, the training steps a skip line, and rows the report
    reads into the family's sentences."""
    out = tmp_path / "cpu.json"
    ran = subprocess.run([sys.executable, "-m", "pytest", "bench/test_dataloader.py", "--benchmark-only", "-q",
                          "-p", "no:cacheprovider", "--xfer-devices=cpu", "--benchmark-max-time=0.05", "-rs",
                          "-k", "not forkserver", f"--benchmark-json={out}"], cwd=ROOT, capture_output=True,
                         text=True, timeout=900, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert "dataloader's training steps need an accelerator" in ran.stdout
    rows = json.loads(out.read_text())["benchmarks"]
    assert {b["extra_info"]["clock"] for b in rows} == {"wall+sync"}
    ran_here = {b["extra_info"]["variant"] for b in rows}
    assert ran_here == set(HOST[:-2]) - ({"w4"} if len(os.sched_getaffinity(0)) < 4 else set())
    from xferbench.analyze.load.results import load

    frame = load([out]).frame
    said = finding(with_rule(frame[frame["op"] == "dataloader"].copy()))
    assert said[0].startswith("The loader alone to the host, 32 decoded images a batch (18.4 MiB): iter() starting 2 ")
    assert said[-1].startswith("Per short epoch (4 batches, ") and "persistent_workers" in said[-1] and "spawn" not in said[-1]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU: the training steps run on it")
@pytest.mark.parametrize("variant", ["alone", "w0", "w2", "w2-blocking", "w2-pageable", "w2-sidestream"])
def test_on_a_gpu_each_training_step_runs_and_hands_its_batch_to_the_step(variant):
    """For real (tools/gpu_reference_run.sh): the steps run back to back, each waiting for the one before, every
    batch on the device as decoded (8 samples a batch: each batch decodes the dataset's 8 images), and every worker
    ended after."""
    from xferbench.families.dataloader.run import Images

    before = live_children()
    step = case(variant, "cuda:0", 8)
    prepared = prepare(step, torch.cuda.synchronize)
    try:
        for _ in range(6):
            out = prepared.target()
        prepared.check(out)
        assert torch.equal(out.cpu(), torch.stack([Images(8)[i] for i in range(8)]))
    finally:
        prepared.close()
    assert live_children() == before


def test_a_batch_is_said_in_the_run_s_own_unit():
    """tests/data/cpu-quick-sample.json holds an older run's token batches (8x2048 int64) beside image batches: each
    is named as it was measured, never "decoded images" for tokens."""
    from xferbench.analyze.load.results import load
    from xferbench.analyze.report.findings import scenario_findings
    from xferbench.analyze.view import RunView

    said = scenario_findings(RunView.of(load([ROOT / "tests" / "data" / "cpu-quick-sample.json"])), "dataloader")
    assert [s.split(",")[1].split(":")[0].rstrip(".") for s in said if s.startswith("The loader alone")] == [
        " 8×2048 tokens a batch (128 KiB)", " 32 decoded images a batch (4.59 MiB)"]

import types

import pytest

from xferbench.measure.hardware.devices import Wedged, memcpy_seconds, poll
from xferbench.measure.timing import device_seconds, event_device, synchronized

from fakes import FakeBackend


class TestSynchronized:
    def test_host_only_is_the_function_itself(self):
        """No accelerator involved: nothing is wrapped, nothing is synchronized."""
        backend = FakeBackend(gpus=2)

        def fn():
            return 1

        assert synchronized(fn, ("cpu",), backend) is fn
        assert backend.calls == []

    def test_every_involved_device_after_each_call(self):
        """A peer copy synchronizes both devices after every call, in order."""
        backend = FakeBackend(gpus=3)
        order = []
        call = synchronized(lambda: order.append("op") or "result", ("cuda:2", "cuda:0"), backend)
        assert call() == "result"
        assert call() == "result"
        assert backend.syncs() == [2, 0, 2, 0]

    def test_h2d_syncs_only_the_device(self):
        """cpu -> cuda:1 synchronizes cuda:1 only (not the current device)."""
        backend = FakeBackend(gpus=2)
        synchronized(lambda: None, ("cpu", "cuda:1"), backend)()
        assert backend.syncs() == [1]


class TestDeviceTime:
    def test_events_on_source_device_for_peer(self):
        """Peer copies are timed on the source device's stream."""
        assert event_device("cuda:1", "cuda:0") == 1
        assert event_device("cpu", "cuda:2") == 2
        assert event_device("cuda:3", "cpu") == 3
        assert event_device("cpu", "cpu") is None

    def test_median_and_synchronized_around(self):
        """Device time is the events' median, with both devices idle before and after."""
        backend = FakeBackend(gpus=2, event_s=2e-6)
        assert device_seconds(lambda: None, "cuda:0", "cuda:1", backend, repeats=7) == (2e-6, "events")
        assert backend.calls == [("synchronize", 0), ("synchronize", 1), ("events", 0, 7),
                                 ("synchronize", 0), ("synchronize", 1)]

    def test_host_case_has_no_device_time(self):
        assert device_seconds(lambda: None, "cpu", "cpu", FakeBackend(gpus=1), 3) == (None, None)

    def test_a_copy_is_timed_by_the_profiler_where_one_records_it(self):
        """The memcpy's own activity records come first: no events are needed."""
        backend = FakeBackend(gpus=1, event_s=9e-6, profile_s=3e-6)
        twin_calls = []
        seconds = device_seconds(lambda: None, "cpu", "cuda:0", backend, 4, twin=lambda: twin_calls.append(1), copies=True)
        assert seconds == (3e-6, "profiler")
        assert ("profiled", 0, 4) in backend.calls and not [c for c in backend.calls if c[0] == "events"]
        assert twin_calls == []

    def test_without_a_profiler_a_blocking_copy_is_timed_by_its_twin(self):
        """Events around the blocking call would time the host's pace: the non-blocking twin is
        what runs between them, and the method says so."""
        backend = FakeBackend(gpus=1, event_s=2e-6)
        calls = []
        seconds = device_seconds(lambda: calls.append("blocking"), "cuda:0", "cpu", backend, 3,
                                 twin=lambda: calls.append("twin"), copies=True)
        assert seconds == (2e-6, "nonblocking_twin")
        assert calls == ["twin"] * 3

    def test_what_is_not_a_copy_is_never_profiled(self):
        """A fill (creation on a GPU) has no memcpy record: events around it, never the profiler."""
        backend = FakeBackend(gpus=1, event_s=2e-6, profile_s=1e-6)
        assert device_seconds(lambda: None, "cuda:0", "cuda:0", backend, 3) == (2e-6, "events")
        assert not [c for c in backend.calls if c[0] == "profiled"]


class TestProfilerRecords:
    """torch.profiler's events, as FunctionEvents describe them: name, device type, time range."""

    @staticmethod
    def event(name, device, us):
        return types.SimpleNamespace(name=name, device_type=types.SimpleNamespace(name=device),
                                     time_range=types.SimpleNamespace(elapsed_us=lambda: us))

    def test_each_device_memcpy_is_one_calls_time(self):
        """The device-side Memcpy records, in seconds; the host's runtime calls and kernels are not copies."""
        events = [self.event("cudaMemcpyAsync", "CPU", 12.0), self.event("Memcpy HtoD (Pinned -> Device)", "CUDA", 2.0),
                  self.event("void at::native::fill_kernel", "CUDA", 5.0),
                  self.event("Memcpy HtoD (Pinned -> Device)", "CUDA", 3.0)]
        assert memcpy_seconds(events, 2) == pytest.approx([2e-6, 3e-6])

    def test_not_one_record_per_call_is_no_figure(self):
        """A copy missing (or split in pieces) is not one copy's time: the caller falls back to events."""
        one = [self.event("Memcpy DtoH (Device -> Pinned)", "CUDA", 2.0)]
        assert memcpy_seconds(one, 2) is None
        assert memcpy_seconds([], 0) is None

    def test_a_torch_without_a_cuda_profiler_gives_none(self):
        """This CPU build's profiler records no CUDA activity: profiled_seconds says so, and the
        copy's device time comes from events (twin or not) instead."""
        from torch.profiler import ProfilerActivity, supported_activities

        from xferbench.measure.hardware.devices import TorchBackend

        if ProfilerActivity.CUDA in supported_activities():
            pytest.skip("this torch records CUDA activity")
        backend = TorchBackend()
        backend.type = "cuda"  # as if a GPU were there: the profiler is what is asked
        assert backend.profiled_seconds(lambda: None, 0, 3) is None


class TestDeadline:
    def test_poll_gives_up_on_a_query_that_never_completes(self):
        """The deadline loop: a query that never answers done ends at the deadline of its clock."""
        now = [0.0]

        def clock():
            now[0] += 1.0
            return now[0]

        assert poll(lambda: False, 10, clock) is False
        assert 10 <= now[0] <= 13
        assert poll(lambda: True, 10, clock) is True

    def test_a_stuck_copy_raises_instead_of_hanging(self):
        """With a deadline, a synchronize whose work never completes raises Wedged with a one-line
        reason naming the device; without one it is the plain synchronize."""
        backend = FakeBackend(gpus=2, stuck=True)
        call = synchronized(lambda: None, ("cuda:0", "cuda:1"), backend, deadline_s=0.01)
        with pytest.raises(Wedged, match=r"^cuda:0 still had its copy queued after 0 s: a wedged copy") as raised:
            call()
        assert "\n" not in str(raised.value)
        assert backend.calls == [("wait", 0, 0.01)]
        plain = FakeBackend(gpus=2)  # (cuda:0's copy above never ends: a synchronize there would hang)
        synchronized(lambda: None, ("cuda:0",), plain)()
        assert plain.calls == [("synchronize", 0)]

    def test_device_time_of_a_stuck_copy_raises(self):
        backend = FakeBackend(gpus=2, stuck=True)
        with pytest.raises(Wedged):
            device_seconds(lambda: None, "cuda:0", "cuda:1", backend, 3, deadline_s=0.01)
        assert not [c for c in backend.calls if c[0] == "events"]


class TestHarnessCheckPlan:
    """tools/gpu_harness_check.py only measures on a GPU; its plan is checked here: the sizes and both kinds of
    copy it promises, and node ids the suite really has (collected on a simulated machine with a cuda:0)."""

    def _tool(self):
        import importlib.util
        from pathlib import Path

        path = Path(__file__).resolve().parents[1] / "tools" / "gpu_harness_check.py"
        spec = importlib.util.spec_from_file_location("gpu_harness_check", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    def test_the_dry_run_prints_the_plan_without_a_gpu(self, capsys):
        tool = self._tool()
        assert tool.main(["--dry-run"]) == 0
        out = capsys.readouterr().out
        for size in ("4KiB", "1MiB", "256MiB"):
            assert f"pinned-blocking-copy_-{size}-float32-cpu->cuda:0" in out
            assert f"pinned-nonblocking-copy_-{size}-float32-cpu->cuda:0" in out
        assert "without the profiler pass (TEARDOWN_CUPTI=0)" in out and "with the profiler pass (TEARDOWN_CUPTI=1)" in out
        assert out.index("suite without") < out.index("suite with the") < out.index("bare loop again")

    def test_every_planned_benchmark_exists_in_the_suite(self, tmp_path):
        import os
        import subprocess
        import sys
        from pathlib import Path

        tool = self._tool()
        root = Path(__file__).resolve().parents[1]
        env = dict(os.environ, PYTHONPATH=f"{root / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *tool.node_ids(),
             "--xfer-devices=cpu,cuda:0", tool.SIZES_OPTION, tool.BLOCKS_OPTION,
             f"--xfer-simulate={root / 'examples' / 'sim-2gpu-pcie5-nvlink.toml'}"],
            cwd=root, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        assert f"{len(tool.CASES)} tests collected" in proc.stdout

    def test_the_reference_run_runs_the_extended_check(self):
        from pathlib import Path

        script = (Path(__file__).resolve().parents[1] / "tools" / "gpu_reference_run.sh").read_text()
        line = next(line for line in script.splitlines() if "tools/gpu_harness_check.py" in line)
        assert line.split()[:2] == ["timeout", "240"] and '--json "$OUT/harness_check.json"' in line

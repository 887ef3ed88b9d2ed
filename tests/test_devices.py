import contextlib
import types

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from xferbench import try_all_gpus, try_gpu
from xferbench.measure.hardware import devices
from xferbench.measure.hardware.devices import (
    TorchBackend,
    Wedged,
    accelerator_index,
    available_devices,
    parse_device,
    parse_device_list,
)

from fakes import STICKY_ERROR, FakeBackend, FakeCudaRuntime, WouldHang, runtime_backend
from hostile_inputs import FAST


class TestParseDevice:
    @pytest.mark.parametrize(("text", "device"), [("cpu", "cpu"), ("cuda", "cuda:0"), ("cuda:1", "cuda:1"),
                                                  (" xpu:2 ", "xpu:2"), ("cpu:0", "cpu")])
    def test_valid(self, text, device):
        """Device strings are normalized to ``type:index`` (``cpu`` alone)."""
        assert parse_device(text) == device

    @pytest.mark.parametrize("text", ["cuda : 0", "gpu0", "CUDA:0", "cuda:-1", "cpu:1", ""])
    def test_invalid(self, text):
        """The lesson's ``'cuda : 0'`` and made-up names are refused."""
        with pytest.raises(ValueError):
            parse_device(text)


class TestParseDeviceList:
    available = ("cpu", "cuda:0")

    def test_all(self):
        """``all`` is every device that exists."""
        assert parse_device_list("all", self.available) == ["cpu", "cuda:0"]

    def test_subset(self):
        """A list is normalized and deduplicated."""
        assert parse_device_list("cuda,cuda:0,cpu", self.available) == ["cuda:0", "cpu"]

    def test_absent_device_names_what_exists(self):
        """An absent device is refused with the devices that do exist."""
        with pytest.raises(ValueError, match=r"cuda:7 does not exist on this machine; it has: cpu, cuda:0"):
            parse_device_list("cpu,cuda:7", self.available)


class TestDiscovery:
    def test_available_devices_with_fakes(self, fake_backend):
        """cpu first, then one entry per accelerator."""
        expected = ["cpu"] + [f"cuda:{i}" for i in range(fake_backend.gpus)]
        assert available_devices(fake_backend) == expected

    def test_try_gpu_with_two_gpus(self):
        """try_gpu(i) returns accelerator i when it exists, else cpu."""
        backend = FakeBackend(gpus=2)
        assert try_gpu(1, backend) == torch.device("cuda:1")
        assert try_gpu(2, backend) == torch.device("cpu")
        assert try_all_gpus(backend) == [torch.device("cuda:0"), torch.device("cuda:1")]

    @pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only answer")
    def test_real_backend_on_cpu_machine(self):
        """On a CPU-only machine try_gpu(10) is cpu and try_all_gpus() is [cpu]."""
        assert try_gpu(10) == torch.device("cpu")
        assert try_gpu() == torch.device("cpu")
        assert try_all_gpus() == [torch.device("cpu")]
        assert available_devices(TorchBackend()) == ["cpu"]

    def test_accelerator_index(self):
        """The index of an accelerator string; None for the CPU."""
        assert accelerator_index("cuda:3") == 3
        assert accelerator_index("cpu") is None


class FakeCuda:
    """Stands in for torch.cuda: records the order of what TorchBackend asks of it."""

    GiB = 2**30

    def __init__(self, window_ms: float = 2.0, stuck: bool = False) -> None:
        self.log: list[tuple] = []
        self.window_ms = window_ms
        log = self.log
        fake = self
        self.stuck = stuck  # a wedged copy: no event after it ever completes

        class Event:
            count = 0

            def __init__(self, enable_timing: bool = False) -> None:
                Event.count += 1
                self.id = Event.count

            def record(self) -> None:
                log.append(("record", self.id))

            def synchronize(self) -> None:
                log.append(("synchronize", self.id))

            def query(self) -> bool:
                if not log or log[-1] != ("wait", self.id):
                    log.append(("wait", self.id))
                return not fake.stuck

            def elapsed_time(self, end) -> float:
                return window_ms

        self.Event = Event

    def _sleep(self, cycles: int) -> None:
        self.log.append(("spin", cycles))

    @contextlib.contextmanager
    def device(self, index: int):
        yield

    def mem_get_info(self, index: int) -> tuple[int, int]:
        return 1 * self.GiB, 80 * self.GiB

    def memory_reserved(self, index: int) -> int:
        return 3 * self.GiB

    def memory_allocated(self, index: int) -> int:
        return 1 * self.GiB


def cuda_backend(cuda: FakeCuda) -> TorchBackend:
    backend = TorchBackend()
    backend._torch = types.SimpleNamespace(cuda=cuda)
    backend.type = "cuda"
    return backend


class TestTorchBackendOnFakeCuda:
    def test_device_time_is_back_to_back_calls_on_a_held_stream(self):
        """As nvbandwidth: an event, the spin, the start event, N calls, the end event; per-call time =
        window / N. Without the spin the start event fires at once and the window holds host enqueue time."""
        cuda = FakeCuda(window_ms=2.0)
        backend = cuda_backend(cuda)
        times = backend.event_seconds(lambda: cuda.log.append(("call",)), 0, repeats=4)
        assert times == [pytest.approx(2e-3 / 4)] * 3
        calibration, windows = cuda.log[:5], cuda.log[5:]
        assert [entry[0] for entry in calibration] == ["spin", "record", "spin", "record", "wait"]
        window = windows[:9]
        assert [entry[0] for entry in window] == ["record", "spin", "record", "call", "call", "call", "call", "record",
                                                  "wait"]
        assert len(windows) == 3 * 9

    @pytest.mark.parametrize("spin_hz", [2e9, 1e8])
    def test_the_spin_is_sized_from_the_devices_own_rate(self, spin_hz, monkeypatch):
        """1e6 spin cycles timed at 2 GHz or at gfx11's 20x slower count: the spin before a window of 4 calls
        lasts 4 x 50 us either way, not 20x longer on the slow one (item 15)."""
        runtime = FakeCudaRuntime(spin_hz=spin_hz)
        runtime_backend(runtime, monkeypatch).event_seconds(runtime.copy, 0, repeats=4)
        spins = [entry[1] / spin_hz for entry in runtime.log if entry[0] == "spin"]
        assert spins[2:] == [pytest.approx(4 * 50e-6, rel=0.05)] * 3  # the rate each window measures: launch included

    def test_a_clock_that_rose_since_calibration_is_caught_by_the_window_itself(self, monkeypatch):
        """Calibrated at idle clocks, the GPU then boosts 10x: the spin sized at the old rate lasts a tenth of
        what it should, ends before the host has enqueued the calls (20 us each here), and the window would hold
        the host's pace (20 us a call for a 10 us copy). Each window times its own spin: one that ended early is
        taken again at the rate it measured, and the figure is the copy's."""
        runtime = FakeCudaRuntime(spin_hz=2e8, enqueue_s=20e-6, copy_s=10e-6)
        backend = runtime_backend(runtime, monkeypatch)
        backend.event_seconds(runtime.copy, 0, repeats=4)  # calibrated at idle
        runtime.spin_hz = 2e9
        times = backend.event_seconds(runtime.copy, 0, repeats=40)
        assert times == [pytest.approx(10e-6)] * 3
        assert backend._spin_rates[0] == pytest.approx(2e9, rel=0.05)

    def test_no_figure_when_the_spin_never_outlasts_the_enqueue(self, monkeypatch):
        """A host so slow that no spin it tries outlasts its enqueue: no device time, never the host's pace."""
        runtime = FakeCudaRuntime(spin_hz=1e9, enqueue_s=20e-6)
        backend = runtime_backend(runtime, monkeypatch)

        def slower_each_time() -> None:
            runtime.enqueue_s *= 3
            runtime.copy()

        assert backend.event_seconds(slower_each_time, 0, repeats=4) is None

    def test_a_stuck_window_raises_instead_of_hanging(self, monkeypatch):
        """A window whose end event never completes (a wedged copy) raises Wedged after the deadline,
        where end.synchronize() would block for ever."""
        monkeypatch.setattr(devices, "EVENT_WINDOW_DEADLINE_S", 0.01)
        cuda = FakeCuda()
        backend = cuda_backend(cuda)
        backend._spin_rates[0] = 2e9
        cuda.stuck = True
        with pytest.raises(Wedged, match=r"^cuda:0: a window of 4 timed calls was still running after 0 s"):
            backend.event_seconds(lambda: None, 0, repeats=4)
        assert not [entry for entry in cuda.log if entry[0] == "synchronize"]

    def test_wait_polls_an_event_on_the_current_stream(self):
        """wait: an event recorded on the device, queried until done or the deadline (False)."""
        cuda = FakeCuda()
        backend = cuda_backend(cuda)
        assert backend.wait(1, 0.01) is True
        assert [entry[0] for entry in cuda.log] == ["record", "wait"]
        cuda.stuck = True
        assert backend.wait(1, 0.01) is False

    def test_a_sticky_error_from_a_query_marks_the_device_instead_of_raising_it(self, monkeypatch):
        """A copy that faulted leaves a sticky error: the event's query (and record) raise it from then on.
        The deadline wait and a window's wait turn it into Wedged, as a stuck copy is, with CUDA's reason."""
        runtime = FakeCudaRuntime()
        backend = runtime_backend(runtime, monkeypatch)
        backend.event_seconds(runtime.copy, 0, repeats=4)
        runtime.fault = True
        for call in (lambda: backend.wait(1, 1.0), lambda: backend.event_seconds(runtime.copy, 0, repeats=4),
                     lambda: backend.synchronize(0)):
            with pytest.raises(Wedged, match=r"^cuda:\d: a CUDA error on its stream \(" + STICKY_ERROR):
                call()

    def test_the_profiler_leaves_no_cupti_attached(self, monkeypatch):
        """Kineto detaches CUPTI at a session's end only with TEARDOWN_CUPTI=1; attached, it slows every later
        CUDA call of the process (pytorch/pytorch#144455). After a profiled case the wall time of later calls
        is what it was before any profiler ran."""
        monkeypatch.setenv("TEARDOWN_CUPTI", "unset below")  # so that the test ends with it as it found it
        monkeypatch.delenv("TEARDOWN_CUPTI")
        runtime = FakeCudaRuntime(enqueue_s=5e-6, copy_s=1e-6)
        runtime.cupti_s = 20e-6
        backend = runtime_backend(runtime, monkeypatch)

        def wall() -> float:
            began = runtime.now
            for _ in range(10):
                runtime.copy()
                runtime.synchronize()
            return runtime.now - began

        alone = wall()
        assert backend.profiled_seconds(runtime.copy, 0, repeats=10) == [pytest.approx(1e-6)] * 10
        assert not runtime.cupti_attached and wall() == pytest.approx(alone)

    def test_a_teardown_turned_off_means_no_profiler(self, monkeypatch):
        """TEARDOWN_CUPTI set to anything but 1 (by the user, or by torch for CUDA graphs on CUDA < 12.6) would
        leave CUPTI attached: the copy is then timed by events, never by the profiler."""
        monkeypatch.setenv("TEARDOWN_CUPTI", "0")
        runtime = FakeCudaRuntime()
        backend = runtime_backend(runtime, monkeypatch)
        assert backend.profiled_seconds(runtime.copy, 0, repeats=10) is None
        assert not runtime.cupti_attached and not [entry for entry in runtime.log if entry[0] == "copy"]

    def test_empty_cache_after_a_stuck_copy_would_hang(self, monkeypatch):
        """The fake's cudaFree synchronizes implicitly, as CUDA's does: with a copy stuck it never returns."""
        runtime = FakeCudaRuntime()
        backend = runtime_backend(runtime, monkeypatch)
        backend.type = "cuda"
        backend._torch.accelerator = None
        runtime.stuck = True
        with pytest.raises(WouldHang, match="cudaFree"):
            backend.empty_cache()

    def test_cached_unused_memory_counts_as_free(self):
        """Blocks the caching allocator reserved but no tensor uses are free to this process:
        1 GiB free on the device + (3 reserved - 1 allocated) = 3 GiB."""
        assert cuda_backend(FakeCuda()).memory_info(0) == (3 * FakeCuda.GiB, 80 * FakeCuda.GiB)


@pytest.mark.hostile
class TestParsers:
    @FAST
    @given(st.text(max_size=30) | st.lists(st.sampled_from(["cpu", "cuda:0", "cuda:1", "cuda : 0", "gpu", "all", " ", "cuda"]),
                                           min_size=1, max_size=4).map(",".join))
    def test_device_list_is_available_devices_or_value_error(self, text):
        available = ["cpu", "cuda:0"]
        try:
            devices = parse_device_list(text, available)
        except ValueError:
            return
        assert devices and set(devices) <= set(available)

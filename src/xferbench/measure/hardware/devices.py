"""Which devices exist, what to call them, and the backend that drives them.

Everything that touches an accelerator goes through a ``DeviceBackend`` so that
tests can hand in a fake one with any number of GPUs and record what was asked
of it (synchronizations above all) without a GPU.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    import torch

    from ..cases import Case

T = TypeVar("T")

__all__ = [
    "DeviceBackend",
    "TorchBackend",
    "Wedged",
    "accelerator_index",
    "available_devices",
    "cupti_torn_down",
    "host_memory_available",
    "memcpy_seconds",
    "parse_device",
    "parse_device_list",
    "poll",
    "sticky_errors",
    "try_all_gpus",
    "try_gpu",
]

_DEVICE_RE = re.compile(r"^([a-z]+)(?::(\d+))?$")


class DeviceBackend(Protocol):
    """What the suite needs from an accelerator runtime."""

    #: Device type of the accelerator (``cuda``, ``xpu``, ``mps``), None without one.
    type: str | None
    #: True for the simulated machine (measure/simulate.py): its figures are not measurements.
    simulated: bool

    def device_count(self) -> int: ...

    def synchronize(self, index: int) -> None: ...

    def wait(self, index: int, seconds: float) -> bool:
        """``synchronize(index)`` that gives up after ``seconds``: False when the work queued on the
        device's current stream has not finished by then (it stays queued: nothing can cancel it)."""

    def device_name(self, index: int) -> str: ...

    def memory_info(self, index: int) -> tuple[int, int] | None:
        """(free, total) bytes, or None when the runtime cannot tell."""

    def can_access_peer(self, src: int, dst: int) -> bool: ...

    def empty_cache(self) -> None:
        """Give cached, unused device memory back (after an out-of-memory error)."""

    def event_seconds(self, fn: Callable[[], Any], index: int, repeats: int) -> list[float] | None:
        """Device time per call of ``fn``: ``repeats`` calls back to back between two events on
        ``index``'s current stream, held behind a spin while they are enqueued; one figure per window."""

    def profiled_seconds(self, fn: Callable[[], Any], index: int, repeats: int) -> list[float] | None:
        """The device time of each copy ``repeats`` calls of ``fn`` made on ``index``, from a profiler's
        device activity records (what Nsight shows); None without a profiler that records them."""

    def tensor_device(self, device: str) -> str:
        """Where the tensors of ``device`` live in this process (a simulated GPU's: the host)."""

    def pin_memory(self, tensor: torch.Tensor) -> torch.Tensor:
        """``tensor`` in page-locked memory (a simulated machine prices pinning instead)."""

    def timed(self, case: Case, op: Callable[[], T]) -> contextlib.AbstractContextManager[Callable[[], T | None]]:
        """Around the timed region of ``case``: the call to time (the real backend: ``op`` itself;
        the simulated machine: a call that charges its simulated clock)."""


#: Spin-wait before a window of event-timed calls, per call enqueued (seconds): long
#: enough that the host has queued every call before the stream reaches the start event.
SPIN_PER_CALL_S = 50e-6
#: Cycles of the spin kernel timed once per device to learn its first rate (its clock: 2 GHz on an
#: H100, about 20x fewer spin cycles a second on gfx11); every window then measures its own spin and
#: keeps that rate, so a GPU that boosted (or idled down) since is sized at the clock it runs at now.
SPIN_CALIBRATION_CYCLES = 1_000_000
#: A window whose spin ended before the host had enqueued its last call holds host time: it is taken
#: again with a spin this many times the enqueue it measured, at most SPIN_TRIES times in all.
SPIN_MARGIN = 2.0
SPIN_TRIES = 3
#: The environment variable Kineto reads when a profiler session ends: "1" calls cuptiFinalize, which
#: detaches CUPTI; otherwise CUPTI stays attached and slows every later CUDA call of the process
#: (pytorch/pytorch#144455). Kineto has torn down on the value "1" since pytorch/kineto#823 (October 2023), on
#: any value before it: "1" detaches with every Kineto.
TEARDOWN_CUPTI = "TEARDOWN_CUPTI"
#: Windows of back-to-back calls per event measurement.
EVENT_WINDOWS = 3
#: An event window still running after this long is stuck (a window holds about 0.2 s of calls):
#: it raises instead of hanging the run (timing.Wedged's reason).
EVENT_WINDOW_DEADLINE_S = 120.0


class Wedged(RuntimeError):
    """A device's queued work did not finish by its deadline: a stuck copy (a peer copy across a PCIe
    switch with the IOMMU or ACS on can hang for ever), which torch cannot cancel; or its context holds a
    sticky CUDA error (a copy that faulted), after which every call on it fails. Either way nothing more
    runs on the device in this process."""


@contextlib.contextmanager
def sticky_errors(where: str) -> Iterator[None]:
    """Turn a CUDA error raised inside (a sticky one: an illegal address, a launch failure, which every
    later call on the context repeats) into Wedged, so that the device is marked as a stuck copy marks it
    instead of the error failing one case and every later one on it."""
    try:
        yield
    except RuntimeError as error:
        if isinstance(error, Wedged) or not _runtime_error(error):
            raise  # Wedged already, out of memory (the caller frees memory and skips the case), or not the runtime's
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise Wedged(f"{where}: a CUDA error on its stream ({reason}): its context is unusable") from None


def _runtime_error(error: RuntimeError) -> bool:
    """Whether ``error`` is the accelerator runtime's own (torch.AcceleratorError from torch 2.8 on, CUDA's or
    HIP's message before), and not an out-of-memory error."""
    text = str(error)
    return ((type(error).__name__ == "AcceleratorError" or "CUDA error" in text or "HIP error" in text)
            and "out of memory" not in text.lower())


def poll(done: Callable[[], bool], seconds: float, clock: Callable[[], float] = time.monotonic,
         where: str = "the device") -> bool:
    """Spin on ``done()`` until it says True (then True) or ``seconds`` pass (then False): a synchronize
    with a deadline. It spins as a synchronize does, so a timed call ends when its work does. A CUDA error
    from ``done()`` (an event's query on a faulted context) raises Wedged (``sticky_errors``)."""
    deadline = clock() + seconds
    try:  # (inside peer copies' timed calls: a try costs nothing until it raises, unlike a context manager)
        while not done():
            if clock() > deadline:
                return False
    except RuntimeError:
        with sticky_errors(where):
            raise
    return True


def cupti_torn_down() -> bool:
    """Whether a profiler session that ends now detaches CUPTI (``TEARDOWN_CUPTI`` is "1"); where the
    variable is unset it is set to "1" first. A value set otherwise (by the user, or by torch itself when it
    profiles CUDA graphs on CUDA < 12.6) is kept, and the suite takes no profiler time: CUPTI would stay
    attached and slow the wall time of every later case."""
    return os.environ.setdefault(TEARDOWN_CUPTI, "1") == "1"


class TorchBackend:
    """The real backend: ``torch.accelerator`` where the installed torch has it."""

    simulated = False
    #: Its devices are torch's own, so their properties can be read (probe.cuda_properties); a fake's are not.
    torch_devices = True

    def __init__(self) -> None:
        import torch

        self._torch = torch
        self.type = _accelerator_type(torch)
        self._spin_rates: dict[int, float] = {}  # spin cycles per second, by GPU, as the last window measured it
        self._host_clock: Callable[[], float] = time.perf_counter  # what an enqueue takes on the host

    def device_count(self) -> int:
        if self.type is None:
            return 0
        return (getattr(self._torch, "accelerator", None) or self._torch.cuda).device_count()

    def synchronize(self, index: int) -> None:
        # Inside every timed call: a try costs nothing until it raises (unlike entering a context manager).
        accelerator = getattr(self._torch, "accelerator", None)
        try:
            if accelerator is not None and hasattr(accelerator, "synchronize"):
                accelerator.synchronize(index)
            else:
                self._torch.cuda.synchronize(index)
        except RuntimeError:
            with sticky_errors(f"{self.type}:{index}"):
                raise

    def wait(self, index: int, seconds: float) -> bool:
        if self.type != "cuda":  # other runtimes: a plain synchronize (no deadline)
            self.synchronize(index)
            return True
        # An event on the current stream: the copies measured here queue on it (torch makes a peer
        # copy's destination stream wait for it too), and its query never blocks.
        cuda = self._torch.cuda
        where = f"cuda:{index}"
        with cuda.device(index):
            event = cuda.Event()
            try:
                event.record()
            except RuntimeError:
                with sticky_errors(where):
                    raise
        return poll(event.query, seconds, where=where)

    def device_name(self, index: int) -> str:
        if self.type in ("cuda", "xpu"):
            return getattr(self._torch, self.type).get_device_name(index)
        return f"{self.type}:{index}"

    def memory_info(self, index: int) -> tuple[int, int] | None:
        if self.type == "cuda":
            cuda = self._torch.cuda
            free, total = cuda.mem_get_info(index)
            # Blocks the caching allocator holds but no tensor uses are free to this process.
            cached = cuda.memory_reserved(index) - cuda.memory_allocated(index)
            return int(free) + max(0, int(cached)), int(total)
        if (accelerator := getattr(self._torch, "accelerator", None)) is not None and hasattr(accelerator, "get_memory_info"):
            with contextlib.suppress(RuntimeError, NotImplementedError):
                free, total = accelerator.get_memory_info(index)
                return int(free), int(total)
        return None

    def can_access_peer(self, src: int, dst: int) -> bool:
        return self.type == "cuda" and src != dst and bool(self._torch.cuda.can_device_access_peer(src, dst))

    def peer_link_classes(self, gpus: list[str]) -> dict[tuple[str, str], str | None]:
        """Each ordered pair's link class from NVML, None where unknown (measure/hardware/topology.py):
        the peer plan's default (--xfer-peer-pairs)."""
        from .topology import link_classes

        return link_classes(self, gpus, rocm=bool(getattr(self._torch.version, "hip", None)))

    def empty_cache(self) -> None:
        if self.type is None:
            return
        if (accelerator := getattr(self._torch, "accelerator", None)) is not None and hasattr(accelerator, "empty_cache"):
            accelerator.empty_cache()
        elif self.type == "cuda":
            self._torch.cuda.empty_cache()

    def event_seconds(self, fn: Callable[[], Any], index: int, repeats: int) -> list[float] | None:
        if self.type != "cuda":
            return None
        # As nvbandwidth does: without the spin the start event fires at once and the
        # window includes the host's dispatch and enqueue of the first call.
        times = []
        with self._torch.cuda.device(index), sticky_errors(f"cuda:{index}"):
            rate, enqueue_s = self._spin_rate(index), 0.0
            for _ in range(EVENT_WINDOWS):
                for _ in range(SPIN_TRIES):
                    spin_s = max(SPIN_PER_CALL_S * repeats, SPIN_MARGIN * enqueue_s)
                    window = self._window(fn, index, repeats, max(1, int(rate * spin_s)))
                    rate, enqueue_s = window.spin_rate, window.enqueue_s
                    if window.held:
                        break
                else:
                    return None  # the spin never outlasted the enqueue: no figure rather than the host's pace
                times.append(window.seconds)
        self._spin_rates[index] = rate
        return times

    def _window(self, fn: Callable[[], Any], index: int, repeats: int, cycles: int) -> _Window:
        """One window: an event, the spin, the start event, ``repeats`` calls, the end event. The first
        event times the spin itself, so the window says whether the spin outlasted the host's enqueue."""
        cuda = self._torch.cuda
        held, start, end = (cuda.Event(enable_timing=True) for _ in range(3))
        began = self._host_clock()  # before the first event: the enqueue is counted from no later than it fires
        held.record()
        cuda._sleep(cycles)
        start.record()
        for _ in range(repeats):
            fn()
        end.record()
        enqueue_s = self._host_clock() - began
        _finish(end.query, index, repeats)
        spin_s = max(held.elapsed_time(start) / 1e3, 1e-9)  # elapsed_time is in ms
        return _Window(start.elapsed_time(end) / 1e3 / repeats, cycles / spin_s, enqueue_s, spin_s > enqueue_s)

    def _spin_rate(self, index: int) -> float:
        """Spin cycles per second on GPU ``index`` (the current device): the last window's, or timed with
        events the first time."""
        rates = self._spin_rates
        if index not in rates:
            cuda = self._torch.cuda
            cuda._sleep(1000)  # load the kernel
            start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
            start.record()
            cuda._sleep(SPIN_CALIBRATION_CYCLES)
            end.record()
            _finish(end.query, index, 0)
            rates[index] = SPIN_CALIBRATION_CYCLES / max(start.elapsed_time(end) / 1e3, 1e-9)
        return rates[index]

    def profiled_seconds(self, fn: Callable[[], Any], index: int, repeats: int) -> list[float] | None:
        if self.type != "cuda":
            return None
        from torch.profiler import ProfilerActivity, profile, supported_activities

        if ProfilerActivity.CUDA not in supported_activities() or not cupti_torn_down():  # no CUPTI, or it would stay
            return None
        cuda = self._torch.cuda
        with cuda.device(index), sticky_errors(f"cuda:{index}"):
            cuda.synchronize(index)
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(repeats):
                    fn()
                _finish(cuda.current_stream().query, index, repeats)
        return memcpy_seconds(prof.events(), repeats)

    def tensor_device(self, device: str) -> str:
        return device

    def pin_memory(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor.pin_memory()

    @contextlib.contextmanager
    def timed(self, case: Case, op: Callable[[], T]) -> Iterator[Callable[[], T | None]]:
        yield op


@dataclass(frozen=True)
class _Window:
    """What one event window measured: seconds per call, the spin's rate (cycles a second at the clock the
    GPU ran at), the host's enqueue of the window, and whether the spin outlasted it (``held``)."""

    seconds: float
    spin_rate: float
    enqueue_s: float
    held: bool


def _finish(done: Callable[[], bool], index: int, repeats: int) -> None:
    """Wait for a window of ``repeats`` timed calls on GPU ``index`` (``done``: an event's or stream's
    query), raising Wedged instead of hanging when it is still running after EVENT_WINDOW_DEADLINE_S."""
    if not poll(done, EVENT_WINDOW_DEADLINE_S, where=f"cuda:{index}"):
        raise Wedged(f"cuda:{index}: a window of {repeats} timed calls was still running after "
                     f"{EVENT_WINDOW_DEADLINE_S:.0f} s: a wedged copy")


def memcpy_seconds(events: Sequence[Any], calls: int) -> list[float] | None:
    """Per-call device time of the copies among a profiler's events (torch FunctionEvents): the
    duration of each device-side ``Memcpy ...`` record, CUPTI's name for a copy engine's work.
    None unless there is exactly one per call (a copy split in pieces, or one missing, is not
    one copy's time)."""
    copies = [e.time_range.elapsed_us() * 1e-6 for e in events
              if str(e.name).startswith("Memcpy") and getattr(e.device_type, "name", "") != "CPU"]
    return copies if calls and len(copies) == calls else None


def _accelerator_type(torch: Any) -> str | None:
    if (accelerator := getattr(torch, "accelerator", None)) is not None:
        current = accelerator.current_accelerator() if accelerator.is_available() else None
        return None if current is None else current.type
    # torch < 2.6 has no torch.accelerator; CUDA (and ROCm, which reuses 'cuda') still works.
    return "cuda" if torch.cuda.is_available() else None


def available_devices(backend: DeviceBackend) -> list[str]:
    """``cpu`` followed by every accelerator the backend sees, as device strings."""
    count = backend.device_count() if backend.type else 0
    return ["cpu"] + [f"{backend.type}:{i}" for i in range(count)]


def parse_device(text: str) -> str:
    """Normalize a device string (``cuda`` -> ``cuda:0``); ValueError when malformed."""
    match = _DEVICE_RE.match(text.strip())
    if not match:
        raise ValueError(f"{text!r} is not a device; write it like cpu or cuda:0")
    kind, index = match.groups()
    if kind == "cpu":
        if index not in (None, "0"):
            raise ValueError(f"{text!r}: the CPU is one device; write cpu")
        return "cpu"
    return f"{kind}:{int(index or 0)}"


def parse_device_list(text: str, available: Sequence[str]) -> list[str]:
    """Parse ``--xfer-devices``: ``all`` or a comma list, each of which must exist."""
    if text.strip() == "all":
        return list(available)
    if not (devices := [parse_device(token) for token in text.split(",") if token.strip()]):
        raise ValueError("no device given; write all or a list such as cpu,cuda:0")
    if missing := [device for device in devices if device not in available]:
        raise ValueError(f"{missing[0]} does not exist on this machine; it has: {', '.join(available)}")
    return list(dict.fromkeys(devices))


def accelerator_index(device: str) -> int | None:
    """The index of an accelerator device string, None for the CPU."""
    return None if device == "cpu" else int(device.rsplit(":", 1)[1])


def host_memory_available() -> int | None:
    """Bytes of host memory available now (Linux ``MemAvailable``), None elsewhere."""
    with contextlib.suppress(OSError), open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    with contextlib.suppress(ValueError, OSError, AttributeError):
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return None


def try_gpu(i: int = 0, backend: DeviceBackend | None = None) -> torch.device:
    """Return accelerator ``i`` if it exists, else the CPU (the lesson's helper, fixed)."""
    import torch

    backend = backend or TorchBackend()
    if backend.type is not None and 0 <= i < backend.device_count():
        return torch.device(backend.type, i)
    return torch.device("cpu")


def try_all_gpus(backend: DeviceBackend | None = None) -> list[torch.device]:
    """Return every accelerator, or ``[cpu]`` when there is none."""
    import torch

    backend = backend or TorchBackend()
    if (kind := backend.type) is None:
        return [torch.device("cpu")]
    return [torch.device(kind, i) for i in range(backend.device_count())] or [torch.device("cpu")]


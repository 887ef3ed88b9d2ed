"""pytest plugin (registered by ``plugin``): the machine's state around each benchmark.

- After each benchmark, its extra_info says whether the payload was cache-resident
  (``cache_resident``) and, for a GPU case with NVML, the SM and memory clocks and the
  PCIe link read right after timing: a GPU idles down to lower clocks and PCIe Gen1,
  and the fingerprint's maxima do not say what a run actually got.
- Between benchmark families the pinned host cache is emptied: otherwise a full run
  ends holding GiBs of page-locked memory, and a family inherits another's pinned blocks.
- The concurrent families (``measure/concurrent.py``) get their fixtures here:
  ``xfer_concurrent`` (parametrized over the machine's cases) and ``xfer_run_concurrent``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from .concurrent import CONCURRENT, Concurrent, build_concurrent
from .devices import DeviceBackend, accelerator_index, available_devices
from .machine import cache_resident, clocks_and_link_now, cuda_properties, device_l2_bytes, host_cache_bytes, nvml_handle

__all__ = ["RunState"]


@dataclass
class RunState:
    """What the hooks need, gathered once per session."""

    host_caches: dict[str, int] | None
    l2_by_device: dict[str, int | None]
    nvml: Any = None  # pynvml, initialized, when there is NVML and a CUDA GPU
    handles: dict[int, Any] = field(default_factory=dict)  # torch index -> NVML handle

    def close(self) -> None:
        if self.nvml is not None:
            self.nvml.nvmlShutdown()
            self.nvml = None


_STATE = pytest.StashKey[RunState]()


def gather(backend: DeviceBackend) -> RunState:
    devices = available_devices(backend)[1:]
    props = {i: cuda_properties(backend, i) for i in range(len(devices))}
    state = RunState(host_cache_bytes(), {d: device_l2_bytes(props[i]) for i, d in enumerate(devices)})
    if any(p is not None for p in props.values()):
        state.nvml = _open_nvml()
        if state.nvml is not None:
            state.handles = {i: h for i, p in props.items() if (h := nvml_handle(state.nvml, p)) is not None}
    return state


def _open_nvml() -> Any:
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # no nvidia-ml-py, no driver: the clocks stay unrecorded
        return None
    return pynvml


def _state(config: pytest.Config) -> RunState:
    if _STATE not in config.stash:
        from .plugin import settings

        config.stash[_STATE] = gather(settings(config).backend)
    return config.stash[_STATE]


def pytest_unconfigure(config: pytest.Config) -> None:
    if _STATE in config.stash:
        config.stash[_STATE].close()


def annotate(info: dict[str, Any], state: RunState) -> None:
    """Add cache residency and the GPU's clocks and link now to one benchmark's extra_info."""
    resident = cache_resident(info, state.host_caches, state.l2_by_device)
    if resident is not None:
        info["cache_resident"] = resident
    index = next((i for i in map(_index, (info.get("src"), info.get("dst"))) if i is not None), None)
    if index is not None and state.nvml is not None and index in state.handles:
        info.update({k: v for k, v in clocks_and_link_now(state.nvml, state.handles[index]).items() if isinstance(v, int)})


def _index(device: object) -> int | None:
    """The GPU to read clocks from: ``cuda:i``; the first GPU of ``all:cuda``; None otherwise."""
    if device == "all:cuda":
        return 0
    if not isinstance(device, str) or not device.startswith("cuda:"):
        return None
    return accelerator_index(device)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    yield
    benchmark = getattr(item, "funcargs", {}).get("benchmark")
    info = getattr(benchmark, "extra_info", None)
    if isinstance(info, dict) and "op" in info:
        annotate(info, _state(item.config))


def family_of(item: pytest.Item) -> str:
    """The benchmark family of a test: its function, whatever the parameters."""
    module = getattr(item, "module", None)
    return f"{getattr(module, '__name__', '')}::{getattr(item, 'originalname', item.name)}"


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    if nextitem is None or family_of(item) != family_of(nextitem):
        empty_pinned_cache()


def empty_pinned_cache() -> None:
    """Give pinned host memory back, where this process has used CUDA at all."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return  # never create a context just to empty nothing
    from .scenarios import empty_host_cache

    empty_host_cache()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "xfer_concurrent" in metafunc.fixturenames:
        from .plugin import _op_of, parametrize_cases, settings

        s = settings(metafunc.config)
        planned = build_concurrent(_op_of(metafunc, tuple(CONCURRENT)), s.devices, s.profile)
        parametrize_cases(metafunc, "xfer_concurrent", cast("list[Any]", planned))


@pytest.fixture
def xfer_run_concurrent(benchmark: Any, request: pytest.FixtureRequest) -> Callable[[Concurrent], dict[str, Any]]:
    """Run one concurrent case under ``benchmark``; one the machine cannot run is skipped."""
    from .concurrent import run_concurrent
    from .plugin import settings
    from .transfers import CannotRun

    backend = settings(request.config).backend

    def run(case: Concurrent) -> dict[str, Any]:
        try:
            return run_concurrent(case, benchmark, backend)
        except CannotRun as reason:
            pytest.skip(f"{case.id}: {reason}")

    return run

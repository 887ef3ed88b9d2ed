"""pytest plugin (registered by ``plugin``): the machine's state around each benchmark.

- After each benchmark, its extra_info says whether the payload was cache-resident
  (``cache_resident``) and, for a GPU case with NVML, the SM and memory clocks and the
  PCIe link read right after timing: a GPU idles down to lower clocks and PCIe Gen1,
  and the fingerprint's maxima do not say what a run actually got.
- Between benchmark families the pinned host cache is emptied: otherwise a full run
  ends holding GiBs of page-locked memory, and a family inherits another's pinned blocks.
"""

from __future__ import annotations

import sys
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from ..hardware.devices import DeviceBackend, accelerator_index, available_devices
from ..hardware.machine import cache_resident, device_l2_bytes, host_cache_bytes
from ..hardware.probe import clocks_and_link_now, cuda_properties, nvml_handle
from .settings import settings

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
        config.stash[_STATE] = gather(settings(config).backend)
    return config.stash[_STATE]


def pytest_unconfigure(config: pytest.Config) -> None:
    if _STATE in config.stash:
        config.stash[_STATE].close()


def annotate(info: dict[str, Any], state: RunState, gpus: Sequence[str] = ()) -> None:
    """Add cache residency and the clocks and link now of the GPUs measured to one benchmark's extra_info
    (``gpus``: those a call on ``all:cuda`` used)."""
    if (resident := cache_resident(info, state.host_caches, state.l2_by_device)) is not None:
        info["cache_resident"] = resident
    if state.nvml is None:
        return
    readings = [clocks_and_link_now(state.nvml, state.handles[i]) for i in _measured(info, gpus) if i in state.handles]
    for key in readings[0] if readings else ():
        # Several GPUs at once: the lowest clock and link among them, the one that holds the others back.
        if values := [value for reading in readings if isinstance(value := reading[key], int)]:
            info[key] = min(values)


def _measured(info: dict[str, Any], gpus: Sequence[str]) -> list[int]:
    """The GPUs to read clocks from: the case's ``cuda:i`` (source first), or for ``all:cuda`` every GPU
    in ``gpus`` (never GPU 0 unless it was measured)."""
    ends = [d for d in (info.get("src"), info.get("dst")) if isinstance(d, str)]
    chosen = list(gpus) if "all:cuda" in ends else [d for d in ends if d.startswith("cuda:")][:1]
    return [i for i in map(accelerator_index, chosen) if i is not None]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    yield
    benchmark = getattr(item, "funcargs", {}).get("benchmark")
    if isinstance(info := getattr(benchmark, "extra_info", None), dict) and "op" in info:
        case = getattr(item, "funcargs", {}).get("xfer_case")
        annotate(info, _state(item.config), getattr(case, "gpus", ()))


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
    from ..families.scenario import empty_host_cache

    empty_host_cache()


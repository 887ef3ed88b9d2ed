"""cuda_vs_to: ``.cuda(i)``, ``.to('cuda:i')``, ``.to(torch.device)`` and ``Module.to``/``.cuda``, side by side."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...measure.families.base import MiB, Prepared, Priced, ScenarioFamily, Sync, sizes, synced, then_sync
from ...measure.families.scenario import Scenario, mlp, on_device, parameter_bytes, plan_on_gpus


def prepare(s: Scenario, sync: Sync) -> Prepared:
    import torch

    src = torch.ones(s.size // 4)
    device = torch.device(s.dst)
    index = device.index
    net = mlp(max(10**3, s.size // 4))

    def home() -> None:
        net.to("cpu")
        sync()

    calls: dict[str, Callable[[], Any]] = {
        "cuda": lambda: src.cuda(index),
        "to_str": lambda: src.to(s.dst),
        "to_device": lambda: src.to(device),
        "to_nonblocking": lambda: src.to(device, non_blocking=True),
        "module_to": lambda: net.to(device),
        "module_cuda": lambda: net.cuda(index),
    }
    is_module = s.variant.startswith("module")
    return Prepared(synced(calls[s.variant], sync), setup=home if is_module else None,
                    check=on_device(s.dst) if is_module else lambda out: None)


def price(s: Scenario, m: Priced, sync: Sync) -> Prepared:
    if s.variant.startswith("module"):  # Module.to / .cuda: one blocking copy per parameter
        nbytes = parameter_bytes(max(10**3, s.size // 4))
        copies = [lambda n=n: m.copy("h2d_pageable", n, s.dst, waits=True) for n in nbytes]
        return Prepared(then_sync(sync, *copies), setup=sync)
    # .cuda(i), .to('cuda:i'), .to(device), non_blocking: a pageable source, so the host waits in each
    return Prepared(then_sync(sync, lambda: m.copy("h2d_pageable", s.size, s.dst, waits=True)))


FAMILY = ScenarioFamily("cuda_vs_to", sizes((64 * MiB,), (MiB, 64 * MiB)),
                        plan_on_gpus("cuda_vs_to", ("cuda", "to_str", "to_device", "to_nonblocking", "module_to",
                                                    "module_cuda"), "bytes"),
                        prepare, price)

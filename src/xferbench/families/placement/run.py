"""placement: an image batch converted on the CPU then moved, or moved as uint8 then converted on the GPU."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...measure.cases import Skipped, accelerators
from ...measure.families.base import Prepared, Priced, ScenarioFamily, Sync, sizes, synced, then_sync
from ...measure.families.scenario import IMAGE, Scenario


def plan(devices: Sequence[str], sizes: Sequence[int]) -> list[Scenario | Skipped]:
    planned: list[Scenario | Skipped] = [Scenario("placement", "convert_on_cpu", "cpu", "cpu", s, "images") for s in sizes]
    gpus = accelerators(devices)
    if not gpus:
        planned.append(Skipped("placement-gpu-half", "placement's move-then-convert half needs an accelerator"))
    planned += [Scenario("placement", v, "cpu", d, size, "images") for size in sizes for d in gpus
                for v in ("convert_then_move", "move_then_convert")]
    return planned


def normalize(x: Any) -> Any:
    """uint8 images -> float32 in [0, 1], normalized with ImageNet's mean and std."""
    import torch

    mean = torch.tensor([0.485, 0.456, 0.406], device=x.device).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225], device=x.device).view(1, 3, 1, 1)
    return (x.float().div_(255) - mean).div_(std)


def prepare(s: Scenario, sync: Sync) -> Prepared:
    import torch

    images = torch.randint(0, 256, (s.size, *IMAGE), dtype=torch.uint8)
    dst = torch.device(s.dst)
    calls: dict[str, Callable[[], Any]] = {
        "convert_on_cpu": lambda: normalize(images),
        "convert_then_move": synced(lambda: normalize(images).to(dst), sync),  # 4x the bytes cross the link
        "move_then_convert": synced(lambda: normalize(images.to(dst)), sync),
    }

    def check(out: Any) -> None:
        if not (out.dtype == torch.float32 and out.device == dst and tuple(out.shape) == (s.size, *IMAGE)):
            raise AssertionError(f"placement gave {out.dtype} {tuple(out.shape)} on {out.device}, "  # survives python -O
                                 f"not float32 {(s.size, *IMAGE)} on {dst}")
    return Prepared(calls[s.variant], check=check)


def price(s: Scenario, m: Priced, sync: Sync) -> Prepared:
    n = s.nbytes  # uint8 pixels; normalized float32 is 4x that
    calls: dict[str, Callable[[], None]] = {
        "convert_then_move": then_sync(sync, lambda: m.host_copy(4 * n),
                                       lambda: m.copy("h2d_pageable", 4 * n, s.dst, waits=True)),
        "move_then_convert": then_sync(sync, lambda: m.copy("h2d_pageable", n, s.dst, waits=True),
                                       lambda: m.kernel(4 * n, s.dst)),
    }
    return Prepared(calls[s.variant])


FAMILY = ScenarioFamily("placement", sizes((8, 64), (8, 32, 64, 256)), plan, prepare, price)

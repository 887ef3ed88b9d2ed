"""forward: ``net(X)`` with the module and its input on one device."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...measure.cases import Skipped
from ...measure.families.base import Prepared, Priced, ScenarioFamily, Sync, sizes
from ...measure.families.scenario import Scenario, checked_forward, mlp


def plan(devices: Sequence[str], sizes: Sequence[int]) -> list[Scenario | Skipped]:
    return [Scenario("forward", "forward", d, d, size, "batch") for size in sizes for d in devices]


def prepare(s: Scenario, sync: Sync) -> Prepared:
    import torch

    net = mlp(4 * (1024 * 1024 + 1024), s.dst).eval()
    x = torch.randn(s.size, 1024, device=s.dst)

    def call() -> Any:
        with torch.no_grad():
            out = checked_forward(net, x)
        sync()
        return out

    def check(out: Any) -> None:
        if not (out.device == x.device and tuple(out.shape) == (s.size, 1024)):  # not assert: python -O drops it
            raise AssertionError(f"forward gave {tuple(out.shape)} on {out.device}, not ({s.size}, 1024) on {x.device}")
    return Prepared(call, check=check)


def price(s: Scenario, m: Priced, sync: Sync) -> Prepared:
    from ...measure.transfers import CannotRun

    raise CannotRun(f"forward on {s.dst}: the simulated machine prices copies and synchronizes, not compute")


FAMILY = ScenarioFamily("forward", sizes((64,), (1, 64, 512)), plan, prepare, price)

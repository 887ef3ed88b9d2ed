"""module_to: ``net.to(device)``, a first move and a second one that copies nothing."""

from __future__ import annotations

from collections.abc import Sequence

from ...measure.cases import Skipped
from ...measure.families.base import Prepared, Priced, ScenarioFamily, Sync, sizes, synced, then_sync
from ...measure.families.scenario import Scenario, mlp, on_device, parameter_bytes


def plan(devices: Sequence[str], sizes: Sequence[int]) -> list[Scenario | Skipped]:
    # a first move from the CPU to each other device, and a second move on each device
    return [Scenario("module_to", variant, src, dst, size, "params") for size in sizes for dst in devices
            for variant, src in (("first", "cpu"), ("again", dst)) if variant == "again" or dst != "cpu"]


def prepare(s: Scenario, sync: Sync) -> Prepared:
    net = mlp(s.size, s.src)

    def home() -> None:  # a first move's every round starts with the module back on the CPU, untimed
        net.to("cpu")
        sync()
    return Prepared(synced(lambda: net.to(s.dst), sync), setup=home if s.variant == "first" else None,
                    check=on_device(s.dst))


def price(s: Scenario, m: Priced, sync: Sync) -> Prepared:
    nbytes = parameter_bytes(s.size)
    if s.variant == "first":  # every parameter copied from pageable host memory, one blocking copy each
        return Prepared(then_sync(sync, *(lambda n=n: m.copy("h2d_pageable", n, s.dst, waits=True) for n in nbytes)))
    return Prepared(then_sync(sync, lambda: m.dispatch(len(nbytes))))  # again: a no-op per parameter


FAMILY = ScenarioFamily("module_to", sizes((10**3, 10**5, 10**7), (10**3, 10**4, 10**5, 10**6, 10**7, 10**8)),
                        plan, prepare, price)

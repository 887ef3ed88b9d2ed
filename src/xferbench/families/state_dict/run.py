"""state_dict: ``{k: v.cpu()}`` of a module's state_dict against ``.to('cpu', non_blocking=True)`` and one
synchronize."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...measure.families.base import Prepared, Priced, ScenarioFamily, Sync, sizes, synced, then_sync
from ...measure.families.scenario import Scenario, mlp, parameter_bytes, plan_on_gpus


def prepare(s: Scenario, sync: Sync) -> Prepared:
    net = mlp(s.size, s.src)
    calls: dict[str, Callable[[], Any]] = {
        "cpu": lambda: {k: v.cpu() for k, v in net.state_dict().items()},
        # pinned results (torch's _to_copy pins a non-blocking copy to the CPU): read only after the synchronize
        "nonblocking": lambda: {k: v.to("cpu", non_blocking=True) for k, v in net.state_dict().items()},
    }

    def check(out: Any) -> None:
        assert out.keys() == net.state_dict().keys() and all(v.device.type == "cpu" for v in out.values())
    return Prepared(synced(calls[s.variant], sync), check=check)


def price(s: Scenario, m: Priced, sync: Sync) -> Prepared:
    # cpu: one blocking copy into fresh pageable memory per tensor; else into pinned memory, queued, and the
    # synchronize waits for them all
    blocking = s.variant == "cpu"
    copies = [lambda n=n: m.copy("d2h_pageable" if blocking else "d2h_pinned", n, s.src, waits=blocking)
              for n in parameter_bytes(s.size)]
    return Prepared(then_sync(sync, *copies))


FAMILY = ScenarioFamily("state_dict", sizes((10**5, 10**7), (10**4, 10**5, 10**6, 10**7, 10**8)),
                        plan_on_gpus("state_dict", ("cpu", "nonblocking"), "params", to_host=True),
                        prepare, price)

"""batching: 1024 small ``.to(device)`` calls against ``torch.cat`` then one copy, and one contiguous copy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...measure.families.base import MiB, Prepared, Priced, ScenarioFamily, Sync, sizes, synced, then_sync
from ...measure.families.scenario import Scenario, plan_on_gpus

#: The piece of the batching scenario's many small copies (1024 of them in 4 MiB).
BATCH_PIECE = 4 * 2**10


def prepare(s: Scenario, sync: Sync) -> Prepared:
    import torch

    dst = torch.device(s.dst)
    whole = torch.ones(s.size // 4)
    pieces = list(whole.split(BATCH_PIECE // 4))  # contiguous views, as a list of small tensors would be
    calls: dict[str, Callable[[], Any]] = {
        "many_small": lambda: [piece.to(dst) for piece in pieces],
        "cat_then_one": lambda: torch.cat(pieces).to(dst),
        "one_copy": lambda: whole.to(dst),
    }

    def check(out: Any) -> None:
        moved = out if isinstance(out, list) else [out]
        assert all(t.device == dst for t in moved) and sum(t.numel() for t in moved) == whole.numel()
    return Prepared(synced(calls[s.variant], sync), check=check)


def price(s: Scenario, m: Priced, sync: Sync) -> Prepared:
    n = s.size
    many = [lambda: m.copy("h2d_pageable", BATCH_PIECE, s.dst, waits=True)] * (n // BATCH_PIECE)
    calls: dict[str, tuple[Callable[[], None], ...]] = {
        "many_small": tuple(many),  # a blocking pageable copy per piece, each with its fixed cost
        "cat_then_one": (lambda: m.host_copy(n), lambda: m.copy("h2d_pageable", n, s.dst, waits=True)),
        "one_copy": (lambda: m.copy("h2d_pageable", n, s.dst, waits=True),),
    }
    return Prepared(then_sync(sync, *calls[s.variant]))


FAMILY = ScenarioFamily("batching", sizes((4 * MiB,), (256 * 2**10, 4 * MiB, 16 * MiB)),
                        plan_on_gpus("batching", ("many_small", "cat_then_one", "one_copy"), "bytes"),
                        prepare, price)

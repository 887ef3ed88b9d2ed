"""The distributed families: collectives between processes, planned and timed by ``measure/distributed/``."""

from __future__ import annotations

from .base import Family

__all__ = ["DISTRIBUTED"]

DISTRIBUTED = tuple(
    Family(op, op, what, "distributed", colour, link="network")
    for op, what, colour in (
        ("send_recv", "send/recv ping-pong between a pair of ranks, within a node or across nodes "
                      "(a call is a round trip)", "tab:brown"),
        ("isend_irecv", "isend/irecv ping-pong between a pair of ranks", "tab:pink"),
        ("broadcast", "broadcast from rank 0", "tab:blue"),
        ("all_reduce", "all_reduce (sum)", "tab:red"),
        ("all_gather", "all_gather_into_tensor", "tab:green"),
        ("reduce_scatter", "reduce_scatter_tensor", "tab:purple"),
        ("all_to_all", "all_to_all_single: every rank sends a block to every rank (mixture-of-experts layers)", "tab:olive"),
        ("overlap", "4 all_reduces in flight at once (async_op=True) against the same 4 one by one", "tab:cyan"),
    )
)

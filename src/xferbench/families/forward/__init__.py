"""forward: ``net(X)`` with the module and its input on one device.

Its record and what the report says about it (torch-free); what it runs is ``run.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...units import format_seconds
from ..base import Family, judge_of, size_of

if TYPE_CHECKING:
    import pandas as pd


def finding(rows: pd.DataFrame) -> list[str]:
    """Each batch size's time on the CPU and, where a GPU ran it on the same clock, the CPU's time over the GPU's with its
    interval (the H200's batch of 512: 4.95 ms against 185 µs; of 1: 106 µs against 104 µs, where launching the kernels
    sets both)."""
    judge, said = judge_of(rows), []
    for _, batch in rows.sort_values("nbytes").groupby("nbytes", sort=False):
        if (cpu := batch[batch["dst"] == "cpu"]).empty:
            continue
        host, size = cpu.iloc[0], size_of(cpu.iloc[0]).removesuffix(" batch")
        # a cost model's time beside a measured one is no comparison
        gpus = [gpu for _, gpu in batch[batch["dst"] != "cpu"].iterrows() if gpu.get("clock") == host.get("clock")]
        said += [f"on a batch of {size}, {format_seconds(host['median_s'])} on the CPU against {format_seconds(gpu['median_s'])} "
                 f"on {gpu['dst']}: " + (f"the CPU took {r.text()} as long" if (r := judge(host, gpu)).resolved else r.text())
                 for gpu in gpus] or [f"on a batch of {size}, {format_seconds(host['median_s'])} on the CPU"]
    return [f"A forward pass took, {'; '.join(said)}."] if said else []


RECORD = Family("forward", "Scenario: a forward pass where the data is (net(X))", "net(X) with net and X on one device",
                "scenario", "tab:cyan", moves_payload=False, finding=finding,
                caption="net and X on the same device; a mismatch is an error (checked_forward says which tensor to move).")

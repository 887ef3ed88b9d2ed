"""dataloader: a ``torch.utils.data.DataLoader`` feeding the GPU, per batch from ``next()`` until the batch is on
the device, with ``pin_memory``, ``num_workers`` and ``non_blocking``; worker start-up and the first batch apart.

Its record and what the report says about it (torch-free); what it runs is ``run.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...units import format_bytes, format_seconds
from ..base import Family

if TYPE_CHECKING:
    import pandas as pd

WORKERS = (0, 2)


def _case(rows: pd.DataFrame, variant: str) -> pd.Series | None:
    found = rows[rows["variant"] == variant]
    return None if found.empty else found.iloc[0]


def effect(without: pd.Series, with_: pd.Series, workers: int) -> str:
    """What switching an option on did to the time per batch; "can't tell" where the two cases' middle halves
    (q1 to q3, their IQR) overlap, or the medians read alike: no gain or loss is claimed that the spread holds."""
    a, b = without["median_s"], with_["median_s"]
    before, after = format_seconds(a), format_seconds(b)
    if before == after or max(without["q1_s"], with_["q1_s"]) <= min(without["q3_s"], with_["q3_s"]):
        return f"can't tell with {workers} workers ({before} against {after}, within their spread)"
    return f"{'saved' if b < a else 'added'} {format_seconds(abs(a - b))} with {workers} workers ({before} to {after})"


def _label(row: pd.Series) -> str:
    return f"{row['shape']} {row['dtype']} ({format_bytes(row['nbytes'])})"


def _to_gpu(rows: pd.DataFrame) -> list[str]:
    """Per batch, on the first GPU (identical GPUs say the same): what pin_memory and then non_blocking (from the
    pinned batch, where it can act) did, for each worker count."""
    gpu = min(rows["dst"])
    out = []
    for _, at in rows[rows["dst"] == gpu].groupby(["nbytes", "dtype"]):
        options = []
        for option, without, with_ in (("pin_memory=True", "pageable-blocking", "pinned-blocking"),
                                       ("non_blocking=True on the pinned batch", "pinned-blocking",
                                        "pinned-nonblocking")):
            said = [effect(a, b, w) for w in WORKERS
                    if (a := _case(at, f"w{w}-{without}")) is not None and (b := _case(at, f"w{w}-{with_}")) is not None]
            if said:
                options.append(f"{option}: {' and '.join(said)}")
        if options:
            out.append(f"Batches of {_label(at.iloc[0])} to {gpu}, per batch: {'; '.join(options)}.")
    return out


def _alone(rows: pd.DataFrame) -> list[str]:
    """Per batch, the loader alone (to the host): steady state per worker count, then the cold start."""
    out = []
    for _, at in rows.groupby(["nbytes", "dtype"]):
        time = {v: format_seconds(r["median_s"]) for v in ("w0", "w2", "first-w0", "first-w2", "startup-w2")
                if (r := _case(at, v)) is not None}
        said = []
        for what, prefix in (("per batch", ""), ("for a fresh iterator's first batch", "first-")):
            each = [f"{time[f'{prefix}w{w}']} with {w} workers" for w in WORKERS if f"{prefix}w{w}" in time]
            if each:
                said.append(f"{' and '.join(each)} {what}")
        if "startup-w2" in time:
            said.append(f"{time['startup-w2']} for iter() alone, starting the 2 workers")
        if said:
            out.append(f"The loader alone, batches of {_label(at.iloc[0])} to the host: {'; '.join(said)}.")
    return out


def finding(rows: pd.DataFrame) -> list[str]:
    on_gpu = rows[rows["dst"] != "cpu"]
    return (_to_gpu(on_gpu) if not on_gpu.empty else []) + _alone(rows[rows["dst"] == "cpu"])


RECORD = Family("dataloader", "Scenario: a DataLoader feeding the GPU",
                "DataLoader next() then .to(device) per batch, pin_memory off and on, 0 and 2 workers, blocking or "
                "non_blocking; the loader alone, worker start-up and a fresh iterator's first batch",
                "scenario", "tab:cyan", finding=finding,
                caption="Each call is one step of a training loop's input: next() on a DataLoader over an in-memory "
                        "dataset (collation stacks the batch), then batch.to(device), then a synchronize: the time "
                        "until the batch is on the device, in steady state (the workers' start-up and prefetched "
                        "batches are pulled before timing). wN: N worker processes (forked); pinned: pin_memory=True "
                        "(a pinned copy of every batch, on the main process's pin-memory thread when there are workers); "
                        "nonblocking: .to(device, non_blocking=True). To the host (cpu): the loader alone; startup-w2: "
                        "iter() starting 2 workers; first-wN: a fresh iterator's first batch, what every epoch pays "
                        "without persistent_workers.")

"""dataloader: an input pipeline as a training loop runs it: a ``torch.utils.data.DataLoader`` decoding images while
the GPU works on the step before; time per step and the share of it the GPU waits for input, per option.

Its record and what the report says about it (torch-free); what it runs is ``run.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...units import format_bytes, format_seconds
from ..base import Family, of_variant

if TYPE_CHECKING:
    import pandas as pd

#: The GPU work of one training step: a kernel of this duration that reads the batch first.
STEP_S = 5e-3
#: The loop every option is set against: 2 workers, pin_memory and non_blocking (the usual advice).
BASE = "w2"
#: Each option, as its variant changes the base (on the GPU) or the loader alone (to the host).
OPTIONS = {"w0": "no workers", "w1": "1 worker", "w2": "2 workers", "w4": "4 workers", "w2-pageable": "pin_memory off",
           "w2-blocking": "non_blocking off", "w2-prefetch4": "prefetch_factor 4", "w2-sidestream":
           "the copy on a side stream, a step ahead", "first-w2": "2 workers", "epoch-w2-persistent":
           "persistent_workers", "epoch-w2-forkserver": "forkserver", "epoch-w2-spawn": "spawn"}


def _row(rows: pd.DataFrame, variant: str) -> pd.Series | None:
    found = of_variant(rows, variant)
    return None if found.empty else found.iloc[0]


def _against(rows: pd.DataFrame, ratio: Any, base: str, variants: tuple[str, ...], what: str) -> list[str]:
    """Each of ``variants`` set against ``base`` by the run's comparison rule: ``1 worker 1.52x (1.41-1.64)``."""
    said = [f"{OPTIONS[v]} {ratio(a, b).text()}" for v in variants
            if (a := _row(rows, v)) is not None and (b := _row(rows, base)) is not None]
    return [f"Against that, the time {what}: {'; '.join(said)}."] if said else []


def waits(ratio: Any, step: pd.Series, alone: pd.Series) -> str:
    """The share of ``step`` the GPU waits for input: 1 - its GPU work (``alone``) over the step, with the interval
    of that ratio; none where the two cannot be told apart."""
    r = ratio(step, alone)
    if not r.resolved or r.value < 1:
        return f"the GPU waits for input no share of the step this run can tell (the step over its GPU work: {r.text()})"
    share = [100 * (1 - 1 / x) for x in (r.value, r.low, r.high)]
    return f"the GPU waits for input {share[0]:.0f}% ({share[1]:.0f}-{share[2]:.0f}%) of the step"


def _fastest(rows: pd.DataFrame, ratio: Any, alone: pd.Series) -> list[str]:
    """The loop that pays here: the shortest step, where the run tells it from the base; else the base holds."""
    loops = rows[rows["variant"].isin([BASE, *OPTIONS])]
    best, base = loops.loc[loops["median_s"].idxmin()], _row(rows, BASE)
    if base is None or best["variant"] == BASE or not (r := ratio(best, base)).resolved:
        return ["No option beats 2 workers with pin_memory and non_blocking by what this run can tell."]
    return [f"What pays here: {OPTIONS[best['variant']]}, {format_seconds(best['median_s'])} a step ({r.text()} the "
            f"base), where {waits(ratio, best, alone)}."]


def _on_gpu(rows: pd.DataFrame, ratio: Any) -> list[str]:
    out = []
    for nbytes, at in rows[rows["dst"] == min(rows["dst"])].groupby("nbytes"):
        alone, base = _row(at, "alone"), _row(at, BASE)
        if alone is None or base is None:
            continue
        out.append(f"A training step of {format_seconds(alone['median_s'])} of GPU work on {base['dst']}, fed "
                   f"{base['shape'].split('x')[0]} decoded images a batch ({format_bytes(nbytes)}): with 2 workers, "
                   f"pin_memory and non_blocking it took {format_seconds(base['median_s'])} a step, and "
                   f"{waits(ratio, base, alone)}.")
        out += _against(at, ratio, BASE, ("w0", "w1", "w4", "w2-pageable", "w2-blocking", "w2-prefetch4",
                                          "w2-sidestream"), "per step")
        out += _fastest(at, ratio, alone)
    return out


def _alone(rows: pd.DataFrame, ratio: Any) -> list[str]:
    """The loader alone (to the host): per step, then start-up and whole short epochs, each timed apart."""
    out = []
    for nbytes, at in rows.groupby("nbytes"):
        if (w0 := _row(at, "w0")) is not None:
            out.append(f"The loader alone, {w0['shape'].split('x')[0]} decoded images a batch "
                       f"({format_bytes(nbytes)}) to the host: {format_seconds(w0['median_s'])} a step with no "
                       "workers.")
            out += _against(at, ratio, "w0", ("w1", "w2", "w4"), "per step")
            out += _against(at, ratio, "w2", ("w2-prefetch4",), "per step with 2 workers")
        timed = [f"{what} {format_seconds(row['median_s'])}" for variant, what in (
            ("startup-w2", "iter() starting 2 workers"), ("first-w0", "a fresh iterator's first batch with no "
             "workers"), ("epoch-w2", "a short epoch with 2 forked workers")) if (row := _row(at, variant)) is not None]
        if timed:
            out.append(f"Timed apart: {'; '.join(timed)}.")
        out += _against(at, ratio, "first-w0", ("first-w2",), "to a fresh iterator's first batch")
        out += _against(at, ratio, "epoch-w2", ("epoch-w2-persistent", "epoch-w2-forkserver", "epoch-w2-spawn"),
                        "per epoch")
    return out


def finding(rows: pd.DataFrame) -> list[str]:
    """Per batch size, on the first GPU: the step and its wait for input, each option against the base, what pays;
    the loader alone on the host. Comparisons by ``rows.attrs["ratio"]`` (the run's rule); none without it."""
    ratio = rows.attrs.get("ratio")
    if ratio is None:
        return []
    on_gpu = rows[rows["dst"] != "cpu"]
    return (_on_gpu(on_gpu, ratio) if not on_gpu.empty else []) + _alone(rows[rows["dst"] == "cpu"], ratio)


RECORD = Family("dataloader", "Scenario: an input pipeline as a training loop runs it",
                "a training step (5 ms of GPU work) fed by a DataLoader of decoded images, per option: workers, "
                "pin_memory, non_blocking, prefetch_factor, a side stream; the loader alone, start-up, first batch "
                "and short epochs (persistent_workers, start methods)",
                "scenario", "tab:cyan", finding=finding,
                caption="Each dataset sample is decoded: a uint8 3x224x224 image made from its bytes, converted to "
                        "float32 and normalised per channel. On the first GPU each call is one training step: the next "
                        "batch .to(device), a step of 5 ms of GPU work that reads it (alone: its batch already there), "
                        "and a wait for the step before, so the host loads while the GPU works. w2 (the base): 2 "
                        "forked workers, pin_memory, non_blocking, prefetch_factor 2; each other variant changes one "
                        "of these (sidestream: each batch copied on a side stream during the step before). To the "
                        "host (cpu): the loader alone per step (wN: N workers; 4 only where 4 CPUs are there); "
                        "startup-w2: iter() alone; first-wN: a fresh iterator's first batch; epoch-w2: a short epoch "
                        "of 4 batches, start-up and shut-down included, what each epoch pays without "
                        "persistent_workers, also started by forkserver and spawn.")

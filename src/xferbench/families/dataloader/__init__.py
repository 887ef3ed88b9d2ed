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
#: Each variant in the page's words, as set against the base of its comparison.
OPTIONS = {"w0": "no workers", "w1": "1 worker", "w2": "2 workers", "w4": "4 workers", "w2-pageable": "pin_memory off",
           "w2-blocking": "non_blocking off", "w2-prefetch4": "prefetch_factor 4", "w2-sidestream":
           "the copy on a side stream, a step ahead", "first-w0": "no workers", "first-w2": "2 workers",
           "epoch-w2": "2 forked workers", "epoch-w2-persistent": "persistent_workers", "epoch-w2-forkserver":
           "forkserver", "epoch-w2-spawn": "spawn"}
#: The comparisons the page draws, each (how it is timed, its base, the variants set against it): on the GPU every
#: option changed from 2 workers with pin_memory and non_blocking; to the host the loader alone, timed apart.
ON_GPU = (("per step", "w2", ("w0", "w1", "w4", "w2-pageable", "w2-blocking", "w2-prefetch4", "w2-sidestream")),)
TO_HOST = (("per step", "w0", ("w1", "w2", "w4")), ("per step", "w2", ("w2-prefetch4",)),
           ("to a fresh iterator's first batch", "first-w0", ("first-w2",)),
           ("per short epoch (4 batches, start-up and shut-down included)", "epoch-w2",
            ("epoch-w2-persistent", "epoch-w2-forkserver", "epoch-w2-spawn")))


def _row(rows: pd.DataFrame, variant: str) -> pd.Series | None:
    found = of_variant(rows, variant)
    return None if found.empty else found.iloc[0]


def _against(rows: pd.DataFrame, ratio: Any, what: str, base: str, variants: tuple[str, ...]) -> list[str]:
    """``variants`` set against ``base`` by the run's comparison rule: ``Per step, against ...: 1 worker 1.52x ...``."""
    b = _row(rows, base)
    said = [f"{OPTIONS[v]} {ratio(a, b).text()}" for v in variants if b is not None and (a := _row(rows, v)) is not None]
    return [f"{what.capitalize()}, against {OPTIONS[base]} ({format_seconds(b['median_s'])}): {'; '.join(said)}."
            ] if said and b is not None else []


def waits(ratio: Any, step: pd.Series, alone: pd.Series) -> str:
    """The share of ``step`` the GPU waits for input: 1 - its GPU work (``alone``) over the step, with the interval
    of that ratio; none where the two cannot be told apart."""
    r = ratio(step, alone)
    if not r.resolved or r.value < 1:
        return f"the GPU waits for input no share of the step this run can tell (the step over its GPU work: {r.text()})"
    share = [100 * (1 - 1 / x) for x in (r.value, r.low, r.high)]
    return f"the GPU waits for input {share[0]:.0f}% ({share[1]:.0f}-{share[2]:.0f}%) of the step"


def _on_gpu(at: pd.Series, ratio: Any, fed: str) -> list[str]:
    """The step and its wait for input, each option against the base, and what pays: the shortest step, where the
    run tells it from the base."""
    alone, base = _row(at, "alone"), _row(at, "w2")
    if alone is None or base is None:
        return []
    best = at.loc[at[at["variant"] != "alone"]["median_s"].idxmin()]
    pays = ["No option beats 2 workers with pin_memory and non_blocking by what this run can tell."]
    if best["variant"] != "w2" and (r := ratio(best, base)).resolved:
        pays = [f"What pays here: {OPTIONS[best['variant']]}, {format_seconds(best['median_s'])} a step ({r.text()} the "
                f"base), where {waits(ratio, best, alone)}."]
    return [f"A training step of {format_seconds(alone['median_s'])} of GPU work on {base['dst']}, fed {fed}: with 2 "
            f"workers, pin_memory and non_blocking it took {format_seconds(base['median_s'])} a step, and "
            f"{waits(ratio, base, alone)}.", *[s for c in ON_GPU for s in _against(at, ratio, *c)], *pays]


def _batch(at: pd.DataFrame) -> str:
    """What one batch holds, in the run's own unit: ``32 decoded images``, or ``8×2048 tokens`` (an older run's)."""
    shape, unit = str(at["shape"].iloc[0]), at["size_unit"].iloc[0] if "size_unit" in at else None
    if not isinstance(unit, str) or unit == "images":  # no unit recorded: this family's images
        return f"{shape.split('x')[0]} decoded images"
    return f"{shape.replace('x', '×')} {unit}"


def finding(rows: pd.DataFrame) -> list[str]:
    """Per batch size, on the first GPU: the step and its wait for input, each option against the base, what pays;
    to the host, the loader alone. Comparisons by ``rows.attrs["ratio"]`` (the run's rule); none without it."""
    ratio, out = rows.attrs.get("ratio"), []
    gpus = rows.loc[rows["dst"] != "cpu", "dst"]  # the first GPU speaks: identical GPUs say the same
    for (dst, nbytes), at in rows[rows["dst"].isin(["cpu", *([gpus.min()] if len(gpus) else [])])].groupby(["dst", "nbytes"]):
        fed = f"{_batch(at)} a batch ({format_bytes(nbytes)})"
        if ratio is not None and dst != "cpu":
            out += _on_gpu(at, ratio, fed)
        elif ratio is not None:
            started = _row(at, "startup-w2")
            out.append(f"The loader alone to the host, {fed}" + (f": iter() starting 2 workers took "
                       f"{format_seconds(started['median_s'])}" if started is not None else "") + ".")
            out += [s for c in TO_HOST for s in _against(at, ratio, *c)]
    return out


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

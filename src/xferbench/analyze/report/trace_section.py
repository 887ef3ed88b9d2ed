"""The page's section on a user's own trace (``report --trace``): a stacked bar per step and each group's price and
fixes, read from the same ``Priced`` that ``xferbench price`` prints (analyze/trace/pricing.py)."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt

from ...units import format_bytes, format_seconds
from ..trace.pricing import Priced
from .svg import WIDTH, as_plot, legend_outside, tip

__all__ = ["section"]

#: The parts of a step's bar, in order, with their colours: the GPU's two, then the host's two.
PARTS = (("compute_s", "compute (GPU kernels)", "tab:gray"), ("copy_s", "GPU copy", "tab:blue"),
         ("blocked_s", "host blocked on a copy", "tab:orange"), ("wait_s", "host waiting for the queue", "tab:red"))


def _figure(priced: Priced) -> Any:
    steps = priced.steps
    fig, ax = plt.subplots(figsize=(WIDTH, 0.6 + 0.45 * len(steps)))
    names = [f"step {s.number}" if s.number is not None else "whole trace" for s in steps]
    for index, step in enumerate(steps):
        left = 0.0
        for key, label, colour in PARTS:
            value = getattr(step, key)
            bar = ax.barh(index, value * 1e3, left=left * 1e3, color=colour, label=label if index == 0 else None)
            tip(bar.patches[0], [f"{names[index]}: {label} {format_seconds(value)} of a "
                                 f"{format_seconds(step.span[1] - step.span[0])} step"])
            left += value
        ax.plot([(step.span[1] - step.span[0]) * 1e3], [index], "k|", markersize=14)
    ax.set_yticks(range(len(steps)), names)
    ax.invert_yaxis()
    ax.set_xlabel("milliseconds (| the step's wall time)")
    legend_outside(fig, *ax.get_legend_handles_labels())
    return fig


def _fixes(row: dict[str, Any]) -> str:
    return "; ".join(f"{fix['what']}: {fix['said']}" for fix in row["fixes"]) or row.get("note", "–")


def section(priced: Priced) -> dict[str, Any]:
    """The section's title, text (where each figure comes from), figure and table of groups."""
    caption = ("Per step: what the GPU ran (compute, copies) and what the host spent on copies: blocked while they "
               "ran or after (their call's tail and the synchronize), and waiting for earlier GPU work before they "
               "began. The host's parts are its own time, not the GPU's, so a bar may outrun its step's wall time.")
    rows = [[f"{r['kind']} {r['memory']} {'blocking' if r['blocking'] else 'non-blocking'} in {r['op']}", r["count"],
             format_bytes(r["bytes"]), format_seconds(r["gpu_s"]),
             f"{format_seconds(r['host_s'])} = wait {format_seconds(r['wait_s'])} + blocked "
             f"{format_seconds(r['blocked_s'])} + tail {format_seconds(r['tail_s'])}",
             f"{r['share']:.1%}" if r["share"] is not None else "–",
             format_seconds(r["priced_s"]) if r["priced_s"] is not None else "not priced", _fixes(r),
             ", ".join(map(str, r["examples"]))] for r in priced.rows]
    table = {"id": "trace-copies", "caption": "Each group of the trace's copies: host time split (wait: for the queue; "
             "blocked: while the copy ran; tail: after it), cost on the run's machine, and each fix's saving with the "
             "run's spread (its quartiles at the bracketing sizes).", "rows": rows,
             "columns": ["copies", "count", "bytes", "GPU time", "host time", "share of the steps", "cost here",
                         "fixes", "e.g. correlation"]}
    return {"key": "trace", "title": "Your trace's copies, priced", "text": "; ".join(priced.labels) + ".",
            "plots": [as_plot("trace-steps", "Where each step's time went", caption, _figure(priced))],
            "table": table}

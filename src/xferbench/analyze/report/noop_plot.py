"""The no-op figure: each no-op form and the idle synchronize beside the cheapest real copy, all from one machine
instance, each bar the span of the medians it measured over its sizes (never a figure no case timed). No torch here."""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from ...families import FAMILIES
from ...families.core import noop_call
from ...units import format_bytes, format_number, mathtext_safe
from ..view import RunView
from .series import run_of
from .svg import ON_TICKS, WIDTH, subplots, tip

__all__ = ["family_colour", "noop_vs_copy"]


def family_colour(op: str) -> str:
    """A family's colour in every figure (its record's), grey for an op no family names."""
    return FAMILIES[op].colour if op in FAMILIES else "tab:gray"


def _bar(label: str, rows: pd.DataFrame, op: str) -> tuple[str, pd.DataFrame, str]:
    return label, rows.sort_values("nbytes"), family_colour(op)


def _bars(view: RunView) -> tuple[list[tuple[str, pd.DataFrame, str]], str]:
    """Each bar's label, its rows (one per size) and colour, from the one instance that measured most of the no-ops
    and synchronizes (so no two bars set one boot's figure beside another's), and that instance's note for the axis."""
    frame = view.rows
    kept, instance, _ = view.one_instance_rows(frame[frame["op"].isin(("noop", "sync"))])
    noops, sync = kept[kept["op"] == "noop"], kept[kept["op"] == "sync"]
    bars = [_bar(f"{noop_call(method, src, variant or None)} on {src}{run_of(noops, group.iloc[0])}", group, "noop")
            for (method, variant, src, _), group in noops.groupby(["method", noops["variant"].fillna(""), "src", "run"])]
    # The synchronize a careless caller adds around a no-op or a small move (the sync family), when measured.
    bars += [_bar(f"torch.cuda.synchronize({device}) on an idle device{run_of(sync, group.iloc[0])}", group, "sync")
             for (device, _), group in sync.groupby(["src", "run"])]
    # one yardstick per clock among the no-ops: a simulated no-op beside the cost model's copy, a measured one beside a
    # measured copy (the simulated run's CPU no-ops are real, its GPU ones priced)
    simulated = view.priced(kept)
    for like in [kept[simulated == clock].iloc[0] for clock in (False, True) if (simulated == clock).any()]:
        if (cheapest := view.cheapest_copy(like, set(kept["run"]))) is not None:
            said = "copy the cost model priced" if like.get("clock") == "simulated" else "real copy"
            bars.append(_bar(f"cheapest {said}: {cheapest['path']} ({format_bytes(cheapest['nbytes'])})",
                             frame.loc[[cheapest.name]], str(cheapest["op"])))
    note = f"; from {', '.join(instance.runs)} only (one machine instance)" if instance is not None else ""
    return bars, note


def _ns(rows: pd.DataFrame) -> str:
    low, high = (f"{rows['median_s'].min() * 1e9:,.0f}", f"{rows['median_s'].max() * 1e9:,.0f}")
    return f"{low} ns" if low == high else f"{low}-{high} ns"


def noop_vs_copy(view: RunView) -> Figure | str:
    """Solid, each bar's lowest median over its sizes; pale behind it, its highest; the hover gives every size."""
    bars, note = _bars(view)
    labels = [mathtext_safe(label) for label, _, _ in bars]
    colours = [colour for _, _, colour in bars]
    fig, ax = subplots(figsize=(WIDTH, 0.4 * len(bars) + 1.2))
    solid = ax.barh(labels, [rows["median_s"].min() * 1e6 for _, rows, _ in bars], color=colours, zorder=2)
    ax.barh(labels, [rows["median_s"].max() * 1e6 for _, rows, _ in bars], color=colours, alpha=0.3, zorder=1)
    waited = view.waited_for_cpu  # marked as the first screen's table marks it
    for bar, (label, rows, _) in zip(solid.patches, bars, strict=True):
        tip(bar, [f"{label}: " + ", ".join(f"{format_number(row['median_s'] * 1e9, 4)} ns at {format_bytes(int(row['nbytes']))}"
                                           + ON_TICKS * bool(waited[i]) for i, row in rows.iterrows()) + " per call"])
        ax.text(rows["median_s"].max() * 1e6, bar.get_y() + bar.get_height() / 2, f"  {_ns(rows)}", va="center", fontsize=8)
    ax.set_xlim(0, max(rows["median_s"].max() for _, rows, _ in bars) * 1e6 * 1.3)
    ax.invert_yaxis()
    ax.set_xlabel("median time per call (µs); solid: the lowest median over the sizes measured, pale: the highest" + note)
    return fig

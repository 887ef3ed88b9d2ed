"""The report's words for one run, told once. The report is a pipeline: load (analyze/load) → the run's view, its facts
and verdicts (analyze/view.py) → the story, every sentence read from the run that the page, its Markdown and the
end-of-run summary say (here) → the page and the Markdown (page.py, export.py), which add only their fixed headings and
notes. Figures are drawn from the view beside it (plots.py), given their titles, captions and notes from here: a figure
module imports no sentence module."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...families import FAMILIES
from ...families.core import peer_plan_sentences
from ...machine_facts import machine_line, machine_table
from ...units import count, format_bytes, format_seconds
from ..load.blocks import LONGEST
from ..peer_plan import RecordedPlan
from ..view import RunView, ticked
from . import drift_text, ladder_text
from .break_even import break_even_table, pinning_break_even
from .captions import figure_words, same_code
from .changes import Change, first_screen
from .cliff import cliff_note
from .findings import Said, findings, scenario_findings, why_measured
from .model_text import fit_table

if TYPE_CHECKING:
    from .other_tools import PeerFigure

__all__ = ["Story"]

#: What a scenario's caption says of a variant the run may not have measured (from its first words up to the last,
#: or to its end), and what it says instead: only what ran (a run without a GPU says once that it measured none, and no
#: caption speaks of a GPU step it did not run).
_UNMEASURED = {
    ("module_to", "first"): ("The first move copies", "parameter; a second", "A second"),
    ("pin_memory", "pinned_to"): ("pinned_to: the DMA", "", "reused_pinned_to: a host copy into a reused pinned buffer, "
                                  "then the DMA. pinned_to (the DMA alone) did not run: the break-even takes the h2d "
                                  "family's copies."),
    ("dataloader", "alone"): ("On the first GPU each call", "To the host (cpu): the", "The"),
    ("dataloader", "epoch-w2"): ("; epoch-w2: a short", "and spawn", ""),
    ("placement", "move_then_convert"): ("must become normalized", "",
                                         "becomes normalized float32: here on the CPU alone (convert_on_cpu)."),
}


@dataclass(frozen=True, eq=False)  # two stories are never compared: equal views would be
class Story:
    """Every sentence of one run's report, told from its view in one pass (``Story.of``): the head (the machine in one
    line, a busy machine's notice, when it ran, its instances), what to change and the break-even line it cites, the
    key findings, how the run was judged, the ladders (title, where read, rows of cells; and as one table), the figures'
    titles, captions and cliff note, the α/β table, the peer plan, the other tools' figures (table rows, lines), each
    scenario's words (its paragraph and caption) and the machine table."""

    view: RunView
    machine_line: str
    busy: str | None
    run_time: str | None
    instances: str | None
    drift: str
    changes: list[Change]
    unresolved: str | None  # where no change is listed: those the run priced, with their verdicts
    break_even: dict[str, Any] | None  # the pinning break-even table beneath the pin_memory scenario
    break_even_line: str | None  # its one line, where a change listed cites the table
    findings: list[Said]
    glance: list[dict[str, str]]
    why: dict[str, str | None]
    model: list[dict[str, Any]]
    peer_plan: list[str]
    peer_rows: list[dict[str, Any]]
    peer_lines: list[str]
    ladders: list[tuple[str, str, list[list[str]]]]
    ladder_table: dict[str, Any] | None  # the ladders as one table, a column per factor
    same_code: str | None  # where .cpu() and .to(cpu) were both laddered: one code, and whether they differ
    figures: dict[str, tuple[str, str]]  # each core figure's title and caption, by its key (plots.render)
    cliff: str | None  # the cliff's cause, noted on the device-to-host figure
    scenarios: dict[str, tuple[str, str]]
    machine: list[tuple[str, str]]

    @classmethod
    def of(cls, view: RunView, peers: list[PeerFigure] | None = None) -> Story:
        """The story of ``view``; ``peers``: nvbandwidth's or nccl-tests' figures, where given. Told in two passes:
        this module's own sentences, then each sentence module's in the page's order."""
        busy, run_time, instances, placement = _busy(view), _run_time(view), _instances(view), _host_placement(view)
        peer_rows, peer_lines = _peers(view, peers)
        scenarios = {op: _scenario(view, op, family.caption) for op, family in FAMILIES.items()
                     if family.kind in ("scenario", "concurrent") and (view.rows["op"] == op).any()}
        pinning = pinning_break_even(view)  # its verdicts, once: the table's, and a change's condition cites them
        even, (listed, unresolved, glance) = break_even_table(view, pinning), first_screen(view, pinning)
        cited = even is not None and any(change.spec.key == "pinned-source" for change in listed)
        plan, line, machine = (RecordedPlan.of_fingerprint(view.fingerprint), machine_line(view.machine_info),
                               machine_table(view.machine_info) + placement)
        return cls(
            view=view, machine_line=line, busy=busy, run_time=run_time, instances=instances,
            drift=drift_text.statement(view), changes=listed, unresolved=unresolved, break_even=even,
            break_even_line=f"{even['summary']}." if even is not None and cited else None, findings=findings(view),
            glance=glance, why=why_measured(view, {change.spec.key for change in listed}), model=fit_table(view),
            peer_plan=peer_plan_sentences(plan, view.rows) if plan else [], peer_rows=peer_rows, peer_lines=peer_lines,
            ladders=[(ladder_text.title(ladder), ladder.top.path + (f", {ladder.run}" if len(view.sources) > 1 else ""),
                      ladder_text.rows(ladder)) for ladder in view.ladders],
            ladder_table=ladder_text.ladder_table(view), figures=figure_words(view),
            same_code=same_code(view, "its table and .cpu()'s"),
            cliff=cliff_note(view.cliff, view) if view.cliff is not None else None, scenarios=scenarios,
            machine=machine)


#: The least wait a busy run with no tick reads (``load.blocks.LONGEST``): 3/4 of the longest tick.
_LONG_WAIT = format_seconds(0.75 * LONGEST)


def _busy(view: RunView) -> str | None:
    """A warning where the run recorded more load than cores (``busy_load``): its times carry the neighbours' work;
    and where rounds waited for the CPU (analyze/load/blocks.py), how many cases, and what of it."""
    on_ticks = ticked(view.rows)  # blocks left out for lying on the ticks: the appendix names them (svg.rounds_text)
    on, off = int(on_ticks.sum()), int(view.waits_off_ticks.sum())  # off the multiples: judged as waits too (RunView.ratio)
    if on_ticks.any():
        tick = format_seconds(float(view.rows.loc[on_ticks, "on_ticks"].max()))
        said = [f"{count(on, 'case')} whose median holds the wait, on the scheduler's {tick} ticks or far past "
                "their fastest round",
                f"{off} more of one call a round, 3/4 of a tick or more past their fastest (no β fitted)" if off else ""]
    else:  # no tick to read a wait by (load.blocks.run_tick): a busy run's waits are read by the longest
        said = [f"{count(off, 'case')} whose median round stood past their fastest by at least {_LONG_WAIT} (3/4 "
                "of the longest scheduler tick, 10 ms) and by half that fastest round, or whose every round stood as far "
                "past a larger size's median (no tick was found: no two cases with rounds on two of its multiples); no "
                "β is fitted through them" if off else ""]
    ticks = (f" Rounds that waited for the CPU: {'; '.join(filter(None, said))}. None states a bandwidth; each took at "
             "most its median: a comparison keeps the end of its interval a wait leaves, or the order of interleaved "
             "rounds." if any(said) else "")
    if view.busy is None:
        return ticks.strip() or None
    if not any(said):  # no wait read (the busy rule's rows: none so far past their fastest)
        ticks = (" No scheduler tick was found in its rounds (two cases or more with rounds on two of its multiples), "
                 f"and no median round stood {_LONG_WAIT} past its fastest: a median may still hold "
                 "a wait.")
    return (f"Busy machine: this run recorded {view.busy}: its times carry what those processes took, and a difference "
            f"between two of its cases may be theirs.{ticks}")


def _run_time(view: RunView) -> str | None:
    """``run 2026-11-30T17:18:02``; each run's time where the rows come from several (the newest is not all)."""
    if (times := view.run_times).empty:
        return None
    return f"run {times.max()}" if len(times) == 1 else "runs " + ", ".join(f"{run} {when}" for run, when in times.items())


def _instances(view: RunView) -> str | None:
    """Which machine instance (boot) each file's figures came from, where there are several: when each ran and how
    many benchmarks it measured, why they count apart, and where a case measured in both is read from."""
    if not view.several_instances:
        return None
    every, times = view.measured, view.run_times
    runs = every["run"].astype(str)
    parts = [f"{', '.join(i.runs)} ({', '.join(str(times.get(run, 'time not recorded'))[:16] for run in i.runs)}, "
             f"{int(runs.isin(i.runs).sum())} benchmarks)" for i in view.instances]
    boots = {i.boot_id for i in view.instances}
    why = ("none recorded a boot id, so each run counts as an instance of its own" if boots == {None} else
           "their boot ids differ" if None not in boots else "some recorded no boot id")
    shared = every[~every["read"].astype(bool)]
    named = view.results.read_run
    rule = f"{named} (--read-run) where it measured them, else " if named else ""
    read = (f"; {count(len(shared), 'case')} measured in more than one {'is' if len(shared) == 1 else 'are'} read from "
            f"{rule}the run with more rounds "
            "(ties: the newest)" if not shared.empty else "")
    return (f"Machine instances: {'; '.join(parts)}: {why}; their GPU, driver, torch and CPU match (else they could not "
            f"share a page), and nothing they recorded tells them apart{read}. Figures of different "
            "instances are never divided by one another.")


def _peers(view: RunView, figures: list[PeerFigure] | None) -> tuple[list[dict[str, Any]], list[str]]:
    """The other tools' figures beside the suite's: the table's rows and its lines (none without such files)."""
    if not figures:
        return [], []
    from .other_tools import peer_table  # loaded only where such files were given

    return peer_table(view, figures)


def _scenario(view: RunView, op: str, caption: str) -> tuple[str, str]:
    """A scenario's findings in one paragraph, and its caption with what it says of a variant the run did not measure
    replaced by saying so."""
    variants = view.variants(op)
    for (family_op, variant), (first, last, instead) in _UNMEASURED.items():
        if family_op == op and variant not in variants and first in caption:
            start = caption.index(first)
            caption = caption[:start] + instead + (caption[caption.index(last, start) + len(last):] if last else "")
    waited = view.rows[(view.rows["op"] == op) & view.waited_for_cpu]  # the quick run's placement: 304 ms, 236 fastest
    said = ", ".join(f"{row['variant']} at {format_bytes(int(row['nbytes']))}"
                     for _, row in waited.sort_values("nbytes", kind="stable").iterrows())
    waits = [f"Rounds that waited for the CPU, as the notice at the top reads them (each median holds the wait): "
             f"{said}."] if said else []
    return " ".join([*scenario_findings(view, op), *waits]), caption


def _host_placement(view: RunView) -> list[tuple[str, str]]:
    """Where the h2d and d2h cases' host buffers sat (``RunView.host_placement``), where the run says."""
    if (placement := view.host_placement) is None:
        return []
    nodes = "; ".join(f"{gpu}: node {', '.join(str(n) for n in found) or '?'}" for gpu, found in placement.nodes.items())
    said = [f"on each GPU's NUMA node, as nvbandwidth places them ({nodes})"] if placement.placed else []
    if placement.unplaced:
        said.append(f"{count(placement.unplaced, 'case')} where the GPU's node was unknown or off limits ran where the "
                    "process did")
    if placement.spilled:
        said.append(f"{count(placement.spilled, 'case')} spilled: a page of the buffer sat off the GPU's node (that node full)")
    return [("h2d / d2h host buffers", "; ".join(said))] if said else []

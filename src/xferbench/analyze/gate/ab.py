"""Interleaved A/B runs on one machine: is environment B slower than A?

``xferbench ab --base CMD --head CMD --blocks K`` runs the two benchmark commands
(say two tox environments pinned to two torch versions) in K blocks, each block
running both in a random order, so slow drift of the machine (a neighbour's job,
thermal state) hits both sides alike (randomized multiple interleaved trials,
Abedi & Brecht). Each block gives one log ratio per case; over the blocks a
Wilcoxon signed-rank test (scipy) asks whether they are centred on zero, and the
Hodges-Lehmann estimate (the median of the Walsh averages) says by how much, with
its distribution-free 95% interval. A case flagged (p < alpha and beyond its floor)
is confirmed on ``confirm`` fresh blocks, tested one-sided in the direction found,
before it counts: one lucky draw among many cases does not fail the job.

The commands are run by a shell; each must write pytest-benchmark JSON to the path
given as ``{json}`` in it, or ``--benchmark-json=PATH`` is appended. That path is new for
each command, in a folder of its own that exists only while the command runs: one side
cannot write the other's result, and each block is kept (``--keep``) only once every
command has run, so none can change a block after it was judged. A command that runs
past ``timeout`` seconds is stopped with everything it started. What differs
between the two sides' machine descriptions (torch, CUDA, driver, ...) is said beside
the verdicts: that difference is usually what the A/B is about. What ab refuses is a
rule of compare's shape (``compare.Refusal``), each kind in one ordered list, compare's
own rules where the check is the same: ``ASKED`` before any block runs, ``compare.OUTPUT_REFUSALS``
for what it writes, ``BLOCK_REFUSALS`` after each block. No torch here.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shlex
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import wilcoxon

from ... import escape
from ...contract import environment_differences, hardware_differences
from ...output import write_atomic
from ...units import format_bytes
from ..load.results import Results, ResultsError, load
from .compare import Refusal, Refused, SameClock, SameSimulation, Sides, markdown_table, refusal, strict, text_table
from .noise import run_times
from .verdicts import CANT_TELL, IMPROVEMENT, NOT_CONFIRMED, NOT_GATED, REGRESSION, UNCHANGED, Verdicted, rank
from .verdicts import of as verdict_of

__all__ = ["AB_ALPHA", "AB_FLOOR", "ASKED", "BLOCK_REFUSALS", "STARTS", "AbCase", "AbRun", "Blocks", "Flagged", "Runner",
           "ab_run", "flagged_of", "hodges_lehmann", "run_command", "selection_file", "signed_rank",
           "sides_differ", "suspect", "to_json", "to_markdown", "to_text", "with_selection"]

#: Significance level of the signed-rank test, for the first blocks and again for the fresh ones.
AB_ALPHA = 0.05

#: Smallest change that counts in A/B mode: interleaving cancels drift, so smaller than compare's.
AB_FLOOR = {"bandwidth": 0.10, "latency": 0.25}

#: Runs one command into one JSON file and loads it.
Runner = Callable[[str, Path], Results]

#: How ab's written files begin (compare.Outputs: an existing file that begins otherwise is never replaced).
STARTS = {"--json": '{\n "alpha"', "--markdown": "### xferbench A/B"}


@dataclass(frozen=True)
class Blocks:
    """The blocks an A/B is asked to run: ``blocks`` interleaved ones, then ``confirm`` fresh ones for a flagged case."""

    blocks: int
    confirm: int


class EnoughBlocks(Refusal[Blocks]):
    """Fewer than 6 blocks: the signed-rank test cannot reach p < 0.05, so nothing could ever be flagged."""

    def fails(self, asked: Blocks) -> str | None:
        return (f"--blocks {asked.blocks}: at least 6 blocks are needed for the signed-rank test to reach p < 0.05"
                if asked.blocks < 6 else None)


class FreshBlocks(Refusal[Blocks]):
    """A negative number of confirming blocks."""

    def fails(self, asked: Blocks) -> str | None:
        return f"--confirm {asked.confirm}: give the number of fresh blocks, 0 or more" if asked.confirm < 0 else None


#: What ab refuses before any block runs, in the order checked: the first that fails is the one said.
ASKED: list[Refusal[Blocks]] = [EnoughBlocks(), FreshBlocks()]

#: compare's refusals that hold for every block too, checked after each: a simulated side against a measured one
#: (no flag allows it), then sides timed by different clocks. Other hardware is said beside the verdicts instead.
BLOCK_REFUSALS: list[Refusal[Sides]] = [SameSimulation(), SameClock()]


class CommandFailed(ResultsError):
    """A benchmark command failed; the message is one line."""


#: How long one benchmark command may run before it is stopped (``--timeout``): a full GPU run takes under an hour.
DEFAULT_TIMEOUT = 4 * 3600.0


def run_command(command: str, out: Path, timeout: float | None = DEFAULT_TIMEOUT) -> Results:
    """Run ``command`` (a shell line) so that it writes pytest-benchmark JSON to ``out``, a path no file holds yet;
    load it. Stopped, with every process it started, after ``timeout`` seconds."""
    if out.exists() or out.is_symlink():
        raise CommandFailed(f"{out}: already exists; a command's result is read only from a path it wrote")
    line = command.replace("{json}", shlex.quote(str(out))) if "{json}" in command else (
        f"{command} --benchmark-json={shlex.quote(str(out))}")
    proc = subprocess.Popen(line, shell=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            errors="replace", start_new_session=True)  # its own group: stopped as a whole
    try:
        stdout, stderr = _output(proc, timeout)
    except subprocess.TimeoutExpired:
        _stop(proc)
        raise CommandFailed(f"{command!r} ran past --timeout {timeout:g} s; stopped") from None
    except BaseException:  # Ctrl-C: the command's group does not get the terminal's signal
        _stop(proc)
        raise
    if proc.returncode != 0 or not out.exists():
        tail = (stderr or stdout).strip().splitlines()[-1:] or ["no output"]
        raise CommandFailed(f"{command!r} failed (exit {proc.returncode}): {escape.terminal(tail[0][:200])}")
    return load([out])


#: Seconds the pipes are still read once the command has ended or been stopped: a process it left in a session of
#: its own (``setsid server &``), out of reach of its group's kill, may hold them open for ever.
DRAIN_S = 5.0


def _output(proc: subprocess.Popen[str], timeout: float | None) -> tuple[str, str]:
    """The command's stdout and stderr once it has ended and they are closed, or ``DRAIN_S`` after it ended (what a
    process it left behind writes then is not read); TimeoutExpired once ``timeout`` seconds have passed."""
    deadline = None if timeout is None else time.monotonic() + timeout
    ended: float | None = None
    while True:
        step = 1.0 if deadline is None else max(0.0, min(1.0, deadline - time.monotonic()))
        try:
            return proc.communicate(timeout=step)
        except subprocess.TimeoutExpired:
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                raise
            if proc.poll() is not None:
                ended = ended if ended is not None else now
                if now - ended >= DRAIN_S:
                    _close(proc)
                    return "", ""


def _stop(proc: subprocess.Popen[str]) -> None:
    """Kill the command's group, then read its pipes for ``DRAIN_S`` at most: a process in a session of its own
    survives the kill and may hold them."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    try:
        proc.communicate(timeout=DRAIN_S)
    except subprocess.TimeoutExpired:
        _close(proc)


def _close(proc: subprocess.Popen[str]) -> None:
    """Stop reading the command's pipes, and reap it."""
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    proc.wait()


def hodges_lehmann(x: Sequence[float] | np.ndarray) -> tuple[float, float, float]:
    """Hodges-Lehmann estimate of the centre of ``x`` with its ~95% interval.

    The estimate is the median of the Walsh averages (x_i + x_j) / 2, i <= j; the
    interval's ends are the Walsh averages at the signed-rank test's normal-
    approximation critical ranks (the whole range when there are too few blocks).
    """
    v = np.asarray(x, dtype=float)
    i, j = np.triu_indices(v.size)
    walsh = np.sort((v[i] + v[j]) / 2)
    n = v.size
    k = max(math.floor(n * (n + 1) / 4 - 1.96 * math.sqrt(n * (n + 1) * (2 * n + 1) / 24)), 0)
    return float(np.median(walsh)), float(walsh[k]), float(walsh[-k - 1])


def signed_rank(x: Sequence[float] | np.ndarray, alternative: str = "two-sided") -> float:
    """Wilcoxon signed-rank p-value of ``x`` centred on 0 (1.0 when every value is 0)."""
    v = np.asarray(x, dtype=float)
    return float(wilcoxon(v, alternative=alternative).pvalue) if np.any(v != 0) else 1.0


@dataclass(frozen=True)
class AbCase(Verdicted):
    """One case over the blocks: head/base ratio (HL) with its interval, and the verdict."""

    path: str
    nbytes: int
    case_class: str
    blocks: int
    ratio: float
    low: float
    high: float
    p_value: float
    confirm_p: float | None  # on the fresh blocks, one-sided; None if not flagged
    verdict: str  # regression, improvement, not confirmed, unchanged


@dataclass(frozen=True)
class Flagged:
    """The cases an earlier ``compare --json`` sends ab (``--only``): their identities, judged here, and their test
    names, which ``{select}`` in a command turns into ``--xfer-only=FILE``, a file of them (``selection_file``)."""

    keys: frozenset[str]
    names: tuple[str, ...]


def suspect(case: dict[str, Any]) -> bool:
    """A case of compare's JSON to run again in interleaved blocks: a regression; a case the stored runs cannot gate
    (on a busy 2-core runner a 2x slowdown of a 64 MiB copy read 1.08x faster against them); one compare could not
    tell that is slower (stored runs spread over days may be too loose to tell; base and head side by side meet the
    same load); and one whose baseline a lasting step moved slower (stored runs may fake such a step: beside the
    base, a regression hidden by it shows)."""
    verdict, ratio, moved = case["verdict"], case["ratio"], case.get("moved")
    slower = verdict == CANT_TELL and ratio is not None and ratio > 1
    return verdict in (REGRESSION, NOT_GATED) or slower or (moved is not None and moved > 1)


def flagged_of(text: str, source: str) -> Flagged:
    """The suspect cases of a comparison's JSON; ResultsError for anything compare did not write."""
    try:
        cases = [c for c in json.loads(text)["cases"] if suspect(c)]
        return Flagged(frozenset(str(c["key"]) for c in cases), tuple(dict.fromkeys(str(c["name"]) for c in cases)))
    except (RecursionError, ValueError, KeyError, TypeError):
        raise ResultsError(f"{source}: not a comparison written by xferbench compare --json "
                           "(this version's: each case names its identity and test, 'key' and 'name')") from None


def selection_file(flagged: Flagged, folder: Path) -> Path:
    """The flagged cases' test names, one a line, in a file of ``folder`` for ``--xfer-only``; ResultsError for a name
    that is no test's (a line break in it would name two)."""
    if any(not name.strip() or "\n" in name or "\r" in name for name in flagged.names):
        raise ResultsError("a case to confirm has no test name, or one across lines; ab selects tests by name")
    path = folder / "only.txt"
    path.write_text("".join(f"{name}\n" for name in flagged.names), encoding="utf-8")
    return path.resolve()


def with_selection(command: str, selection: Path | None) -> str:
    """``command`` with ``{select}`` made ``--xfer-only=FILE`` (shell-quoted), running only the cases ``selection``
    names (nothing without ``--only``)."""
    return command.replace("{select}", "" if selection is None else "--xfer-only=" + shlex.quote(str(selection)))


def _blocks(base: Sequence[Results], head: Sequence[Results],
            only: frozenset[str] | None = None) -> tuple[np.ndarray, list[str], list[str], list[int]]:
    """Per-block log ratios (cases x blocks) of the cases both sides ran in every block (of ``only``, when given)."""
    table_b, meta = run_times(base)
    table_h, _ = run_times(head)
    common = table_b.index.intersection(table_h.index)
    if only is not None:
        common = common[common.isin(list(only))]
    ratios = (table_h.loc[common] - table_b.loc[common]).dropna()
    if only is not None and (missed := sorted(only - set(ratios.index))):  # sent and not run: never left out in silence
        paths = [str(meta.at[k, "path"]) if k in meta.index else k for k in missed]
        raise ResultsError(f"{len(missed)} case(s) --only sends were not run by both commands in every block: "
                           + ", ".join(paths[:5]) + (", ..." if len(paths) > 5 else ""))
    if ratios.empty:
        raise ResultsError("the base and head commands ran no case in common in every block")
    meta = meta.loc[ratios.index]
    return (ratios.to_numpy(), [str(p) for p in meta["path"]], [str(c) for c in meta["class"]], [int(n) for n in meta["nbytes"]])


def _run_blocks(base_cmd: str, head_cmd: str, blocks: int, rng: np.random.Generator, kept: list[tuple[str, bytes]],
                first: int, runner: Runner, say: Callable[[str], None],
                kept_from: int = 0) -> tuple[list[Results], list[Results]]:
    bases, heads = list[Results](), list[Results]()
    for block in range(first, first + blocks):
        order = ("base", "head") if rng.random() < 0.5 else ("head", "base")
        for side in order:
            name = f"block{kept_from + block:03d}-{side}.json"
            (bases if side == "base" else heads).append(_private(runner, base_cmd if side == "base" else head_cmd, name, kept))
        if why := refusal(Sides([bases[-1]], [heads[-1]], names=("base", "head")), BLOCK_REFUSALS):
            raise Refused(why)
        say(f"block {block + 1}: ran {order[0]} then {order[1]}")
    return bases, heads


def _private(runner: Runner, command: str, name: str, kept: list[tuple[str, bytes]]) -> Results:
    """One command run into a folder of its own, created now and removed after: what it wrote, and nothing another
    command put there, is its result; the bytes are kept for ``--keep``."""
    with tempfile.TemporaryDirectory(prefix="xferbench-ab-") as folder:
        out = Path(folder) / name
        result = runner(command, out)
        if out.is_file() and not out.is_symlink():
            kept.append((name, out.read_bytes()))
    return result


def _keep(workdir: Path, kept: list[tuple[str, bytes]]) -> None:
    """Every block's JSON into ``workdir``, once no command runs any more; a name taken meanwhile is never replaced."""
    for name, raw in kept:
        write_atomic(workdir / name, raw, exclusive=True)


@dataclass(frozen=True)
class AbRun:
    """An A/B comparison: every case's verdict, and what differs between the two sides' machines."""

    cases: list[AbCase]
    differences: list[str] = field(default_factory=list)  # e.g. "torch 2.12.0 → 2.13.0"


def sides_differ(base: Sequence[Results], head: Sequence[Results]) -> list[str]:
    """What differs between the newest run of each side: hardware first (it should not), then software."""
    a, b = base[-1].machine_info, head[-1].machine_info
    return hardware_differences(a, b) + environment_differences(a, b)


def ab_run(base_cmd: str, head_cmd: str, blocks: int, workdir: Path, confirm: int | None = None,
           floor: float | None = None, alpha: float = AB_ALPHA, seed: int | None = None,
           runner: Runner = run_command, say: Callable[[str], None] = lambda _: None,
           only: frozenset[str] | None = None) -> AbRun:
    """Run the interleaved blocks (and the confirming ones), judge every case (of ``only``; worst verdicts first), with
    what differs between the two sides; Refused (a ValueError) for what ``ASKED`` refuses.
    ``only``: the case identities to judge (the cases a comparison flagged, ``--only``), the others left out."""
    confirm = blocks if confirm is None else confirm
    if why := refusal(Blocks(blocks, confirm), ASKED):
        raise Refused(why)
    rng = np.random.default_rng(seed)
    workdir.mkdir(parents=True, exist_ok=True)
    # An earlier comparison's blocks in the same folder are kept, not overwritten (nor, were a
    # command to write nothing, read back as this one's): this one's are numbered after them.
    kept_from = 1 + max((int(m.group(1)) for p in workdir.glob("block*-*.json")
                         if (m := re.fullmatch(r"block(\d+)-(?:base|head)\.json", p.name))), default=-1)
    kept: list[tuple[str, bytes]] = []
    try:
        return _judged(base_cmd, head_cmd, blocks, confirm, floor, alpha, rng, kept, runner, say, kept_from, only)
    finally:
        _keep(workdir, kept)


def _judged(base_cmd: str, head_cmd: str, blocks: int, confirm: int, floor: float | None, alpha: float,
            rng: np.random.Generator, kept: list[tuple[str, bytes]], runner: Runner, say: Callable[[str], None],
            kept_from: int, only: frozenset[str] | None = None) -> AbRun:
    bases, heads = _run_blocks(base_cmd, head_cmd, blocks, rng, kept, 0, runner, say, kept_from)
    ratios, paths, classes, sizes = _blocks(bases, heads, only)
    first = []
    for row, cls in zip(ratios, classes, strict=True):
        hl, low, high = hodges_lehmann(row)
        limit = math.log1p(floor if floor is not None else AB_FLOOR[cls])
        first.append((hl, low, high, signed_rank(row), abs(hl) > limit and signed_rank(row) < alpha, limit))
    flagged = [i for i, f in enumerate(first) if f[4]]
    confirm_p: dict[int, float] = {}
    if flagged and confirm > 0:
        say(f"{len(flagged)} case(s) flagged; confirming on {confirm} fresh block(s)")
        more_b, more_h = _run_blocks(base_cmd, head_cmd, confirm, rng, kept, blocks, runner, say, kept_from)
        fresh, fresh_paths, _, fresh_sizes = _blocks(more_b, more_h, only)
        where = {(p, n): i for i, (p, n) in enumerate(zip(fresh_paths, fresh_sizes, strict=True))}
        for i in flagged:
            j = where.get((paths[i], sizes[i]))
            confirm_p[i] = signed_rank(fresh[j], "greater" if first[i][0] > 0 else "less") if j is not None else 1.0
    cases = []
    for i, (hl, low, high, p, is_flagged, limit) in enumerate(first):
        if not is_flagged:  # "unchanged" only where the interval rules out a change past the floor (1.73x in 0.68-2.22x)
            verdict = UNCHANGED if -limit <= low and high <= limit else CANT_TELL
        elif confirm > 0 and confirm_p[i] >= alpha:
            verdict = NOT_CONFIRMED
        else:
            verdict = REGRESSION if hl > 0 else IMPROVEMENT
        cases.append(AbCase(paths[i], sizes[i], classes[i], ratios.shape[1], math.exp(hl), math.exp(low),
                            math.exp(high), p, confirm_p.get(i), verdict))
    return AbRun(by_verdict(cases), sides_differ(bases, heads))


def by_verdict(cases: list[AbCase]) -> list[AbCase]:
    """What needs a look first: regressions, improvements, unconfirmed flags, then the rest (``verdicts.TABLE``'s
    order); slowest first within."""
    return sorted(cases, key=lambda c: (rank(c.verdict), -c.ratio))


_HEAD = ["case", "size", "class", "head/base (HL)", "95% CI", "p", "confirm p", "verdict"]


def _cells(c: AbCase) -> list[str]:
    return [escape.terminal(c.path), format_bytes(c.nbytes), c.case_class, f"{c.ratio:.3f}x", f"{c.low:.3f}-{c.high:.3f}x",
            f"{c.p_value:.2g}", "-" if c.confirm_p is None else f"{c.confirm_p:.2g}", c.verdict]


def _summary(cases: list[AbCase], alpha: float) -> str:
    return (f"{sum(c.regression for c in cases)} confirmed regression(s) in {len(cases)} case(s) over "
            f"{cases[0].blocks if cases else 0} interleaved blocks "
            f"(Wilcoxon signed-rank p < {alpha:g} and beyond the floor, then again on fresh blocks)")


def _differ_line(differences: Sequence[str], clean: Callable[[object], str] = escape.terminal) -> str:
    return ("What differs between the two sides: " + ", ".join(map(clean, differences)) if differences
            else "The two sides ran on the same machine and software (as far as their runs record).")


def to_text(cases: list[AbCase], alpha: float = AB_ALPHA, differences: Sequence[str] | None = None) -> str:
    lines = text_table([_HEAD, *map(_cells, cases)])
    return "\n".join([*lines, "", _summary(cases, alpha), *([] if differences is None else [_differ_line(differences)])])


def to_markdown(run: AbRun, alpha: float = AB_ALPHA) -> str:
    """The A/B as a PR comment, in compare's format: heading, summary, what differs, table with icons."""
    lines = ["### xferbench A/B", "", _summary(run.cases, alpha), "", _differ_line(run.differences, escape.markdown), ""]
    lines += markdown_table(_HEAD, [_cells(c) for c in run.cases], [verdict_of(c.verdict).icon for c in run.cases])
    return "\n".join(lines) + "\n"


def to_json(run: AbRun, alpha: float = AB_ALPHA) -> str:
    """The A/B as strict JSON: alpha, counts, what differs, every case's fields."""
    payload = {"alpha": alpha, "blocks": run.cases[0].blocks if run.cases else 0,
               "regressions": sum(c.regression for c in run.cases), "differences": run.differences,
               "cases": [{k: strict(v) for k, v in asdict(c).items()} for c in run.cases]}
    return json.dumps(payload, indent=1, allow_nan=False)

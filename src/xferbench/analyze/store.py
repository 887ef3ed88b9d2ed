"""A home for runs between CI jobs: a plain folder, or a branch of a git repository.

An ephemeral runner starts from an empty checkout, so the baseline ``compare`` needs
must live somewhere else. ``push`` adds runs to a store folder, ``pull`` brings one machine's
runs back as a folder ``compare`` and ``history`` read. Like github-action-benchmark's
gh-pages branch, a git store is a branch of the project's own repository: ``pull`` fetches it
through the checkout's remote (so the runner's credentials apply); to add runs, the branch's tip
is checked out into a folder, pushed to, committed and pushed with git (as the example workflow
does, where git alone holds the token). Its tip holds:

    index.html                  the dashboard: one line per machine
    machines/<machine>/*.json   that machine's runs, the ``keep`` the store received last
    machines/<machine>/received.txt  their file names in the order the store received them
    machines/<machine>/index.html  the newest run's report with a trend for every path

A machine is its hardware (GPUs, CPU, simulated or not): a torch, CUDA or driver
upgrade on the same box stays in the same folder, so the trend shows the step it made.
Retention keeps the ``keep`` runs of a machine the store received last (never by a run's own date, which its file
may fake; never a run being pushed) on the branch's tip; older ones
stay in the branch's git history (a plain folder loses them).

A store may be shared and its branch written by others, so nothing in it is trusted: a store
that holds a symbolic link is refused (no operation follows one out of the store), ``pull``
writes only plain files of ``machines/<machine>/`` and only below its ``-o`` folder, a
machine's ``machine.txt`` is read as data (escaped, and a damaged one is said, not fatal),
and ``--remote`` is never taken for an option of git.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..contract import machine_differences, machine_identity
from ..escape import terminal
from ..output import never_foreign, write_atomic
from ..units import format_bytes
from .gate.comment import MIN_COMMENT, comment
from .gate.noise import run_times
from .load.history import Stored, load_storage
from .load.results import MAX_RUN_BYTES, Results, ResultsError, bounded_read, load, read_text
from .report.dashboard import damaged_summary, index_page, trend_caption
from .report.history import draw_trend, history_plots, ratio_axis, run_ticks
from .report.svg import Plot, as_plot, subplots

__all__ = ["DEFAULT_BRANCH", "DEFAULT_KEEP", "MIN_COMMENT", "StoreError", "comment", "dashboard", "machine_folder",
           "parse_store", "path_trends", "pull", "push"]

DEFAULT_BRANCH = "xferbench-data"
#: Runs kept per machine on the store's tip: enough for trends and a baseline (compare uses the newest 20).
DEFAULT_KEEP = 100
MACHINES = "machines"
#: A machine folder's list of its runs in the order the store received them: what retention keeps the newest of.
RECEIVED = "received.txt"
#: The hardware part of a run's identity: what makes a store folder.
HARDWARE = ("GPUs", "CPU", "simulated")
#: Seconds one git command may take: a remote that never answers (``fd::``, a dead host) must not hold a CI job.
GIT_TIMEOUT_S = 300.0
#: A name in the store's tree (a machine folder, a run): letters, digits, dot, dash, underscore; never ``.`` or ``..``.
_SAFE_NAME = re.compile(r"(?!\.{1,2}$)[A-Za-z0-9._-]{1,200}")


class StoreError(ValueError):
    """A store that cannot be used (git failed, a bad location); one line."""


@dataclass(frozen=True)
class Location:
    """A plain folder (``folder``), or ``branch`` of the repository ``repo`` through ``remote``."""

    folder: Path | None = None
    branch: str = DEFAULT_BRANCH
    remote: str = "origin"
    repo: Path = Path(".")


def parse_store(text: str, remote: str = "origin", repo: Path = Path(".")) -> Location:
    """``git:BRANCH`` (a branch of ``repo``'s ``remote``) or a folder."""
    if text.startswith("git:"):
        branch = text[4:] or DEFAULT_BRANCH
        parts = branch.split("/")
        # A plain branch name as git check-ref-format takes it: HEAD, refs/... (refs/heads/main is the project's
        # main branch) or an empty or .lock component would push to something else, or fail halfway.
        if not re.fullmatch(r"[A-Za-z0-9._/-]+", branch) or branch.startswith("-") or ".." in branch \
                or branch == "HEAD" or parts[0] == "refs" \
                or any(not part or part.startswith(".") or part.endswith(".lock") for part in parts):
            raise StoreError(f"{text}: not a branch name")
        if not remote or remote.startswith("-") or re.search(r"[\x00-\x1f\x7f]", remote):
            raise StoreError(f"--remote {remote!r:.80}: not a remote's name or URL (one starting with '-' would be "
                             "read by git as an option)")
        if re.match(r"[A-Za-z][A-Za-z0-9+.-]*::", remote):
            raise StoreError(f"--remote {remote!r:.80}: a transport helper (fd::, ext::) is no store's remote: "
                             "give a remote's name or URL")
        return Location(branch=branch, remote=remote, repo=repo)
    return Location(folder=Path(text))


def machine_folder(machine_info: dict[str, Any]) -> str:
    """A readable, stable folder name for the run's hardware, e.g. ``NVIDIA-H200-x1-Intel-Xeon-1a2b3c4d``."""
    identity = machine_identity(machine_info)
    hardware = {key: identity[key] for key in HARDWARE}
    gpus = [str(g) for g in hardware["GPUs"] or []]
    words = [*(f"{gpus[0]}-x{len(gpus)}" for _ in gpus[:1]), str(hardware["CPU"] or "cpu"),
             *(["simulated"] if hardware["simulated"] else [])]
    slug = re.sub(r"[^A-Za-z0-9]+", "-", "-".join(words)).strip("-")[:60]
    digest = hashlib.sha256(json.dumps(hardware, sort_keys=True, default=str).encode()).hexdigest()[:8]
    return f"{slug}-{digest}"


def _stored_name(path: Path, data: dict[str, Any], raw: bytes) -> str:
    """``<datetime>-<commit>-<content hash>.json``: sorts by time, and the same run stored twice is one file."""
    when = re.sub(r"[^0-9T]", "", str(data.get("datetime") or ""))[:15] or "undated"
    commit = data.get("commit_info") or {}
    short = str(commit.get("id") or "nocommit")[:10] if isinstance(commit, dict) else "nocommit"
    suffix = ".json.gz" if path.name.endswith(".gz") else ".json"
    return f"{when}-{re.sub(r'[^A-Za-z0-9]', '', short)}-{hashlib.sha256(raw).hexdigest()[:8]}{suffix}"


def _checked_run(path: Path) -> tuple[Results, dict[str, Any], bytes]:
    """A finished run's results, JSON and bytes; journals (a run that may not have finished) are refused."""
    if path.is_dir() or path.name.endswith(".jsonl"):
        raise StoreError(f"{path}: give a finished run's --benchmark-json file (not a folder or a journal)")
    results = load([path])
    if results.incomplete:
        raise StoreError(f"{path}: an incomplete run is no baseline; not stored")
    return results, json.loads(read_text(path)), path.read_bytes()


def no_links(root: Path) -> None:
    """Refuse a store holding a symbolic link where it reads or writes: the index, or anywhere below ``machines/``, at
    any depth (the dashboard reads ``machines/<m>/sub/x.json`` too). Writing through one (a run, a page, retention's
    deletions) would reach outside the store; reading through one would publish a file of the machine."""
    places = [root / "index.html", root / MACHINES]
    machines = root / MACHINES
    if machines.is_dir() and not machines.is_symlink():
        for folder, subfolders, files in os.walk(machines):  # never follows a link: each is seen as an entry
            places += [Path(folder) / name for name in (*subfolders, *files)]
    for place in places:
        if place.is_symlink():
            raise StoreError(f"{place.relative_to(root)}: a symbolic link in the store; refusing to follow it out of "
                             "the store (remove it)")


def add_runs(root: Path, runs: list[Path], keep: int) -> tuple[list[str], list[str]]:
    """Copy runs into ``root/machines/<machine>/`` and apply retention; (stored paths, machine folders touched)."""
    no_links(root)
    stored, touched = [], []
    for path in runs:
        results, data, raw = _checked_run(path)
        folder = root / MACHINES / machine_folder(results.machine_info)
        target = folder / _stored_name(path, data, raw)
        if not target.exists():  # the same bytes under the same name: already stored
            write_atomic(target, raw)
        stored.append(str(target.relative_to(root)))
        touched.append(folder.name)
    for name in dict.fromkeys(touched):
        _retain(root / MACHINES / name, keep, {Path(s).name for s in stored if Path(s).parent.name == name})
    return [name for name in stored if (root / name).exists()], list(dict.fromkeys(touched))


def _received(folder: Path) -> list[str]:
    """The run files of a machine's folder in the order the store received them: those its ``received.txt`` does not
    list (a store older than it, or a hand-copied run) first, by name, then the listed ones in the listed order.
    Never a run's own date: it is whatever its file says (a run dated 2999 would outlive every later one)."""
    present = sorted(p.name for p in folder.iterdir() if p.name.endswith((".json", ".json.gz")) and p.is_file())
    try:
        listed = bounded_read(folder / RECEIVED, MAX_RUN_BYTES).decode("utf-8", "replace").split("\n") \
            if (folder / RECEIVED).is_file() else []
    except ResultsError:  # another job's file, so data only: a damaged one orders nothing
        listed = []
    order = list(dict.fromkeys(name for name in listed if name in present))
    return [name for name in present if name not in order] + order


def _retain(folder: Path, keep: int, pushed: set[str]) -> None:
    """Keep the ``keep`` runs of one machine's folder the store received last, and every run being pushed (``pushed``
    are received now, at the end); the order is written to ``received.txt`` for the next push."""
    order = sorted(_received(folder), key=lambda name: name in pushed)  # stable: the pushed runs last, each in order
    older = [name for name in order if name not in pushed]
    for name in older[:max(0, len(order) - keep)]:
        (folder / name).unlink()
        order.remove(name)
    write_atomic(folder / RECEIVED, "".join(f"{name}\n" for name in order))


def pull_runs(root: Path, output: Path, machine: str | None) -> int:
    """Copy the runs of one machine (or of every machine, one folder each) from ``root`` into ``output``."""
    no_links(root)
    source = root / MACHINES
    folders = [source / machine] if machine else sorted(p for p in source.glob("*") if p.is_dir())
    runs = [path for folder in folders if folder.is_dir() for path in sorted([*folder.glob("*.json"), *folder.glob("*.json.gz")])]
    return sum(path.is_file() and _copied(output, path.parent.name if machine is None else None, path.name,
                                          lambda path=path: bounded_read(path)) for path in runs)


def _copied(output: Path, machine: str | None, name: str, raw: Any) -> bool:
    """Write one stored run into ``output`` (under ``machine/`` when given), never outside it; False for a name that
    is no store's (``..``, a slash, odd characters), which is skipped."""
    if not _SAFE_NAME.fullmatch(name) or (machine is not None and not _SAFE_NAME.fullmatch(machine)):
        return False
    target = output / machine / name if machine else output / name
    inside = os.path.realpath(output)
    if os.path.commonpath([inside, os.path.realpath(target)]) != inside:
        raise StoreError(f"{target}: a link in {output} leads outside it; refusing to write there")
    if not target.exists():
        write_atomic(target, raw())
    return True


# --- git -------------------------------------------------------------------------------------------------------


#: Settings of every git command: no transport that runs a command (``ext::``), whatever the user's config says.
_GIT_SAFETY = ("-c", "protocol.ext.allow=never")


def _git(repo: Path, *args: str) -> str:
    try:
        done = subprocess.run(["git", *_GIT_SAFETY, "-C", str(repo), *args], capture_output=True, text=True,
                              env={**os.environ, "GIT_TERMINAL_PROMPT": "0"}, errors="replace", timeout=GIT_TIMEOUT_S)
    except FileNotFoundError:
        raise StoreError("git is not installed; give a folder as the store instead") from None
    except subprocess.TimeoutExpired:  # a remote that never answers: a CI job must not wait for ever
        raise StoreError(f"git {args[0]} took longer than {GIT_TIMEOUT_S:g} s; is the remote reachable?") from None
    if done.returncode != 0:
        raise StoreError(f"git {args[0]} failed: {_reason(done.stderr)}")
    return done.stdout


def _reason(stderr: str) -> str:
    """git's own words on why it failed, on one line: its first ``fatal:``/``error:`` line (the cause; the lines after
    it are advice, such as "...and the repository exists."), else its last."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()] or ["(no message)"]
    return next((line for line in lines if line.startswith(("fatal:", "error:"))), lines[-1])[:500]


def _fetch(where: Location) -> str | None:
    """Fetch the store branch's tip into a private ref; that ref, or None when the branch does not exist yet."""
    ref = f"refs/xferbench/{os.getpid()}/{where.branch}"  # each process its own: jobs may share one checkout
    heads = _git(where.repo, "ls-remote", "--heads", where.remote, f"refs/heads/{where.branch}")
    if not heads.strip():
        return None
    _git(where.repo, "fetch", "-q", "--depth=1", where.remote, f"+refs/heads/{where.branch}:{ref}")
    return ref


def push(where: Location, runs: list[Path], keep: int = DEFAULT_KEEP, with_dashboard: bool = True,
         force: bool = False) -> list[str]:
    """Store ``runs`` in a folder store (a git store's branch is checked out into a folder, pushed to, committed and
    pushed with git, as the example workflow does)."""
    if where.folder is None:
        raise StoreError(f"git:{where.branch}: push writes to a folder; check the branch out into one, push to it, "
                         "then commit and push it with git (examples/github-actions-gpu.yml does)")
    if keep < 1:
        raise StoreError(f"--keep {keep}: keep at least one run per machine")
    for path in runs:  # every run checked before anything is written
        _checked_run(path)
    if with_dashboard:  # before a run is added: ``store push docs`` must not replace the user's docs/index.html
        never_foreign(where.folder / "index.html", "page", str(where.folder / "index.html"), force)
    stored, touched = add_runs(where.folder, runs, keep)
    if with_dashboard:
        dashboard(where.folder, touched, force=True)
    return stored


def pull(where: Location, output: Path, machine_of: Path | None = None) -> int:
    """Copy runs into ``output`` (one machine's with ``machine_of``, else a folder per machine); how many."""
    machine = machine_folder(load([machine_of]).machine_info) if machine_of else None
    output.mkdir(parents=True, exist_ok=True)
    if where.folder is not None:
        if not where.folder.is_dir():
            raise StoreError(f"{where.folder}: no such folder")
        return pull_runs(where.folder, output, machine)
    if (ref := _fetch(where)) is None:
        return 0
    try:
        return _pull_tree(where, ref, output, machine)
    finally:
        subprocess.run(["git", "-C", str(where.repo), "update-ref", "-d", ref], capture_output=True)


def _pull_tree(where: Location, ref: str, output: Path, machine: str | None) -> int:
    prefix = f"{MACHINES}/{machine}/" if machine else f"{MACHINES}/"
    count = 0
    for entry in _git(where.repo, "ls-tree", "-r", "-z", "--full-tree", ref, "--", prefix).split("\0"):
        meta, _, name = entry.partition("\t")
        parts = name.split("/")
        # Only plain files of machines/<machine>/: a link (120000), a submodule (commit) or a path that leaves the
        # folder (machines/../x.json, made with git mktree) is no run of the store.
        if (len(meta.split()) != 3 or meta.split()[:2] not in (["100644", "blob"], ["100755", "blob"])
                or len(parts) != 3 or parts[0] != MACHINES or not name.endswith((".json", ".json.gz"))):
            continue
        blob = meta.split()[2]
        if int(_git(where.repo, "cat-file", "-s", blob)) > MAX_RUN_BYTES:
            continue
        count += _copied(output, None if machine else parts[1], parts[2], lambda blob=blob: _blob(where.repo, blob))
    return count


def _blob(repo: Path, blob: str) -> bytes:
    return subprocess.run(["git", *_GIT_SAFETY, "-C", str(repo), "cat-file", "blob", blob], capture_output=True,
                          check=True).stdout


# --- dashboard -------------------------------------------------------------------------------------------------


def path_trends(runs: list[Results]) -> list[Plot]:
    """One trend per path (every size a line, each its own colour and marker), each run's value as compare judges it
    (the median round of a bandwidth-bound case, the fastest of a latency-bound one), relative to the first run that
    measured the case, on a log axis; a triangle marks a lasting step, a band each level's run-to-run noise, and a
    dotted line where the software environment (torch, CUDA, driver) changed."""
    if len(runs) < 2:
        return []
    table, meta = run_times(runs)
    changes = [(i, "; ".join(d)) for i in range(1, len(runs))
               if (d := machine_differences(runs[i - 1].machine_info, runs[i].machine_info))]
    names = [Path(r.sources[0]) for r in runs]
    plots: list[Plot] = []
    for path, cases in meta.groupby("path", sort=True):
        fig, ax = subplots(figsize=(9, 3))
        for index, (key, case) in enumerate(cases.sort_values("nbytes").iterrows()):
            known = table.loc[key].dropna()
            draw_trend(ax, [int(i) for i in known.index], np.exp(known.to_numpy(dtype=float)), str(case["class"]), index,
                       format_bytes(int(case["nbytes"])))
        for i, what in changes:
            ax.axvline(i - 0.5, color="k", ls=":", lw=1)
            ax.annotate(what, (i - 0.5, 1), xycoords=("data", "axes fraction"), fontsize=6, rotation=90, va="top", ha="right")
        ax.axhline(100, color="k", lw=0.5)
        ratio_axis(ax, "% of first run")
        run_ticks(ax, names)
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1))
        ax.grid(True, alpha=0.3)
        plots.append(as_plot(f"trend-{len(plots)}", f"Trend: {path}", trend_caption(str(path), len(runs), len(changes)), fig))
    return plots


def _summary(folder: Path, stored: Stored) -> dict[str, Any]:
    return {"machine": folder.name, "runs": len(stored.summaries), "newest": stored.summaries[-1].datetime,
            "identity": {k: v for k, v in machine_identity(stored.newest.machine_info).items() if v is not None}}


def dashboard(root: Path, machines: list[str] | None = None, force: bool = False) -> Path:
    """(Re)write each given machine's page (all when None) and the index (one xferbench did not write only with
    ``force``); returns the index."""
    from .report.page import write_report

    no_links(root)
    never_foreign(root / "index.html", "page", str(root / "index.html"), force)  # replaced only when xferbench wrote it
    base = root / MACHINES
    names = machines if machines is not None else sorted(p.name for p in base.glob("*") if p.is_dir())
    for name in names:
        folder = base / name
        # Each run parsed once for the trends, the per-path trends and the page.
        try:
            stored = load_storage(folder, keep=True)
        except ResultsError as error:  # a folder left empty (or only damaged runs): the other machines' pages stand
            _say(root, f"{error}; its page is not written")
            continue
        for note in stored.notes:  # a damaged run skipped: said at every push, until someone removes it
            _say(root, note)
        history = history_plots(folder, stored) + path_trends(stored.runs)
        write_report(stored.newest, folder / "index.html", history=history)
        write_atomic(folder / "machine.txt", json.dumps(_summary(folder, stored), indent=1))
    rows = [(folder.name, *_machine_row(folder / "machine.txt"))
            for folder in sorted(p for p in base.glob("*") if (p / "machine.txt").exists())]
    write_atomic(root / "index.html", index_page(MACHINES, rows))
    return root / "index.html"


def _say(root: Path, note: str) -> None:
    """One line on stderr about the store's content, its paths relative to the store."""
    print(f"xferbench store: {terminal(note.replace(str(root) + os.sep, ''))}", file=sys.stderr)


def _machine_row(path: Path) -> tuple[str, str, str]:
    """A machine's line of the index from its ``machine.txt`` (another job's, so data only): its run count, newest
    run and identity as text; a file that is not what ``_summary`` writes says so in the row."""
    try:
        info = json.loads(bounded_read(path, 2**20))
    except (ResultsError, ValueError, RecursionError):
        info = None
    identity = info.get("identity") if isinstance(info, dict) else None
    if not isinstance(info, dict) or type(info.get("runs")) is not int or not isinstance(info.get("newest"), str) \
            or not isinstance(identity, dict):
        return "?", "?", damaged_summary(path.name)
    return str(info["runs"]), info["newest"], ", ".join(f"{k} {v}" for k, v in identity.items())

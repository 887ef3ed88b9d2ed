"""The command line's arguments: the argparse parser of every ``xferbench`` command, its help and its defaults.

docs/commands.md is written from this parser (tools/reference_docs.py); cli.py runs what it parses.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["DEFAULT_NOISE", "DEFAULT_OUTPUT", "DEFAULT_TIMEOUT", "DESCRIPTION", "Command", "parser_for"]

#: The parser's description: not ``__doc__``, which ``python -OO`` (PYTHONOPTIMIZE=2) strips.
DESCRIPTION = "Report and compare xferbench's pytest-benchmark runs."

#: Where ``report`` writes unless told; its folder is created (an explicit ``-o`` folder must exist).
DEFAULT_OUTPUT = Path("reports/index.html")
#: How long ``ab`` and ``calibrate --run`` let one benchmark command run (analyze/gate/ab.py's, kept in step).
DEFAULT_TIMEOUT = 4 * 3600.0
#: Where ``calibrate`` writes unless told; its folder is created too.
DEFAULT_NOISE = Path("reports/noise.json")
#: ``--force``: an existing output xferbench did not write is refused without it (output.py's ``never_foreign``).
FORCE = "replace an existing output that xferbench did not write"

#: What runs a command: its parsed arguments in, its exit status out.
Command = Callable[[argparse.Namespace], int]


def parser_for(commands: Mapping[str, Command]) -> argparse.ArgumentParser:
    """The parser of every command, each set to run ``commands[its name]`` (the CLI's functions: passed in, so that
    this module never imports the CLI that imports it)."""
    parser = argparse.ArgumentParser(prog="xferbench", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the benchmarks shipped in the package from any folder (pytest --pyargs "
                                     "xferbench.bench --benchmark-only); any other argument goes to pytest")
    run.add_argument("-o", "--output", type=Path, required=True, help="the run's JSON (pytest-benchmark's "
                                                                      "--benchmark-json); an existing one is refused, "
                                                                      "also one written there during the run")
    run.add_argument("--force", action="store_true", help="replace an existing -o file (its results are lost)")
    report = sub.add_parser("report", help="write one self-contained HTML page (and a CSV and a Markdown summary "
                                           "beside it) from pytest-benchmark JSON")
    report.add_argument("results", nargs="+", type=Path,
                        help="JSON files, or a pytest-benchmark storage folder (its newest run, the rest as history); "
                             "the same machine's nvbandwidth -j JSON and nccl-tests outputs are shown beside")
    report.add_argument("-o", "--output", type=Path,
                        help=f"the HTML page; X.csv and X.md are written beside it (default: {DEFAULT_OUTPUT})")
    report.add_argument("--history", type=Path, help="a pytest-benchmark storage folder to draw trends from")
    report.add_argument("--trace", type=Path, metavar="TRACE", help="a torch.profiler trace of your step: a section "
                                                                       "pricing its copies with this run (as xferbench price)")
    report.add_argument("--read-run", metavar="RUN",
                        help="a case measured in several files: read this run's (a file's name without .json; "
                             "where files share a name, its path: a/run.json), not the one with more rounds (ties: "
                             "the newest)")

    report.add_argument("--force", action="store_true", help=FORCE)

    comp = sub.add_parser("compare", help="compare runs; exit 1 on a significant regression beyond the case's floor, "
                                          "or on a case not gated")
    comp.add_argument("base", type=Path, help="the baseline: a JSON run, or a storage folder (its newest runs, "
                                              "which also give this machine's run-to-run spread)")
    comp.add_argument("new", type=Path, help="the candidate: a JSON run, or a folder of runs")
    comp.add_argument("--noise", type=Path, metavar="FILE", help="per-case spread and floors from xferbench calibrate")
    comp.add_argument("--threshold", default=None, metavar="FLOOR",
                      help="one floor for every case, e.g. 10%% (default: by case class, or from --noise)")
    comp.add_argument("--confirm", type=Path, metavar="FILE", help="an earlier comparison's --json: only cases it "
                                                                   "flagged too count (for fresh runs)")
    comp.add_argument("--markdown", type=Path, metavar="FILE", help="also write a Markdown table (for a PR comment)")
    comp.add_argument("--json", type=Path, metavar="FILE", help="also write the comparison as JSON")
    comp.add_argument("--allow-different-machines", action="store_true",
                      help="compare runs from different GPUs, drivers or torch versions")
    comp.add_argument("--allow-not-gated", action="store_true",
                      help="exit 0 when cases are not gated (their runs support no floor) and none regressed")

    cal = sub.add_parser("calibrate", help="learn this machine's run-to-run noise from A/A runs; write it for compare")
    cal.add_argument("runs", type=Path, help="a folder of A/A runs (the same code, run after run)")
    cal.add_argument("-o", "--output", type=Path, default=DEFAULT_NOISE, help="default: %(default)s")
    cal.add_argument("--run", dest="aa_command", metavar="CMD",
                     help="first run CMD (a pytest-benchmark command) --times times into the folder")
    cal.add_argument("--times", type=int, default=10, help="A/A runs --run makes (default: %(default)s)")
    cal.add_argument("--target", type=float, default=0.05,
                     help="false-alarm rate per comparison to keep under, per case class (default: %(default)s)")
    cal.add_argument("--per-side", type=int, default=1, help="runs on each side of the comparisons you will make "
                                                             "(default: %(default)s)")
    cal.add_argument("--force", action="store_true", help=FORCE)
    cal.add_argument("--note", default="", help="where and at what load the A/A runs were made (kept)")
    cal.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    cal.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                     help="stop an A/A run that takes longer (default: %(default)g)")

    ab = sub.add_parser("ab", help="run two benchmark commands in interleaved blocks; exit 1 on a confirmed regression")
    ab.add_argument("--base", required=True, metavar="CMD", help="the baseline command (a shell line running pytest-benchmark)")
    ab.add_argument("--head", required=True, metavar="CMD", help="the candidate command")
    ab.add_argument("--blocks", type=int, default=8, help="blocks, each running both in random order (default: %(default)s)")
    ab.add_argument("--confirm", type=int, default=None, help="fresh blocks to confirm a flagged case (default: --blocks)")
    ab.add_argument("--floor", default=None, help="smallest change that counts (default: 10%% bandwidth-bound, 25%% others)")
    ab.add_argument("--keep", type=Path, default=Path("reports/ab"), help="where each block's JSON is kept "
                                                                          "(default: %(default)s)")
    ab.add_argument("--seed", type=int, default=None, help="seed of the block order")
    ab.add_argument("--only", type=Path, metavar="FILE", help="an earlier comparison's --json: judge only what it sends "
                    "(regressions, cases not gated, slower ones it could not tell); {select} in a command becomes "
                    "--xfer-only=F, a file of their test names")
    ab.add_argument("--markdown", type=Path, metavar="FILE", help="also write a Markdown table (for a PR comment)")
    ab.add_argument("--json", type=Path, metavar="FILE", help="also write the verdicts as JSON")
    ab.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                    help="stop a command that takes longer; exit 2 (default: %(default)g)")


    price = sub.add_parser("price", help="what the copies and syncs of a torch.profiler trace cost, priced with a run's "
                                         "fits, and what each fix saves")
    price.add_argument("trace", type=Path, help="the trace: .json, .json.gz or .pt.trace.json (Kineto's Chrome trace)")
    price.add_argument("runs", nargs="*", type=Path, metavar="RUN",
                       help="the run to price with (pytest-benchmark JSON); none: the trace's own times, no prices")
    price.add_argument("--step", type=int, help="only ProfilerStep#N (default: every step)")
    price.add_argument("--json", type=Path, metavar="FILE", help="also write the groups as JSON (docs/contract.md)")
    _store_parser(sub)
    sub.add_parser("info", help="print the devices and the machine fingerprint (needs torch)")
    for name, command in sub.choices.items():
        command.set_defaults(run=commands[name])
    return parser


def _store_parser(sub: Any) -> None:
    """``xferbench store push|pull|dashboard|comment``: the baseline's home between CI jobs (analyze/store.py)."""
    store = sub.add_parser("store", help="keep runs between CI jobs in a folder or a git branch, with a dashboard")
    actions = store.add_subparsers(dest="action", required=True)
    push = actions.add_parser("push", help="add runs to a store folder (a folder per machine), keep the newest --keep, "
                                           "rewrite the dashboard")
    push.add_argument("store", help="the store folder (a git store's branch checked out, then committed and pushed with git)")
    push.add_argument("runs", nargs="+", type=Path, help="pytest-benchmark JSON files of finished runs")
    push.add_argument("--keep", type=int, default=100, help="runs kept per machine (default: %(default)s)")
    push.add_argument("--no-dashboard", action="store_true", help="do not rewrite the dashboard pages")
    pull = actions.add_parser("pull", help="copy stored runs into a folder, for compare and history")
    pull.add_argument("store", help="a folder, or git:BRANCH (a branch of this repository's --remote, e.g. git:xferbench-data)")
    pull.add_argument("-o", "--output", type=Path, required=True, help="the folder to copy the runs into")
    pull.add_argument("--machine-of", type=Path, metavar="RUN",
                      help="only the runs of this run's machine (default: every machine, a folder each)")
    board = actions.add_parser("dashboard", help="rewrite the dashboard of a folder store")
    board.add_argument("store", help="the store folder")
    for action in (push, board):
        action.add_argument("--force", action="store_true", help="replace a folder store's index.html that xferbench "
                                                                 "did not write")
    pull.add_argument("--remote", default="origin", help="the git remote of git:BRANCH (default: origin)")
    note = actions.add_parser("comment", help="a compare --markdown table cut to fit one PR comment, with a marker")
    note.add_argument("markdown", type=Path, help="compare's --markdown file")
    note.add_argument("-o", "--output", type=Path, required=True)
    note.add_argument("--limit", type=int, default=60_000, help="characters at most (GitHub's limit is 65,536)")
    note.add_argument("--more", default="", help="where the full table is (e.g. the artifact's link)")
    machine = actions.add_parser("machine", help="the store's folder name of a run's machine (where its runs, and "
                                                 "the workflow's noise/<machine>.json, are kept)")
    machine.add_argument("run_json", metavar="RUN", type=Path, help="a pytest-benchmark JSON of the machine")

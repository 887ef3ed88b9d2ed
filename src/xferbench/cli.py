"""``xferbench report | compare | history | check | info``.

Exit codes scripts can trust: 0 ok, 1 a regression was found, 2 bad input.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .analyze.results import ResultsError

__all__ = ["main"]


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


def _report(args: argparse.Namespace) -> int:
    from .analyze.history import history_plots
    from .analyze.peers import kind_of, load_peers
    from .analyze.report import companions, write_report
    from .analyze.results import load

    # The suite's JSON and the other tools' outputs may come in any order; each is told apart by content.
    kinds = [(path, kind_of(path)) for path in args.results]
    suite = [path for path, kind in kinds if kind == "suite"]
    peers = load_peers([path for path, kind in kinds if kind != "suite"])
    if not suite:
        raise UsageError("no xferbench results given: nvbandwidth and nccl-tests outputs are shown beside a "
                         "pytest-benchmark JSON of the suite, not alone")
    inputs = {path.resolve() for path in args.results}
    if args.output.suffix in (".csv", ".md", ".json") or any(
            target.resolve() in inputs for target in (args.output, *companions(args.output))):
        raise UsageError(f"-o {args.output}: the report is an HTML file, and neither it nor its .csv and .md "
                         "companions may replace an input")
    history = history_plots(args.history) if args.history else None
    if history is None and len(suite) == 1 and suite[0].is_dir():
        # A storage folder: report its newest run, draw trends over all of them.
        history = history_plots(suite[0])
        results = load([latest_file(suite[0])])
    else:
        results = load(suite)
    path = write_report(results, args.output, history=history, peers=peers)
    csv_path, markdown_path = companions(path)
    print(f"xferbench: wrote {path} ({len(results.frame)} benchmarks), {csv_path} and {markdown_path}")
    return 0


def _history(args: argparse.Namespace) -> int:
    args.results, args.history = [args.folder], None
    return _report(args)


def _compare(args: argparse.Namespace) -> int:
    from .analyze.compare import compare, parse_threshold, to_json, to_markdown, to_text
    from .analyze.results import load
    from .contract import machine_differences, simulation_mismatch
    from .output import write_atomic

    try:
        threshold = parse_threshold(args.threshold)
    except ValueError as error:
        raise UsageError(f"--threshold: {error}") from None
    base, new = (load([_newest(p)]) for p in (args.base, args.new))
    mismatch = simulation_mismatch(base.machine_info, new.machine_info)
    if mismatch:  # whatever --allow-different-machines says
        raise UsageError(mismatch)
    differences = machine_differences(base.machine_info, new.machine_info)
    if differences and not args.allow_different_machines:
        raise UsageError("the runs come from different machines (" + "; ".join(differences)
                         + "); pass --allow-different-machines to compare anyway")
    try:
        rows = compare(base, new, threshold, args.stat)
    except ValueError as error:
        raise UsageError(str(error)) from None
    if differences:
        print("xferbench compare: comparing across machines: " + "; ".join(differences))
    print(to_text(rows, threshold))
    if args.markdown:
        write_atomic(args.markdown, to_markdown(rows, threshold, differences))
    if args.json:
        write_atomic(args.json, to_json(rows, threshold))
    return 1 if any(r.regression for r in rows) else 0


def _check(args: argparse.Namespace) -> int:
    from .analyze.expectations import check
    from .analyze.results import load

    results = load(args.results)
    verdicts = check(results)
    width = max(len(v.name) for v in verdicts)
    label = "simulated " if results.simulated else ""
    if results.simulated:
        print("xferbench check: a SIMULATED run (--xfer-simulate): these verdicts read back a machine spec, "
              "not measurements")
    for v in verdicts:
        print(f"{label + v.status:>{12 + len(label)}}  {v.name:<{width}}  {v.detail}")
    return 1 if any(v.status == "not held" for v in verdicts) else 0


def _info(args: argparse.Namespace) -> int:
    import json

    from .measure.devices import TorchBackend, available_devices
    from .measure.machine import fingerprint

    backend = TorchBackend()
    print(json.dumps({"devices": available_devices(backend), "xferbench": fingerprint(backend)}, indent=1))
    return 0


def _newest(path: Path) -> Path:
    return latest_file(path) if path.is_dir() else path


def latest_file(folder: Path) -> Path:
    from .analyze.history import runs_in

    runs = runs_in(folder)
    return runs[-1][0]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="xferbench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    report = sub.add_parser("report", help="write one self-contained HTML page (and a CSV and a Markdown summary "
                                           "beside it) from pytest-benchmark JSON")
    report.add_argument("results", nargs="+", type=Path,
                        help="JSON files, or a pytest-benchmark storage folder (its newest run is reported, "
                             "with every run as history); nvbandwidth -j JSON and nccl-tests text outputs of the "
                             "same machine may be added, and are shown beside the suite's figures")
    report.add_argument("-o", "--output", type=Path, default=Path("reports/index.html"),
                        help="the HTML page; X.csv and X.md are written beside it (default: %(default)s)")
    report.add_argument("--history", type=Path, help="a pytest-benchmark storage folder to draw trends from")
    report.set_defaults(run=_report)

    history = sub.add_parser("history", help="report the newest run of a pytest-benchmark storage folder, "
                                             "with trend plots over all its runs")
    history.add_argument("folder", type=Path, help="e.g. reports/history or .benchmarks")
    history.add_argument("-o", "--output", type=Path, default=Path("reports/index.html"), help="default: %(default)s")
    history.set_defaults(run=_history)

    comp = sub.add_parser("compare", help="compare two runs; exit 1 on a significant regression")
    comp.add_argument("base", type=Path, help="the baseline JSON (or storage folder: its newest run)")
    comp.add_argument("new", type=Path, help="the candidate JSON (or storage folder: its newest run)")
    comp.add_argument("--threshold", default="10%", help="slowdown that counts, e.g. 10%% or 0.1 (default: %(default)s)")
    comp.add_argument("--stat", choices=["median", "min", "mean"], default="median", help="default: %(default)s")
    comp.add_argument("--markdown", type=Path, metavar="FILE", help="also write a Markdown table (for a PR comment)")
    comp.add_argument("--json", type=Path, metavar="FILE", help="also write the comparison as JSON")
    comp.add_argument("--allow-different-machines", action="store_true",
                      help="compare runs from different GPUs, drivers or torch versions")
    comp.set_defaults(run=_compare)

    check = sub.add_parser("check", help="what a GPU run should show, each held / not held / not measured; "
                                         "exit 1 if one is not held")
    check.add_argument("results", nargs="+", type=Path, help="pytest-benchmark JSON files")
    check.set_defaults(run=_check)

    info = sub.add_parser("info", help="print the devices and the machine fingerprint (needs torch)")
    info.set_defaults(run=_info)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (ResultsError, UsageError) as error:
        print(f"xferbench {args.command}: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

"""``xferbench run | report | compare | calibrate | ab | price | store | info``.

Exit codes scripts can trust: 0 ok, 1 a regression was found (compare: or a case not gated), 2 bad input, 3 an unexpected
error (a bug of xferbench: never read as a regression), 130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from .cli_arguments import DEFAULT_NOISE, DEFAULT_OUTPUT, parser_for
from .escape import terminal
from .output import RUN_OUTPUT, OutputError, check_output, in_storage, never_foreign, write_atomic

if TYPE_CHECKING:
    from .analyze.gate.compare import Sides

__all__ = ["main"]


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


#: The exit code of an unexpected error: 1 would read as "regression found".
CRASHED = 3


@contextlib.contextmanager
def _said(prefix: str, *errors: type[Exception]) -> Iterator[None]:
    """``errors`` raised in the block, as a one-line UsageError that begins with ``prefix``."""
    try:
        yield
    except errors as error:
        raise UsageError(f"{prefix}{error}") from None


def _report(args: argparse.Namespace) -> int:
    from .analyze.report.page import companions, write_report
    from .analyze.view import RunView

    output = _report_output(args)
    suite, peers = _inputs(args.results)
    results, history = _run_and_history(args, suite)
    _say(args.command, results.incomplete)
    view = RunView.of(results)  # the run's facts, derived once
    path = write_report(view, output, history=history, peers=peers, extra_sections=_trace_section(args, view))
    csv_path, markdown_path = companions(path)
    print(f"xferbench: wrote {path} ({view.benchmark_count} benchmarks), {csv_path} and {markdown_path}")
    return 0


def _report_output(args: argparse.Namespace) -> Path:
    """The page's path, refused before anything is read where it or its companions would replace an input, a file
    the suite did not write, or cannot be written; its folder is made when missing (``-o site/index.html``)."""
    from .analyze.report.page import companions

    given = [*args.results, *[path for path in (args.history, args.trace) if path]]
    output = args.output or DEFAULT_OUTPUT
    if output.suffix.lower() in (".csv", ".md", ".json", ".jsonl", ".gz"):
        raise UsageError(f"-o {output}: the report is an HTML file (not a results file, a journal or its own .csv and .md)")
    for target in (output, *companions(output)):  # neither the page nor a companion may be an input (check_output)
        check_output(target, given, create_folder=True)
        never_foreign(target, "report", f"-o {output}", args.force)  # README.md beside -o README.html: the user's
    return output


def _inputs(paths: list[Path]) -> tuple[list[Any], list[Any]]:
    """The suite's results (each file parsed once) and the other tools' figures, given in any order: each file is
    told apart by content."""
    from .analyze.report.inputs import classify

    kinds = [(path, *classify(path)) for path in paths]
    suite = [document or path for path, kind, document in kinds if kind == "suite"]
    if not suite:
        raise UsageError("no xferbench results given: nvbandwidth and nccl-tests outputs are shown beside a "
                         "pytest-benchmark JSON of the suite, not alone")
    if not (others := [path for path, kind, _ in kinds if kind != "suite"]):
        return suite, []
    from .analyze.report.other_tools import load_peers

    return suite, load_peers(others)


def _run_and_history(args: argparse.Namespace, suite: list[Any]) -> tuple[Any, Any]:
    """The run to report, and the trends of --history (or of the storage folder given as the run)."""
    from .analyze.load.history import load_storage
    from .analyze.load.results import load
    from .analyze.report.history import history_plots

    history, stored = None, None
    if args.history:
        stored = load_storage(args.history, _progress(args.command))
        _say(args.command, stored.notes, sys.stderr)
        history = history_plots(args.history, stored)
    if not (len(suite) == 1 and isinstance(suite[0], Path) and suite[0].is_dir()):
        return load(suite, args.read_run), history
    # A storage folder: report its newest run (never all its runs merged), draw trends over all of them;
    # each file is read once, also when it is the --history folder too.
    if stored is None or not os.path.samefile(args.history, suite[0]):
        stored = load_storage(suite[0], _progress(args.command))
        _say(args.command, stored.notes, sys.stderr)
    return stored.newest, history or history_plots(suite[0], stored)


def _trace_section(args: argparse.Namespace, view: Any) -> list[dict[str, Any]]:
    """``report --trace``: the trace's copies priced with the run, as a section of the page."""
    if args.trace is None:
        return []
    from .analyze.report.trace_section import section
    from .analyze.trace.parser import TraceError
    from .analyze.trace.pricing import price

    with _said(f"--trace {args.trace}: ", TraceError):
        return [section(price(args.trace, view))]


def _price(args: argparse.Namespace) -> int:
    from .analyze.load.results import load
    from .analyze.report.trace_section import to_json, to_text
    from .analyze.trace.parser import TraceError
    from .analyze.trace.pricing import price
    from .analyze.view import RunView

    if args.json:
        check_output(args.json, [args.trace, *args.runs])
    view = RunView.of(load(args.runs)) if args.runs else None
    with _said(f"{args.trace}: ", TraceError):
        priced = price(args.trace, view, args.step)
    print("\n".join(terminal(line) for line in to_text(priced).splitlines()))
    if args.json:
        write_atomic(args.json, to_json(priced))
    return 0


def _progress(command: str) -> Callable[[int, int], None]:
    """Reading a storage folder of thousands of runs takes a while: every tenth of it, one line on stderr."""
    def say(done: int, total: int) -> None:
        if total >= PROGRESS_FROM and done % max(1, total // 10) == 0:
            print(f"xferbench {command}: read {done} of {total} runs", file=sys.stderr, flush=True)

    return say


#: Folders of at least this many runs show progress while they are read.
PROGRESS_FROM = 500


def _say(command: str, lines: list[str], stream: TextIO | None = None) -> None:
    """Each line after the command's name. On stdout (the default, looked up at each print): an interrupted run's
    labels, reported but never silently. On stderr: a storage folder's damaged or foreign files, the rest used."""
    for line in lines:
        print(f"xferbench {command}: {terminal(line)}", file=stream)


#: The plugin and the benchmarks ``xferbench run`` gives pytest: the package's own, found from any folder.
RUN_ARGS = ("-p", "xferbench.measure.session.plugin", "--pyargs", "xferbench.bench", "--benchmark-only")
#: pytest started without the folder it runs in on sys.path (``python -m`` puts it first, so a ``pluggy.py`` or a
#: ``numpy/`` of a cloned repository there would be imported and run): Python's ``-P``, which 3.10 lacks, by hand.
PYTEST = ("-c", "import sys; sys.path[:1] = [p for p in sys.path[:1] if p]; import pytest; sys.exit(pytest.console_main())")

#: pytest's exit codes -> xferbench's: 1 a benchmark failed (a failure found); usage errors and nothing
#: collected (a -k that matches nothing) are bad input; an interruption is 130; pytest's internal error stays 3.
_PYTEST_EXIT = {0: 0, 1: 1, 2: 130, 3: CRASHED, 4: 2, 5: 2}


def _run(args: argparse.Namespace) -> int:
    """pytest writes the run into a private folder, and -o is claimed only then, by an exclusive create: a file saved
    there meanwhile, or another run's, is never replaced (this run's results go beside it, named, and exit 2)."""
    import subprocess
    import tempfile

    target = check_output(args.output, [], run=True, create_folder=True)
    if not args.force and (args.output.exists() or args.output.is_symlink()):  # pytest-benchmark would replace it
        raise UsageError(f"-o {args.output}: exists, and a run never replaces earlier results. "
                         "Choose another name, or give --force to replace it")
    if any(arg.startswith("--benchmark-json") for arg in args.pytest_args):
        raise UsageError("--benchmark-json: xferbench run writes the run to -o, which never replaces a file; give it there")
    journal = [] if any(arg.startswith("--xfer-journal") for arg in args.pytest_args) else \
        [f"--xfer-journal={args.output.with_suffix('')}.journal.jsonl"]  # beside -o, as for --benchmark-json
    args.output.parent.mkdir(parents=True, exist_ok=True)  # as for a report: -o runs/x.json in a new folder
    with tempfile.TemporaryDirectory(prefix="xferbench-run-") as private:
        pending = Path(private) / target.name
        command = [sys.executable, *PYTEST, *RUN_ARGS, f"--benchmark-json={pending}", *journal, *args.pytest_args]
        print("xferbench run: pytest " + " ".join(command[3:]), file=sys.stderr)
        env = os.environ | {RUN_OUTPUT: str(target)}  # the run's summary names the file the run ends in
        code = _PYTEST_EXIT.get(subprocess.run(command, check=False, env=env).returncode, CRASHED)
        if not pending.exists():
            return code
        written = write_atomic(target, pending.read_bytes(), exclusive=not args.force)
    print(f"xferbench run: wrote {written}")  # pytest-benchmark named the private file it wrote first
    if written != target:
        print(f"xferbench run: -o {args.output}: another file took that name during the run; this run is {written}",
              file=sys.stderr)
    return code or (2 if written != target else 0)


def _compare(args: argparse.Namespace) -> int:
    from .analyze.gate.compare import STARTS, busy_notes, compare, plan_notes, reproduced, to_json, to_markdown, to_text
    from .analyze.gate.verdicts import NOT_GATED

    floor = parse_threshold_arg(args.threshold or None, "--threshold")
    _refuse_outputs(args, [args.base, args.new, *filter(None, (args.noise, args.confirm))], STARTS)
    from .analyze.load.results import ResultsError

    sides, differences, said = _compared_sides(args)
    base, new, noise = sides.base, sides.new, sides.noise
    try:
        rows = compare(base, new, noise, floor)
    except ResultsError:
        raise
    except ValueError as error:
        raise UsageError(f"{args.new}: {error}") from None
    if args.confirm:
        rows = reproduced(rows, _small_input(args.confirm), str(args.confirm))
    _say(args.command, said)
    notes, sizes = busy_notes(base, new) + plan_notes(base, new), (len(base), len(new))
    print(to_text(rows, *sizes, noise, notes))
    for path, text in ((args.markdown, lambda: to_markdown(rows, *sizes, noise, differences, notes)),
                       (args.json, lambda: to_json(rows, *sizes, noise, notes))):
        if path:
            write_atomic(path, text())
    ungated = not args.allow_not_gated and any(r.verdict == NOT_GATED for r in rows)
    return 1 if ungated or any(r.regression for r in rows) else 0


def _compared_sides(args: argparse.Namespace) -> tuple[Sides, list[str], list[str]]:
    """compare's runs, loaded (the candidate first: a store shared by several runners gives the baseline of the
    candidate's own hardware) and admitted by its refusals; with the hardware differences compared anyway and the
    notes to print (runs left out, a calibration of other software, machines compared across)."""
    from .analyze.gate.compare import Refused, Sides, admitted, load_runs
    from .analyze.gate.noise import Noise

    new, new_notes = load_runs(args.new)
    base, base_notes = load_runs(args.base, like=new[-1].machine_info)
    for side, runs in (("base", base), ("new", new)):
        _say(args.command, [f"{side}: {label}" for run in runs for label in run.incomplete])
    sides = Sides(base, new, lambda: Noise.from_json(_small_input(args.noise), str(args.noise)) if args.noise else None,
                  str(args.noise), args.allow_different_machines)
    with _said("", Refused):
        differences = admitted(sides)
    across = ["comparing across machines: " + "; ".join(differences)] if differences else []
    return sides, differences, [*base_notes, *sides.notes, *new_notes, *across]


#: How a store comment begins: an existing file that begins otherwise (a run, someone's notes) is never replaced.
_COMMENT_START = "<!-- xferbench"


def _refuse_outputs(args: argparse.Namespace, inputs: list[Path], starts: dict[str, str],
                    files: dict[str, Path] | None = None) -> None:
    """compare's and ab's --markdown and --json (or ``files``), checked by compare's output rules before anything
    runs."""
    from .analyze.gate.compare import OUTPUT_REFUSALS, Outputs, refusal

    if files is None:
        files = {flag: path for flag, path in (("--markdown", args.markdown), ("--json", args.json)) if path}
    if why := refusal(Outputs(files, inputs, starts), OUTPUT_REFUSALS):
        raise UsageError(why)


def _small_input(path: Path) -> str:
    """The text of a --noise or --confirm file, or a one-line UsageError (a FIFO would block the read)."""
    from .analyze.load.results import find_json, read_text

    if path.is_dir():
        raise UsageError(f"{path}: is a folder; give the file")
    return read_text(find_json(path)[0])


def _calibrate(args: argparse.Namespace) -> int:
    from .analyze.gate.compare import load_runs
    from .analyze.gate.noise import calibrate

    if not 0 < args.target < 1:
        raise UsageError(f"--target {args.target}: give a rate between 0 and 1, e.g. 0.05")
    if args.per_side < 1:
        raise UsageError(f"--per-side {args.per_side}: give the runs on each side of a comparison, 1 or more")
    if args.aa_command and args.times < 1:
        raise UsageError(f"--times {args.times}: give the number of A/A runs to make, 1 or more")
    timeout = _timeout(args.timeout)
    # Before any A/A run: the noise file must not replace a run, nor land in the runs folder as one.
    with _said("-o ", OutputError):
        check_output(args.output, [args.runs], create_folder=args.output == DEFAULT_NOISE)
        never_foreign(args.output, "noise", str(args.output), args.force)
    if args.aa_command:
        args.runs.mkdir(parents=True, exist_ok=True)
        # After the highest number taken, not the count: with aa-001 deleted, aa-002 must not be overwritten.
        start = 1 + max((int(m.group(1)) for p in args.runs.glob("aa-*.json")
                         if (m := re.fullmatch(r"aa-(\d+)\.json", p.name))), default=-1)
        for i in range(start, start + args.times):
            written = _aa_run(args.aa_command, args.runs / f"aa-{i:03d}.json", timeout)
            print(f"xferbench calibrate: A/A run {i - start + 1} of {args.times} done ({written.name})")
    runs, notes = load_runs(args.runs, last=10**6)
    _say(args.command, notes)  # a damaged file's name is the run folder's, not ours
    # a cut run's missing cases would silently shrink the noise file to the cases it holds
    if cut := [label for run in runs for label in run.incomplete]:
        raise UsageError(f"{args.runs}: an A/A run did not reach its end ({cut[0]}); delete it or run it again")
    with _said(f"{args.runs}: ", ValueError):
        noise = calibrate(runs, args.target, args.per_side, seed=args.seed)
    if not noise.cases:
        raise UsageError(f"{args.runs}: the A/A runs share no case, so there is no noise to learn; "
                         "make them with the same command")
    noise.note = args.note
    write_atomic(args.output, noise.to_json())
    print(f"xferbench calibrate: {len(runs)} A/A runs, {len(noise.cases)} cases; floors {_floors(noise)}; wrote {args.output}")
    return 0


def _floors(noise: Any) -> str:
    """What a calibration learned: each class's floor and false alarms, the cases it cannot gate, those it can."""
    floors = ", ".join(f"{cls} {'not gated' if floor == float('inf') else f'{floor:.0%}'} "
                       f"(A/A false alarms {noise.false_alarm_rate[cls]:.1%})" for cls, floor in noise.floors.items())
    ungated = sum(case["floor"] == float("inf") for case in noise.cases.values())
    floors += f"; {ungated} case(s) swing too much between A/A runs to gate on this machine"
    sees = sum(case.get("smallest_change", float("inf")) <= 0.5 for case in noise.cases.values())
    floors += f"; {sees} can flag a 1.5x slowdown with {noise.per_side} run(s) a side"
    return floors + (", a flag confirmed on fresh runs (compare --confirm)" if noise.confirmed else "")


def _aa_run(command: str, target: Path, timeout: float) -> Path:
    """One A/A run: measured into a private temporary file, then claimed under ``target`` (or, if another
    calibrate took that name meanwhile, the next free one): two calibrations into one folder lose no run."""
    import tempfile

    from .analyze.gate.ab import run_command

    with tempfile.TemporaryDirectory(prefix="xferbench-aa-") as private:
        pending = Path(private) / "aa.json"
        run_command(command, pending, timeout)
        return write_atomic(target, pending.read_bytes(), exclusive=True)


def _ab(args: argparse.Namespace) -> int:
    import functools
    import tempfile

    from .analyze.gate import ab

    _refuse_outputs(args, [args.keep, *([args.only] if args.only else [])], ab.STARTS)  # before any block runs
    flagged = ab.flagged_of(_small_input(args.only), str(args.only)) if args.only else None
    if flagged is not None and not flagged.keys:
        print(f"xferbench ab: {terminal(str(args.only))} sends no case (no regression, no case not gated, none "
              "slower that it could not tell); nothing to confirm")
        return 0
    with tempfile.TemporaryDirectory(prefix="xferbench-only-") as folder:  # the tests to run, while the blocks run
        selection = ab.selection_file(flagged, Path(folder)) if flagged is not None else None
        with _said("", ValueError):
            run = ab.ab_run(ab.with_selection(args.base, selection), ab.with_selection(args.head, selection),
                            args.blocks, args.keep, args.confirm, parse_threshold_arg(args.floor), seed=args.seed,
                            runner=functools.partial(ab.run_command, timeout=_timeout(args.timeout)),
                            say=lambda line: print(f"xferbench ab: {line}", flush=True),
                            only=flagged.keys if flagged is not None else None)
    print(ab.to_text(run.cases, differences=run.differences))
    for path, text in ((args.markdown, ab.to_markdown), (args.json, ab.to_json)):
        if path:
            write_atomic(path, text(run))
    return 1 if any(c.regression for c in run.cases) else 0


def _timeout(seconds: float) -> float:
    if not seconds > 0 or seconds == float("inf"):
        raise UsageError(f"--timeout {seconds:g}: give the seconds one command may run, above 0")
    return seconds


def parse_threshold_arg(text: str | None, flag: str = "--floor") -> float | None:
    from .analyze.gate.compare import parse_threshold

    if text is None:
        return None
    with _said(f"{flag}: ", ValueError):
        return parse_threshold(text)


def _info(args: argparse.Namespace) -> int:
    import json

    try:
        import torch  # noqa: F401  (the fingerprint is torch's view of the machine)
    except ImportError as error:
        raise UsageError(f"needs torch, which cannot be imported here ({error}); pip install torch") from None
    from .measure.hardware.devices import TorchBackend, available_devices
    from .measure.hardware.machine import fingerprint

    backend = TorchBackend()
    print(json.dumps({"devices": available_devices(backend), "xferbench": fingerprint(backend)}, indent=1))
    return 0


def _store(args: argparse.Namespace) -> int:
    from .analyze import store
    from .analyze.load.results import load, read_text

    with _said("", store.StoreError):
        if args.action == "comment":
            _comment_output(args)
            write_atomic(args.output, store.comment(read_text(args.markdown), args.limit, more=args.more))
            return 0
        if args.action == "machine":
            print(store.machine_folder(load([args.run_json]).machine_info))
            return 0
        where = store.parse_store(args.store, getattr(args, "remote", "origin"))
        if args.action == "push":
            stored = store.push(where, args.runs, args.keep, not args.no_dashboard, force=args.force)
            print(f"xferbench store: {len(stored)} run(s) in {args.store} (the last {args.keep} a machine sent are kept)")
        elif args.action == "pull":
            count = store.pull(where, args.output, args.machine_of)
            print(f"xferbench store: {count} run(s) from {args.store} in {args.output}"
                  + ("" if count else " (none yet: the first run of this machine has no baseline)"))
        elif where.folder is None:
            raise UsageError("dashboard: give a folder store")
        elif not (where.folder / store.MACHINES).is_dir():
            raise UsageError(f"{where.folder}: not a store (no {store.MACHINES}/ folder in it); push runs to it first")
        else:
            print(f"xferbench store: wrote {store.dashboard(where.folder, force=args.force)}")
    return 0


def _comment_output(args: argparse.Namespace) -> None:
    """``store comment -o``: never its input, a run, a file inside a storage folder, or a file not an earlier comment."""
    from .analyze.store import MIN_COMMENT

    if args.limit < MIN_COMMENT:
        raise UsageError(f"--limit {args.limit}: give at least {MIN_COMMENT} characters (the summary and the note on "
                         "what was left out need them)")
    if args.output.name.endswith((".json", ".json.gz", ".jsonl")):
        raise UsageError(f"-o {args.output}: a comment is Markdown; a .json or .jsonl name would be read as a run")
    if (storage := in_storage(args.output)) is not None:
        raise UsageError(f"-o {args.output}: inside the storage folder {storage}; write the comment elsewhere")
    _refuse_outputs(args, [args.markdown], {"-o": _COMMENT_START}, {"-o": args.output})


def build_parser() -> argparse.ArgumentParser:
    """Every command's arguments (cli_arguments), each command run by its function here."""
    return parser_for({"run": _run, "report": _report, "compare": _compare, "calibrate": _calibrate, "ab": _ab,
                       "price": _price, "store": _store, "info": _info})


def _tolerant_output() -> None:
    """Under an ASCII or C locale (PYTHONIOENCODING=ascii, LC_ALL=C), a "µs" would raise in print() after the work
    was done and before --markdown/--json were written: what the terminal cannot show is escaped instead."""
    for stream in (sys.stdout, sys.stderr):
        # no reconfigure (a StringIO), or a closed or detached stream: nothing to protect
        with contextlib.suppress(AttributeError, ValueError, OSError):
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]


#: The commands that only read runs. numpy's OpenBLAS threads spin idle beside their small fits (7% of a report's CPU
#: time on 2 cores), so they get one; those that measure (run, ab, calibrate) keep the user's setting for benchmarks.
_READING = ("report", "compare", "price", "store", "info")


def main(argv: Sequence[str] | None = None) -> int:
    _tolerant_output()
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "run":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.pytest_args = extra  # run's: pytest's own arguments, passed on as given
    if args.command in _READING and "numpy" not in sys.modules:  # read when numpy loads, not after
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from .analyze.load.results import ResultsError

    try:
        return args.run(args)
    except (ResultsError, OutputError, UsageError) as error:
        print(f"xferbench {args.command}: {terminal(error)}", file=sys.stderr)
        return 2
    except OSError as error:  # a disk that fills, a folder made read-only while we ran
        print(f"xferbench {args.command}: {error.filename or ''}: cannot write or read it ({error.strerror})", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception:  # a bug: its traceback for the report, and an exit code no script reads as a regression
        import traceback

        traceback.print_exc()
        print(f"xferbench {args.command}: unexpected error (a bug of xferbench; exit {CRASHED}, "
              "not a regression verdict)", file=sys.stderr)
        return CRASHED


if __name__ == "__main__":
    sys.exit(main())

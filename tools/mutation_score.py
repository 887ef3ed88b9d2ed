"""Mutation score of the modules that decide what a user is told, each against its own tests.

    python tools/mutation_score.py [MODULE ...] [--max-children N] [--fail-under PCT]

For every module (default: all of ``MODULES``) mutmut mutates that one file and runs
only that module's own test file(s) against each mutant, so a module cannot borrow
its score from the tests of another. Each module runs in a fresh folder of its own
under ``mutants/`` (a copy of src/, tests/, what ``[tool.mutmut] also_copy`` names and a pyproject.toml whose ``[tool.mutmut]``
names that module and its tests), so runs of different modules never share results.
Prints one row per module (killed / total, %) and the surviving mutants, then exits 1
if a module scores below ``--fail-under``. ``mutmut show NAME`` inside
``mutants/MODULE`` prints a survivor's diff.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
#: Above this share of timeouts a module's score is refused: real hangs are a few mutants of loops.
SUSPECT_TIMEOUTS = 0.1
WORK = ROOT / "mutants"

#: tests/test_drift.py's tests of the simulated run, whose fixture is a whole benchmark session in a subprocess.
_NOT_FAR_APART = "not identical_calls_run_far_apart and not drift_t_quantile_is_the_evidence_count"
#: module name -> (the file mutated, the test files run against its mutants)
MODULES: dict[str, tuple[str, list[str]]] = {
    "units": ("src/xferbench/units.py", ["tests/test_units.py"]),
    "contract": ("src/xferbench/contract.py", ["tests/test_contract.py"]),
    "results": ("src/xferbench/analyze/load/results.py", ["tests/test_results.py", "tests/test_gzip_runs.py"]),
    "rows": ("src/xferbench/analyze/load/rows.py", ["tests/test_results.py"]),
    "model": ("src/xferbench/analyze/model.py", ["tests/test_model.py"]),
    # compare's and ab's slow tests are power studies (hundreds of comparisons, 30-40 s each) that every surviving
    # mutant would rerun: they stay in the slow tier, as in the README's test command.
    "compare": ("src/xferbench/analyze/gate/compare.py", ["tests/test_compare.py", "-m", "not slow"]),
    # A compared case and its text, Markdown and JSON: compare's own tests read every form it writes.
    "comparison": ("src/xferbench/analyze/gate/comparison.py",
                   ["tests/test_compare.py", "tests/test_escape.py", "-m", "not slow"]),
    "noise": ("src/xferbench/analyze/gate/noise.py", ["tests/test_noise.py"]),
    "ab": ("src/xferbench/analyze/gate/ab.py", ["tests/test_ab.py", "tests/test_ab_only.py", "-m", "not slow"]),
    # The verdicts' table: its own tests pin every verdict's words, order, icon and exit status exactly.
    "verdicts": ("src/xferbench/analyze/gate/verdicts.py", ["tests/test_verdicts.py"]),
    # Every comparison's own interval, which decides "A is r× B (lo-hi)" or "can't tell": exact values, hand-fed.
    "ratios": ("src/xferbench/ratios.py", ["tests/test_ratios.py"]),
    # The run's drift by regime, the margin of every unpaired comparison: hand-fed and the H200 sample. The tests on
    # the simulated run (far_apart) are left out: it is a subprocess mutmut cannot see into, 20 s for every mutant.
    "drift": ("src/xferbench/analyze/drift.py", ["tests/test_drift.py", "-k", _NOT_FAR_APART]),
    "drift_text": ("src/xferbench/analyze/report/drift_text.py", ["tests/test_drift.py", "-k", _NOT_FAR_APART]),
    # The simulated machine's spec and cost model, unit by unit: tests/test_simulate.py runs whole
    # benchmark pipelines in subprocesses (minutes per mutant, and mutmut cannot see into them).
    "simulate": ("src/xferbench/measure/simulate.py", ["tests/test_simulate_model.py"]),
    # Its runs killed midway and long runs are whole pytest processes started in a scratch folder:
    # mutmut cannot see into them, and its stats hook fails there (no pyproject.toml to read).
    "journal": ("src/xferbench/measure/record/journal.py",
                ["tests/test_journal.py", "tests/test_atomic_json.py", "-k",
                 "not TestInterruptedRun and not TestLongRun"]),
    "history": ("src/xferbench/analyze/load/history.py", ["tests/test_history.py"]),
    # The recorded plan, compare's "not compared" for peer cases one side's plan left out and the report's sentences,
    # read back word for word; the slow tests are whole simulated sessions.
    "peer_plan": ("src/xferbench/analyze/peer_plan.py", ["tests/test_peer_plan.py", "-m", "not slow"]),
    # The store's bound on a calibration's spread and floor: constructed runs (tests/test_gate_floors.py).
    "bound": ("src/xferbench/analyze/gate/bound.py", ["tests/test_gate_floors.py"]),
    # A case's blocks merged into one row; the slow tests are whole simulated sessions in subprocesses.
    "blocks": ("src/xferbench/analyze/load/blocks.py", ["tests/test_blocks.py", "-m", "not slow"]),
    # Threads against one thread: which size is told apart, its words, and where the bytes do not set the time.
    "threads": ("src/xferbench/analyze/report/threads.py", ["tests/test_expert_reading_cpu.py", "tests/test_expert_reading.py"]),
    # Whether pinning pays, size by size: hand-fed verdicts and the H200 sample's rows, its fold and its first screen.
    "break_even": ("src/xferbench/analyze/report/break_even.py",
                   ["tests/test_report_figures.py", "tests/test_h200_sample.py", "tests/test_report_claims.py",
                    "tests/test_expert_reading_h200.py", "tests/test_view.py", "-k",
                    "PinningBreakEven or break_even or cold_pin or bimodal_pin"]),
    # Which changes the first screen lists, their gains and conditions, the unresolved line and the box: the H200 and
    # CPU samples' first screens read back word for word.
    "changes": ("src/xferbench/analyze/report/changes.py",
                ["tests/test_first_screen.py", "tests/test_summary.py", "tests/test_expert_reading_cpu.py",
                 "tests/test_h200_sample.py", "-k",
                 "first_screen or change or glance or gain or summary or unresolved or paired or fix"]),
    # Where .cpu() falls off a cliff, its faults' cost, and which fresh-destination calls grew dearer per byte than
    # every reused buffer: hand-fed rows with known answers, and the H200's cliff sentences read back.
    "cliff": ("src/xferbench/analyze/cliff.py", ["tests/test_cliff.py", "tests/test_expert_reading_h200.py"]),
}


@dataclass
class Score:
    module: str
    killed: int
    total: int
    counts: dict[str, int]
    survivors: list[str]

    @property
    def percent(self) -> float:
        return 100.0 * self.killed / self.total if self.total else 0.0


def _toml_table(name: str, table: dict[str, object]) -> str:
    # JSON strings, lists, numbers and booleans are valid TOML values, which is all these tables hold.
    return f"[{name}]\n" + "".join(f"{key} = {json.dumps(value)}\n" for key, value in table.items())


def prepare(module: str) -> Path:
    """A fresh folder holding src/, tests/ and a pyproject.toml that points mutmut at ``module``."""
    source, tests = MODULES[module]
    folder = WORK / module
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]
    mutmut = dict(tool.get("mutmut", {}))
    # mutmut copies also_copy on into its own mutants/ folder: what the tests read (samples, .ci/noise.json)
    # is named once, there.
    for part in ("src", "tests", *(entry.rstrip("/") for entry in mutmut.get("also_copy", []))):
        shutil.copytree(ROOT / part, folder / part, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    mutmut.update(only_mutate=[source], pytest_add_cli_args_test_selection=tests)
    (folder / "pyproject.toml").write_text(
        _toml_table("tool.pytest.ini_options", tool["pytest"]["ini_options"]) + "\n" + _toml_table("tool.mutmut", mutmut))
    return folder


def run(module: str, max_children: int) -> Score:
    folder = prepare(module)
    # The venv may hold xferbench installed from another checkout, and PYTHONPATH may name
    # this one's src/: drop it, so that only mutmut's mutated copy (first on sys.path) is imported.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    mutmut = [sys.executable, "-m", "mutmut"]
    done = subprocess.run([*mutmut, "run", "--max-children", str(max_children)], cwd=folder, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"mutmut failed on {module} (exit {done.returncode}):\n{(done.stdout + done.stderr)[-3000:]}")
    subprocess.run([*mutmut, "export-cicd-stats"], cwd=folder, env=env, check=True, capture_output=True)
    counts = json.loads((folder / "mutants" / "mutmut-cicd-stats.json").read_text())
    listing = subprocess.run([*mutmut, "results"], cwd=folder, env=env, check=True, capture_output=True, text=True)
    # `mutmut results` lists every mutant not killed outright; a timeout counts as killed below.
    survivors = [line.strip() for line in listing.stdout.splitlines()
                 if line.strip() and not line.strip().endswith(": timeout")]
    # A timeout counts as killed (the mutant hung the tests, they noticed); skipped ones are not scored.
    tested = counts["total"] - counts["skipped"]
    return Score(module, counts["killed"] + counts["timeout"], tested,
                 {k: v for k, v in counts.items() if isinstance(v, int) and not isinstance(v, bool)}, survivors)


def _percent(text: str) -> float:
    # float() takes "nan", against which every score compares False: the gate would never fail.
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"{text!r}: give a percentage from 0 to 100")
    return value


def _children(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: at least one mutant must be tested at a time")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # Not choices=: on Python 3.11 argparse checks an empty nargs="*" list against the choices
    # and refuses a bare `tox -e mutation`.
    parser.add_argument("modules", nargs="*", metavar="MODULE",
                        help=f"modules to score (default: all of {', '.join(MODULES)})")
    parser.add_argument("--max-children", type=_children, default=2, help="mutants tested at once (default 2)")
    parser.add_argument("--fail-under", type=_percent, default=0.0, help="exit 1 if a module scores below this %%")
    args = parser.parse_args(argv)
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        parser.error(f"unknown module {', '.join(unknown)} (choose from {', '.join(MODULES)})")
    scores = []
    for module in dict.fromkeys(args.modules) or list(MODULES):  # a module named twice is scored once
        print(f"mutating {MODULES[module][0]} against {' '.join(MODULES[module][1])} ...", flush=True)
        scores.append(run(module, args.max_children))
    print(f"\n{'module':<14}{'killed':>8}{'total':>7}{'score':>8}  survived  no tests  (timeouts, counted as killed)")
    for s in scores:
        print(f"{s.module:<14}{s.killed:>8}{s.total:>7}{s.percent:>7.1f}%  {s.counts['survived']:>8}  "
              f"{s.counts['no_tests']:>8}  ({s.counts['timeout']})")
    for s in scores:
        if s.survivors:
            print(f"\n{s.module}: not killed (mutmut show NAME in mutants/{s.module})")
            print("\n".join(f"  {line}" for line in s.survivors))
    below = [s.module for s in scores if s.percent < args.fail_under]
    if below:
        print(f"\nbelow {args.fail_under:g}%: {', '.join(below)}")
    suspect = [s.module for s in scores if s.counts["timeout"] > SUSPECT_TIMEOUTS * s.total]
    if suspect:
        print(f"\nover {SUSPECT_TIMEOUTS:.0%} of mutants timed out in {', '.join(suspect)}: the score is not to be "
              "trusted (a test id that changes between runs makes mutmut's test runs fail, which it reports as "
              "timeouts; `mutmut print-time-estimates` in mutants/MODULE shows the failing command)")
    return 1 if below or suspect else 0


if __name__ == "__main__":
    sys.exit(main())

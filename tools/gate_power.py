"""Does the example workflow's gate meet its goals on this machine? Real runs of its own CPU recipe, counted.

    python tools/gate_power.py store --runs 8             # the store: 8 quick runs of this checkout
    python tools/gate_power.py trials --aa 6 --slowed 6   # pull-request jobs, A/A and slowed in turn
    python tools/gate_power.py summary [--noise FILE]     # counts, job times, loads; what a calibration changes

A trial is the pull-request job of examples/github-actions-gpu.yml on CPU: one candidate run (``xferbench run
--xfer-devices=cpu --deselect=test_distributed.py``, the quick profile), ``xferbench compare STORE candidate --json
first.json``, then, unless that is bad input, ``xferbench ab --only first.json`` with the workflow's blocks, both
sides ``xferbench run -o {json} ... {select}`` of this checkout. A slowed trial's candidate and head side run with
``XFERBENCH_TEST_SLOWDOWN=host@64MiB=2`` (the three 64 MiB host copies, the blocked reference ``clone`` among them:
docs/options.md); its base side never does. Each trial is its own candidate run and its own blocks (nothing is
resampled); the store is made once, before them. Each command's wall time and the 1-minute load average before and
after it go in POOL/log.tsv; a trial's files in POOL/trials/NN-KIND/. ``summary`` counts: false alarms (an A/A job
that fails: a regression ab confirmed, or compare's exit when ab did not run), slowed trials whose job confirmed
every slowed case, and each job's wall time; with ``--noise``, every compare verdict and every case sent to ab that
the calibration changes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
from xferbench.analyze.gate.ab import flagged_of  # noqa: E402
from xferbench.analyze.gate.compare import compare, load_runs, to_json  # noqa: E402
from xferbench.analyze.gate.noise import Noise  # noqa: E402
from xferbench.analyze.load.results import load  # noqa: E402
from xferbench.units import parse_size  # noqa: E402

SLOWDOWN = "host@64MiB=2"
XFERBENCH = f"{sys.executable} -m xferbench.cli"
#: The workflow's CPU recipe (its header): the distributed cases left out, as on any shared CPU runner.
RUN = f"{XFERBENCH} run -o {{json}} --xfer-devices=cpu --deselect=test_distributed.py {{select}}"
#: The workflow's ab blocks (and as many to confirm a flag).
BLOCKS = 6


def _env(slowed: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "XFERBENCH_TEST_SLOWDOWN"}
    env["PYTHONPATH"] = str(ROOT / "src")
    return env | ({"XFERBENCH_TEST_SLOWDOWN": SLOWDOWN} if slowed else {})


def step(pool: Path, label: str, command: str, slowed: bool = False) -> tuple[int, float]:
    """Run one shell command in ``pool`` (no project's pytest settings there); its exit status and seconds, logged
    with the load before and after it."""
    before, start = os.getloadavg()[0], time.monotonic()
    done = subprocess.run(command, shell=True, cwd=pool, env=_env(slowed), capture_output=True, text=True, check=False)
    took, after = time.monotonic() - start, os.getloadavg()[0]
    (pool / f"{label.replace('/', '-')}.out").write_text(done.stdout + done.stderr)
    with (pool / "log.tsv").open("a") as log:
        log.write(f"{time.strftime('%H:%M:%S')}\t{label}\t{done.returncode}\t{took:.0f}\t{before:.2f}\t{after:.2f}\n")
    print(f"{label}: exit {done.returncode}, {took:.0f} s, load {before:.1f} -> {after:.1f}", flush=True)
    return done.returncode, took


def make_store(pool: Path, runs: int) -> None:
    (pool / "store").mkdir(parents=True, exist_ok=True)
    first = len(list((pool / "store").glob("*.json")))
    for i in range(first, first + runs):
        step(pool, f"store/run-{i:02d}", RUN.format(json=f"store/run-{i:02d}.json", select=""))


def trial(pool: Path, index: int, slowed: bool, blocks: int) -> None:
    """One pull-request job, as the workflow runs it."""
    name = f"trials/{index:02d}-{'slowed' if slowed else 'aa'}"
    (pool / name).mkdir(parents=True)
    _, run_s = step(pool, f"{name}/candidate", RUN.format(json=f"{name}/candidate.json", select=""), slowed)
    code, compare_s = step(pool, f"{name}/compare", f"{XFERBENCH} compare store {name}/candidate.json "
                                                    f"--json {name}/first.json --markdown {name}/compare.md")
    ab_code, ab_s = None, 0.0
    if code <= 1:
        ab_code, ab_s = step(pool, f"{name}/ab", f"{XFERBENCH} ab --only {name}/first.json --blocks {blocks} "
                                                 f"--keep {name}/ab --json {name}/ab.json "
                                                 f"--markdown {name}/ab.md "
                                                 f"--base 'env -u XFERBENCH_TEST_SLOWDOWN {RUN}' --head '{RUN}'", slowed)
    outcome = {"slowed": slowed, "compare": code, "ab": ab_code, "seconds": {"run": run_s, "compare": compare_s,
                                                                               "ab": ab_s}}
    (pool / name / "trial.json").write_text(json.dumps(outcome, indent=1))


def trials(pool: Path, aa: int, slowed: int, blocks: int) -> None:
    """A/A and slowed trials in turn (interleaved, so that the machine's load hits both kinds alike)."""
    first = len(list((pool / "trials").glob("*"))) if (pool / "trials").is_dir() else 0
    kinds = [False] * aa + [True] * slowed
    order = [k for pair in zip(kinds[:aa], kinds[aa:], strict=False) for k in pair] + kinds[2 * min(aa, slowed):]
    for i, kind in enumerate(order):
        trial(pool, first + i, kind, blocks)


def _targets(candidate: Path) -> set[tuple[str, int]]:
    """The cases ``SLOWDOWN`` slows (its family's, of its size and more), as compare and ab name them."""
    family, size = SLOWDOWN.split("=")[0].split("@")
    frame = load([candidate]).frame
    hit = frame[(frame["op"] == family) & (frame["nbytes"] >= parse_size(size))]
    return {(str(p), int(n)) for p, n in zip(hit["path"], hit["nbytes"], strict=True)}


def _verdicts(folder: Path) -> tuple[set[tuple[str, int]], bool]:
    """(cases ab confirmed as regressions, whether the job failed: a confirmed regression, or bad input, where ab
    ran; else compare's exit status)."""
    outcome = json.loads((folder / "trial.json").read_text())
    cases = json.loads((folder / "ab.json").read_text())["cases"] if (folder / "ab.json").exists() else []
    confirmed = {(c["path"], c["nbytes"]) for c in cases if c["verdict"] == "regression"}
    failed = outcome["compare"] != 0 if outcome["ab"] is None else (outcome["ab"] == 2 or bool(confirmed))
    return confirmed, failed


def summary(pool: Path, noise_file: Path | None) -> None:
    folders = sorted(p for p in (pool / "trials").iterdir() if (p / "trial.json").exists())
    false_alarms, every, jobs = [], [], []
    for folder in folders:
        outcome = json.loads((folder / "trial.json").read_text())
        confirmed, failed = _verdicts(folder)
        jobs.append(sum(outcome["seconds"].values()))
        if outcome["slowed"]:
            targets = _targets(folder / "candidate.json")
            every.append(targets <= confirmed)
            print(f"{folder.name}: confirmed {sorted(confirmed & targets)} of {len(targets)} slowed; "
                  f"others confirmed {sorted(confirmed - targets)}; job {jobs[-1]:.0f} s")
        else:
            false_alarms.append(failed)
            print(f"{folder.name}: {'FAILED' if failed else 'passed'} (confirmed {sorted(confirmed)}); job {jobs[-1]:.0f} s")
    print(f"A/A: {sum(false_alarms)} false alarm(s) in {len(false_alarms)} trials; slowed 2x: every slowed case "
          f"confirmed in {sum(every)} of {len(every)}; job wall time {min(jobs, default=0):.0f}-{max(jobs, default=0):.0f} s")
    print(f"load average (1 min) before and after each command: {_loads(pool)}")
    if noise_file is not None:
        calibrated(pool, folders, Noise.from_json(noise_file.read_text(), str(noise_file)))


def _loads(pool: Path) -> str:
    by: dict[str, list[float]] = {}
    for line in (pool / "log.tsv").read_text().splitlines():
        _, label, _, _, before, after = line.split("\t")
        kind = "store" if label.startswith("store") else label.split("/")[-1]
        by.setdefault(kind, []).extend([float(before), float(after)])
    return "; ".join(f"{k} {min(v):.1f}-{max(v):.1f} (median {sorted(v)[len(v) // 2]:.1f})" for k, v in by.items())


def calibrated(pool: Path, folders: list[Path], noise: Noise) -> None:
    """Every compare verdict, and every case sent to ab, that ``noise`` changes in these trials."""
    store, _ = load_runs(pool / "store")
    for folder in folders:
        candidate = [load([folder / "candidate.json"])]
        plain, with_noise = compare(store, candidate), compare(store, candidate, noise)
        by_key = {r.key: r for r in with_noise}
        changed = [(r.path, r.nbytes, r.verdict, by_key[r.key].verdict) for r in plain
                   if r.key in by_key and by_key[r.key].verdict != r.verdict]
        sent = [flagged_of(to_json(rows, len(store), 1, n), "first").keys for rows, n in ((plain, None),
                                                                                            (with_noise, noise))]
        print(f"{folder.name}: {len(changed)} verdict(s) changed by the calibration {changed}; sent to ab "
              f"{len(sent[0])} without, {len(sent[1])} with ({len(sent[0] ^ sent[1])} differ)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pool", type=Path, default=Path("/tmp/gate-power"))
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("store").add_argument("--runs", type=int, default=8)
    t = sub.add_parser("trials")
    t.add_argument("--aa", type=int, default=6)
    t.add_argument("--slowed", type=int, default=6)
    t.add_argument("--blocks", type=int, default=BLOCKS)
    sub.add_parser("summary").add_argument("--noise", type=Path, default=None)
    args = parser.parse_args(argv)
    args.pool.mkdir(parents=True, exist_ok=True)
    args.pool = args.pool.resolve()
    if args.what == "store":
        make_store(args.pool, args.runs)
    elif args.what == "trials":
        trials(args.pool, args.aa, args.slowed, args.blocks)
    else:
        summary(args.pool, args.noise)


if __name__ == "__main__":
    main()

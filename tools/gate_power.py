"""Does the CI regression gate meet its goals on this machine? Real runs, counted.

What docs/regression-tracking.md reports was made so (about 75 minutes on a busy 2-core VM):

    python tools/gate_power.py collect --rounds 6            # 12 A/A + 6 slowed 2x + 6 slowed 1.5x, interleaved
    python tools/gate_power.py collect-aa --runs 8 --into calib   # A/A runs kept apart, to calibrate on
    python tools/gate_power.py collect-ab --blocks 40        # the A/B pool
    xferbench calibrate /tmp/gate-runs/calib --per-side 3 --note "..." -o .ci/noise.json
    python tools/gate_power.py evaluate --noise .ci/noise.json --trials 40 --ab-blocks 6 8 12 16

The recommended setup (one candidate against the store, suspects confirmed by ``ab --only``), as measured in
docs/regression-tracking.md:

    python tools/gate_power.py --pool P collect-blocks --sides base,aa,head --blocks 4   # slowed 2x candidates
    python tools/gate_power.py --pool P collect-blocks --sides base,aa --blocks 10       # store, A/A, A/A confirm
    python tools/gate_power.py --pool P collect-blocks --into confirm --sides base,head --blocks 24
    python tools/gate_power.py --pool P evaluate-store --trials 6 --ab-blocks 12

collect-blocks
    Blocks of real runs in random order (base, a second base, a head slowed 2x): quick runs in ``P/blocks`` (the
    store's runs, spread over the collection's time; the candidates; the A/A confirmation's blocks), or the slowed
    host copies alone in ``P/confirm`` (what ``ab --only {select}`` runs to confirm them).
evaluate-store
    A/A trials: 8 stored runs, a second base as the candidate, its suspects replayed through ``ab.run_ab`` on
    ``--ab-blocks`` + as many quick-run blocks (base against second base). Slowed trials: a 2x slowed quick run as
    the candidate, the slowed cases' suspects replayed on blocks of those cases alone. Counts: false alarms, and
    trials that confirmed every slowed case.
collect
    Real quick-profile runs (the gate's: ``bench/`` without ``test_distributed.py``),
    interleaved round by round: A, slowed 2x, A, slowed 1.5x, ... The slowdown is
    the slowdown ``XFERBENCH_TEST_SLOWDOWN=host@8MiB=F`` (docs/options.md) on the bandwidth-bound
    host copies. Runs land in ``POOL/{aa,x2,x1.5}/``; ``POOL/log.tsv`` keeps each run's
    start, seconds and the load average before it.
collect-ab
    Blocks of three invocations of ``bench/test_host.py -k 64MiB`` in random order:
    base, a second base (for A/A) and a head slowed 1.25x; into ``POOL/ab/``.
evaluate
    From the pool, in the CI design of ``.ci/run``: an A/A trial compares 3 A runs
    with 3 other A runs and, when that flags a case, confirms on 3 fresh A runs
    against 3 more (``compare.reproduced``); a detection trial does the same with
    slowed runs as the candidate. Trials draw disjoint runs within a trial, but
    trials share the pool (they are resamples, not independent machines' runs: the
    counts are how often the gate fails on this machine's runs, not a sample of
    independent days). With a noise file it also scales, by 1.25x, the rounds of every
    case the calibration says can see that, in real A/A candidate runs (the rule's power
    on real noise where the machine allows it). ``ab`` trials replay pool blocks through
    ``ab.run_ab`` (``--ab-blocks`` blocks, then as many fresh confirming ones), with the
    second base as head for the false-alarm rate. Prints counts: false alarms /
    comparisons, caught / trials.
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
from xferbench.analyze.gate.ab import Runner, flagged_of, run_ab
from xferbench.analyze.gate.compare import compare, reproduced, to_json
from xferbench.analyze.gate.noise import Noise
from xferbench.analyze.load.results import Results, load
from xferbench.units import parse_size

ROOT = Path(__file__).resolve().parent.parent
GATE_RUN = [sys.executable, "-m", "pytest", "bench", "--benchmark-only", "-q", "-p", "no:cacheprovider",
            "--ignore=bench/test_distributed.py"]
#: .ci/run's A/B command: the two 64 MiB host copies, 2 s of rounds each (4x the quick profile's 0.5 s:
#: a block's value then spans several of a busy machine's load swings rather than one).
AB_RUN = [sys.executable, "-m", "pytest", "bench/test_host.py", "--benchmark-only", "-q", "-p", "no:cacheprovider",
          "-k", "64MiB", "--benchmark-max-time=2"]
SLOWED = "host@8MiB"
#: What the recommended workflow's confirmation runs when the slowed host copies are flagged: those cases only
#: (``xferbench ab --only`` selects them with -k), in the quick profile's rounds.
CONFIRM_RUN = [sys.executable, "-m", "pytest", "bench/test_host.py", "--benchmark-only", "-q", "-p", "no:cacheprovider",
               "-k", "64MiB"]


def _run(command: list[str], out: Path, factor: float | None, log: Path) -> None:
    """One real run into ``out`` (JSON), with the slowdown hook at ``factor`` (None: unset)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    env.pop("XFERBENCH_TEST_SLOWDOWN", None)
    if factor is not None:
        env["XFERBENCH_TEST_SLOWDOWN"] = f"{SLOWED}={factor:g}"
    load = os.getloadavg()[0]
    start = time.time()
    tmp = out.with_suffix(".part")
    proc = subprocess.run([*command, f"--benchmark-json={tmp}"], cwd=ROOT, env=env, capture_output=True, text=True,
                          check=False)
    took = time.time() - start
    if proc.returncode != 0 or not tmp.exists():
        sys.exit(f"{' '.join(command)} failed (exit {proc.returncode}): {proc.stdout[-500:]}{proc.stderr[-500:]}")
    tmp.rename(out)
    with log.open("a") as f:
        f.write(f"{time.strftime('%H:%M:%S', time.gmtime(start))}\t{out.relative_to(log.parent)}\t{took:.0f}\t{load:.2f}\n")
    print(f"{out.relative_to(log.parent)}: {took:.0f} s, load {load:.2f}", flush=True)


def collect(pool: Path, rounds: int) -> None:
    log = pool / "log.tsv"
    for _ in range(rounds):
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        for i, (side, factor) in enumerate((("aa", None), ("x2", 2.0), ("aa", None), ("x1.5", 1.5))):
            _run(GATE_RUN, pool / side / f"{stamp}-{i}.json", factor, log)


def collect_aa(pool: Path, runs: int, into: str) -> None:
    """A/A runs only (e.g. a calibration set kept apart from the runs the gate is judged on)."""
    for _ in range(runs):
        _run(GATE_RUN, pool / into / f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}.json", None, pool / "log.tsv")


def collect_ab(pool: Path, blocks: int, seed: int) -> None:
    log = pool / "log.tsv"
    rng = np.random.default_rng(seed)
    first = len(list((pool / "ab").glob("block*-base.json")))
    for b in range(first, first + blocks):
        sides = [("base", None), ("aa", None), ("head", 1.25)]
        for i in rng.permutation(3):
            side, factor = sides[i]
            _run(AB_RUN, pool / "ab" / f"block{b:03d}-{side}.json", factor, log)


def collect_blocks(pool: Path, blocks: int, seed: int, into: str = "blocks", sides: str = "base,aa,head",
                   factor: float = 2.0) -> None:
    """Blocks of runs in random order, of ``sides``: base, a second base (aa) and a head slowed ``factor``x, into
    ``POOL/into/``: quick runs (``blocks``: the store's runs, spread over the collection's time, A/A candidates and
    slowed ones, and A/A confirmation) or the slowed cases alone (``confirm``: their interleaved confirmation)."""
    log, folder = pool / "log.tsv", pool / into
    first = 1 + max((int(p.name[5:8]) for p in folder.glob("block*-*.json")), default=-1)
    rng = np.random.default_rng(seed + first)
    chosen = [(side, factor if side == "head" else None) for side in sides.split(",")]
    for b in range(first, first + blocks):
        for i in rng.permutation(len(chosen)):
            side, f = chosen[i]
            _run(GATE_RUN if into == "blocks" else CONFIRM_RUN, folder / f"block{b:03d}-{side}.json", f, log)


def _runs(folder: Path) -> list[Results]:
    return [load([p]) for p in sorted(folder.glob("*.json"))]


def _gate(base: list[Results], new: list[Results], again_base: list[Results], again_new: list[Results],
          noise: Noise | None) -> tuple[bool, set[str], set[str]]:
    """``.ci/run``'s gate on given runs: (failed, cases flagged at first, cases confirmed)."""
    first = compare(base, new, noise)
    flagged = {f"{r.path} {r.nbytes}" for r in first if r.regression}
    if not flagged:
        return False, flagged, set()
    again = reproduced(compare(again_base, again_new, noise), to_json(first, 3, 3, noise), "first")
    confirmed = {f"{r.path} {r.nbytes}" for r in again if r.regression}
    return bool(confirmed), flagged, confirmed


def _targets(runs: list[Results]) -> set[str]:
    """The cases the slowdown hook slows (host copies of 8 MiB and up), named as compare names them."""
    frame = runs[0].frame
    hit = frame[(frame["op"] == "host") & (frame["nbytes"] >= parse_size(SLOWED.split("@")[1]))]
    return {f"{p} {n}" for p, n in zip(hit["path"], hit["nbytes"], strict=True)}


def evaluate_gate(pool: Path, noise: Noise | None, trials: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    aa = _runs(pool / "aa")
    print(f"gate (3 base + 3 candidate runs, confirmed on 3 + 3 fresh ones; pool: {len(aa)} A/A runs)")
    if len(aa) < 12:
        sys.exit(f"{pool / 'aa'}: an A/A trial needs 12 runs, found {len(aa)}")
    false, flagged_once, culprits = 0, 0, Counter[str]()
    for _ in range(trials):
        pick = [aa[i] for i in rng.permutation(len(aa))[:12]]
        failed, flagged, confirmed = _gate(pick[0:3], pick[3:6], pick[6:9], pick[9:12], noise)
        false += failed
        flagged_once += bool(flagged)
        culprits.update(confirmed)
    print(f"  A/A: {false} false alarm(s) in {trials} comparisons ({flagged_once} flagged at first)"
          + (f"; confirmed: {dict(culprits)}" if culprits else ""))
    for factor in ("x2", "x1.5"):
        slowed = _runs(pool / factor)
        if len(slowed) < 6:
            print(f"  {factor}: {len(slowed)} slowed run(s) in the pool, 6 needed")
            continue
        targets = _targets(slowed)
        caught, per_case, others = 0, Counter[str](), Counter[str]()
        for _ in range(trials):
            base = [aa[i] for i in rng.permutation(len(aa))[:6]]
            new = [slowed[i] for i in rng.permutation(len(slowed))[:6]]
            failed, _flagged, confirmed = _gate(base[:3], new[:3], base[3:], new[3:], noise)
            caught += failed and bool(confirmed & targets)
            per_case.update(confirmed & targets)
            others.update(confirmed - targets)
        print(f"  slowed {factor[1:]}x ({SLOWED}, {len(slowed)} real slowed runs): gate failed on a slowed case in "
              f"{caught} of {trials} trials; per case: "
              + ", ".join(f"{t} {per_case[t]}/{trials}" for t in sorted(targets))
              + (f"; other cases confirmed: {dict(others)}" if others else ""))


def _scaled(run: Results, keys: set[str], factor: float) -> Results:
    """A copy of a real run whose cases ``keys`` took ``factor`` times as long in every round."""
    out = copy.deepcopy(run)
    hit = out.frame["case_key"].isin(keys)
    out.frame.loc[hit, "data"] = pd.Series([[t * factor for t in d] for d in out.frame.loc[hit, "data"]],
                                           index=out.frame.index[hit], dtype=object)
    return out


def evaluate_gateable(pool: Path, noise: Noise, trials: int, seed: int, factor: float = 1.25) -> None:
    """The gate's power where this machine lets it see: real A/A runs whose gateable cases (those that can
    flag a change of ``factor`` - 1) are scaled by ``factor`` in the candidate runs. Rounds scaled, not slowed:
    this measures the rule on real noise, not the hook."""
    rng = np.random.default_rng(seed)
    aa = _runs(pool / "aa")
    keys = {k for k, c in noise.cases.items() if c.get("smallest_change", math.inf) <= factor - 1}
    if len(aa) < 12 or not keys:
        return
    caught = Counter[str]()
    for _ in range(trials):
        pick = [aa[i] for i in rng.permutation(len(aa))[:12]]
        new = [_scaled(r, keys, factor) for r in pick[3:6] + pick[9:12]]
        _failed, _flagged, confirmed = _gate(pick[0:3], new[:3], pick[6:9], new[3:], noise)
        caught.update(confirmed)
    names = {f"{noise.cases[k]['path']} {noise.cases[k]['nbytes']}" for k in keys}
    per_case = sorted(caught[n] for n in names)
    print(f"  {len(keys)} case(s) that can flag {factor:g}x, rounds scaled {factor:g}x in real A/A runs: "
          f"{sum(per_case)} of {trials * len(keys)} case comparisons confirmed (per case, fewest {per_case[0]} of "
          f"{trials})")


def _replay(blocks: dict[str, list[Results]], chosen: list[int]) -> Runner:
    """A runner that answers block k's command with pool block chosen[k] (commands: base, aa, head)."""
    def run(command: str, out: Path) -> Results:
        return blocks[command][chosen[int(out.name[5:8])]]
    return run


def evaluate_ab(pool: Path, trials: int, seed: int, first: int) -> None:
    folder = pool / "ab"
    sides = {side: [load([p]) for p in sorted(folder.glob(f"block*-{side}.json"))] for side in ("base", "aa", "head")}
    n = min(len(v) for v in sides.values())
    print(f"ab ({first} blocks, confirmed on {first} fresh ones; pool: {n} blocks of base, second base, head 1.25x)")
    if n < 2 * first:
        print(f"  needs {2 * first} blocks")
        return
    rng = np.random.default_rng(seed)
    found, false = Counter[str](), Counter[str]()
    with tempfile.TemporaryDirectory() as tmp:
        for trial in range(trials):
            chosen = [int(i) for i in rng.permutation(n)[:2 * first]]
            for head, tally in (("head", found), ("aa", false)):
                cases = run_ab("base", head, first, Path(tmp), runner=_replay(sides, chosen), seed=trial)
                tally.update(f"{c.path} {c.nbytes}" for c in cases if c.regression)
                tally["any"] += any(c.regression for c in cases)
    print(f"  1.25x: caught in {found.pop('any')} of {trials} trials; per case: {dict(found)}")
    print(f"  A/A: {false.pop('any')} false alarm(s) in {trials} trials" + (f": {dict(false)}" if false else ""))


def _block_sides(folder: Path, sides: tuple[str, ...]) -> dict[str, list[Results]]:
    """Each of ``sides``' run of every block that ran them all (base, aa, head), in block order."""
    done = sorted(p.name[5:8] for p in folder.glob("block*-base.json")
                  if all((folder / f"block{p.name[5:8]}-{s}.json").exists() for s in sides))
    return {side: [load([folder / f"block{b}-{side}.json"]) for b in done] for side in sides}


def _store(full: dict[str, list[Results]], free: list[int], store_runs: int) -> list[Results]:
    """``store_runs`` quick runs of the blocks ``free`` (base runs of distinct blocks first, then their second
    bases), oldest first."""
    picked = sorted([(b, 0) for b in free][:store_runs] + [(b, 1) for b in free][:max(0, store_runs - len(free))])
    return [full["base" if s == 0 else "aa"][b] for b, s in picked]


def _recommended(store: list[Results], candidate: Results, noise: Noise | None, blocks: dict[str, list[Results]],
                 chosen: list[int], head: str, ab_blocks: int, seed: int,
                 keep: set[str] | None = None) -> tuple[set[str], set[str]]:
    """The recommended gate: compare against the store; its suspects (``ab.flagged_of``: regressions and slower
    can't-tells) confirmed by ``ab --only`` replaying pool blocks ``chosen`` (base against ``head``).
    Returns (cases sent to ab, cases confirmed), as "path nbytes"; ``keep``: only these are sent."""
    first = compare(store, [candidate], noise)
    names = {r.key: f"{r.path} {r.nbytes}" for r in first}
    keys = flagged_of(to_json(first, len(store), 1, noise), "first").keys
    keys = frozenset(k for k in keys if keep is None or names[k] in keep)
    if not keys:
        return set(), set()
    with tempfile.TemporaryDirectory() as tmp:
        cases = run_ab("base", head, ab_blocks, Path(tmp), runner=_replay(blocks, chosen), seed=seed, only=keys)
    return {names[k] for k in keys}, {f"{c.path} {c.nbytes}" for c in cases if c.regression}


def evaluate_store(pool: Path, noise: Noise | None, trials: int, seed: int, store_runs: int, ab_blocks: int) -> None:
    """The recommended setup (docs/regression-tracking.md): one candidate quick run against ``store_runs`` stored
    ones spread over the collection's time; suspects confirmed by ``ab`` on ``ab_blocks`` + as many fresh blocks.
    A/A: a second base as candidate, confirmed on quick-run blocks (base against second base). Slowed: a 2x
    slowed run as candidate, its slowed cases confirmed on blocks of those cases alone (``POOL/confirm``)."""
    rng = np.random.default_rng(seed)
    full = _block_sides(pool / "blocks", ("base", "aa"))
    slowed = _block_sides(pool / "blocks", ("base", "head"))["head"]
    confirm = _block_sides(pool / "confirm", ("base", "head"))
    n, m = len(full["base"]), len(confirm["base"])
    print(f"recommended gate: 1 candidate against {store_runs} stored runs, suspects confirmed by ab on {ab_blocks} "
          f"+ {ab_blocks} blocks; pool: {n} quick-run blocks (base, second base), {len(slowed)} quick runs slowed 2x, "
          f"{m} blocks of the slowed cases alone (base, slowed)")
    if n < ab_blocks + 1:
        sys.exit(f"{pool / 'blocks'}: A/A trials need {ab_blocks + 1} blocks, found {n}")
    # Store, candidate and confirming blocks are disjoint where the pool allows; else they share blocks, which can
    # only make a false alarm likelier (a low stored run is then also a confirming base, a high candidate a head).
    disjoint = n >= 2 * ab_blocks + 2
    false, sent, culprits, sizes = 0, 0, Counter[str](), set()
    for trial in range(trials):
        perm = [int(i) for i in rng.permutation(n)]
        *free, last = perm[2 * ab_blocks:] if disjoint else perm[::-1]
        store = _store(full, free, store_runs)
        sizes.add(len(store))
        chosen = [perm[i % n] for i in range(2 * ab_blocks)]
        suspects, confirmed = _recommended(store, full["aa"][last], noise, full, chosen, "aa", ab_blocks, trial)
        false += bool(confirmed)
        sent += len(suspects)
        culprits.update(confirmed)
    print(f"  A/A ({'/'.join(map(str, sorted(sizes)))} stored runs; blocks {'disjoint' if disjoint else 'shared'} "
          f"within a trial): {false} false "
          f"alarm(s) in {trials} trials ({sent} case(s) sent to ab in all)"
          + (f"; confirmed: {dict(culprits)}" if culprits else ""))
    if m < 2 * ab_blocks or not slowed:
        print(f"  slowed 2x: {m} blocks of the slowed cases ({2 * ab_blocks} needed), {len(slowed)} slowed runs")
        return
    targets = _targets(slowed)
    every, per_case, missed = 0, Counter[str](), Counter[str]()
    for trial in range(trials):
        own = trial % len(slowed)  # the slowed runs in turn: each trial its own where there are enough
        # its block's bases ran beside it: not in the store (blocks are numbered alike in both lists, from 0)
        store = _store(full, [int(i) for i in rng.permutation(n) if i != own], store_runs)
        candidate = slowed[own]
        chosen = [int(i) for i in rng.permutation(m)[:2 * ab_blocks]]
        suspects, confirmed = _recommended(store, candidate, noise, confirm, chosen, "head", ab_blocks, trial, targets)
        every += confirmed >= targets
        per_case.update(confirmed & targets)
        missed.update(targets - suspects)
    print(f"  slowed 2x ({SLOWED}, {len(slowed)} slowed runs): every slowed case confirmed in {every} of {trials} "
          "trials; per case: " + ", ".join(f"{t} {per_case[t]}/{trials}" for t in sorted(targets))
          + (f"; not sent to ab (compare said neither regression nor can't tell): {dict(missed)}" if missed else ""))


def loads(pool: Path) -> str:
    """The 1-minute load averages ``log.tsv`` recorded before each run, by folder: median (range)."""
    by: dict[str, list[float]] = {}
    log = pool / "log.tsv"
    for line in log.read_text().splitlines() if log.exists() else []:
        _start, name, _took, load = line.split("\t")
        by.setdefault(name.split("/")[0], []).append(float(load))
    return "; ".join(f"{k} {len(v)} runs, load {np.median(v):.1f} ({min(v):.1f}-{max(v):.1f})" for k, v in sorted(by.items()))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pool", type=Path, default=Path("/tmp/gate-runs"))
    parser.add_argument("--only", choices=("gate", "ab"), default=None, help="evaluate only the gate or only ab")
    sub = parser.add_subparsers(dest="what", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--rounds", type=int, default=6)
    c = sub.add_parser("collect-aa")
    c.add_argument("--runs", type=int, default=10)
    c.add_argument("--into", default="calib")
    a = sub.add_parser("collect-ab")
    a.add_argument("--blocks", type=int, default=48)
    a.add_argument("--seed", type=int, default=0)
    b = sub.add_parser("collect-blocks")
    b.add_argument("--blocks", type=int, default=24)
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--into", choices=("blocks", "confirm"), default="blocks")
    b.add_argument("--sides", default="base,aa,head", help="of base, aa, head (slowed 2x)")
    e = sub.add_parser("evaluate")
    e.add_argument("--noise", type=Path, default=ROOT / ".ci" / "noise.json")
    e.add_argument("--trials", type=int, default=40)
    e.add_argument("--ab-blocks", type=int, nargs="+", default=[8], help="blocks (each confirmed on as many)")
    e.add_argument("--seed", type=int, default=0)
    r = sub.add_parser("evaluate-store", help="the recommended setup: a store, one candidate, ab on the suspects")
    r.add_argument("--noise", type=Path, default=None, help="a calibration (default: none)")
    r.add_argument("--trials", type=int, default=6)
    r.add_argument("--store-runs", type=int, default=8)
    r.add_argument("--ab-blocks", type=int, default=6)
    r.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.what == "collect":
        collect(args.pool, args.rounds)
    elif args.what == "collect-aa":
        collect_aa(args.pool, args.runs, args.into)
    elif args.what == "collect-blocks":
        collect_blocks(args.pool, args.blocks, args.seed, args.into, args.sides)
    elif args.what == "collect-ab":
        collect_ab(args.pool, args.blocks, args.seed)
    elif args.what == "evaluate-store":
        noise = Noise.from_json(args.noise.read_text(), str(args.noise)) if args.noise else None
        print(f"pool {args.pool}; noise file: {args.noise or 'none'}")
        print(f"load average before the runs (2 cores): {loads(args.pool)}")
        evaluate_store(args.pool, noise, args.trials, args.seed, args.store_runs, args.ab_blocks)
    else:
        noise = Noise.from_json(args.noise.read_text(), str(args.noise)) if args.noise.is_file() else None
        print(f"pool {args.pool}; noise file: {args.noise if noise else 'none (defaults)'}")
        print(f"load average before the runs (2 cores): {loads(args.pool)}")
        if args.only != "ab":
            evaluate_gate(args.pool, noise, args.trials, args.seed)
            if noise is not None:
                evaluate_gateable(args.pool, noise, args.trials, args.seed)
        for blocks in args.ab_blocks if args.only != "gate" else []:
            evaluate_ab(args.pool, args.trials, args.seed, blocks)


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# One run on a GPU machine that produces a reference sample: the harness check, then
# every family one at a time (full profile, a 12-size sweep up to 1 GiB), the GPU-only
# tests and the report, with a log.
#
#   OUT=reports/samples/h200 BUDGET=420 bash tools/gpu_reference_run.sh
#
# Nothing is lost to a timeout: each family is its own run with its own timeout, cut to
# what is left of BUDGET seconds (default 420, i.e. 7 minutes in all); pytest-benchmark
# writes its JSON only when a run ends, so a family cut short is taken from its journal
# (every benchmark it finished), and after each family everything so far is merged into
# "$OUT/full.json.gz" (gzipped: every round of a GPU run comes to tens of MB). A family
# that no longer fits the budget is logged as not run. Last, a small training step's
# torch.profiler trace is priced against this run and the fixed step measured
# (tools/trace_step.py: predicted against measured savings). $OUT ends with at most 9
# files: log.txt, harness_check.json, full.json.gz, the report's index.html,
# index.csv and index.md, and step.pt.trace.json, step-price.json and step-check.json.
#
# It uses the work tree as it is (PYTHONPATH=src), so a machine without registry access
# only needs torch, pytest, pytest-benchmark, pandas, matplotlib and scipy (nvidia-ml-py
# for PCIe, NVLink, NUMA and clocks). Without jinja2 there, the report is written
# afterwards elsewhere: xferbench report "$OUT/full.json.gz" -o "$OUT/index.html".
set -uo pipefail
OUT=${OUT:-reports/samples/gpu}
BUDGET=${BUDGET:-420}
SIZES=${SIZES:-2x3,4B,64B,1KiB,16KiB,256KiB,1MiB,4MiB,16MiB,64MiB,256MiB,1GiB}
MAX_TIME=${MAX_TIME:-0.15}  # seconds per benchmark (the full profile's 0.25 would not fit the budget)
RESERVE=75  # seconds kept for the tests, the report and the traced step
# ONLY="h2d_pageable d2h" runs just those families (a rerun of what a first run cut short).
# Extra pytest arguments for every family, e.g. XFER_ARGS=--xfer-simulate=examples/sim-4gpu-pcie4.toml to
# rehearse the whole script on a machine without a GPU.
read -r -a XFER_ARGS <<< "${XFER_ARGS:-}"
mkdir -p "$OUT"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export PYTHONPATH=src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
PY=${PY:-python3}  # a GPU image may have no plain 'python'
START=$(date +%s)

left() { echo $(( BUDGET - ($(date +%s) - START) )); }

merge() {  # every family's JSON (or, for a family cut short, its journal) -> one gzipped JSON, written atomically
    "$PY" - "$OUT/full.json.gz" "$WORK" <<'EOF'
import gzip, json, sys
from pathlib import Path
from xferbench.analyze.load.results import ResultsError, read_journal
from xferbench.output import write_atomic
runs = []
for journal in sorted(Path(sys.argv[2]).glob("*.journal*.jsonl"), key=lambda p: p.stat().st_mtime):
    family = journal.name.split(".journal")[0]
    try:
        runs.append(json.loads((journal.parent / f"{family}.json").read_text()))
    except (OSError, ValueError):  # cut before pytest-benchmark wrote it: keep what the journal holds
        try:
            run = read_journal(journal, journal.read_text())
        except ResultsError as error:
            print(f"merge: {family} left out: {error}")
            continue
        print(f"merge: {family} from its journal: {len(run['benchmarks'])} benchmarks finished before the cut")
        runs.append(run)
if runs:
    merged = runs[0] | {"benchmarks": [b for run in runs for b in run["benchmarks"]]}
    merged.pop("xfer_progress", None)
    write_atomic(Path(sys.argv[1]), gzip.compress(json.dumps(merged).encode(), compresslevel=6))
    print(f"merged: {len(merged['benchmarks'])} benchmarks from {len(runs)} families")
EOF
}

family() {  # family NAME CAP_SECONDS BENCH_FILES_AND_PYTEST_ARGS...
    local name=$1 cap=$2
    shift 2
    if [[ -n "${ONLY:-}" && " $ONLY " != *" $name "* ]]; then
        echo "== $name: not asked for (ONLY=$ONLY)"
        return
    fi
    local limit=$(( $(left) - RESERVE ))
    (( limit > cap )) && limit=$cap
    if (( limit < 15 )); then
        echo "== $name: not run, ${limit}s left of the budget"
        return
    fi
    echo "== $name (at most ${limit}s)"
    timeout --kill-after=10 "$limit" "$PY" -m pytest "$@" --benchmark-only --xfer-profile=full \
        --xfer-sizes="$SIZES" --benchmark-max-time="$MAX_TIME" -p no:cacheprovider -q -rs \
        --benchmark-columns=median,iqr,rounds \
        --benchmark-json="$WORK/$name.json" "${XFER_ARGS[@]}"
    local rc=$?
    if (( rc == 124 || rc == 137 )); then
        if [[ -s "$WORK/$name.json" ]]; then
            echo "== $name: cut at ${limit}s while finishing, after its JSON was written"
        else
            echo "== $name: cut at ${limit}s; what it finished is kept from its journal"
        fi
    fi
    merge
}

{
    echo "== $(date -u +%FT%TZ) $(hostname), budget ${BUDGET}s"
    nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.max,pcie.link.width.max,memory.total,clocks.max.sm \
        --format=csv || true
    nvidia-smi topo -m || true
    "$PY" -m xferbench.cli info
    echo "== harness check: the suite against a bare loop, with and without its profiler pass (4 KiB-1 GiB)"
    timeout 240 "$PY" tools/gpu_harness_check.py --json "$OUT/harness_check.json"
    family h2d_pinned 50 bench/test_h2d.py -k pinned
    family h2d_pageable 70 bench/test_h2d.py -k pageable
    family d2h 90 bench/test_d2h.py  # pageable d2h of 1 GiB: ~1 s a call on an H200
    family d2d_peer_noop_sync 50 bench/test_d2d.py bench/test_peer.py bench/test_noop.py bench/test_sync.py
    family concurrent 45 bench/test_concurrent.py
    family scenarios 60 bench/test_scenarios.py
    # The host side as users run it: an input pipeline overlapped with a GPU step (its host half: worker start-up,
    # first batch, epochs per start method), .to('cpu', non_blocking=True) kept, released and its memory held.
    family dataloader 90 bench/test_dataloader.py
    family d2h_kept 40 bench/test_d2h_kept.py
    family host 40 bench/test_host.py
    family create 60 bench/test_create.py
    family distributed 45 bench/test_distributed.py
    # Any bench file not named above (a family added since) still runs, last.
    others=$(comm -23 <(ls bench/test_*.py | sort) <(grep -o 'bench/test_[a-z_0-9]*\.py' "$0" | sort -u))
    [[ -n "$others" ]] && family others 45 $others
    echo "== GPU-only tests"
    timeout 30 "$PY" -m pytest tests/test_scenarios.py -q -p no:cacheprovider -k non_blocking
    # NUMA placement for real (every thread bound, each buffer read back), the training steps on the GPU, and
    # d2h_kept's pinned block against the simulated model.
    timeout 60 "$PY" -m pytest tests/test_host_side.py tests/test_dataloader.py tests/test_d2h_kept.py -q \
        -p no:cacheprovider -k on_a_gpu
    echo "== report"
    "$PY" -m xferbench.cli report "$OUT/full.json.gz" -o "$OUT/index.html" || echo "report not written here; see above"
    echo "== a training step's trace priced against this run, then the fixed step measured"
    SPEC=$(printf '%s\n' "${XFER_ARGS[@]}" | sed -n 's/^--xfer-simulate=//p')
    timeout 120 "$PY" tools/trace_step.py --run "$OUT/full.json.gz" --out "$OUT" ${SPEC:+--simulate "$SPEC"} \
        || echo "traced step not done; see above"
    echo "== done in $(( $(date +%s) - START ))s"
} 2>&1 | tee "$OUT/log.txt"

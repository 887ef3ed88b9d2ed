#!/usr/bin/env bash
# One run on a GPU machine that produces a reference sample: the full profile
# (every family, scenario and the distributed cases that one GPU allows), the
# GPU-only tests, the report and the expectation checks, with a log.
#
#   OUT=reports/samples/h200 bash bench/gpu_reference_run.sh
#
# It uses the work tree as it is (PYTHONPATH=src), so a machine without registry
# access only needs torch, pytest, pytest-benchmark, pandas, matplotlib and scipy
# (nvidia-ml-py for the PCIe/NVLink facts). Without jinja2 there, the report is
# written afterwards elsewhere: xferbench report "$OUT/full.json" -o "$OUT/index.html".
set -uo pipefail
OUT=${OUT:-reports/samples/gpu}
mkdir -p "$OUT"
export PYTHONPATH=src PYTHONUNBUFFERED=1
{
    echo "== $(date -u +%FT%TZ) $(hostname)"
    nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.max,pcie.link.width.max,memory.total --format=csv || true
    python -m xferbench.cli info
    echo "== full profile"
    timeout 480 python -m pytest bench --benchmark-only --xfer-profile=full -p no:cacheprovider -rs \
        --benchmark-json="$OUT/full.json"
    echo "== GPU-only tests (non_blocking hazard) and the rest of the suite"
    timeout 120 python -m pytest tests -q -p no:cacheprovider -k "not browser"
    echo "== expectations"
    python -m xferbench.cli check "$OUT/full.json"
    echo "== report"
    python -m xferbench.cli report "$OUT/full.json" -o "$OUT/index.html" || echo "report not written here; see above"
} 2>&1 | tee "$OUT/log.txt"

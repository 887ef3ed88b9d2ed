"""tools/trace_step.py on the simulated machine: the step's trace is written, priced against the run and the
predicted saving is the price's own fixes (nothing is measured there, and it says so)."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_simulated_step_is_priced_and_says_nothing_was_measured(tmp_path):
    env = os.environ | {"PYTHONPATH": str(ROOT / "src")}
    subprocess.run([sys.executable, str(ROOT / "tools" / "trace_step.py"), "--run", str(ROOT / "tests/data/sim-2gpu.json"),
                    "--out", str(tmp_path), "--simulate", str(ROOT / "examples/sim-2gpu-pcie5-nvlink.toml")],
                   check=True, env=env, capture_output=True, timeout=300)
    check = json.loads((tmp_path / "step-check.json").read_text())
    priced = json.loads((tmp_path / "step-price.json").read_text())
    fixes = {(row["kind"], fix["fix"]): fix["saved_s"] for row in priced["copies"] for fix in row["fixes"]}
    assert check["predicted_saving_s"] == fixes["h2d", "pin_non_blocking"] + fixes["d2h", "remove_sync"]
    assert (check["measured_saving_s"], check["why_none"]) == (None, "the simulated machine measures no step")

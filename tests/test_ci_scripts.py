"""The project's own CI: .ci/run (the pull-request check) and .ci/nightly (the long gates) are valid bash, do what
docs/regression-tracking.md says, and refuse a stage they do not know in one line."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _commands(name: str) -> str:
    text = (ROOT / ".ci" / name).read_text()
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def test_both_scripts_parse() -> None:
    for name in ("run", "nightly"):
        assert subprocess.run(["bash", "-n", str(ROOT / ".ci" / name)]).returncode == 0


def test_the_pr_check_has_every_part_and_no_long_gate() -> None:
    run = _commands("run")
    for part in ("python3 run.py test", "tox -e lint", "tox -e bench",
                 "XFERBENCH_TEST_SLOWDOWN", "git merge-base HEAD", "git worktree add"):
        assert part in run, part
    assert 'if [ "$status" -ne 1 ]' in run  # the injected slowdown must make compare exit 1, or the check fails
    assert "xferbench ab" not in run and "gate_power" not in run and "calibrate" not in run  # the nightly's
    assert "-m slow" not in run  # the slow tier is the nightly's: the check fits 12 minutes


def test_the_nightly_has_the_long_gates_and_refuses_an_unknown_stage() -> None:
    nightly = _commands("nightly")
    for part in ("tox -e py -- -m slow -n 0", "--confirm", "ab --blocks 12",
                 "gate_power.py --pool reports/gate-power store", "trials --aa 6 --slowed 6", "calibrate"):
        assert part in nightly, part
    done = subprocess.run(["bash", str(ROOT / ".ci" / "nightly"), "gate", "bogus"], capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.strip() == "nightly: unknown stage bogus (tests, gate, ab, power, recalibrate)"


def test_the_docs_name_both_scripts() -> None:
    section = (ROOT / "docs" / "regression-tracking.md").read_text()
    assert ".ci/run" in section and ".ci/nightly" in section
    assert re.search(r"nightly[^.]*(measured|not measured)", section)

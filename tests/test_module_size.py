"""Every module of the package is under 600 lines: one a reader can take in (STYLE). A module that outgrows it is
split along a seam, e.g. the α/β key finding lives with the α/β table (report/model_text.py), not in findings.py."""

from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "xferbench"
LIMIT = 600


def test_every_module_is_under_600_lines():
    long = {str(path.relative_to(SRC)): n for path in sorted(SRC.rglob("*.py"))
            if (n := len(path.read_text().splitlines())) >= LIMIT}
    assert not long, long

"""tools/ensure_torch.py, run by tox before the tests: it installs the CPU build of torch only where none is."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.hostile
class TestOptionsUpFront:
    @pytest.mark.parametrize("requirement", ["", "  ", "-e.", "--index-url=http://example.invalid/simple", "-r x.txt"])
    def test_ensure_torch_refuses_what_pip_would_read_as_an_option(self, requirement):
        """Without torch (python -S hides site-packages), a requirement that is empty or an option is refused."""
        done = subprocess.run([sys.executable, "-S", str(ROOT / "tools" / "ensure_torch.py")], capture_output=True,
                              text=True, env={**os.environ, "XFERBENCH_TORCH": requirement}, timeout=60)
        assert done.returncode == 2
        assert "is not a requirement" in done.stderr
        assert "installing" not in done.stdout

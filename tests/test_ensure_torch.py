"""tools/ensure_torch.py, run by tox before the tests: it installs the CPU build of torch only where none is."""

import importlib.util
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


spec = importlib.util.spec_from_file_location("ensure_torch", ROOT / "tools" / "ensure_torch.py")
ensure_torch = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ensure_torch)


class TestWhichBuild:
    def test_without_an_nvidia_gpu_the_cpu_index_is_added(self):
        """Beside the configured indexes: pip takes 2.13.0+cpu over PyPI's 2.13.0 (the CUDA build)."""
        assert ensure_torch.source_options(gpu=False, cpu_index_reachable=True) == [
            "--extra-index-url", "https://download.pytorch.org/whl/cpu"]

    @pytest.mark.parametrize(("gpu", "reachable"), [(True, True), (False, False)])
    def test_otherwise_pip_looks_where_it_is_told(self, gpu, reachable):
        assert ensure_torch.source_options(gpu=gpu, cpu_index_reachable=reachable) == []


def _item(name: str, version: str, url: str) -> dict:
    return {"metadata": {"name": name, "version": version}, "download_info": {"url": url}}


class TestAnnouncement:
    def test_the_cuda_build_on_a_machine_without_gpu_says_so_and_how_large(self):
        items = [_item("torch", "2.13.0", "https://files/torch.whl"), _item("nvidia-cublas-cu12", "12.8", "https://files/c.whl"),
                 _item("filelock", "3.0", "https://files/f.whl")]
        sizes = {"https://files/torch.whl": 900_000_000, "https://files/c.whl": 2_100_000_000, "https://files/f.whl": 20_000}
        line = ensure_torch.announcement("torch==2.13.0", items, sizes, gpu=False)
        assert line == ("ensure_torch: installing torch 2.13.0 and 2 packages it needs; the CUDA build (PyTorch's CPU-only "
                        "index cannot be reached from here), with its nvidia-* packages; 3.0 GB to download")

    def test_a_local_cpu_wheel_is_not_a_download(self):
        items = [_item("torch", "2.13.0+cpu", "file:///opt/wheels/torch.whl"), _item("sympy", "1.14", "https://files/s.whl")]
        sizes = {"file:///opt/wheels/torch.whl": 192_000_000, "https://files/s.whl": None}
        line = ensure_torch.announcement("torch==2.13.0", items, sizes, gpu=False)
        assert line == ("ensure_torch: installing torch 2.13.0+cpu and 1 package it needs; 0 MB to download (some sizes "
                        "unknown), 192 MB from local disk")

    def test_when_pip_cannot_say(self):
        assert ensure_torch.announcement("torch==2.13.0", None, {}, gpu=True) == (
            "ensure_torch: installing torch==2.13.0 (pip could not say beforehand what it will download)")

    def test_a_local_file_s_size(self, tmp_path):
        wheel = tmp_path / "torch.whl"
        wheel.write_bytes(b"x" * 1234)
        assert ensure_torch.size_of(wheel.as_uri()) == 1234
        assert ensure_torch.size_of((tmp_path / "gone.whl").as_uri()) is None


def test_the_installed_torch_is_used_as_it_is():
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "ensure_torch.py")], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("ensure_torch: using the installed torch 2.")

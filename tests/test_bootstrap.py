"""run.py, the Quickstart's bootstrap: which Python runs tox, and what happens without venv or pip.

The end-to-end path (a Debian system Python refusing pip, a .venv made and tox run from
it) needs the package index; it is run by hand and in CI (.ci/run), not here.
"""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("xferbench_run", ROOT / "run.py")
run = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run)


class TestExternallyManaged:
    def test_system_python_with_the_pep668_marker(self, tmp_path, monkeypatch):
        (tmp_path / "EXTERNALLY-MANAGED").write_text("[externally-managed]\n")
        monkeypatch.setattr(sys, "prefix", sys.base_prefix)
        assert run.externally_managed(str(tmp_path))

    def test_a_venv_is_never_externally_managed(self, tmp_path, monkeypatch):
        """Inside a venv (or a conda env, which has no marker) pip may install: tox goes there."""
        (tmp_path / "EXTERNALLY-MANAGED").write_text("[externally-managed]\n")
        monkeypatch.setattr(sys, "prefix", str(tmp_path / "venv"))
        assert not run.externally_managed(str(tmp_path))

    def test_no_marker_no_management(self, tmp_path, monkeypatch):
        monkeypatch.setattr(sys, "prefix", sys.base_prefix)
        assert not run.externally_managed(str(tmp_path))


class TestMakeVenv:
    def test_neither_ensurepip_nor_pip_says_what_to_install(self, tmp_path, monkeypatch):
        monkeypatch.setattr(run, "has_module", lambda python, module: False)
        with pytest.raises(run.BootstrapError, match=r"install python3-venv \(sudo apt-get install python3-venv\)"):
            run.make_venv(tmp_path / "venv")

    def test_without_ensurepip_the_system_pip_fills_the_venv(self, tmp_path, monkeypatch):
        """Debian without python3-venv: venv --without-pip, then `pip --python VENV install pip`."""
        calls = []

        def quiet(*command):
            calls.append([str(c) for c in command])
            return type("Done", (), {"returncode": 0, "stderr": ""})()

        monkeypatch.setattr(run, "has_module", lambda python, module: module == "pip" and python == "python3")
        monkeypatch.setattr(run, "_quiet", quiet)
        venv = tmp_path / "venv"
        assert run.make_venv(venv, python="python3") == run._venv_python(venv)
        assert calls == [["python3", "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
                         ["python3", "-m", "pip", "--python", str(run._venv_python(venv)), "install", "-q", "pip"]]


def test_unknown_word_is_a_usage_error(capsys):
    assert run.main(["benchmark"]) == 2
    assert "usage: python3 run.py {bench|test|slow|lint}" in capsys.readouterr().err

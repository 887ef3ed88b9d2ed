"""A shipped benchmark's fullname is the same from a checkout and from the package; cases are plain params."""

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from xferbench.measure.session.names import plain_names, plain_params, shipped_folder, stable_fullname

ROOT = Path(__file__).resolve().parent.parent


class TestStableFullname:
    def test_the_package_s_and_the_checkout_s_name_are_one(self, tmp_path):
        shipped = tmp_path / "site" / "xferbench" / "bench"
        shipped.mkdir(parents=True)
        (shipped / "test_host.py").write_text("")
        test = "test_host[pageable-copy_-1KiB-float32-cpu->cpu]"
        from_package = stable_fullname(f"test_host.py::{test}", tmp_path / "elsewhere", shipped)
        from_checkout = stable_fullname(f"xferbench/bench/test_host.py::{test}", tmp_path / "site", shipped)
        assert from_package == from_checkout == f"bench/test_host.py::{test}"

    def test_a_test_outside_the_shipped_folder_keeps_its_name(self, tmp_path):
        shipped = tmp_path / "bench"
        shipped.mkdir()
        assert stable_fullname("ours/test_x.py::test_x[a]", tmp_path, shipped) == "ours/test_x.py::test_x[a]"
        assert stable_fullname("test_x.py::test_x", tmp_path, None) == "test_x.py::test_x"
        assert stable_fullname("no-separator", tmp_path, shipped) == "no-separator"

    def test_the_shipped_folder_is_the_package_s(self):
        folder = shipped_folder()
        assert folder is not None and (folder / "test_host.py").is_file() and (folder / "conftest.py").is_file()


class TestPlainParams:
    def test_a_case_becomes_its_id_and_what_json_holds_stays(self):
        case = SimpleNamespace(id="pageable-copy_-1KiB-float32-cpu->cpu")
        written = {"xfer_case": case, "n": 3, "s": "x", "other": object()}
        plain = plain_params(written)
        assert plain is not None and plain["xfer_case"] == "pageable-copy_-1KiB-float32-cpu->cpu"
        assert (plain["n"], plain["s"], plain["other"]) == (3, "x", written["other"])
        assert plain_params(None) is None

    def test_the_run_s_json_is_rewritten(self):
        shipped = shipped_folder()
        assert shipped is not None
        output = {"benchmarks": [{"fullname": "test_noop.py::test_noop[a]", "params": {"xfer_case": SimpleNamespace(id="a")}}]}
        plain_names(shipped, output)
        assert output["benchmarks"] == [{"fullname": "bench/test_noop.py::test_noop[a]", "params": {"xfer_case": "a"}}]


def test_a_checkout_run_and_a_package_run_name_their_cases_alike(tmp_path):
    """Two real runs of one tiny case: ``pytest bench`` here and ``xferbench run`` from another folder."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    args = ["-k", "test_noop", "--xfer-sizes=4B", "--benchmark-max-time=0.001", "-q", "-p", "no:cacheprovider"]
    subprocess.run([sys.executable, "-m", "pytest", "bench", "--benchmark-only", f"--benchmark-json={tmp_path / 'a.json'}",
                    *args], cwd=ROOT, env=env, check=True, capture_output=True)
    subprocess.run([sys.executable, "-m", "xferbench.cli", "run", "-o", str(tmp_path / "b.json"), *args],
                   cwd=tmp_path, env=env, check=True, capture_output=True)
    names = [[(b["fullname"], b["params"]) for b in json.loads((tmp_path / f).read_text())["benchmarks"]]
             for f in ("a.json", "b.json")]
    assert names[0] == names[1] and names[0]
    assert all(n.startswith("bench/test_noop.py::test_noop[") and "UNSERIALIZABLE" not in str(p) for n, p in names[0])

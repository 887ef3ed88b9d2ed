"""The machine's load recorded around each run (measure/hardware/machine.py), read back by compare."""

from __future__ import annotations

from pathlib import Path

import pytest

from xferbench.measure.hardware.machine import load_snapshot, machine_load


def stat_file(tmp_path: Path, name: str, jiffies: list[int]) -> Path:
    path = tmp_path / name
    path.write_text("cpu  " + " ".join(map(str, jiffies)) + " 0 0\ncpu0 1 2 3\n")
    return path


def test_steal_and_others_from_proc_stat(tmp_path, monkeypatch):
    """Between two readings: 1000 jiffies in all, 100 stolen; 500 busy jiffies (5 s at 100 Hz) over 10 s on 2 CPUs,
    of which this process took 1 s: the others took 4 s of 20, 20%."""
    monkeypatch.setattr("os.sysconf", lambda name: 100)
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    start = load_snapshot(stat_file(tmp_path, "a", [0] * 8)) | {"wall": 0.0, "own": 0.0}
    later = stat_file(tmp_path, "b", [300, 0, 100, 400, 0, 50, 50, 100])
    times = type("T", (), {"elapsed": 10.0, "user": 1.0, "system": 0.0, "children_user": 0.0, "children_system": 0.0})
    monkeypatch.setattr("os.times", lambda: times)
    monkeypatch.setattr("os.getloadavg", lambda: (9.13, 5.0, 2.0))
    load = machine_load(start, later)
    assert load == {"cpus": 2, "load_before": start["load"], "load_after": 9.13, "cpu_steal": 0.1, "cpu_others": 0.2}


def test_unknown_without_proc_stat(tmp_path):
    """Not Linux (no /proc/stat): the load average alone, steal and others unknown rather than guessed."""
    missing = tmp_path / "nowhere"
    load = machine_load(load_snapshot(missing), missing)
    assert load["cpu_steal"] is None and load["cpu_others"] is None and load["cpus"] >= 1
    assert machine_load(None, missing)["load_before"] is None


@pytest.mark.parametrize("text", ["", "cpu 1 2\n", "cpu a b c d e f g h\n"])
def test_a_stat_file_it_cannot_read_is_unknown(tmp_path, text):
    path = tmp_path / "stat"
    path.write_text(text)
    assert load_snapshot(path)["jiffies"] is None

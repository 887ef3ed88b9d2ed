"""pytest-benchmark JSON -> a tidy pandas DataFrame, one row per benchmark.

This is the analysis side's only door to the data: it validates the files and
turns them into rows, so that model, plots, report and compare work on a
DataFrame and never on JSON. No torch here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .cases import SCHEMA_VERSION

__all__ = ["IDENTITY", "Results", "ResultsError", "find_json", "frame_from_rows", "load", "load_file", "path_key"]

#: The columns that identify a case across runs (compare matches on these).
IDENTITY = ["op", "method", "variant", "src", "dst", "nbytes", "dtype", "host_memory", "non_blocking", "world_size",
            "backend"]
#: Ops whose time is not a payload crossing a link: no bandwidth is computed for them.
NO_BANDWIDTH = {"noop", "sync_stall", "forward"}



class ResultsError(ValueError):
    """A results file that cannot be used; the message is one line naming the file."""


@dataclass
class Results:
    """Benchmarks as rows, plus what the report says about where they came from."""

    frame: pd.DataFrame
    machine_info: dict[str, Any]
    commit_info: dict[str, Any]
    sources: list[str]
    notes: list[str] = field(default_factory=list)

    @property
    def has_accelerator(self) -> bool:
        devices = pd.concat([self.frame["src"], self.frame["dst"]]).dropna().astype(str)
        # Distributed rows name devices per rank ("rank0:cpu", "all:cuda"): look past the prefix.
        kinds = devices.str.replace(r"^(rank\d+|all):", "", regex=True).str.split(":").str[0]
        return bool((kinds != "cpu").any())


def find_json(path: Path) -> list[Path]:
    """A file as itself; a folder (pytest-benchmark storage) as every JSON below it."""
    if path.is_dir():
        files = sorted(path.rglob("*.json"))
        if not files:
            raise ResultsError(f"{path}: no JSON files in this folder")
        return files
    if not path.exists():
        raise ResultsError(f"{path}: no such file")
    return [path]


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise ResultsError(f"{path}: cannot read it ({error.__class__.__name__})") from None
    if not text.strip():
        raise ResultsError(f"{path}: the file is empty")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ResultsError(f"{path}: not JSON, or cut short (line {error.lineno}, column {error.colno}: {error.msg})") from None
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list) or "machine_info" not in data:
        raise ResultsError(f"{path}: not a pytest-benchmark JSON file (it needs 'machine_info' and a 'benchmarks' list)")
    if not data["benchmarks"]:
        raise ResultsError(f"{path}: holds no benchmarks")
    return data


def _row(bench: dict[str, Any], run: str, when: str | None) -> dict[str, Any]:
    info, stats = bench["extra_info"], bench["stats"]
    median = float(stats["median"])
    nbytes = int(info.get("nbytes") or 0)
    row = {
        "run": run,
        "datetime": when,
        "name": bench.get("name"),
        "group": bench.get("group"),
        "op": info["op"],
        "method": info.get("method"),
        "variant": info.get("variant"),
        "src": info.get("src"),
        "dst": info.get("dst"),
        "nbytes": nbytes,
        "dtype": info.get("dtype"),
        "host_memory": info.get("host_memory"),
        "non_blocking": bool(info.get("non_blocking", False)),
        "world_size": info.get("world_size"),
        "backend": info.get("backend"),
        "shape": "x".join(map(str, info.get("shape") or [])),
        "clock": info.get("clock"),
        "median_s": median,
        "min_s": float(stats["min"]),
        "mean_s": float(stats["mean"]),
        "max_s": float(stats["max"]),
        "iqr_s": float(stats["iqr"]),
        "q1_s": float(stats["q1"]),
        "q3_s": float(stats["q3"]),
        "stddev_s": float(stats["stddev"]),
        "rounds": int(stats["rounds"]),
        "iterations": int(stats.get("iterations", 1)),
        "device_seconds": info.get("device_seconds"),
        "peer_access": info.get("peer_access"),
        # GB = 1e9 bytes, bytes counted once; a no-op moves nothing.
        "bandwidth_gbps": (nbytes / median / 1e9 if median > 0 and info["op"] not in NO_BANDWIDTH
                           and info.get("variant") != "again" else float("nan")),
        "data": stats.get("data"),
    }
    # The time of one transfer: a ping-pong call carries the payload there and back.
    row["transfer_s"] = median / 2 if info.get("round_trip") else median
    if info.get("round_trip") and median > 0:
        row["bandwidth_gbps"] = nbytes / row["transfer_s"] / 1e9
    row["busbw_gbps"] = row["bandwidth_gbps"] * float(info["bus_factor"]) if "bus_factor" in info else float("nan")
    row["path"] = path_key(row)
    row["case_key"] = "|".join(str(row[column]) for column in IDENTITY)
    return row


def load_file(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]], int]:
    """One file's JSON, its xferbench rows, and how many other benchmarks it held."""
    data = _read(path)
    run = path.stem
    when = data.get("datetime")
    rows, foreign = [], 0
    for bench in data["benchmarks"]:
        info = bench.get("extra_info") if isinstance(bench, dict) else None
        if not isinstance(info, dict) or "xfer_schema" not in info:
            foreign += 1
            continue
        if int(info["xfer_schema"]) > SCHEMA_VERSION:
            raise ResultsError(f"{path}: written by a newer xferbench (data schema {info['xfer_schema']}); upgrade xferbench")
        try:
            rows.append(_row(bench, run, when))
        except (KeyError, TypeError, ValueError) as error:
            raise ResultsError(f"{path}: benchmark {bench.get('name')!r} is malformed ({error!r} missing or wrong)") from None
    if not rows:
        raise ResultsError(f"{path}: none of its {foreign} benchmarks are xferbench's (no extra_info.xfer_schema)")
    return data, rows, foreign


def load(paths: list[Path]) -> Results:
    """Load results; the last file's machine_info describes the run.

    When a case appears in several files, the newest (by the run's datetime)
    wins and a note says how many older rows were replaced.
    """
    files = [f for p in paths for f in find_json(Path(p))]
    loaded = [(f, *load_file(f)) for f in files]
    loaded.sort(key=lambda item: str(item[1].get("datetime") or ""))
    rows = [row for _, _, file_rows, _ in loaded for row in file_rows]
    frame = frame_from_rows(rows)
    before = len(frame)
    frame = frame.drop_duplicates(subset="case_key", keep="last").reset_index(drop=True)
    notes = []
    foreign = sum(item[3] for item in loaded)
    if foreign:
        notes.append(f"{foreign} benchmark(s) that are not xferbench's were left out.")
    if before > len(frame):
        notes.append(f"{before - len(frame)} older result(s) of a case measured again were replaced by the newest.")
    last = loaded[-1][1]
    return Results(frame=frame, machine_info=last.get("machine_info") or {},
                   commit_info=last.get("commit_info") or {}, sources=[str(f) for f in files], notes=notes)


def frame_from_rows(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    frame["device_seconds"] = pd.to_numeric(frame["device_seconds"], errors="coerce")
    return frame


def path_key(row: dict[str, Any]) -> str:
    """A readable name for a transfer path, e.g. ``h2d pinned non-blocking copy_ cpu->cuda:0``."""
    dtype = "" if row.get("dtype") in (None, "float32") else f" {row['dtype']}"
    if row.get("world_size"):
        return f"{row['op']} {row['backend']} x{row['world_size']}{dtype}"
    if row.get("variant"):
        where = row["src"] if row["src"] == row["dst"] else f"{row['src']}->{row['dst']}"
        variant = "" if row["variant"] == row["op"] else f" {row['variant']}"
        return f"{row['op']}{variant} {where}"
    if row["op"] == "noop":
        return f"noop .{row['method']}() on {row['src']}"
    if row["op"] == "create":
        return f"create {row['method']} on {row['src']}{dtype}"
    parts = [row["op"]]
    if row.get("host_memory"):
        parts.append(row["host_memory"])
    if row["op"] in ("h2d", "d2h", "peer") and row.get("non_blocking"):
        parts.append("non-blocking")
    parts.append(str(row["method"]))
    if row.get("dtype") and row["dtype"] != "float32":
        parts.append(str(row["dtype"]))
    parts.append(row["src"] if row["src"] == row["dst"] else f"{row['src']}->{row['dst']}")
    return " ".join(parts)

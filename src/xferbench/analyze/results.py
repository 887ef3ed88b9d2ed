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

from ..contract import IDENTITY, SCHEMA_VERSION, ContractError, identity_from, measured_from
from ..families import FAMILIES

__all__ = ["IDENTITY", "Results", "ResultsError", "find_json", "frame_from_rows", "load", "load_file"]


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
    def simulated(self) -> dict[str, Any] | None:
        """The machine spec when the run was simulated (--xfer-simulate), else None."""
        block = self.machine_info.get("xferbench")
        spec = block.get("simulated") if isinstance(block, dict) else None
        return spec if isinstance(spec, dict) else None

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


def _moves_payload(op: str, variant: str | None) -> bool:
    """Whether bytes / time is a bandwidth: a family that moves its payload (unknown ops are
    assumed to), and not a second module.to() that finds everything in place."""
    family = FAMILIES.get(op)
    return (family is None or family.moves_payload) and variant != "again"


_STATS = ("median", "min", "mean", "max", "iqr", "q1", "q3", "stddev")


def _row(bench: dict[str, Any], run: str, when: str | None) -> dict[str, Any]:
    info, stats = bench["extra_info"], bench["stats"]
    identity = identity_from(info)
    measured = measured_from(info)
    median = float(stats["median"])
    row: dict[str, Any] = {"run": run, "datetime": when, "name": bench.get("name"), "group": bench.get("group")}
    row |= {name: getattr(identity, name) for name in IDENTITY}
    row["shape"] = "x".join(map(str, identity.shape))
    row |= measured
    row |= {f"{name}_s": float(stats[name]) for name in _STATS}
    row |= {"rounds": int(stats["rounds"]), "iterations": int(stats.get("iterations", 1)), "data": stats.get("data")}
    # The time of one transfer: a ping-pong call carries the payload there and back.
    row["transfer_s"] = median / 2 if measured["round_trip"] else median
    # GB = 1e9 bytes, bytes counted once; a no-op moves nothing.
    moves = median > 0 and _moves_payload(identity.op, identity.variant)
    row["bandwidth_gbps"] = identity.nbytes / row["transfer_s"] / 1e9 if moves else float("nan")
    factor = measured["bus_factor"]
    row["busbw_gbps"] = row["bandwidth_gbps"] * factor if factor is not None else float("nan")
    row["path"] = identity.path
    row["case_key"] = identity.key
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
        except ContractError as error:
            raise ResultsError(f"{path}: benchmark {bench.get('name')!r}: {error}") from None
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

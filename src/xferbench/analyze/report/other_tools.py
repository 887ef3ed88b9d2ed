"""Figures from the tools people run next to xferbench: nvbandwidth (JSON) and nccl-tests (text).

``xferbench report`` accepts their output files beside the suite's JSON; ``inputs.kind_of`` tells
them apart by content, not by name, and this module is loaded only where such a file is given. Each
parser turns a file into ``PeerFigure`` rows in the suite's own terms (op, source and destination
device, GB/s), so the report can set "``.to('cuda:0')`` from pinned memory" beside "nvbandwidth's
host_to_device_memcpy_ce" for the same path. The formats are the tools' own:

- nvbandwidth ``-j``: ``{"nvbandwidth": {"testcases": [{"name", "status", "bandwidth_description",
  "bandwidth_matrix": [["12.3", "N/A", ...], ...]}], ...}}`` (json_output.cpp); the description says
  which way the matrix reads, e.g. ``memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)``.
- nccl-tests: the text table of ``all_reduce_perf`` and friends (src/util.cu): ``size count type
  redop root`` then ``time algbw busbw #wrong`` out-of-place and in-place, one line per size; each
  time is the mean over the ranks (common.cu, ``average = 1`` unless ``-a``).

No torch here.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ...units import count, format_bytes
from ..load.results import ResultsError
from ..view import RunView
from .inputs import kind_of

__all__ = ["TABLE_ROWS", "PeerFigure", "comparisons", "headlines", "load_peers", "parse_nccl_tests",
           "parse_nvbandwidth", "peer_table", "sentence", "table_rows"]


@dataclass(frozen=True)
class PeerFigure:
    """One figure of another tool, in the suite's terms."""

    tool: str  # "nvbandwidth" or "nccl-tests"
    test: str  # the tool's name for it: a testcase, or a collective
    op: str  # the suite's op it corresponds to: h2d, d2h, d2d, peer, all_reduce, ...
    src: str
    dst: str
    gbps: float  # nvbandwidth: GB/s; nccl-tests: busbw (GB/s) of ``variant``
    nbytes: int | None  # the size measured, when the output says
    note: str
    source: str
    variant: str | None = None  # nccl-tests: "out-of-place" or "in-place" (its two timings of every size)
    wrong: int | None = None  # nccl-tests: its #wrong column, elements that arrived wrong (None: not checked, N/A)


#: nvbandwidth testcases with a counterpart in the suite (copy engine and SM copies), by name.
NVBANDWIDTH_OPS = {
    "host_to_device_memcpy_ce": "h2d", "host_to_device_memcpy_sm": "h2d",
    "device_to_host_memcpy_ce": "d2h", "device_to_host_memcpy_sm": "d2h",
    "device_to_device_memcpy_read_ce": "peer", "device_to_device_memcpy_write_ce": "peer",
    "device_to_device_memcpy_read_sm": "peer", "device_to_device_memcpy_write_sm": "peer",
    "device_local_copy": "d2d",
}
#: nvbandwidth copies a 512 MiB buffer unless --bufferSize says otherwise (common.h, from v0.7; 64 MiB before), and
#: its JSON records the version ("v0.8") but not the buffer size.
NVBANDWIDTH_DEFAULT_BUFFER = 512 * 2**20
NVBANDWIDTH_OLD_BUFFER = 64 * 2**20

#: nccl-tests programs and the suite's distributed ops.
NCCL_TESTS_OPS = {"all_reduce_perf": "all_reduce", "all_gather_perf": "all_gather",
                  "reduce_scatter_perf": "reduce_scatter", "broadcast_perf": "broadcast",
                  "sendrecv_perf": "send_recv"}
#: Where the suite's op writes its result, as nccl-tests' two columns name it: in the buffer it sent from
#: (``dist.all_reduce(buf)``, ``broadcast``) or into another. nccl-tests' sendrecv_perf is a ring (every rank sends
#: to the next and receives from the one before): the suite's ring variant of send_recv, never its ping-pong.
SUITE_PLACEMENT = {"all_reduce": "in-place", "broadcast": "in-place", "all_gather": "out-of-place",
                   "reduce_scatter": "out-of-place", "send_recv": "out-of-place"}
#: The variant of all_gather and reduce_scatter that runs in place (measure.distributed.operations.IN_PLACE): those
#: two are timed both ways, as nccl-tests times every collective.
IN_PLACE_VARIANT = "in_place"


def _device(word: str, index: int) -> str:
    return "cpu" if word == "CPU" else f"cuda:{index}"


def parse_nvbandwidth(data: dict[str, Any], source: str) -> list[PeerFigure]:
    """Every measured cell of the testcases that have a counterpart in the suite."""
    body = data.get("nvbandwidth")
    if not isinstance(body, dict) or not isinstance(body.get("testcases", []), list):
        raise ResultsError(f"{source}: nvbandwidth JSON without a 'testcases' list")
    buffer, said = _nvbandwidth_buffer(body.get("version"))
    figures = []
    for case in body.get("testcases", []):
        if not isinstance(case, dict) or case.get("status") != "Passed" or not isinstance(case.get("name"), str) \
                or case["name"] not in NVBANDWIDTH_OPS:
            continue
        description = str(case.get("bandwidth_description", ""))
        # "memcpy CE CPU(row) -> GPU(column) ...", "... GPU(row) <- GPU(column) ...", "memcpy local GPU(column) ..."
        arrow = re.search(r"(CPU|GPU)\(row\)\s*(->|<-)\s*(CPU|GPU)\(column\)", description)
        matrix = case.get("bandwidth_matrix")
        if not isinstance(matrix, list):
            raise ResultsError(f"{source}: nvbandwidth testcase {case.get('name')!r} has no bandwidth_matrix")
        for r, row in enumerate(matrix):
            for c, cell in enumerate(row if isinstance(row, list) else []):
                try:
                    gbps = float(cell)
                except (TypeError, ValueError, OverflowError):  # an integer past float range: no figure either
                    continue  # "N/A": a pair nvbandwidth did not measure
                if not 0 < gbps < math.inf:
                    continue  # the diagonal of device-to-device matrices; "nan" and "inf" are not figures
                op = NVBANDWIDTH_OPS[case["name"]]
                if op == "d2d":
                    src = dst = f"cuda:{c}"
                elif arrow:
                    row_dev, col_dev = _device(arrow.group(1), r), _device(arrow.group(3), c)
                    src, dst = (row_dev, col_dev) if arrow.group(2) == "->" else (col_dev, row_dev)
                else:
                    continue
                engine = "copy engine" if case["name"].endswith("_ce") else "SM kernel copy"
                figures.append(PeerFigure("nvbandwidth", case["name"], op, src, dst, gbps, buffer,
                                          f"{engine}; buffer size not in its JSON ({format_bytes(buffer)} unless "
                                          f"--bufferSize{said})", source))
    return figures


def _nvbandwidth_buffer(version: object) -> tuple[int, str]:
    """nvbandwidth's default buffer for the version its JSON records ("v0.8"), and how that was decided."""
    match = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.\d+)?", str(version).strip()) if version is not None else None
    if not match:
        return NVBANDWIDTH_DEFAULT_BUFFER, "; its version is not recorded: v0.7 and later's default assumed"
    major_minor = (int(match.group(1)), int(match.group(2)))
    return (NVBANDWIDTH_DEFAULT_BUFFER if major_minor >= (0, 7) else NVBANDWIDTH_OLD_BUFFER), f", nvbandwidth {version}"


_NUM = r"([\d.e+-]+)"
#: One line of nccl-tests' table (util.cu): ``%12li  %12li  %8s  %6s  %6s`` (size, count, type, redop, root), then
#: ``  %7s  %6s  %6s  %6g`` (time, algbw, busbw, #wrong; "N/A" without -c) out-of-place, then the same in-place.
_NCCL_ROW = re.compile(rf"^\s*(\d+)\s+(\d+)\s+(\w+)\s+(\S+)\s+(-?\d+)\s+{_NUM}\s+{_NUM}\s+{_NUM}\s+(\S+)"
                       rf"(?:\s+{_NUM}\s+{_NUM}\s+{_NUM}\s+(\S+))?")


def _number(text: str | None) -> float | None:
    """A cell of the table as a finite number from 0 (a bandwidth; a #wrong count, ``%6g``: 0, 12, 1e+06); None for
    what the pattern lets through but is none (``1.2.3``, ``e``, N/A: not checked)."""
    try:
        value = float(text or "")
    except ValueError:
        return None
    return value if 0 <= value < math.inf else None


def parse_nccl_tests(text: str, source: str) -> list[PeerFigure]:
    """Two figures per size, its out-of-place and in-place bus bandwidth, each with its #wrong count and the number
    of ranks in ``dst``. nccl-tests reports each time as the mean over its ranks (``-a 1``, its default)."""
    program = re.search(r"Collective test starting:\s*(\w+)", text)
    name = program.group(1) if program else next((p for p in NCCL_TESTS_OPS if p in Path(source).name), None)
    if name is None:
        raise ResultsError(f"{source}: nccl-tests output that does not say which test ran (no 'Collective test "
                           "starting' line; name the file after the program, e.g. all_reduce_perf.txt)")
    ranks = len(re.findall(r"^#\s+Rank\s+\d+\s+Group", text, re.MULTILINE)) or None
    figures = []
    for line in text.splitlines():
        if not (match := _NCCL_ROW.match(line)):
            continue
        size, _, dtype, redop, _ = match.groups()[:5]
        if len(size) > 19:
            continue  # not a size any run prints (and int() refuses 4300 digits and more)
        for variant, (_, _, busbw, wrong) in (("out-of-place", match.groups()[5:9]), ("in-place", match.groups()[9:13])):
            gbps, wrong_count = _number(busbw), _number(wrong)
            if gbps is None:
                continue  # no in-place column (trace replay), or not a bandwidth any run prints ("1.2.3", "e")
            count = None if wrong_count is None else int(wrong_count)
            note = (f"busbw, {variant}, {dtype}" + (f", {redop}" if redop not in ("none", "-") else "")
                    + ", mean over ranks" + (f"; {count} wrong elements" if count else ""))
            figures.append(PeerFigure("nccl-tests", name, NCCL_TESTS_OPS.get(name, name.removesuffix("_perf")),
                                      "all", f"{ranks or '?'} ranks", gbps, int(size), note, source,
                                      variant, count))
    if not figures:
        raise ResultsError(f"{source}: nccl-tests output with no result lines (did the run fail?)")
    return figures


def load_peers(paths: list[Path]) -> list[PeerFigure]:
    """Figures of every nvbandwidth or nccl-tests file given."""
    figures: list[PeerFigure] = []
    for path in paths:
        if (kind := kind_of(path)) == "nvbandwidth":
            if not (found := parse_nvbandwidth(json.loads(path.read_text()), str(path))):
                raise ResultsError(f"{path}: no nvbandwidth testcase in it has a counterpart in xferbench "
                                   f"({', '.join(sorted(NVBANDWIDTH_OPS))})")
            figures += found
        elif kind == "nccl-tests":
            figures += parse_nccl_tests(path.read_text(), str(path))
    return figures


def _nearest(rows: pd.DataFrame, nbytes: int | None) -> pd.DataFrame:
    """The suite's rows at the size closest (on a log scale) to the other tool's."""
    rows = rows[rows["nbytes"] > 0]  # a size of 0 has no place on a log scale
    if rows.empty:
        return rows
    sizes = pd.Series(sorted(set(rows["nbytes"])))
    target = nbytes or int(sizes.max())
    size = int(sizes.iloc[sizes.map(lambda s: abs(math.log2(s / target))).idxmin()])
    return rows[rows["nbytes"] == size]


def comparisons(view: RunView, figures: list[PeerFigure]) -> list[dict[str, Any]]:
    """For each other tool's figure, the suite's best path on the same devices at the nearest size, and the share.

    The suite's rows are split once by what a figure is matched on, and each match is worked out once: filtering the
    whole frame per figure cost about 6 ms each, and a 2,000-line nccl-tests file or a 300x300 nvbandwidth matrix
    (90,000 figures) kept ``report`` busy for minutes."""
    frame = view.rows
    by_path = {key: rows for key, rows in frame.groupby(["op", "src", "dst"], sort=False)} if not frame.empty else {}
    nccl: dict[tuple[str, str | None, str], dict[int, pd.Series]] = {}
    best: dict[tuple[str, str, str, int | None], pd.Series | None] = {}
    out = []
    for figure in figures:
        if figure.tool == "nccl-tests":
            key = (figure.op, figure.variant, figure.dst.split()[0])
            if key not in nccl:
                nccl[key] = _nccl_best_by_size(_nccl_rows(frame, figure))
            out.append(_nccl_row(nccl[key].get(figure.nbytes) if figure.nbytes is not None else None, figure))
            continue
        where = (figure.op, figure.src, figure.dst, figure.nbytes)
        if where not in best:
            rows = by_path.get(where[:3])
            rows = _nearest(rows, figure.nbytes).dropna(subset=["bandwidth_gbps"]) if rows is not None else None
            best[where] = rows.loc[rows["bandwidth_gbps"].idxmax()] if rows is not None and not rows.empty else None
        row: dict[str, Any] = {"figure": figure, "path": None, "gbps": None, "nbytes": None, "share": None}
        if (found := best[where]) is not None:
            gbps = float(found["bandwidth_gbps"])
            row |= {"path": found["path"], "gbps": gbps, "nbytes": int(found["nbytes"]),
                    "share": gbps / figure.gbps if figure.gbps else None}
        out.append(row)
    return out


def _nccl_rows(frame: pd.DataFrame, figure: PeerFigure) -> pd.DataFrame:
    """The suite's rows that time what ``figure`` timed, at every size: the same op on nccl (gloo runs another path:
    host memory, TCP), as many ranks, the same placement (in-place or out-of-place), and for sendrecv_perf the ring
    (every rank sends), never the ping-pong between two ranks."""
    rows = frame[(frame["op"] == figure.op) & frame["world_size"].notna() & (frame["backend"] == "nccl")]
    variant = rows["variant"] if "variant" in rows else pd.Series(None, index=rows.index, dtype=object)
    rows = rows[variant == "ring"] if figure.op == "send_recv" else rows[variant.isna() | (variant != "ring")]
    # where each row writes its result, as nccl-tests' columns name it
    placed = variant.loc[rows.index].map(lambda v: "in-place" if v == IN_PLACE_VARIANT else SUITE_PLACEMENT.get(figure.op))
    rows = rows[placed == (figure.variant or SUITE_PLACEMENT.get(figure.op))]
    if (ranks := figure.dst.split()[0]).isdigit():
        rows = rows[rows["world_size"] == int(ranks)]
    return rows


def _nccl_best_by_size(rows: pd.DataFrame) -> dict[int, pd.Series]:
    """Of the rows that time what a figure timed, the one of the highest bus bandwidth at each size."""
    rows = rows[rows["busbw_gbps"].notna()]  # none left: an empty grouping, no size
    return {int(nbytes): rows.loc[index] for nbytes, index in rows.groupby("nbytes")["busbw_gbps"].idxmax().items()}


def _nccl_row(best: pd.Series | None, figure: PeerFigure) -> dict[str, Any]:
    """nccl-tests' figure beside the suite's: by the ranks' mean time, as nccl-tests reports by default, with the
    slowest rank's beside it (the suite's own statistic)."""
    from .distributed import mean_rank_busbw

    row: dict[str, Any] = {"figure": figure, "path": None, "gbps": None, "nbytes": None, "share": None, "slowest_gbps": None}
    if best is None:
        return row
    mean = mean_rank_busbw(best)
    gbps = mean if mean is not None else float(best["busbw_gbps"])
    return row | {"path": best["path"], "gbps": gbps, "nbytes": int(best["nbytes"]),
                  "slowest_gbps": float(best["busbw_gbps"]), "share": gbps / figure.gbps if figure.gbps else None,
                  "by": "the ranks' mean time" if mean is not None else "the slowest rank's time (no per-rank times)"}


def sentence(row: dict[str, Any]) -> str:
    """"h2d pinned .to cpu->cuda:0 reaches 96% of nvbandwidth's host_to_device_memcpy_ce (…)"."""
    figure: PeerFigure = row["figure"]
    where = f"{figure.src}→{figure.dst}" if figure.tool == "nvbandwidth" else figure.dst
    if row["path"] is None:
        return f"{figure.tool}'s {figure.test} ({where}, {figure.gbps:.4g} GB/s): the suite measured no matching path."
    if figure.tool == "nccl-tests":
        wrong = f" nccl-tests counted {figure.wrong} wrong elements there." if figure.wrong else ""
        return (f"{row['path']} reaches {row['share']:.0%} of nccl-tests's {figure.test} ({where}, {figure.variant}): "
                f"{row['gbps']:.4g} against {figure.gbps:.4g} GB/s bus bandwidth by {row['by']}, as nccl-tests reports "
                f"it ({row['slowest_gbps']:.4g} GB/s by the slowest rank's; at {format_bytes(row['nbytes'])}; "
                f"{figure.note}).{wrong}")
    return (f"{row['path']} reaches {row['share']:.0%} of {figure.tool}'s {figure.test} ({where}): "
            f"{row['gbps']:.4g} against {figure.gbps:.4g} GB/s"
            f" (the suite at {format_bytes(row['nbytes'])}; {figure.note}).")


def headlines(rows: list[dict[str, Any]]) -> list[str]:
    """The sentences worth reading: each matched test and path at its largest matched size, then one line for
    the figures nothing in this run matched."""
    matched: dict[tuple[str, str, str, str, str | None], dict[str, Any]] = {}
    for row in rows:
        figure: PeerFigure = row["figure"]
        key = (figure.tool, figure.test, figure.src, figure.dst, figure.variant)
        if row["path"] is not None and (key not in matched or (row["nbytes"] or 0) >= (matched[key]["nbytes"] or 0)):
            matched[key] = row
    out = [sentence(row) for row in matched.values()]
    if wrong := [row["figure"] for row in rows if row["figure"].wrong]:
        out.append(f"nccl-tests counted wrong elements (#wrong) in {len(wrong)} of its figures, "
                   f"{sum(f.wrong for f in wrong)} in all (e.g. {wrong[0].test} {wrong[0].variant} at "
                   f"{format_bytes(wrong[0].nbytes or 0)}): those runs delivered wrong data, so their bandwidth is no "
                   "reference.")
    if unmatched := sum(row["path"] is None for row in rows):
        out.append(f"{count(unmatched, 'figure')} of the other tools {'has' if unmatched == 1 else 'have'} no counterpart in "
                   "this run (a path, size or placement the suite did not measure, or a different backend); the table lists "
                   f"{'it' if unmatched == 1 else 'them'}.")
    return out


#: The most rows of other tools' figures the page's table lists: a 300x300 nvbandwidth matrix is 90,000 figures, a
#: table of 20 MB that took longer to write than the rest of the report.
TABLE_ROWS = 500


def table_rows(rows: list[dict[str, Any]], limit: int = TABLE_ROWS) -> tuple[list[dict[str, Any]], str | None]:
    """The rows the table lists, those with a counterpart in the suite first, and the line that says how many were
    left out (None when all are listed)."""
    if len(rows) <= limit:
        return rows, None
    listed = sorted(rows, key=lambda row: row["path"] is None)[:limit]  # stable: each tool's order is kept
    return listed, (f"The table lists {limit} of the other tools' {len(rows):,} figures, those with a counterpart in "
                    f"this run first; {len(rows) - limit:,} are left out.")


def peer_table(view: RunView, figures: list[PeerFigure]) -> tuple[list[dict[str, Any]], list[str]]:
    """The page's table of the other tools' figures beside the suite's (at most TABLE_ROWS rows), and its lines."""
    rows = comparisons(view, figures)
    listed, left_out = table_rows(rows)
    return listed, headlines(rows) + ([left_out] if left_out else [])

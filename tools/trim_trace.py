"""Cut a real torch.profiler trace down to what `xferbench price` reads, to keep it as test data.

    python tools/trim_trace.py BIG.json.gz tests/data/traces/SMALL.json.gz

Kept: the document's small top-level keys; every GPU copy; every runtime copy call and synchronize; the ops that
hold one of those calls on its thread; the ProfilerStep spans; every kernel's span (its name cut to 40
characters). Each kept event keeps only the arguments pricing reads. Everything else is dropped; tests/data/README.md
says so for each file.
"""

from __future__ import annotations

import bisect
import gzip
import json
import sys

COPY = {"gpu_memcpy", "Memcpy"}
CALL = {"cuda_runtime", "Runtime", "cuda_driver"}
OP = {"cpu_op", "Operator", "user_annotation"}
KERNEL = {"kernel", "Kernel"}
ARGS = {"device", "stream", "correlation", "bytes", "External id", "external id", "size"}


def _slim(event: dict) -> dict:
    kept = {k: event[k] for k in ("ph", "cat", "name", "pid", "tid", "ts", "dur") if k in event}
    if event.get("cat") in KERNEL:
        kept["name"] = str(kept.get("name"))[:40]
    args = {k: v for k, v in (event.get("args") or {}).items() if k in ARGS}
    return kept | ({"args": args} if args and event.get("cat") not in OP else {})


def _holds(op: dict, starts: list, calls: list) -> bool:
    """Whether the op holds one of its thread's calls (``calls`` sorted by start, ``starts`` their starts)."""
    end = op["ts"] + op.get("dur", 0)
    first = bisect.bisect_left(starts, op["ts"])
    return any(c["ts"] + c.get("dur", 0) <= end for c in calls[first:bisect.bisect_right(starts, end)])


def main(source: str, target: str) -> None:
    opener = gzip.open if source.endswith(".gz") else open
    with opener(source, "rt") as handle:
        document = json.load(handle)
    events = [e for e in document["traceEvents"] if e.get("ph") == "X"]
    calls = [e for e in events if e.get("cat") in CALL and ("Memcpy" in e["name"] or "Synchronize" in e["name"])]
    by_thread: dict = {}
    for call in sorted(calls, key=lambda c: c["ts"]):
        by_thread.setdefault((call["pid"], str(call["tid"])), []).append(call)
    starts = {thread: [c["ts"] for c in held] for thread, held in by_thread.items()}
    chosen = {id(c) for c in calls}
    kept = [e for e in events if e.get("cat") in COPY | KERNEL or id(e) in chosen
            or (e.get("cat") in OP and (str(e.get("name")).startswith("ProfilerStep#")
                                        or _holds(e, starts.get((e["pid"], str(e["tid"])), []),
                                                  by_thread.get((e["pid"], str(e["tid"])), []))))]
    small = {k: v for k, v in document.items() if k != "traceEvents" and len(json.dumps(v)) < 20000}
    with gzip.open(target, "wt") as handle:
        json.dump(small | {"traceEvents": [_slim(e) for e in kept]}, handle, separators=(",", ":"))
    print(f"{target}: {len(kept)} of {len(document['traceEvents'])} events")


if __name__ == "__main__":
    main(*sys.argv[1:])

"""Reading a torch.profiler trace (analyze/trace/parser.py) through ``xferbench price``: both formats, and every bad
input one line and exit 2 (Hypothesis over the parser: cut short, huge numbers, events out of order, odd bytes,
repeated correlation ids)."""

import copy
import gzip
import io
import json
import random
import tarfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xferbench.analyze.trace.parser import read_trace

from hostile_inputs import FAST, SLOW, assert_refused, json_values, put, run_cli

TRACES = Path(__file__).parent / "data" / "traces"


def _trace(*extra, copy_args=None, call="cudaMemcpyAsync", name="Memcpy HtoD (Pageable -> Device)", sync=True):
    """The smallest trace of one copy: its op, its runtime call, its GPU copy and a synchronize after it."""
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::to", "pid": 1, "tid": 1, "ts": 100, "dur": 60},
              {"ph": "X", "cat": "cuda_runtime", "name": call, "pid": 1, "tid": 1, "ts": 105, "dur": 30,
               "args": {"correlation": 7}},
              {"ph": "X", "cat": "gpu_memcpy", "name": name, "pid": 0, "tid": 7, "ts": 120, "dur": 10,
               "args": {"correlation": 7, "bytes": 4096, "stream": 7, "device": 0} | (copy_args or {})},
              {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 90, "dur": 25, "args": {}}]
    if sync:
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 1, "tid": 1,
                       "ts": 140, "dur": 15, "args": {"correlation": 8}})
    return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "GPU X"}], "traceEvents": [*events, *extra]}


def _price(tmp_path, capsys, document, *args):
    return run_cli(capsys, "price", put(tmp_path / "trace.json", document), *args)


def test_one_copy_is_split_into_wait_copy_and_tail(tmp_path, capsys):
    """Call 105-135 µs, copy 120-130, sync 140-155: waits 15 µs, is held 10 µs for the copy, 5 + 15 after."""
    code, _, err = _price(tmp_path, capsys, _trace(), "--json", tmp_path / "out.json")
    row, = json.loads((tmp_path / "out.json").read_text())["copies"]
    assert code == 0, err
    assert (row["kind"], row["memory"], row["blocking"], row["op"], row["count"], row["bytes"]) == \
        ("h2d", "pageable", True, "aten::to", 1, 4096)
    assert [round(row[k] * 1e6, 6) for k in ("host_s", "wait_s", "blocked_s", "tail_s", "gpu_s")] == [45, 15, 10, 20, 10]


def test_a_pinned_async_copy_without_sync_is_off_the_critical_path(tmp_path):
    trace = put(tmp_path / "t.json", _trace(name="Memcpy HtoD (Pinned -> Device)", sync=False))
    from xferbench.analyze.trace.pricing import price

    row, = price(trace, None).rows
    assert (row["blocking"], row["wait_s"], row["blocked_s"]) == (False, 0.0, pytest.approx(30e-6))


def test_the_2021_format_reads_as_the_current_one(tmp_path):
    """``Memcpy``/``Runtime``/``Operator``, ``tid: "stream 7"``, ``external id``: the same copy, the same split."""
    old = _trace()
    for event in old["traceEvents"]:
        event["cat"] = {"cpu_op": "Operator", "cuda_runtime": "Runtime", "gpu_memcpy": "Memcpy",
                        "kernel": "Kernel"}[event["cat"]]
        event["tid"] = "stream 7" if event["pid"] == 0 else str(event["tid"])
    new, was = read_trace(put(tmp_path / "new.json", _trace())), read_trace(put(tmp_path / "old.json", old))
    assert (new.copies, len(new.syncs), [c.correlation for c in new.calls.values()]) == \
        (was.copies, len(was.syncs), [c.correlation for c in was.calls.values()])


def test_gzip_and_events_out_of_order_read_the_same(tmp_path):
    document = _trace()
    shuffled = copy.deepcopy(document)
    random.Random(3).shuffle(shuffled["traceEvents"])
    plain = read_trace(put(tmp_path / "a.json", document))
    zipped = tmp_path / "b.json.gz"
    zipped.write_bytes(gzip.compress(json.dumps(shuffled).encode()))
    assert {c.correlation: c.nbytes for c in read_trace(zipped).copies} == {c.correlation: c.nbytes for c in plain.copies}


@pytest.mark.hostile
@pytest.mark.parametrize(("document", "said"), [
    (b"", "not JSON, or cut short"),
    (b'{"traceEvents": [{"ph": "X"', "not JSON, or cut short"),
    (_trace(copy_args={"bytes": -1}), "bytes is '-1'"),
    (json.dumps(_trace()).replace('"bytes": 4096', '"bytes": 1' + "0" * 400).encode(), "a number out of range"),
    (json.dumps(_trace()).replace('"ts": 120', '"ts": 1e400').encode(), "a number out of range"),
    (_trace(copy_args={"bytes": None}), "records no bytes"),
    (_trace(copy_args={"bytes": "many"}), "bytes is 'many'"),
    (_trace({"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": 1, "dur": 1,
             "args": {"correlation": 7}}), "correlation id 7 names two runtime copies"),
    (_trace({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pinned)", "pid": 0, "tid": 7, "ts": 1,
             "dur": 1, "args": {"correlation": 7, "bytes": 1}}), "correlation id 7 names two GPU copies"),
    ({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 1, "dur": 2}]},
     "no GPU activity recorded: record with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]"),
    ({"traceEvents": [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 1, "dur": 2}]},
     "1 runtime calls but no GPU activity recorded"),
    (_trace({"ph": "X", "cat": "kernel", "name": "k", "ts": "soon", "dur": 1}), "an event's time is 'soon'"),
    (_trace({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": -5}), "not microseconds of a trace"),
    ({"traceEvents": [1, 2]}, "traceEvents holds something that is not an event"),
    (b"\x1f\x8b\x08\x00broken", "not JSON, or cut short"),
    (_trace(copy_args={"bytes": "\u00b2"}), "bytes is '\u00b2'"),  # a digit to str.isdigit, none to int()
    (_trace(copy_args={"bytes": "1" * 5000}), "not a whole number"),  # past int()'s 4,300 digits
    pytest.param(b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "ts": 1, "name": ' + b"[" * 3000 + b"]" * 3000
                 + b"}]}", "nested more than 64 deep", id="a name nested 3000 deep"),  # str() of it: a RecursionError
    pytest.param(b'{"a": ' + b"[" * 200_000, "nested more than 64 deep", id="200 kB of brackets"),  # 24 GB in ijson
    pytest.param(b'{"' + b"k" * (2 << 20) + b'": 1}', "a string over 1 MiB", id="a 2 MiB key"),
])
def test_each_bad_trace_is_one_line_and_exit_2(tmp_path, capsys, document, said):
    assert_refused(*_price(tmp_path, capsys, document)[::2], said)


@pytest.mark.hostile
def test_an_archive_a_cpu_only_trace_a_folder_and_a_missing_step_are_refused(tmp_path, capsys):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(put(tmp_path / "inside.json", _trace()), "inside.json")
    (tmp_path / "traces.json.gz").write_bytes(buffer.getvalue())
    cases = [(tmp_path / "traces.json.gz", (), "an archive: unpack it first"),
             (TRACES / "hta-cpu-only.pt.trace.json.gz", (), "record with activities=[ProfilerActivity.CPU"),
             (tmp_path, (), "not a regular file"),
             (TRACES / "hta-a100-5steps.json.gz", ("--step", "3"), "no ProfilerStep#3 (steps recorded: 550, 551")]
    for path, args, said in cases:
        assert_refused(*run_cli(capsys, "price", path, *args)[::2], said)


@pytest.mark.hostile
@SLOW
@given(cut=st.integers(min_value=0, max_value=10_000))
def test_a_trace_cut_anywhere_is_refused_in_one_line(tmp_path, capsys, cut):
    whole = json.dumps(_trace()).encode()
    code, _, err = _price(tmp_path, capsys, whole[:cut % len(whole)])
    assert_refused(code, err, "not JSON, or cut short")


@pytest.mark.hostile
@FAST
@given(key=st.sampled_from(["ts", "dur", "bytes", "correlation", "stream", "device", "name", "args", "cat", "tid"]),
       value=json_values)
def test_any_value_anywhere_in_a_copy_is_priced_or_refused_in_one_line(tmp_path, capsys, key, value):
    document = _trace()
    event = document["traceEvents"][2]
    (event["args"] if key in ("bytes", "correlation", "stream", "device") else event)[key] = value
    code, _, err = _price(tmp_path, capsys, document)
    assert code in (0, 2), err
    if code == 2:
        assert_refused(code, err)


@pytest.mark.hostile
@FAST
@given(document=json_values)
def test_any_json_document_is_refused_in_one_line(tmp_path, capsys, document):
    code, _, err = _price(tmp_path, capsys, document if not isinstance(document, dict) else {"traceEvents": document})
    assert_refused(code, err)


@given(seed=st.integers(min_value=0, max_value=2**16))
@FAST
def test_the_order_of_events_changes_nothing(tmp_path, seed):
    document = json.loads(gzip.open(TRACES / "hta-mi250-rocm.json.gz").read())
    random.Random(seed).shuffle(document["traceEvents"])
    from xferbench.analyze.report.trace_section import to_json
    from xferbench.analyze.trace.pricing import price

    def rows(path):  # times are kept after the first event read: equal to a float's last digits
        return json.loads(to_json(price(path, None)), parse_float=lambda text: round(float(text), 12))["copies"]

    assert rows(put(tmp_path / "s.json", document)) == rows(TRACES / "hta-mi250-rocm.json.gz")


@pytest.mark.hostile
def test_a_trace_past_the_size_bound_and_a_json_over_the_trace_are_refused(tmp_path, capsys, monkeypatch):
    trace = put(tmp_path / "trace.json", _trace())
    assert_refused(*run_cli(capsys, "price", trace, "--json", trace)[::2], "writing it would destroy it")
    monkeypatch.setattr("xferbench.analyze.trace.parser.MOST_BYTES", 100)
    assert_refused(*run_cli(capsys, "price", trace)[::2], "larger than 0 GiB: not a trace of a few steps")
    zipped = tmp_path / "small.json.gz"
    zipped.write_bytes(gzip.compress(json.dumps(_trace()).encode()))
    monkeypatch.setattr("xferbench.analyze.trace.parser.MOST_BYTES", zipped.stat().st_size)  # on disk, not inside
    assert_refused(*run_cli(capsys, "price", zipped)[::2], "once decompressed")


@pytest.mark.hostile
@pytest.mark.parametrize("events", [
    [{"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "ts": 1, "dur": 2}],
    [{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoH (Pinned -> Pinned)", "ts": 1, "dur": 2, "args": {"bytes": 1}}],
    [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2},
     {"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#" + "1" * 5000, "ts": 0, "dur": 5}],  # not a step: an op
])
def test_a_trace_without_copies_says_so(tmp_path, capsys, events):
    code, out, err = _price(tmp_path, capsys, {"traceEvents": events})
    assert (code, out.splitlines()[-1]) == (0, "no copy between host and device in the steps read"), err


@pytest.mark.hostile
@SLOW
@given(at=st.integers(min_value=0), junk=st.binary(max_size=64) | st.sampled_from([b"[" * 99, b'\\"[', b"\xff"]))
def test_any_bytes_spliced_into_a_trace_price_or_are_the_parsers_one_line(tmp_path, capsys, at, junk):
    whole = json.dumps(_trace()).encode()
    at %= len(whole) + 1
    code, _, err = _price(tmp_path, capsys, whole[:at] + junk + whole[at:])
    assert code in (0, 2), err
    if code == 2:
        assert_refused(code, err, f"xferbench price: {tmp_path / 'trace.json'}: ")


@pytest.mark.parametrize("name", ['[\\"{' * 40_000, "\\" * 140_001 + "[" * 99, '"' * 70_000 + "{" * 99],
                         ids=["escaped quotes", "backslashes", "quotes"])
def test_brackets_quotes_and_backslashes_in_strings_across_reads_are_no_nesting(tmp_path, name):
    """Strings longer than a read (64 kB), their escapes cut anywhere: only the brackets outside strings nest."""
    document = _trace({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 2, "ts": 1, "dur": 1})
    zipped = tmp_path / "t.json.gz"
    zipped.write_bytes(gzip.compress(json.dumps(document).encode()))
    assert [s.name for s in read_trace(zipped).ops] == ["aten::to", name]
    assert [s.name for s in read_trace(put(tmp_path / "t.json", document)).ops] == ["aten::to", name]


@pytest.mark.hostile
def test_a_sync_read_later_in_the_file_is_still_the_first_after_the_copy(tmp_path):
    """The first synchronize after the call in time, not in the file: the copy's tail ends at the earlier one."""
    late = {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 1, "tid": 1, "ts": 156, "dur": 3,
            "args": {"correlation": 9}}
    document = _trace()
    document["traceEvents"].insert(0, late)
    document["traceEvents"][1]["dur"] = 100  # the op holds both syncs
    from xferbench.analyze.trace.pricing import price

    row, = price(put(tmp_path / "t.json", document), None).rows
    assert round(row["tail_s"] * 1e6, 6) == 20  # the call's 5 µs after the copy and the first sync's 15


def test_a_bare_array_of_events_is_read_as_chromes_format_allows(tmp_path):
    events = _trace()["traceEvents"]
    assert read_trace(put(tmp_path / "bare.json", events)).copies == read_trace(put(tmp_path / "t.json", _trace())).copies

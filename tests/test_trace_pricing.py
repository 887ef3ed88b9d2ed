"""A trace's copies tied to the host and priced (analyze/trace/copies.py, pricing.py): real traces recorded by other
projects against an independent parse, the H200 sample's fits against α + n/β by hand, and the simulated step whose
costs are known in advance."""

import gzip
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from step_trace import BATCH_BYTES, FORWARD_S, LOSS_S, SIDE_BYTES, SIDE_COPIES, write_step_trace
from xferbench.analyze.load.results import load
from xferbench.analyze.report.trace_section import fix_said, labels, to_json, to_text
from xferbench.analyze.trace.pricing import price
from xferbench.analyze.view import RunView
from xferbench.measure.simulate import load_spec

ROOT = Path(__file__).parent.parent
TRACES = Path(__file__).parent / "data" / "traces"
REAL = ["hta-a100-5steps.json.gz", "param-resnet-2080ti.json.gz", "kineto-2021-v100.json.gz", "hta-mi250-rocm.json.gz"]
SPEC = ROOT / "examples" / "sim-2gpu-pcie5-nvlink.toml"


@pytest.fixture(scope="module")
def h200() -> RunView:
    return RunView.of(load([ROOT / "reports" / "samples" / "h200" / "full.json.gz"]))


def _independent(path: Path) -> tuple[Counter, Counter]:
    """Copies and bytes per (kind, memory) by a plain json.load, as a reader of the trace format would count them."""
    kinds = {"HtoD": "h2d", "DtoH": "d2h", "DtoD": "d2d", "PtoP": "peer"}
    events = json.load(gzip.open(path))["traceEvents"]
    sizes = {e["args"]["correlation"]: int(e["args"]["size"]) for e in events if "size" in e.get("args", {})}
    count, nbytes = Counter(), Counter()
    for event in events:
        if event.get("cat") in ("gpu_memcpy", "Memcpy"):
            kind, source, target = re.match(r"Memcpy (\w+) \((\w+) -> (\w+)\)", event["name"]).groups()
            host = source if kind == "HtoD" else target
            memory = "device" if kind in ("DtoD", "PtoP") else {"Pageable": "pageable", "Pinned": "pinned"}.get(host, "unknown")
            count[kinds[kind], memory] += 1
            nbytes[kinds[kind], memory] += event["args"].get("bytes", sizes.get(event["args"]["correlation"], 0))
    return count, nbytes


@pytest.mark.parametrize("name", REAL)
def test_counts_and_bytes_of_every_copy_kind_match_an_independent_parse(name):
    """Every copy of a real trace is found, with its bytes: grouped rows summed back per kind and memory."""
    rows = json.loads(to_json(price(TRACES / name, None)))["copies"]
    count, nbytes = Counter(), Counter()
    for row in rows:
        count[row["kind"], row["memory"]] += row["count"]
        nbytes[row["kind"], row["memory"]] += row["bytes"]
    assert (count, nbytes) == _independent(TRACES / name)
    assert all(row["priced_s"] is None and row["fixes"] == [] for row in rows)  # no run: nothing priced


def test_the_a100_device_to_pageable_copies_are_waiting_not_copying():
    """HTA's A100 trace of 5 steps: 30 copies of 8.6 kB hold the host 759 ms, at least 95% of it the queue."""
    priced = price(TRACES / "hta-a100-5steps.json.gz", None)
    d2h = next(r for r in priced.rows if (r["kind"], r["memory"]) == ("d2h", "pageable"))
    assert (d2h["count"], d2h["bytes"], d2h["blocking"], d2h["op"]) == (30, 8600, True, "aten::to")
    assert d2h["wait_s"] >= 0.95 * d2h["host_s"]
    assert d2h["host_s"] == pytest.approx(0.759, abs=5e-4) and d2h["gpu_s"] == pytest.approx(80e-6, abs=1e-6)
    assert d2h["wait_s"] + d2h["blocked_s"] + d2h["tail_s"] == pytest.approx(d2h["host_s"])
    assert [s.number for s in priced.steps] == [550, 551, 552, 553, 554]
    assert "steps read: ProfilerStep#550, #551, #552, #553, #554" in labels(priced)


def test_the_2080ti_pageable_batches_hold_the_host_three_times_their_copy_time():
    """PARAM's ResNet trace: 61 pageable host-to-device copies hold the host 2.01 s against 630 ms of GPU copies."""
    rows = price(TRACES / "param-resnet-2080ti.json.gz", None).rows
    h2d = next(r for r in rows if r["kind"] == "h2d")
    assert (h2d["count"], h2d["memory"], h2d["blocking"]) == (61, "pageable", True)
    assert h2d["host_s"] == pytest.approx(2.01, abs=0.005) and h2d["gpu_s"] == pytest.approx(0.630, abs=0.001)


def test_one_step_is_read_alone_and_a_missing_one_is_named():
    priced = price(TRACES / "hta-a100-5steps.json.gz", None, step=552)
    assert [s.number for s in priced.steps] == [552]
    assert next(r for r in priced.rows if r["kind"] == "d2h")["count"] == 6


def test_pricing_with_the_h200_run_is_alpha_plus_n_over_beta_of_its_table(h200):
    """The ResNet trace's pageable batch copies priced with the H200 sample: the model table's α and β, by hand."""
    rows = price(TRACES / "param-resnet-2080ti.json.gz", h200).rows
    h2d = next(r for r in rows if r["kind"] == "h2d")
    n, count = 2_312_140_804, 61
    pageable = count * 15.41e-6 + n / 7.941e9  # h2d pageable to: α 15.41 µs, β 7.941 GB/s (the table's)
    pinned = count * 14.99e-6 + n / 53.88e9  # h2d pinned to: α 14.99 µs, β 53.88 GB/s
    assert h2d["path"] == "h2d pageable to cpu->cuda:0"
    assert h2d["priced_s"] == pytest.approx(pageable, rel=1e-3)
    pin = next(f for f in h2d["fixes"] if f["fix"] == "pin")
    assert pin["saved_s"] == pytest.approx(pageable - pinned, rel=1e-3)
    assert pin["low_s"] <= pin["saved_s"] <= pin["high_s"]


def test_a_fix_whose_interval_holds_zero_cannot_tell(h200):
    """A100's 45 pageable copies of 149 bytes: pinning them saves within the run's own spread."""
    rows = price(TRACES / "hta-a100-5steps.json.gz", h200).rows
    h2d = next(r for r in rows if (r["kind"], r["memory"]) == ("h2d", "pageable"))
    pin = next(f for f in h2d["fixes"] if f["fix"] == "pin")
    assert pin["low_s"] < 0 < pin["high_s"] and fix_said(pin).startswith("can't tell (from -")
    d2h_pin = next(f for r in rows for f in r["fixes"] if r["kind"] == "d2h" and f["fix"] == "pin")
    assert d2h_pin["saved_s"] > 0 and not d2h_pin["ratio"].resolved and not d2h_pin["resolved"]  # the run can't tell
    assert fix_said(d2h_pin).endswith(f"the two paths: {d2h_pin['ratio'].text()})")
    remove = next(f for r in rows for f in r["fixes"] if f["fix"] == "remove_sync")
    d2h = next(r for r in rows if r["kind"] == "d2h")
    assert remove["saved_s"] == pytest.approx(d2h["priced_s"] + d2h["wait_s"])


@pytest.mark.hostile
@pytest.mark.parametrize("name", REAL)
def test_no_fix_claims_to_save_more_than_the_copies_cost(h200, name):
    """Every end of every fix's interval is at most the group's priced cost (removing a sync: plus the wait the trace
    measured), and a saving claimed is one above zero."""
    for row in price(TRACES / name, h200).rows:
        for fix in row["fixes"]:
            most = row["priced_s"] + fix.get("measured_wait_s", 0.0)
            assert max(fix["saved_s"] or 0, fix["high_s"] or 0) <= most, (row["op"], fix)
            assert not fix["resolved"] or 0 < fix["low_s"] <= fix["saved_s"] <= fix["high_s"]


def test_a_fixs_interval_is_the_runs_ratio_of_the_two_paths_at_the_copies_size(h200):
    """ResNet's 37.9 MB copies: the run's 64 MiB pageable and pinned rows (the nearest size) give the interval."""
    h2d = next(r for r in price(TRACES / "param-resnet-2080ti.json.gz", h200).rows if r["kind"] == "h2d")
    pin = next(f for f in h2d["fixes"] if f["fix"] == "pin")
    rows = h200.rows[h200.rows["nbytes"] == 64 << 20].set_index("path")
    ratio = h200.ratio(rows.loc["h2d pageable to cpu->cuda:0"], rows.loc["h2d pinned to cpu->cuda:0"])
    now, after = h2d["priced_s"], pin["after_s"]
    assert pin["ratio"] == ratio and ratio.resolved
    assert (pin["low_s"], pin["high_s"]) == (pytest.approx(now - after * ratio.value / ratio.low),
                                             pytest.approx(now - after * ratio.value / ratio.high))
    assert fix_said(pin) == f"saves 248 ms (235 ms-258 ms), costing 43.8 ms after; the two paths: {ratio.text()}"


def test_labels_say_whose_gpu_prices_and_whose_waits(h200):
    said = labels(price(TRACES / "kineto-2021-v100.json.gz", h200))
    assert said[:3] == ["trace recorded on Tesla V100-DGXS-32GB",
                          f"priced with run {ROOT / 'reports/samples/h200/full.json.gz'} on NVIDIA H200",
                          "warning: the run's GPU is not the trace's: prices are the run's machine's, waits the trace's"]


def test_rocm_copies_are_read_with_their_memory_unknown_and_left_unpriced(h200):
    rows = json.loads(to_json(price(TRACES / "hta-mi250-rocm.json.gz", h200)))["copies"]
    assert [(r["kind"], r["memory"], r["count"], r["bytes"], r["priced_s"]) for r in rows] == \
        [("h2d", "unknown", 2, 5120, None)]
    assert rows[0]["note"] == "not priced: the trace does not say which host memory"


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """The simulated step's trace priced with a simulated run of the same spec."""
    path = write_step_trace(load_spec(SPEC), tmp_path_factory.mktemp("step") / "step.json")
    return price(path, RunView.of(load([Path(__file__).parent / "data" / "sim-2gpu.json"])))


def test_the_simulated_step_gives_back_its_known_waits_and_copies(simulated):
    """The spec's costs: the batch waits for the forward (less the host's launches), .item() for the loss kernel."""
    spec = load_spec(SPEC)
    launch, sync = spec.launch_us * 1e-6, spec.sync_us * 1e-6
    rows = {(r["kind"], r["memory"]): r for r in simulated.rows}
    batch, item, side = rows["h2d", "pageable"], rows["d2h", "pageable"], rows["h2d", "pinned"]
    assert batch["wait_s"] == pytest.approx(FORWARD_S - (SIDE_COPIES - 1) * launch - launch, abs=1e-9)
    assert batch["blocked_s"] == pytest.approx(spec.paths["h2d_pageable"].seconds(BATCH_BYTES), abs=1e-9)
    assert batch["tail_s"] == pytest.approx(sync, abs=1e-9)
    assert (item["op"], item["wait_s"], item["tail_s"]) == ("aten::_local_scalar_dense", pytest.approx(LOSS_S, abs=1e-9),
                                                             pytest.approx(sync, abs=1e-9))
    assert (side["blocking"], side["count"], side["wait_s"]) == (False, SIDE_COPIES, 0.0)
    assert side["gpu_s"] == pytest.approx(SIDE_COPIES * spec.paths["h2d_pinned"].seconds(SIDE_BYTES), abs=1e-9)
    assert labels(simulated)[0] == f"trace recorded on illustrative PCIe Gen5 GPU (simulated) (SIMULATED: {SPEC})"


def test_pricing_the_simulated_step_recovers_the_specs_costs(simulated):
    """Priced with a run of the same spec: the batch costs the spec's call (launch + α + n/β + synchronize) and
    pinning saves what the spec's two paths differ by; removing .item()'s synchronize saves the measured wait too."""
    spec = load_spec(SPEC)
    call = spec.launch_us * 1e-6 + spec.sync_us * 1e-6
    rows = {(r["kind"], r["memory"]): r for r in simulated.rows}
    batch = rows["h2d", "pageable"]
    assert batch["priced_s"] == pytest.approx(call + spec.paths["h2d_pageable"].seconds(BATCH_BYTES), rel=1e-3)
    pin = next(f for f in batch["fixes"] if f["fix"] == "pin")
    saved = spec.paths["h2d_pageable"].seconds(BATCH_BYTES) - spec.paths["h2d_pinned"].seconds(BATCH_BYTES)
    assert pin["saved_s"] == pytest.approx(saved, rel=1e-3)
    item = rows["d2h", "pageable"]
    remove = next(f for f in item["fixes"] if f["fix"] == "remove_sync")
    assert remove["saved_s"] == pytest.approx(call + spec.paths["d2h_pageable"].seconds(4) + LOSS_S, rel=1e-3)
    assert "a SIMULATED run" in labels(simulated)[1]


def test_the_console_says_each_part_of_the_host_time(simulated):
    text = to_text(simulated)
    assert "waiting for the queue 1.98 ms + blocked on the copy" in text
    assert "the host never waits for these: off the critical path" in text


def test_report_with_a_trace_has_its_section_and_price_writes_the_contracts_json(tmp_path, capsys):
    """``report --trace`` adds the section (its labels as the console says them); ``price --json`` the ``copies``
    rows with every field docs/contract.md names."""
    from hostile_inputs import run_cli

    trace = write_step_trace(load_spec(SPEC), tmp_path / "step.json")
    run = Path(__file__).parent / "data" / "sim-2gpu.json"
    code, out, err = run_cli(capsys, "report", run, "--trace", trace, "-o", tmp_path / "index.html")
    assert code == 0, err
    html = (tmp_path / "index.html").read_text()
    assert 'id="section-trace"' in html and 'id="trace-copies"' in html
    assert "steps read: ProfilerStep#1" in html and "a SIMULATED run (--xfer-simulate)" in html
    code, out, err = run_cli(capsys, "price", trace, run, "--json", tmp_path / "price.json")
    assert code == 0, err
    assert out.startswith("trace recorded on illustrative PCIe Gen5 GPU (simulated)")
    document = json.loads((tmp_path / "price.json").read_text())
    fields = {"kind", "memory", "count", "bytes", "gpu_s", "host_s", "wait_s", "blocked_s", "tail_s", "priced_s", "fixes"}
    assert all(fields <= set(row) for row in document["copies"])
    assert {f["fix"] for row in document["copies"] for f in row["fixes"]} == {"pin", "pin_non_blocking", "remove_sync"}
    assert all({"fix", "saved_s", "low_s", "high_s"} <= set(f) for row in document["copies"] for f in row["fixes"])
    assert [s["step"] for s in document["steps"]] == [1]


def test_a_bad_trace_given_to_report_is_one_line(tmp_path, capsys):
    from hostile_inputs import assert_refused, run_cli

    (tmp_path / "t.json").write_text("{")
    code, _, err = run_cli(capsys, "report", Path(__file__).parent / "data" / "sim-2gpu.json", "--trace",
                           tmp_path / "t.json", "-o", tmp_path / "index.html")
    assert_refused(code, err, "--trace", "not JSON, or cut short")

    (tmp_path / "index.md").write_bytes(gzip.open(TRACES / "hta-mi250-rocm.json.gz").read())  # the page's companion
    code, _, err = run_cli(capsys, "report", Path(__file__).parent / "data" / "sim-2gpu.json", "--trace",
                           tmp_path / "index.md", "-o", tmp_path / "index.html", "--force")
    assert_refused(code, err, "index.md: this is an input")
    assert (tmp_path / "index.md").read_bytes() == gzip.open(TRACES / "hta-mi250-rocm.json.gz").read()


def test_a_run_without_the_paths_leaves_each_group_unpriced_and_says_why():
    """The CPU sample measured no GPU path: every group is given with its times, none priced, each saying why."""
    view = RunView.of(load([Path(__file__).parent / "data" / "cpu-sample.json"]))
    rows = json.loads(to_json(price(TRACES / "kineto-2021-v100.json.gz", view)))["copies"]
    assert [(r["kind"], r["priced_s"], r["fixes"], r["note"]) for r in rows] == \
        [("h2d", None, [], "not priced: the run measured no h2d path from pageable memory")]


def test_each_fix_says_its_saving_its_interval_and_its_cost_after(simulated):
    batch = next(r for r in simulated.rows if r["kind"] == "h2d" and r["blocking"])
    pin = next(f for f in batch["fixes"] if f["fix"] == "pin")
    assert fix_said(pin) == "saves 538 µs (538 µs-538 µs), costing 316 µs after; the two paths: 2.74×"

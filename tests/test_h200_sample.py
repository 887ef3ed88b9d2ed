"""The analysis side against a real GPU run: the H200 reference sample under reports/samples/h200/.

Those files were measured on one NVIDIA H200 (driver 580.159.04, torch 2.11.0+cu130) by
``bench/gpu_reference_run.sh``, as reports/samples/h200/README.md says. Synthetic GPU rows cannot
show what a real machine does; these assertions are about what a user reading that run's report
would be told.
"""

import re
from pathlib import Path

import pytest

from xferbench.analyze.expectations import check
from xferbench.analyze.findings import findings
from xferbench.analyze.plots import cost_at_size
from xferbench.analyze.report import build_html
from xferbench.analyze.results import load

SAMPLES = Path(__file__).resolve().parents[1] / "reports" / "samples" / "h200"


@pytest.fixture(scope="module")
def full():
    return load([SAMPLES / "full.json.gz"])


@pytest.fixture(scope="module")
def rerun():
    return load([SAMPLES / "rerun" / "full.json.gz"])


def test_the_sample_is_a_real_h200_run(full):
    xfer = full.machine_info["xferbench"]
    assert [d["name"] for d in xfer["devices"]] == ["NVIDIA H200"]
    assert xfer["torch"] == "2.11.0+cu130" and full.simulated is None
    assert len(full.frame) == 512


def test_the_usual_way_back_is_not_reported_at_copy_speed(full):
    """.cpu() / .to('cpu') allocate new pageable memory on every call: on the H200 they ran at
    1.24-1.48 GB/s at 256 MiB, copy_ into an existing buffer at 15.1. The sentence once quoted the
    copy_ figure for .cpu()."""
    sentence = next(f for f in findings(full.frame) if f.startswith("The usual way back"))
    assert sentence == ("The usual way back, .cpu() or .to('cpu'), allocates a new pageable tensor on every call and "
                        "ran at 1.48 GB/s at 256 MiB; copy_ into an existing pageable buffer ran at 15.1 GB/s; the best "
                        "host-to-device path ran at 55.1 GB/s.")


def test_the_route_chart_names_the_dearest_call_of_a_route(full):
    """The route chart's bar is a route's fastest call; the pale bar and its label show that
    .to('cpu') on the same route took 12x as long as copy_ (217 ms against 17.8 ms)."""
    figure = cost_at_size(full.frame)
    labels = [text.get_text() for text in figure.axes[0].texts]
    d2h = next(label for label in labels if "15.1 GB/s" in label)
    assert d2h.strip() == "17.8 ms, 15.1 GB/s;  slowest .to(): 217 ms, 1.24 GB/s"
    assert not any("slowest" in label for label in labels if "55.1 GB/s" in label)  # pinned: every call alike


def test_pageable_device_time_was_over_wall_time_before_and_is_not_recorded_after(full, rerun):
    """The first run recorded event time for pageable copies, up to 1.41x their wall time; the
    rerun (pageable copies take no device time: 72 h2d and 36 d2h cases) holds the expectation."""
    before = {v.name: v for v in check(full)}
    after = {v.name: v for v in check(rerun)}
    name = "device time never exceeds wall time"
    assert before[name].status == "not held" and "1.412 (h2d pageable non-blocking to cpu->cuda:0 256 MiB)" in before[name].detail
    assert after[name].status == "held"
    pageable = rerun.frame[rerun.frame["host_memory"] == "pageable"]
    assert len(pageable) == 108 and pageable["device_seconds"].isna().all()


@pytest.mark.slow
def test_every_gpu_section_of_the_report_is_drawn(full):
    html = build_html(full)
    assert 'id="no-gpu"' not in html and not re.findall(r'data-missing="(\w+)"', html)
    assert {"matrix", "overhead", "bandwidth-d2d", "sync_stall", "pin_memory", "bidir", "copy_kind"} <= set(
        re.findall(r'data-plot="([\w-]+)"', html))

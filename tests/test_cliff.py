"""analyze/cliff.py on hand-fed rows with known answers: where .cpu() / .to('cpu') fall off a cliff, what a page fault
costs there, and which calls that write a fresh destination grew dearer per byte than every call into a reused one."""

import math

import pandas as pd
import pytest

from xferbench.analyze.cliff import across, cliff, split
from xferbench.ratios import Ratio

MiB = 2**20
SMALL, LARGE = 16 * MiB, 64 * MiB


def row(op: str, method: str, nbytes: int, seconds: float, *, src: str = "cuda:0", path: str | None = None,
        faults: object = None, **more: object) -> dict:
    moves = op in ("d2h", "host")
    return {"op": op, "method": method, "nbytes": nbytes, "median_s": seconds, "src": src, "dst": "cpu",
            "host_memory": "pageable" if moves else None, "non_blocking": False, "run": "a",
            "bandwidth_gbps": nbytes / seconds / 1e9 if moves else math.nan, "minor_faults_per_call": faults,
            "path": path or f"{op} {method} {src}"} | more


def d2h(cpu_small: float = 1.3e-3, cpu_large: float = 50e-3, faults: object = 16485.0, copy_faults: object = 100.0,
        copy_large: float | None = 4.5e-3) -> pd.DataFrame:
    """.cpu() and .to() 10x slower per byte from 16 to 64 MiB (the H200's shape); copy_ into a kept buffer holds."""
    rows = [row("d2h", method, n, t * (1.05 if method == "to" else 1.0), faults=faults if n == LARGE else 0.0)
            for method in ("cpu", "to") for n, t in ((SMALL, cpu_small), (LARGE, cpu_large))]
    rows.append(row("d2h", "copy_", SMALL, 1.2e-3, faults=0.0))
    if copy_large is not None:
        rows.append(row("d2h", "copy_", LARGE, copy_large, faults=copy_faults))
    return pd.DataFrame(rows)


def test_the_cliff_is_the_steepest_fall_every_usual_call_shares_with_what_a_fault_costs():
    found = cliff(d2h())
    assert found is not None and (found["before"], found["after"]) == (SMALL, LARGE)
    assert found["existing"]["method"] == "copy_" and found["existing"]["nbytes"] == LARGE
    # each usual call's extra time over copy_ into a kept buffer, over its extra faults (copy_'s own 100 taken off)
    per = found["us_per_fault"]
    assert per.tolist() == pytest.approx([(50e-3 - 4.5e-3) / 16385 * 1e6, (52.5e-3 - 4.5e-3) / 16385 * 1e6])


def test_a_copy_without_fault_counts_counts_as_none():
    per = cliff(d2h(copy_faults=None))["us_per_fault"]
    assert per.tolist() == pytest.approx([(50e-3 - 4.5e-3) / 16485 * 1e6, (52.5e-3 - 4.5e-3) / 16485 * 1e6])


@pytest.mark.parametrize("faults", [None, "not counted"])
def test_calls_without_fault_counts_price_no_fault(faults):
    """A fault count that is missing or not a number (a hostile run file) prices nothing, and raises nothing."""
    found = cliff(d2h(faults=faults))
    assert found is not None and found["faults"] is None and found["us_per_fault"] is None


def test_no_kept_buffer_at_the_larger_size_prices_no_fault():
    found = cliff(d2h(copy_large=None))
    assert found["existing"] is None and found["faults"] is not None and found["us_per_fault"] is None


@pytest.mark.parametrize(("large", "fell"), [(3.5e-3, False), (1.3e-3 * 4 * 2.9, False), (1.3e-3 * 4 * 3.1, True)])
def test_a_fall_of_less_than_three_times_is_no_cliff(large, fell):
    """The fall per call is bandwidth before over after (here the time at 64 MiB over 4x that at 16 MiB): under 3x
    (0.67x, 2.9x) names no cliff, 3.1x does."""
    assert (cliff(d2h(cpu_large=large)) is not None) is fell


def test_one_size_or_no_usual_call_is_no_cliff():
    assert cliff(d2h()[lambda f: f["nbytes"] == LARGE]) is None
    assert cliff(d2h()[lambda f: f["method"] == "copy_"]) is None


def test_across_reads_every_path_measured_at_both_sizes_and_skips_the_rest():
    frame = pd.DataFrame([row("host", "copy_", SMALL, 1e-3, src="cpu", path="a: one size only"),
                          row("host", "copy_", SMALL, 1e-3, src="cpu", path="b"),
                          row("host", "copy_", LARGE, 8e-3, src="cpu", path="b")])
    (found,) = across(frame, SMALL, LARGE, (("{path}", {"op": "host", "method": "copy_"}),))
    assert found["label"] == "b" and found["growth"] == pytest.approx(2.0) and found["after_s"] == 8e-3


def _judge(ratios: dict[str, float]):
    """A judge whose interval is exact (low = high = value), by the row's method."""
    def judge(a: pd.Series, b: pd.Series) -> Ratio:
        value = ratios[str(a["method"])]
        return Ratio(value, value, value, "paired", 6)
    return judge


@pytest.mark.parametrize(("clone", "broke"), [(8.0, True), (1.5, True), (1.0, False), (0.5, False)])
def test_a_fresh_call_broke_only_where_it_grew_dearer_per_byte_beyond_every_reused_one(clone, broke):
    """Growth of host clone over copy_'s (1.0): dearer beyond its interval breaks; as dear or cheaper does not."""
    frame = pd.DataFrame([row("host", m, n, 1e-3, src="cpu") for m in ("clone", "copy_") for n in (SMALL, LARGE)])
    found = split(frame, {"before": SMALL, "after": LARGE}, _judge({"clone": clone, "copy_": 1.0}))
    assert [c["label"] for c in found.fresh] == ["host clone"] and [c["label"] for c in found.reused] == ["host copy_ cpu"]
    assert bool(found.broke) is broke


def test_every_usual_call_must_share_the_fall_and_a_frame_without_fault_counts_prices_none():
    """.cpu() falls 10x while .to() falls 2x: their mean falls 3.3x, but no 3x fall every usual call shares, no cliff.
    A run that records no fault column at all still finds its cliff, with no fault priced."""
    frame = d2h()
    held = frame.assign(median_s=frame["median_s"].where(~((frame["method"] == "to") & (frame["nbytes"] == LARGE)),
                                                        1.3e-3 * 1.05 * 4 * 2))
    assert cliff(held.assign(bandwidth_gbps=held["nbytes"] / held["median_s"] / 1e9)) is None
    found = cliff(d2h().drop(columns="minor_faults_per_call"))
    assert found is not None and found["faults"] is None and found["us_per_fault"] is None


def test_across_gives_a_move_in_gb_s_an_allocation_in_time_and_names_to_as_users_write_it():
    frame = pd.DataFrame([row("d2h", "to", n, t) for n, t in ((SMALL, 1.25e-3), (LARGE, 50e-3))]
                         + [row("create", "empty", n, t, src="cpu") for n, t in ((SMALL, 4.44e-6), (LARGE, 15.9e-6))])
    moved, = across(frame, SMALL, LARGE, ((".{method}()", {"op": "d2h"}),))
    made, = across(frame, SMALL, LARGE, (("torch.empty on the CPU", {"op": "create"}),))
    assert (moved["label"], moved["figures"]) == (".to(device)", "13.4 → 1.34 GB/s")
    assert (made["label"], made["figures"]) == ("torch.empty on the CPU", "4.44 µs → 15.9 µs")


@pytest.mark.parametrize(("faults", "priced"), [(100.0, None), (99.0, None), (101.0, [45.5e-3 * 1e6, 48e-3 * 1e6])])
def test_only_calls_with_more_faults_than_the_kept_buffer_price_a_fault(faults, priced):
    """A usual call with no more faults than copy_ into a kept buffer (100) prices none; one more prices its whole
    extra time."""
    per = cliff(d2h(faults=faults))["us_per_fault"]
    assert per is None if priced is None else per.tolist() == pytest.approx(priced)


def test_a_kept_buffer_whose_fault_count_is_not_a_number_counts_none():
    per = cliff(d2h(copy_faults="n/a"))["us_per_fault"]
    assert per.tolist() == pytest.approx([(50e-3 - 4.5e-3) / 16485 * 1e6, (52.5e-3 - 4.5e-3) / 16485 * 1e6])

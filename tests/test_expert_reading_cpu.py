"""A second expert read of the busy CPU run's report (tests/data/cpu-threads-sample.json), the quiet CPU sample's and
the H200 sample's no-op chart: no cause its neighbouring sizes contradict, no path called the fastest β while a faster
one sits left out unsaid, no ranking of calls whose rounds overlap in a run without a drift floor, times in their
unit, and no-op bars that draw only what a case measured, from one machine instance. Each read back from the figure
or sentence the report writes."""

import json
import math
import re
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from handfed import off_ticks, quiet, scaled
from xferbench.analyze.load.results import load
from xferbench.analyze.report.findings import findings, host_copy, latency_bound
from xferbench.analyze.report.noop_plot import noop_vs_copy
from xferbench.analyze.report.plots import cost_at_size
from xferbench.analyze.report.svg import to_svg
from xferbench.analyze.report.threads import beta_noise, size_free, thread_pairs, threads_against_one
from xferbench.analyze.view import RunView

ROOT = Path(__file__).resolve().parents[1]
THREADS = ROOT / "tests" / "data" / "cpu-threads-sample.json"
CPU = ROOT / "tests" / "data" / "cpu-sample.json"
CPU_QUICK = ROOT / "tests" / "data" / "cpu-quick-sample.json"
BUSY = ROOT / "tests" / "data" / "cpu-busy-host.json"
LOADED = ROOT / "tests" / "data" / "cpu-loaded-host.json"
#: Why a comparison whose faster side lay on the ticks is not judged where the slower side's rounds spread too.
WAITED_TOO = "the faster side's rounds waited for the CPU, and the slower side's too"
H200 = [ROOT / "reports" / "samples" / "h200" / "full.json.gz", ROOT / "reports" / "samples" / "h200" / "quick-scenarios.json"]
GiB = 2**30


@pytest.fixture(scope="module")
def busy():
    return RunView.of(load([THREADS]))


def _case(path: Path, nbytes: int, **match: object) -> dict:
    """One case's stats straight from a sample's JSON."""
    found = [b["stats"] for b in json.loads(path.read_text())["benchmarks"]
             if b["extra_info"].get("nbytes") == nbytes and all(b["extra_info"].get(k) == v for k, v in match.items())]
    assert len(found) == 1, match
    return found[0]


def _figure(figure) -> tuple[list[str], list[str], str, str]:
    """A figure's bar labels, its texts, its x label and its SVG (with the hovers)."""
    ax = figure.axes[0]
    labels = [label.get_text() for label in ax.get_yticklabels()]
    texts, xlabel, svg = [t.get_text() for t in ax.texts], ax.get_xlabel(), to_svg(figure)
    plt.close(figure)
    return labels, texts, xlabel, svg


def _thread_view(tmp_path, noisy_1mib: bool, times: dict[int, tuple[float, float]] | None = None,
                 loaded: bool = False, calls: tuple[int, int] = (1, 1)) -> RunView:
    """256 KiB copy_ on 2 threads 26.4 ms against 5.78 µs on one; at 1 MiB one thread the slower (216 against 199 µs),
    its rounds spread 0.5-1.5× where ``noisy_1mib``; or ``times`` (size: default threads', one thread's). ``loaded``:
    the run recorded load 9 on its 2 cores; ``calls``: each copy's calls a round (default threads', one thread's)."""
    from handfed import bench, gpu_machine, steady, write

    times = times or {256 * 1024: (26.4e-3, 5.78e-6), 1024 * 1024: (199e-6, 216e-6), 16 * 1024 * 1024: (3.0e-3, 3.1e-3)}
    rows = [bench("host", "copy_", "cpu", "cpu", n, t, host_memory="pageable", **({"variant": "single_thread"} if one
                  else {})) for n, pair in times.items() for one, t in enumerate(pair)]
    for row in rows:
        row["stats"]["iterations"] = calls[row["extra_info"].get("variant") == "single_thread"]
        if noisy_1mib and row["extra_info"]["nbytes"] == 1024 * 1024:
            t = row["stats"]["median"]
            row["stats"] |= {"q1": 0.5 * t, "q3": 1.5 * t, "iqr": t, "min": 0.4 * t, "max": 1.6 * t}
    machine = gpu_machine(host={"torch_threads": 2})
    machine["xferbench"] |= {"devices": [], "host": {"torch_threads": 2}}
    path = write(tmp_path / "r.json", rows + steady(), machine)
    if loaded:
        path.write_text(json.dumps(json.loads(path.read_text()) | {"xferbench_run": {"load": {
            "cpus": 2, "load_before": 8, "load_after": 9}}}))
    return RunView.of(load([path]))


def test_the_size_told_apart_most_is_named_whichever_was_slower(tmp_path):
    """1.2x slower on 2 threads at 1 MiB, 5x faster at 16 MiB: the 16 MiB figure is the larger difference."""
    headline, _ = threads_against_one(_thread_view(tmp_path, False, {2**20: (240e-6, 200e-6), 16 * 2**20: (6e-4, 3e-3)}))
    assert headline.startswith("A 16 MiB host copy_ on one thread took 5× as long as with torch's default threads (2)")


def test_a_loaded_run_s_slower_threads_say_the_load(tmp_path):
    headline, evidence = threads_against_one(_thread_view(tmp_path, False, {2**20: (2e-3, 1e-3), 16 * 2**20: (20e-3, 10e-3)},
                                                          loaded=True))
    assert headline == "A 1 MiB host copy_ with torch's default threads (2) took 2× as long as on one thread under load."
    assert evidence == ("A 1 MiB host copy_ with torch's default threads (2) took 2× as long as on one thread (2 ms against "
                        "1 ms), under load (load 9 on 2 CPUs): more threads made it slower at this size.")


def test_a_thread_figure_its_neighbours_cannot_tell_apart_states_no_cause(tmp_path):
    """At 1 MiB the two copies cannot be told apart: the run does not show more threads making it slower, so the
    sentence gives the figures only."""
    view = _thread_view(tmp_path, noisy_1mib=True)
    headline, evidence = threads_against_one(view)
    assert headline == ("A 256 KiB host copy_ with torch's default threads (2) took 4,567× as long as on one thread, but "
                        "not at the sizes beside it: whether more threads made it slower, can't tell.")
    assert evidence == (
        "A 256 KiB host copy_ with torch's default threads (2) took 4,567× as long as on one thread (26.4 ms against "
        "5.78 µs); the size beside it does not bear it out (1 MiB 199 µs against 216 µs), so whether more threads made "
        "it slower, can't tell; with torch's default threads (2) it took 26.4 ms at 256 KiB and 3 ms at 16 MiB, while "
        "one thread's time grew 536×: the bytes do not set the default threads' time here.")
    assert not any("made it slower at this size" in sentence for sentence in findings(view))


def test_a_thread_figure_its_neighbours_resolve_the_other_way_says_both(tmp_path):
    """Told apart at both sizes, in opposite directions: each size says what it resolved, never "can't tell"."""
    headline, evidence = threads_against_one(_thread_view(tmp_path, noisy_1mib=False))
    assert headline == ("A 256 KiB host copy_ with torch's default threads (2) took 4,567× as long as on one thread; at "
                        "1 MiB one thread took 1.09× as long.")
    assert evidence.endswith("; at 1 MiB one thread took 1.09× as long (216 µs against 199 µs): more threads made it "
                             "slower at 256 KiB and faster at 1 MiB; with torch's default threads (2) it took 26.4 ms at "
                             "256 KiB and 3 ms at 16 MiB, while one thread's time grew 536×: the bytes do not set the "
                             "default threads' time here.")


_BOUND = "whose median holds the wait, on the scheduler's 4 ms ticks or far past their fastest round"
#: one-call rounds whose median waited off the ticks' multiples (load.blocks.waited_rows): the busy and loaded 64 MiB
#: clone and one-thread copy_
_OFF = "{} more of one call a round, 3/4 of a tick or more past their fastest (no β fitted)"
#: what the page does with both kinds (``RunView.ratio``): one rule, said once (a reading found one-call waits
#: "compared on their rounds" beside a ticked clone judged as waited)
_RULE = (" None states a bandwidth; each took at most its median: a comparison keeps the end of its interval a wait "
         "leaves, or the order of interleaved rounds.")


@pytest.mark.parametrize(("sample", "said"), [
    ("cpu-busy-host.json", f"3 cases {_BOUND}; {_OFF.format(2)}.{_RULE}"),
    ("cpu-loaded-host.json", f"4 cases {_BOUND}; {_OFF.format(2)}.{_RULE}"),
    ("cpu-sample.json", None)])
def test_the_busy_notice_says_what_the_scheduler_s_ticks_took(sample, said):
    """The first screen's notice counts the cases whose rounds waited for the CPU, and what the page does with them
    (the blocks left out for lying on the ticks, the appendix names); a quiet run says nothing of ticks."""
    from xferbench.analyze.report.story import _busy

    notice = _busy(RunView.of(load([ROOT / "tests" / "data" / sample])))
    if said is None:
        assert notice is None or "ticks" not in notice
    else:
        assert notice is not None and notice.endswith(" Rounds that waited for the CPU: " + said)


def test_a_busy_run_s_paired_blocks_cannot_tell_threads_at_64_mib(tmp_path):
    """tests/data/cpu-busy-host.json: the host family at load 3.5-3.8 on 2 cores (69% of the CPU taken by others), its
    64 MiB copy_ on torch's 2 threads and on one in 6 interleaved blocks each. One thread's pooled median is 1.19x the
    other's, but block by block three of six ratios lie at or below 1: can't tell, never 1.19x. Its 1 MiB copy_ timed
    100 calls a round in two blocks and one in four, whose rounds lay on the scheduler's 4 ms ticks (37 of 40 at 8, 12,
    16 or 20 ms): those four are left out, and the two of 100 calls (14.7 µs) are the thread figure's. One thread's
    64.7 µs held a tick too: its rounds of 100 calls took 2.37 ms at fastest, 6.47 ms at the median. A reading found the
    "4.39× (1.37-14) as long" read from it a wait's, not the threads': no finding."""
    view = RunView.of(load([ROOT / "tests" / "data" / "cpu-busy-host.json"]))
    assert threads_against_one(view) is None
    # its 64 MiB copy_ lay on the ticks too (12.004 ms, 12 of 31 rounds): off them, its blocks could see 1.17x
    assert beta_noise(view) == f"at 64 MiB can't tell ({WAITED_TOO})"
    assert beta_noise(RunView.of(load([off_ticks(tmp_path, BUSY)]))) == "at 64 MiB can't tell (could see ≥ 1.17×)"
    rows = view.rows[(view.rows["op"] == "host") & (view.rows["method"] == "copy_")]
    one_mib = rows[(rows["nbytes"] == 2**20) & rows["variant"].isna()].iloc[0]
    assert not one_mib["mixed_iterations"] and one_mib["tick_blocks"] == 4 and one_mib["blocks"] == 2
    assert view.drift.regimes[("pageable", "bandwidth")].sd == pytest.approx(0.245, abs=1e-3)


def test_a_loaded_run_s_threads_at_one_call_a_round_on_the_ticks_are_not_compared():
    """tests/data/cpu-loaded-host.json: the host family at load 9.4 on 2 CPUs (eight busy loops). Its default threads'
    64 MiB copy_ took 20 ms in 28 of its 31 rounds, and 20 ms at 1 MiB too: five 4 ms ticks of the scheduler, a wait
    for a CPU. A fifth reading read 1.4x (1.11-1.76) from them against one thread's 30 ms; a sixth found the ticks. A
    wait only adds to the faster side, but one thread's rounds waited too (30.0 ms at the median, 17.8 ms at fastest,
    in 4 ms steps above it: an eighth reading): no floor either, so no thread figure is read, and the ratio says why."""
    view = RunView.of(load([ROOT / "tests" / "data" / "cpu-loaded-host.json"]))
    assert threads_against_one(view) is None
    pair = thread_pairs(view).set_index("nbytes").loc[64 * 2**20]
    many, one = view.rows.loc[pair["row_many"]], view.rows.loc[pair["row_one"]]
    judged = view.ratio(one, many)
    assert many["on_ticks"] == 0.004 and pd.isna(one["on_ticks"]) and one["median_s"] - one["min_s"] > 0.003
    assert not judged.judged and not judged.resolved
    assert judged.text() == f"can't tell ({WAITED_TOO})"
    assert beta_noise(view) == f"at 64 MiB can't tell ({WAITED_TOO})"
    assert size_free(view) == ""


def test_the_bytes_are_said_not_to_set_a_time_only_where_they_do_not(tmp_path):
    """The busy run's default threads took 7.9-12 ms at 64 MiB, their 1 MiB case left out (its blocks mixed loops):
    one size, nothing said. A hand-fed pair whose 2-thread copy grows with the bytes as one thread's does: nothing."""
    assert size_free(RunView.of(load([ROOT / "tests" / "data" / "cpu-busy-host.json"]))) == ""
    growing = {2**20: (100e-6, 150e-6), 16 * 2**20: (1.6e-3, 2.4e-3)}
    assert size_free(_thread_view(tmp_path, noisy_1mib=False, times=growing)) == ""
    assert size_free(RunView.of(load([ROOT / "tests" / "data" / "cpu-sample.json"]))) == ""  # no one-thread copy_


@pytest.mark.parametrize(("times", "said"), [
    ({2**20: (20e-3, 100e-6), 16 * 2**20: (20e-3, 1.6e-3)}, True),  # 16x the bytes, flat, one thread grew 16x
    ({2**20: (1e-3, 100e-6), 4 * 2**20: (1e-3, 400e-6)}, False),  # flat, but only 4x the bytes
    ({2**20: (100e-6, 10e-6), 16 * 2**20: (1.6e-3, 1.6e-3)}, False),  # grew 16x: the bytes set it (one grew more)
    ({2**20: (1e-3, 100e-6), 16 * 2**20: (2.2e-3, 1.6e-3)}, False),  # grew 2.2x: more than "under twice"
    ({2**20: (20e-3, 20e-3), 16 * 2**20: (20e-3, 20e-3)}, False),  # both flat: one thread's growth is no contrast
])
def test_the_bytes_not_setting_a_time_needs_16x_a_flat_time_and_one_thread_growing_more(tmp_path, times, said):
    assert bool(size_free(_thread_view(tmp_path, noisy_1mib=False, times=times))) is said


def test_a_fall_with_the_bytes_is_said_too(tmp_path):
    # 26.4 ms at 256 KiB, 3 ms at 16 MiB: the 2 threads' time fell as one thread's grew 536x
    assert size_free(_thread_view(tmp_path, noisy_1mib=False)).startswith(
        "; with torch's default threads (2) it took 26.4 ms at 256 KiB and 3 ms at 16 MiB, while one thread's time grew")


def test_a_run_without_drift_evidence_judges_no_thread_or_beta_ranking(busy):
    """The busy sample (2026-12-03) measured no same-code pair and no case in blocks: it cannot bound its drift, so
    neither the 4,562x of 256 KiB on 2 threads nor which copy has the higher β is judged."""
    assert threads_against_one(busy) is None
    said = latency_bound(busy)
    assert said is not None and said.startswith(
        "Called back to back, which host-side path has the highest β can't be told")
    assert said.endswith("torch's copy_ on one thread (host copy_ single_thread) reached β = 1.97 GB/s: which of the two "
                         "is faster: at 256 MiB can't tell (the run repeated no case to measure its drift).")


def test_a_quiet_runs_highest_beta_names_no_left_out_path():
    """The quiet CPU sample's one-thread copy is no faster: nothing is said left out."""
    said = latency_bound(RunView.of(load([CPU])))
    assert said is not None and "(host pageable copy_ cpu) has a fixed cost" in said and "left out" not in said


def test_calls_a_run_cannot_judge_are_not_ranked(busy):
    """1 GiB copy_ on 2 threads 608 ms and clone 1.59 s (one thread's 540 ms is the roof, not a route's call), in a
    run with no drift evidence: the route names none as fastest; the slowest call reads in seconds (1.59 s), never
    1.59e+03 ms."""
    assert busy.drift.evidence == ()
    labels, texts, xlabel, _ = _figure(cost_at_size(busy))
    assert labels == ["host pageable cpu  (2 calls; fastest: can't tell)"]
    assert texts == ["  608 ms, 1.77 GB/s;  slowest .clone(): 1.59 s, 0.674 GB/s"]
    assert xlabel.endswith("≈: can't tell from the route above")


def test_noop_bars_span_the_sizes_they_measured():
    """.to(torch.device('cpu')) took 743 ns at 4 B and 358 ns at 16 MiB: the bar spans the two (solid to the lower,
    pale to the higher), the hover gives each, and the 550 ns median over sizes no case timed is nowhere."""
    labels, texts, xlabel, svg = _figure(noop_vs_copy(RunView.of(load([CPU]))))
    at = labels.index(".to(torch.device('cpu')) on cpu")
    assert texts[at] == "  358-743 ns"
    assert ".to(torch.device('cpu')) on cpu: 742.8 ns at 4 B, 357.9 ns at 16 MiB per call" in svg
    assert not any("550" in said for said in texts + re.findall(r"<title>([^<]*)</title>", svg))
    assert xlabel.startswith("median time per call (µs); solid: the lowest median over the sizes measured, pale: the "
                             "highest")


def test_the_noop_chart_reads_one_machine_instance():
    """full.json timed the idle synchronize at 1707 ns (4 B) and 1713 ns (1 GiB); quick-scenarios at 886 ns, another
    boot: one bar, from the instance that measured the no-ops, labelled, never both side by side."""
    labels, texts, xlabel, svg = _figure(noop_vs_copy(RunView.of(load(H200))))
    synced = [i for i, label in enumerate(labels) if label.startswith("torch.cuda.synchronize")]
    assert [labels[i] for i in synced] == ["torch.cuda.synchronize(cuda:0) on an idle device"]
    assert texts[synced[0]] == "  1,707-1,713 ns"
    assert "on an idle device: 1,707 ns at 4 B, 1,713 ns at 1 GiB per call" in svg
    assert not any(text.strip().startswith("886") for text in texts)
    assert xlabel.endswith("; from full.json only (one machine instance)")


class TestRead3b:
    def test_no_fault_counts_is_said_only_where_the_run_has_none(self, tmp_path):
        """The quick paired CPU sample records minor_faults_per_call (clone() at 64 MiB: 16,385 more per call): neither
        its ladder caption nor its row says no fault counts split the step; the same rows without the counts say it."""
        from xferbench.analyze.report.captions import HOST_LADDER_CAPTION
        from xferbench.analyze.report.ladder_text import ladder_table

        quick = off_ticks(tmp_path, CPU_QUICK, steady=True)  # its 64 MiB copy_ judged: off the ticks, no wait read
        assert "no fault counts" not in HOST_LADDER_CAPTION
        # the step's interval is the rungs' ratio's, as the ladder computes it (analyze/ladder.py Step), never a join
        assert "the two rungs' ratio's interval (95%: paired blocks where both were measured so" in HOST_LADDER_CAPTION
        cells = [c["text"] for row in ladder_table(RunView.of(load([quick])))["rows"] for c in row["cells"]]
        assert any("with 16,385 more minor faults per call" in c for c in cells)
        assert not any("no fault counts" in c for c in cells)
        data = json.loads(quick.read_text())
        for bench in data["benchmarks"]:
            bench["extra_info"].pop("minor_faults_per_call", None)
        bare = tmp_path / "no-faults.json"
        bare.write_text(json.dumps(data))
        cells = [c["text"] for row in ladder_table(RunView.of(load([bare])))["rows"] for c in row["cells"]]
        assert any(c.endswith("no fault counts split it into allocation and first touch") for c in cells)
        assert not any("minor faults" in c for c in cells)


class TestRead3a:
    """A point slower than what the run's copies reached from memory never ran "faster than memory allows"."""

    def test_a_point_below_memory_is_not_called_cache_resident(self, busy):
        from xferbench.analyze.report.plots import bandwidth_of

        tips = re.findall(r"host pageable clone cpu\n[^<]*", to_svg(bandwidth_of(busy, "host")))
        one_kib = [t for t in tips if "\n1 KiB: 0.9908 GB/s" in t]
        # 0.99 GB/s is below the 1.98 GB/s copies reached beyond the cache (at 1 GiB): fixed cost, not a cache
        assert len(one_kib) == 1 and "faster than memory allows" not in one_kib[0]
        fast = [t for t in tips if "\n16 KiB: 11.61 GB/s" in t or "\n1 MiB: 63.07 GB/s" in t]
        assert len(fast) == 2 and all(t.endswith("faster than memory allows: ran from a cache") for t in fast)
        clone = busy.fits[busy.fits["path"] == "host pageable clone cpu"].iloc[0]
        assert clone["resident_sizes"] == 2  # 1 KiB stays in clone's β fit


def test_a_busy_run_s_waited_copy_states_no_bandwidth_in_its_finding(tmp_path):
    """The busy run off the ticks: its 64 MiB copy_'s one-call rounds step by ticks (12.1 ms, then 16, 20, 24): a wait
    for the CPU is part of its median, so the finding states no GB/s, as the appendix and the first screen do (a reading
    found 5.52 GB/s here beside their "–")."""
    (said,) = [f for f in findings(RunView.of(load([_undecided(tmp_path)]))) if f.headline.startswith("Host memory")]
    assert said == ("Host memory copies (copy_ on torch's threads) state no bandwidth: at 64 MiB, its one-call rounds "
                    "waited for the CPU (its median round 3/4 of a tick or more past its fastest).")


def test_a_busy_run_s_host_ceiling_is_said_under_load_with_its_blocks_spread(tmp_path, monkeypatch):
    """The busy run ran with the CPU taken by others: off the ticks, its 64 MiB copy_ median is one speed of six blocks'
    4.48-7.96 GB/s, so the headline says "under load" and the evidence gives the blocks' span. The quick run's 64 MiB
    copy_ lay on the ticks: it states no bandwidth."""
    from xferbench.analyze.report.findings import findings

    _as_if_steady(monkeypatch)
    (said,) = [f for f in findings(RunView.of(load([_undecided(tmp_path)]))) if f.headline.startswith("Host memory")]
    assert said.startswith("Host memory copies (torch's copy_, 2 threads) reached 5.52 GB/s at 64 MiB under load "
                           "(4.48-7.96 GB/s across its 6 blocks; one thread: 4.64 GB/s; block by block the default "
                           "threads took 0.965× (0.824-1.13) its time: faster or slower, can't tell)")
    view = RunView.of(load([ROOT / "tests" / "data" / "cpu-quick-sample.json"]))
    (quick,) = [f for f in findings(view) if f.headline.startswith("Host memory copies")]
    # its 64 MiB copy_ took 39.9 ms, ten ticks, 18 of 60 rounds on them (a sixth reading): no bandwidth, and why
    assert quick.headline == quick == ("Host memory copies (copy_ on torch's threads) state no bandwidth: at 64 MiB, "
                                       "its median and a quarter or more of its rounds lie on the scheduler's 4 ms ticks: "
                                       "a wait for the CPU is part of its time.")


def _retimed(tmp_path: Path, blocks: dict[int, tuple[int, float]]) -> Path:
    """The busy run off the ticks (``_scaled``) with its 1 MiB copy_'s ``blocks`` (index: calls a round, median)
    retimed, each round scaled."""
    run = scaled(ROOT / "tests" / "data" / "cpu-busy-host.json")
    for bench in run["benchmarks"]:
        info, stats = bench["extra_info"], bench["stats"]
        if (info.get("op"), info.get("method"), info.get("nbytes"), info.get("variant")) == ("host", "copy_", 2**20, None) \
                and info["xfer_block"] in blocks:
            calls, median = blocks[info["xfer_block"]]
            scale = median / stats["median"]
            stats |= {"iterations": calls, "data": [t * scale for t in stats["data"]]} | {
                k: stats[k] * scale for k in ("min", "max", "mean", "median", "q1", "q3", "iqr", "stddev")}
    (tmp_path / "retimed.json").write_text(json.dumps(run))
    return tmp_path / "retimed.json"


def _as_if_steady(monkeypatch: pytest.MonkeyPatch) -> None:
    """The view reads no one-call round as a wait (``load.blocks.waited_rows``): the busy run's 64 MiB copies, whose
    rounds step by ticks (12.1, 16, 20 ms), state a bandwidth as a run whose rounds did not wait would. Without it they
    state none (``test_a_busy_run_s_waited_copy_states_no_bandwidth_in_its_finding``)."""
    monkeypatch.setattr("xferbench.analyze.view.waited_rows", lambda frame: pd.Series(False, index=frame.index))
    monkeypatch.setattr("xferbench.analyze.view._waited", lambda row: pd.notna(row.get("on_ticks")))  # nor comparisons


def _undecided(tmp_path: Path) -> Path:
    """The busy run with its 1 MiB copy_'s two 100-call blocks retimed as one-call blocks of 2 and 30 ms: six blocks
    timed alike whose growth to 64 MiB (1.16×, 0.387-3.5) can't be told from under 2x, nor from 2x or more."""
    return _retimed(tmp_path, {0: (1, 2e-3), 1: (1, 30e-3)})


@pytest.mark.parametrize(("data", "said"), [
    (None, "; whether the bytes set that time, can't tell: 1 MiB's blocks took 2-30 ms (64× fewer bytes), and block "
           "by block it took 1.17× (0.388-3.52) as long."),
    ("cpu-busy-host.json", None),  # its 64 MiB on the ticks: no bandwidth to hedge
    ("cpu-sample.json", None),  # 64 MiB told from 1 MiB beyond 2x: the bytes set the time, nothing hedged
    ("cpu-threads-sample.json", None),  # no drift evidence: growth unjudged, the page says so once, not here
    ("cpu-loaded-host.json", None)])  # told under 2x: a wait, said in full instead of a bandwidth
def test_a_bandwidth_whose_growth_from_a_sixteenth_of_its_bytes_can_t_be_told_says_so(tmp_path, monkeypatch, data, said):
    """A host bandwidth is stated as one only where the bytes set its time; where the run judged the growth from a size
    with 1/16 of the bytes and cannot tell it from under 2x, the finding says whether they do can't be told, in four
    figures at most in its headline."""
    from xferbench.analyze.report.findings import findings

    if data is None:
        _as_if_steady(monkeypatch)
    path = _undecided(tmp_path) if data is None else ROOT / "tests" / "data" / data
    (found,) = [f for f in findings(RunView.of(load([path]))) if f.headline.startswith("Host memory copies")]
    if said is None:
        assert "whether the bytes set that time" not in found
    else:
        assert said in found
        assert found.headline == ("Host memory copies reach 5.52 GB/s at 64 MiB under load; 1 MiB's blocks can't tell "
                                  "whether the bytes set that time.")


def test_a_busy_run_s_threads_verdict_gives_the_blocks_own_ratio(tmp_path, monkeypatch):
    """The busy run's 64 MiB copy_ off the ticks: medians 5.52 against 4.64 GB/s (1.19x apart) while the six paired
    blocks give 0.965x (0.824-1.13): the page prints the blocks' figure, lest a reader divide the medians."""
    _as_if_steady(monkeypatch)
    view = RunView.of(load([_undecided(tmp_path)]))
    (said,) = [f for f in findings(view) if f.headline.startswith("Host memory copies")]
    assert ("one thread: 4.64 GB/s; block by block the default threads took 0.965× (0.824-1.13) its time: faster or "
            "slower, can't tell)") in said


def test_a_busy_run_s_no_ops_are_not_judged_by_a_4_byte_copy_s_blocks():
    """tests/data/cpu-quick-sample.json: .to('cpu') at 64 MiB 2001 ns against a 988 ns copy. The latency regime's only
    evidence is the 4 B copy_'s blocks; the no-ops' own medians wander 1.25-6.7x between 4 B and 64 MiB under load, so
    judged by that evidence the 2.02x would read resolved. A large no-op stays in its size's regime: can't tell."""
    from xferbench.analyze.report.findings import findings

    view = RunView.of(load([ROOT / "tests" / "data" / "cpu-quick-sample.json"]))
    (said,) = [f for f in findings(view) if f.headline.startswith("A no-op move")]
    # its rounds of 10,000 calls held the scheduler's ticks too (3.74 ms at fastest, 20 ms at the median): the interval
    # can't tell, but every no-op's fastest round (195-374 ns) beat the copy's (948 ns), and a wait only adds: that
    # order settles it, and no "can't tell" is said beside it (a reading found it empty)
    dearest, copy = (view.rows.loc[i] for i in (view.rows.query("op == 'noop'")["median_s"].idxmax(),
                                                 view.cheapest_copy(view.rows.query("op == 'noop'").iloc[0]).name))
    assert not view.ratio(dearest, copy).resolved
    assert ("the cheapest real copy measured (host single_thread cpu, 1 KiB) took 988 ns, below the dearest no-op's median; "
            "at their fastest round every no-op (195-374 ns) beat the copy's (948 ns): the medians' order is the load's."
            in said) and "can't tell" not in said
    # with the copy's fastest round under some no-op's, or at the slowest no-op's own (150 ns, 300 ns, 374 ns here), the
    # order settles nothing: the interval speaks
    floors = view.rows.loc[view.rows["op"].eq("noop") & view.rows["src"].eq("cpu"), "min_s"]
    for fastest in (150e-9, 300e-9, float(floors.max())):
        slower = load([ROOT / "tests" / "data" / "cpu-quick-sample.json"])
        slower.frame.loc[copy.name, "min_s"] = fastest
        (said,) = [f for f in findings(RunView.of(slower)) if f.headline.startswith("A no-op move")]
        assert ("below the dearest no-op's median; whether that no-op costs more, can't tell (one side's rounds waited "
                "for the CPU; at most 4.96×). A no-op") in said, fastest
    # its medians (206-2001 ns) span the run's load, not the call: the headline gives its fastest rounds
    assert said.headline == ("A no-op move of a tensor already on cpu costs 195-374 ns a call at its fastest rounds "
                             "(medians under load up to 2,001 ns): it returns the same object.")


def test_a_row_whose_blocks_ran_different_calls_a_round_says_so_in_the_appendix(tmp_path):
    """tests/data/cpu-busy-host.json's 1 MiB copy_: two blocks of 100 calls a round (15 µs), four of one whose rounds lay
    on the scheduler's 4 ms ticks (12 ms): those are left out, and the row says so. The quick run's 1 MiB copy_ keeps
    blocks of one call and of 100 once two on the ticks are left out: each block's median beside its count, for its
    merged median is neither timing (a reading found it unexplained)."""
    from xferbench.analyze.report.page import write_report

    page = write_report(load([ROOT / "tests" / "data" / "cpu-busy-host.json"]), tmp_path / "busy.html").read_text()
    left = "4 blocks of one call a round on the scheduler&#39;s ticks left out"
    assert page.count(f'<td class="n">40 × 100, {left}</td>') == 1
    assert page.count(f"over 40 rounds × 100, {left.replace('&#39;', chr(39))}") == 1  # the hover
    # a row whose rounds lie mostly on the ticks, with no other block to keep: named with its tick
    assert page.count('<td class="n">22 × 1, its median and a quarter or more of its rounds lie on the scheduler&#39;s '
                      '4 ms ticks: a wait for the CPU is part of them</td>') == 1
    # blocks under 2x apart give their range, not the first block's count (it read "90 × 1011")
    assert page.count('<td class="n">90 × 1,000-1,058</td>') == 1 and "× 1011" not in page
    quick = write_report(load([CPU_QUICK]), tmp_path / "quick.html").read_text()
    blocks = "its blocks&#39; calls a round (median): 1 (37.8 ms), 100 (15 µs), 1 (38 ms), 1 (13.8 ms)"
    assert quick.count(f"60 × 1-100, 2 blocks of one call a round on the scheduler&#39;s ticks left out, {blocks}") == 1


def test_linear_time_axes_separate_thousands_as_the_tables_do(tmp_path):
    """The threads run's 1 GiB clone took 1.59 s: its ladder and route chart ticked "1000 1200 ..." in ms beside
    tables that write 1,000."""
    from xferbench.analyze.report.page import write_report

    page = write_report(load([THREADS]), tmp_path / "index.html").read_text()
    for key in ("plot-ladder", "plot-cost"):
        svg = page[page.index(f'id="{key}"'):]
        ticks = re.findall(r">([0-9][0-9.,]*)</text>", svg[:svg.index("</svg>")])
        assert "1,000" in ticks and "1000" not in ticks


def test_the_appendix_marks_a_gb_s_the_bytes_do_not_set(tmp_path):
    """tests/data/cpu-busy-host.json's 1 KiB copy_ and clones took as long as their 4 B: their GB/s is bytes over a wait.
    The appendix marks them and no other; the foot says why. Its 64 MiB copy_ (12 ms) was marked too while 1 MiB's
    blocks on the scheduler's ticks (12 ms) judged it; it lies on them itself, so it gives no GB/s at all."""
    from xferbench.analyze.report.page import write_report

    page = write_report(load([ROOT / "tests" / "data" / "cpu-busy-host.json"]), tmp_path / "index.html").read_text()
    table = page[page.index('id="results-table"'):page.index('<h2 id="machine">')]
    # their 4 B too, judged from the 1 KiB (256x the bytes in about as long): the bytes set under 1% of their time
    assert re.findall(r'<td class="n">([^<]*) ‡</td>', table) == ["0.00306", "0.764", "0.00422", "1.07", "0.0042", "1.05"]
    # its 12 ms held the scheduler's ticks: the bar says so, as the first screen's table does (a reading)
    assert "  12 ms (its rounds waited for the CPU);  slowest .clone(): 66.5 ms (its rounds waited for the CPU)" in page
    assert "5.59 GB/s" not in page and "1.01 GB/s" not in page  # nor a GB/s of the clone's waited rounds (a reading)
    # drawn as crosses, the legend says why: the 1 KiB copy_ and clones of the host figure
    from xferbench.analyze.report.plots import bandwidth_of

    figure = bandwidth_of(RunView.of(load([ROOT / "tests" / "data" / "cpu-busy-host.json"])), "host")
    crossed = sorted(int(x) for ax in figure.axes for line in ax.get_lines() if line.get_marker() == "x"
                     for x in line.get_xdata())
    assert crossed == [4, 4, 4, 1024, 1024, 1024] and "×: no bandwidth (‡ in the appendix)" in page
    plt.close(figure)
    assert ("‡ took under 2× as long, its 95% interval and all, as the largest size of its path with 1/16 of its bytes "
            "or fewer: if time = fixed cost + bytes / β, the bytes set at most 53% of its time, so its GB/s (bytes moved "
            "/ median) is no bandwidth.") in table


def test_a_mixed_row_is_left_out_of_its_paths_fit_and_named(tmp_path):
    """A 1 MiB copy_ of two 100-call blocks (15 µs) and four one-call ones (here 200 µs: its bytes set 64 MiB's 12 ms)
    made the line through α and β miss it 35x, and the key findings said no line fits host copy_: fitted without it,
    the line fits and the basis names the size left out."""
    view = RunView.of(load([_retimed(tmp_path, {i: (1, 200e-6) for i in range(2, 6)})]))
    fit = view.fit_of("host pageable copy_ cpu")
    assert fit is not None and fit["left_out"] == (2**20,) and fit["sizes"] == 3
    assert view.model_miss(fit) is None
    from xferbench.analyze.report.model_text import basis

    assert basis(fit) == "fit over all sizes but 1 MiB, whose blocks timed calls a round 2× or more apart"
    assert not any("No line of a fixed cost and a bandwidth fits" in said for said in findings(view))
    # nor does the size left out bracket half of β: its fitted neighbours are 1 KiB and 64 MiB
    assert any("half of β at 4.74 KiB, between 1 KiB and 64 MiB, the nearest sizes it kept, 65,536× apart" in said
               for said in findings(view))


def test_a_paired_gain_says_it_is_block_by_block(tmp_path):
    """The busy run's clone against copy_ at 64 MiB, off the ticks: medians 67.3 ms and 12.2 ms (5.54x), paired blocks
    5.46x. A reader dividing the printed medians must not take 5.46 for their quotient. On the ticks (copy_, and
    clone's own rounds 15 ms above its fastest: no floor under it either), no size: the order of its rounds alone."""
    from xferbench.analyze.report.break_even import pinning_break_even
    from xferbench.analyze.report.changes import first_screen

    view = RunView.of(load([off_ticks(tmp_path, BUSY)]))
    found = first_screen(view, pinning_break_even(view))[0]
    assert [c.text() for c in found] == ["saves 55.2 ms a call (67.3 ms → 12.2 ms at 64 MiB: 5.46× (4.44-6.72) faster "
                                         "block by block)"]
    view = RunView.of(load([ROOT / "tests" / "data" / "cpu-busy-host.json"]))
    (change,) = first_screen(view, pinning_break_even(view))[0]
    assert not change.ratio.resolved and change.text().startswith("saves time (66.5 ms → 12 ms at 64 MiB, ")


def test_torch_empty_is_no_evidence_of_a_copys_bandwidth_drift():
    """The quick run's 64 MiB torch.empty (13 µs, no byte moved) added 5 degrees of freedom of zero spread to the
    bandwidth-bound host pool: 32.2% (25) where the copies alone give 36.0% (20)."""
    from xferbench.analyze.drift import regime

    view = RunView.of(load([ROOT / "tests" / "data" / "cpu-quick-sample.json"]))
    empty = view.rows[(view.rows["op"] == "create") & (view.rows["method"] == "empty")
                      & (view.rows["nbytes"] == 64 * 2**20)].iloc[0]
    assert regime(empty) == ("pageable", "latency")
    pool = view.drift.regimes[("pageable", "bandwidth")]
    assert (f"{pool.sd:.1%}", pool.df) == ("36.0%", 20)


def test_the_fresh_destination_headline_claims_no_more_than_clone_minus_copy(tmp_path):
    """clone() minus copy_ holds allocating, first touching and releasing the buffer: 163 ms of the quick run's 203 ms
    at 64 MiB is its fresh destination, with 16,385 more faults a call beside it, not all "the first touch"."""
    from xferbench.analyze.report.findings import first_touch

    # its 64 MiB copy_ lay on the scheduler's ticks, and clone's median round sat 70 ms above its fastest (waits of
    # its own): no floor under the step, so it is not judged, and no headline reads one
    assert first_touch(RunView.of(load([ROOT / "tests" / "data" / "cpu-quick-sample.json"]))) is None
    said = first_touch(RunView.of(load([off_ticks(tmp_path, CPU_QUICK, steady=True)])))
    assert said is not None and said.headline == (
        "A fresh 64 MiB clone() took 205 ms: 165 ms (80%) of it is its fresh destination (16,385 more page faults a "
        "call); transparent huge pages: madvise.")


def test_a_dataloader_step_timed_one_call_a_round_is_not_judged_by_the_latency_evidence_alone():
    """tests/data/cpu-quick-sample.json: 2 workers 4.57 ms a step (18 rounds of one call) against none 158 µs (13 rounds
    of 100). The latency pool (0, from the 4 B copy_'s many-call blocks) says nothing of one-call rounds: the interval
    takes the host's bandwidth pool (36.0%) too. None's rounds held the scheduler's ticks (2.65 ms at fastest, 15.8 ms
    at the median): a reading found its 28.8× a wait's; 2 workers' own steps spread past 3 ms, so the waits give no
    floor either: not judged. The first batches' one-call rounds waited too (first-w2 at 4.59 MiB: 224 ms at fastest,
    281 ms at the median), beside a first-w0 that did not: at most their medians, a ceiling and no verdict (a reading
    found "145× (8.76-2,401)" stated two-sided of a side the same paragraph lists as waited)."""
    from xferbench.analyze.report.findings import scenario_findings

    view = RunView.of(load([ROOT / "tests" / "data" / "cpu-quick-sample.json"]))
    said = " ".join(scenario_findings(view, "dataloader"))
    assert ("Per step, against no workers (158 µs): 2 workers can't tell (the faster side's rounds waited for the CPU, "
            "and the slower side's too).") in said
    assert ("To a fresh iterator's first batch, against no workers (1.94 ms): 2 workers can't tell (one side's rounds "
            "waited for the CPU; at most 2,401×).") in said


def test_the_route_chart_leaves_out_the_one_thread_roof_as_the_first_screen_does(tmp_path):
    """tests/data/cpu-quick-sample.json at 64 MiB: copy_ on torch's 2 threads 39.9 ms, on one thread 36 ms. The first
    screen's table gives the threads' 39.9 ms (one thread is the roof, not a move): so does the route chart."""
    from xferbench.analyze.report.page import write_report

    page = write_report(load([ROOT / "tests" / "data" / "cpu-quick-sample.json"]), tmp_path / "index.html").read_text()
    (tip,) = re.findall(r"<title>(host pageable cpu, 64 MiB:[^<]*)</title>", page)
    # copy_'s 39.9 ms lay on the scheduler's ticks: no GB/s beside it, as the finding states none
    assert tip == ("host pageable cpu, 64 MiB:\n.copy_: median 39.9 ms (its rounds waited for the CPU)\n"
                   ".clone: median 203 ms (its rounds waited for the CPU)")
    # a no-op's hover marks each size whose rounds held the ticks (10,000 .cpu() calls: 1.96 ms at fastest, 10.2 at median)
    assert "<title>.cpu() on cpu: 206.3 ns at 4 B, 1,024 ns at 64 MiB (its rounds waited for the CPU) per call</title>" in page


def test_a_module_case_of_mixed_loops_is_bounded_by_its_fastest_rounds():
    """tests/data/cpu-quick-sample.json: the second .to(cpu) at 38.2 MiB ran blocks of 1 and of 100 calls a round, and
    every size's rounds waited for the CPU: the medians decide nothing, the fastest rounds bound the call (a reading
    found the page's "cannot say whether the bytes set it" weaker than 40.6 µs at 10,421× the bytes)."""
    from xferbench.analyze.report.findings import scenario_findings

    said = " ".join(scenario_findings(RunView.of(load([ROOT / "tests" / "data" / "cpu-quick-sample.json"])), "module_to"))
    assert "cannot say whether the bytes" not in said
    assert ("nothing is copied (every parameter tensor is visited), and its fastest rounds took 38.8-40.6 µs a call, "
            "40.6 µs at 38.2 MiB (a round of 1 call; its rounds of 100: 78.8 µs a call at fastest): 986 GB/s, were "
            "those bytes copied.") in said  # the appendix gives the rounds of 100: a reading found two "fastest"


def _steadied(sample: str, *paths: str) -> RunView:
    """``sample``'s view with the 64 MiB rounds of ``paths`` taken as steady (each at its median): a fit takes them as it
    takes a run's whose rounds did not wait (load.blocks.waited_off leaves out a size whose rounds did)."""
    results = load([ROOT / "tests" / "data" / sample])
    frame = results.frame
    for index in frame.index[frame["path"].isin(paths) & frame["nbytes"].eq(64 * 2**20)]:
        frame.at[index, "data"], frame.at[index, "waited_off_ticks"] = [frame.at[index, "median_s"]] * 5, False
    return RunView.of(results)


def test_a_size_that_ran_from_cache_brackets_no_half_of_beta():
    """tests/data/cpu-quick-sample.json: the one-thread copy's β is fitted without 1 MiB (its rounds held the scheduler's
    ticks; before, it ran faster than memory): 1 MiB brackets no half of β; the fitted neighbours are 1 KiB and 64 MiB,
    whose rounds (13.4 to 39.5 ms) waited too: taken as steady here, else it is left out as well."""
    from xferbench.analyze.report.model_text import fit_table

    (row,) = [r for r in fit_table(_steadied("cpu-quick-sample.json", "host single_thread cpu"))
              if r["path"] == "host single_thread cpu"]
    assert row["beta_basis"] == ("fit over all sizes but 1 MiB, whose rounds waited for the CPU; the fit puts "
                                 "half of β at 1.34 KiB, between 1 KiB and 64 MiB, the nearest sizes it kept, 65,536× "
                                 "apart, so no half of β")


def test_a_copy_time_the_bytes_do_not_set_is_stated_as_no_bandwidth():
    """The loaded run's 2-thread copy_ took 20 ms at 1 MiB and at 64 MiB, the busy run's 12 ms at 64 MiB, most rounds on
    the scheduler's 4 ms ticks: a wait for a CPU, not memory bandwidth (a fifth reading found 3.36 GB/s stated; a
    sixth, the ticks, and then clone's 0.565 GB/s in its place): no GB/s, and why."""
    from xferbench.analyze.report.findings import host_copy

    ticks = ("Host memory copies (copy_ on torch's threads) state no bandwidth: at 64 MiB, its median and a quarter or "
             "more of its rounds lie on the scheduler's 4 ms ticks: a wait for the CPU is part of its time.")
    for sample in ("cpu-loaded-host.json", "cpu-busy-host.json"):  # nor clone's rate in its place (fresh pages)
        assert host_copy(RunView.of(load([ROOT / "tests" / "data" / sample]))) == ticks
    # a run that recorded no cache (no size, no cache_resident) cannot say memory rather than cache
    unknown = host_copy(RunView.of(load([ROOT / "tests" / "data" / "cpu-sample.json"])))
    assert unknown is not None and unknown.headline == ("Host memory copies reach 26.4 GB/s at 16 MiB (xferbench recorded "
                                                        "no cache size).")
    assert unknown.endswith("; xferbench recorded no cache size, so whether 16 MiB ran from a cache is not known.")
    # the simulated machine's host copies are real (12 ms at 1 MiB, 6.09 ms at 64 MiB when it was recorded): said so;
    # the cost model's drift (none) no longer judges their growth (0.508x, 0.274-0.943 by it), and no real pair does
    simulated = host_copy(RunView.of(load([ROOT / "tests" / "data" / "sim-2gpu.json"])))
    assert simulated is not None and simulated.headline == "Host memory copies reach 11 GB/s at 64 MiB." and \
        simulated.endswith("; these copies ran on this CPU, for real: the simulated devices' figures do not depend on them.")
    # the box at the top shows no GB/s for it either, and the busy run's copy_ keeps its own
    from xferbench.analyze.report.changes import at_a_glance

    glance = {line["what"]: line["gbps"] for line in at_a_glance(RunView.of(load([ROOT / "tests" / "data" /
                                                                                  "cpu-loaded-host.json"])))}
    # nor clone's, whose one-call rounds waited (83 against 119 ms)
    assert glance == {"host clone (new tensor every call)": "–", "host copy_ into an existing buffer": "–"}
    busy_glance = at_a_glance(RunView.of(load([ROOT / "tests" / "data" / "cpu-busy-host.json"])))
    # 64 MiB on the ticks: no GB/s, and its time says so
    assert [(line["time"], line["gbps"]) for line in busy_glance if "copy_" in line["what"]] == [
        ("12 ms (its rounds waited for the CPU)", "–")]


def test_a_cpu_only_page_has_no_pipelined_columns(tmp_path):
    """Pipelined α and half of β come from a GPU's device time: a run without one shows neither column, in the page
    and in its Markdown, nor the roof columns, and calls α the fixed cost of one call, not of a synchronizing loop."""
    from xferbench.analyze.report.page import write_report

    out = write_report(load([ROOT / "tests" / "data" / "cpu-sample.json"]), tmp_path / "r.html")
    html, markdown = out.read_text(), out.with_suffix(".md").read_text()
    assert "α pipelined" not in html + markdown and "sync loop" not in html + markdown
    assert "| path | α | β (GB/s) | β from | largest size kept: GB/s |\n|---|---:|---:|---|---:|\n" in markdown
    assert "share of roof" not in html + markdown  # no roof is known of a CPU run's paths: no column of dashes
    assert "over wall times of one call: α is its fixed cost" in html
    # every host path of a CPU-only run is pageable and nothing synchronizes: neither word is said of them
    assert "Called back to back, the 2 host-side paths whose β the run cannot rank" in markdown
    assert "Dotted lines are the fitted t = α + n/β. Hollow markers" in html and "synchronizes after every" not in html


def test_the_loaded_run_s_method_line_reads_its_blocks():
    """5 of its 12 cases ran in six blocks; their blocks give the drift of each regime, one of them none beyond noise."""
    from xferbench.analyze.report import drift_text

    assert drift_text.statement(RunView.of(load([ROOT / "tests" / "data" / "cpu-loaded-host.json"]))) == (
        "Each comparison carries its own 95% interval and says \"can't tell\" where that interval holds 1 (no "
        "difference): any two of the 5 cases "
        "measured in interleaved blocks are judged block by block; other comparisons rest on their rounds plus the "
        "run's drift between cases of their regime (a standard deviation, from its blocks: pageable or host memory "
        "from 1 MiB 11.1% (20 degrees of freedom); pageable below 1 MiB none beyond its rounds' own noise). A paired "
        "interval narrows about as the square root of its blocks (this run: 6; --xfer-blocks=N measures every case in N).")


def test_a_copy_the_bytes_do_not_time_states_no_beta_and_a_line_that_misses_is_no_beta_to_rank():
    """The loaded run's copy_ took 20 ms at 1 and 64 MiB, most rounds on the scheduler's ticks: it states no β (a
    fresh-eyes reading found "β = 3.41 GB/s" in the table beside the host finding's "no bandwidth is stated"), and
    says which sizes it left out and why; clone's α/β line misses a measured size: the finding says so, and no
    single-thread β is set against a clone's as if threads were the difference."""
    from xferbench.analyze.report.findings import latency_bound
    from xferbench.analyze.report.model_text import fit_table

    view = RunView.of(load([ROOT / "tests" / "data" / "cpu-loaded-host.json"]))
    (copy,) = [row for row in fit_table(view) if row["path"] == "host pageable copy_ cpu"]
    assert pd.isna(copy["stated_gbps"]) and pd.isna(copy["largest_gbps"]) and copy["beta_basis"] == (
        "no β: its largest size took under 2× as long as one with 1/16 of its bytes or fewer: the bytes set at most 1% "
        "of its time; 1 MiB, 64 MiB left out, whose rounds waited for the CPU")
    assert latency_bound(view) is None  # clone's 64 MiB rounds waited too (83 against 119 ms): no β to state
    found = latency_bound(_steadied("cpu-loaded-host.json", "host pageable clone cpu"))  # as though they had not
    # its 1 MiB on the ticks is left out of its fit too (it missed that size 11×, a tick's time)
    said = ("No line of a fixed cost and a bandwidth fits host pageable clone cpu's times: the line through α and the "
            "stated β (0.565 GB/s) misses the time measured at 1 KiB 2.3×.")
    assert found is not None and found.headline == said and found.evidence == said


def test_a_run_whose_every_path_waited_says_so_and_states_no_beta(tmp_path):
    """The loaded run without its clone: copy_, the one host path left, took 20 ms at 1 and 64 MiB, so no β and no
    GB/s at its largest size. The finding said "fits in the cache" by the largest GB/s, and with none it raised
    (a real run at load 7 hit it)."""
    from xferbench.analyze.report.findings import latency_bound

    run = json.loads((ROOT / "tests" / "data" / "cpu-loaded-host.json").read_text())
    run["benchmarks"] = [b for b in run["benchmarks"] if b["extra_info"].get("method") == "copy_"
                         and b["extra_info"].get("variant") is None]
    (tmp_path / "copy.json").write_text(json.dumps(run))
    # its 1 and 64 MiB lie on the scheduler's ticks: left out of the fit, two sizes leave no α, and nothing is said
    assert latency_bound(RunView.of(load([tmp_path / "copy.json"]))) is None
    for bench in run["benchmarks"]:  # 1.3 ms later, every round: off the ticks, and 21.3 ms at 1 and 64 MiB alike
        stats = bench["stats"]
        if stats["iterations"] == 1:
            stats |= {"data": [t + 1.3e-3 for t in stats["data"]]} | {
                k: stats[k] + 1.3e-3 for k in ("min", "max", "mean", "median", "q1", "q3")}
    (tmp_path / "off.json").write_text(json.dumps(quiet(run)))  # no load: no wait read by the longest tick either
    found = latency_bound(RunView.of(load([tmp_path / "off.json"])))
    said = ("No bandwidth β is stated: the largest size of host pageable copy_ cpu took under 2× as long as one with "
            "1/16 of its bytes or fewer: the bytes set under 1% of its time.")
    assert found is not None and found.headline == said
    # two paths that waited (a live CPU run's copy_ and clone, a CI run's): a headline of 50 words at most, each
    # path's share in the evidence (the two shares in one headline ran to 60 words)
    clones = [json.loads(json.dumps(b)) for b in run["benchmarks"]]
    for bench in clones:
        bench["extra_info"]["method"], bench["name"] = "clone", bench["name"].replace("copy_", "clone")
    run["benchmarks"] += clones
    (tmp_path / "two.json").write_text(json.dumps(run))
    found = latency_bound(RunView.of(load([tmp_path / "two.json"])))
    assert found is not None and found.headline == ("No bandwidth β is stated: the largest size of each of 2 paths took "
                                                    "under 2× as long as one with 1/16 of its bytes or fewer.")
    assert found.evidence == ("No bandwidth β is stated: the largest size of host pageable copy_ cpu took under 2× as "
                              "long as one with 1/16 of its bytes or fewer: the bytes set under 1% of its time; the "
                              "largest size of host pageable clone cpu took under 2× as long as one with 1/16 of its "
                              "bytes or fewer: the bytes set under 1% of its time.")


def test_no_ceiling_is_read_from_a_rate_the_bytes_do_not_set():
    """The loaded run's clone: its 1 KiB took 1.30 µs against 1.23 µs at 4 B (the appendix marks its 0.788 GB/s ‡).
    The α/β row said "1 KiB reached 0.788 GB/s, so β is no ceiling" from that rate: no size it cites may be a wait."""
    from xferbench.analyze.report.model_text import fit_table

    view = RunView.of(load([ROOT / "tests" / "data" / "cpu-loaded-host.json"]))
    (clone,) = [row for row in fit_table(view) if row["path"] == "host pageable clone cpu"]
    assert "no ceiling" not in clone["beta_basis"] and "0.788" not in clone["beta_basis"]
    assert any(row["path"] == "host pageable clone cpu" and row["nbytes"] == 1024 for row in
               (view.rows.loc[label] for label in view.waits))
    # the quick run's 1 KiB clone took 0.944x (0.42-2.12) its 4 B's time: no wait by the rule, yet its bytes are not
    # shown to set its time, so its 0.78 GB/s is no evidence either (it said "1 KiB reached 0.78 GB/s, so β is no
    # ceiling"); the H200's pageable h2d keeps its 16 MiB, which grew beyond its interval from 1 MiB
    quick = RunView.of(load([ROOT / "tests" / "data" / "cpu-quick-sample.json"]))
    (clone,) = [row for row in fit_table(quick) if row["path"] == "host pageable clone cpu"]
    assert "no ceiling" not in clone["beta_basis"] and "0.78 GB/s" not in clone["beta_basis"]


def test_a_stalled_copy_left_at_the_foot_of_a_ladder_says_so(tmp_path):
    """The loaded run's copy_ took 20 ms at 1 MiB and at 64 MiB, its median and rounds on the scheduler's 4 ms ticks:
    what is left of the clone ladder says so (a fourth reading read "the copy itself, 20 ms" as a copy's cost). A family
    the run did not run gets no figure, not even as a gap: this run measured host copies only."""
    from xferbench.analyze.report.page import write_report

    out = write_report(load([ROOT / "tests" / "data" / "cpu-loaded-host.json"]), tmp_path / "r.html")
    markdown = out.with_suffix(".md").read_text()
    ticks = "its median and a quarter or more of its rounds lie on the scheduler's 4 ms ticks: a wait for the CPU is part of"
    assert (f"| left | host pageable copy_ cpu | what is left: copy_ into a touched buffer ({ticks} its time) | median "
            "20 ms | can't tell (the faster side's rounds waited for the CPU, and the slower side's too) |") in markdown
    assert "the copy itself" not in markdown  # the finding's evidence names it so too
    html = out.read_text()
    # the figure's legend and hover say it too, not "the copy itself"
    html = html.replace("&#39;", "'")
    assert f"<title>what is left ({ticks} it): 20 ms (host pageable copy_ cpu)</title>" in html
    assert f"the rest is what copy_ into the touched buffer took, {ticks} it (the table" in html
    assert f">20 ms; {ticks} it</td>" in html
    # its host copies are all ‡ (4 B to 1 KiB) or waited: one line stands for their chart
    assert re.findall(r'data-missing="([\w-]+)"', html) == ["bandwidth-host"]
    assert 'id="plot-create"' not in html and 'id="plot-noop"' not in html
    assert "every no-op" not in html  # the conventions say no no-op was checked where none ran


def test_a_run_without_drift_evidence_prints_no_open_interval():
    """cpu-sample has neither blocks nor same-code pairs: its ladder step says why it can't tell, with no interval
    open at the top ("-636 µs to –")."""
    from xferbench.analyze.report.ladder_text import rows

    (ladder,) = RunView.of(load([ROOT / "tests" / "data" / "cpu-sample.json"])).ladders
    assert rows(ladder)[1][3:] == ["448 µs", "can't tell (the run repeated no case to measure its drift)"]


def test_a_faster_smaller_size_the_run_cannot_judge_is_not_called_past_the_caches(busy):
    """The busy run's copy_ reached 1.98 GB/s at 256 MiB and 1.77 at 1 GiB under load, with no evidence of its drift:
    whether 256 MiB drew on the 480 MiB cache, the run cannot tell, so the size past the caches is 1 GiB (a fresh-eyes
    reading found "1.98 GB/s at 256 MiB, past the caches" where the JSON marks 256 MiB cache-resident). Its copy reads
    and writes 512 MiB, more than the cache too: the question is whether it ran faster per byte, not "from a cache or
    not" (a fifth reading: the page's own arithmetic leans one way)."""
    said = host_copy(busy)
    assert said is not None
    assert said.headline == ("Host memory copies reach 1.77 GB/s at 1 GiB, past the caches (1.98 GB/s at 256 MiB: whether "
                             "faster per byte, can't tell) under load.")
    assert ("1.98 GB/s at 256 MiB (its copy reads and writes 512 MiB, more than the 480 MiB host CPU cache too): whether "
            "faster per byte, can't tell (the run repeated no case to measure its drift)) under load "
            "(one thread: 1.99 GB/s; faster or slower than the default threads: can't tell (the run repeated no case to "
            "measure its drift)).") in said


def test_the_head_counts_the_json_s_benchmarks_and_the_cases_their_blocks_merge_into():
    """The loaded run's JSON holds 37 benchmarks, 12 cases of which 5 ran in blocks of 6: its head said "12 benchmarks"
    (a fresh-eyes reading counted 37 in the file); a run without blocks says only its benchmarks."""
    assert RunView.of(load([ROOT / "tests" / "data" / "cpu-loaded-host.json"])).benchmarks == "37 benchmarks (12 cases)"
    assert RunView.of(load([CPU])).benchmarks == "58 benchmarks"
    # blocks left out on the scheduler's ticks are the file's benchmarks too (a reading counted 131 and 37 in the files)
    assert RunView.of(load([CPU_QUICK])).benchmarks == "131 benchmarks (91 cases)"
    assert RunView.of(load([BUSY])).benchmarks == "37 benchmarks (12 cases)"
    # two files of 512 and 50 benchmarks, 42 cases measured in both: each read from one of them
    assert RunView.of(load(H200)).benchmarks == "562 benchmarks (520 cases)"


def test_tied_paths_whose_lines_miss_the_data_quote_no_alpha_or_beta(busy):
    """The busy threads run's two host paths cannot be ranked. Read as though no round waited, each α/β line misses a
    measured size (57× and 181×: sizes that waited): the headline quoted "α = 0.743-1.02 µs and β = 0.696-1.81 GB/s" from
    lines that are no cost model (a fresh-eyes reading); it says no line fits. With its waits left out, copy_'s line fits
    and clone's still misses (2.4× at 1 KiB): the headline quotes the one that fits and says the other does not."""
    said = latency_bound(busy)
    assert said is not None and said.headline == (
        "Called back to back, of the 2 host-side paths whose β the run cannot rank, host pageable copy_ cpu has a fixed "
        "cost α = 0.753 µs and β = 1.87 GB/s; the other's fitted line misses a measured size 2.43×.")
    # where every line misses, none is quoted: the same run with no wait read (its copy_'s 256 KiB fitted too)
    results = load([THREADS])
    results.frame["waited_off_ticks"] = False
    said = latency_bound(RunView.of(results))
    assert said is not None and said.headline == ("No line of a fixed cost and a bandwidth fits the 2 host-side paths "
                                                  "whose β the run cannot rank: each misses a measured size (57.5-181×).")


@pytest.mark.parametrize(("calls", "compared"), [((10, 10), True), ((100, 100), True), ((10, 19), True),
                                                 ((10, 20), False), ((20, 10), False), ((29, 10), False),
                                                 ((1, 100), False)])
def test_threads_are_compared_only_at_calls_a_round_under_twice_apart(tmp_path, calls, compared):
    """A one-call round of the default threads (a pool's wake-up: the loaded run's 20 ms at 1 MiB) against a hundred-call
    one on one thread (144 µs) measures two loops, not two thread counts: no pair under 2x apart, no comparison."""
    view = _thread_view(tmp_path, False, {2**20: (199e-6, 216e-6)}, calls=calls)
    assert (2**20 in set(thread_pairs(view)["nbytes"])) == compared


def test_one_thread_beating_the_default_threads_beta_is_said(tmp_path):
    """torch's copy_ on one thread with the higher β (10 against 5 GB/s, both fitted over 4 B-256 MiB, paired by
    their times at every size): the β sentence says more threads made the host copy slower; a path that is no
    copy_ (a clone) is never set against it."""
    from handfed import gpu_machine, steady, sweep, write

    rows = [*sweep("host", "copy_", "cpu", "cpu", 1e-6, 5.0, host_memory="pageable"),
            *sweep("host", "copy_", "cpu", "cpu", 1e-6, 10.0, host_memory="pageable", variant="single_thread")]
    machine = gpu_machine()
    machine["xferbench"] |= {"devices": [], "host": {"torch_threads": 2}}
    view = RunView.of(load([write(tmp_path / "r.json", rows + steady(), machine)]))
    said = latency_bound(view)
    assert said is not None and said.endswith(
        " torch's copy_ on one thread (host copy_ single_thread) reached β = 10 GB/s, more than that: on this machine "
        "more threads made the host copy slower.")
    assert "(one thread: 10 GB/s; one thread faster, 2×)" in host_copy(view)  # resolved: which is faster, and how much
    rows = [*sweep("host", "copy_", "cpu", "cpu", 1e-6, 10.0, host_memory="pageable"),
            *sweep("host", "copy_", "cpu", "cpu", 1e-6, 5.0, host_memory="pageable", variant="single_thread")]
    slower = RunView.of(load([write(tmp_path / "slower.json", rows + steady(), machine)]))
    assert "(one thread: 5 GB/s; one thread slower, 2×)" in host_copy(slower)
    assert "more threads made the host copy slower" not in latency_bound(slower)


def test_a_highest_beta_beneath_the_one_thread_copys_says_that_copy_is_left_out():
    """The busy host run's clone reaches β = 1.07 GB/s, its one-thread copy_ 4.75 GB/s (the table's rows): the sentence
    names clone and says the one-thread copy is left out, though no comparison of the two is resolved. Its copy_ on
    torch's threads states no β (its rounds on the ticks): clone is the one β stated, not "the highest" (a reading
    took it for the fastest path per byte, which it is not: 1.01 GB/s at 64 MiB against copy_'s 5.6). Their 64 MiB
    rounds waited (51.3 against 66.5 ms, 7.18 against 14.3 ms): taken as steady here, else no β is fitted through them."""
    said = latency_bound(_steadied("cpu-busy-host.json", "host pageable clone cpu", "host single_thread cpu"))
    assert said is not None and ("the host-side path with the one β stated (host pageable clone cpu; left out: "
                                 "torch's copy_ on one thread, a roof rather than a call a move makes) has a fixed cost") in said
    assert "highest β" not in said


def test_a_module_move_whose_rounds_held_the_ticks_says_so_beside_its_time():
    """The quick run's second .to(cpu) at 3.75 KiB: rounds of 100 calls, 3.88 ms at fastest, 20.3 ms at the median: the
    162-203 µs quoted holds a wait for the CPU there, which the sentence names."""
    from xferbench.analyze.report.findings import scenario_findings

    (said,) = [s for s in scenario_findings(RunView.of(load([ROOT / "tests" / "data" / "cpu-quick-sample.json"])),
                                            "module_to") if s.startswith("A second .to('cpu')")]
    assert said.startswith("A second .to('cpu') of a module already there took 162-203 µs from 3.75 KiB to 38.2 MiB of "
                           "parameters (its rounds at 3.75 KiB, 393 KiB, 38.2 MiB waited for the CPU): ")


def test_a_waits_basis_names_the_sizes_that_ran_from_cache():
    """The busy run's copy_: "its largest size took under 2× as long" reads 1 KiB against 4 B, the fit's largest; its
    1 MiB (14.7 µs, 15x 1 KiB's, from the host CPU cache) was left out unsaid, which a reading took for a size hidden."""
    from xferbench.analyze.report.model_text import basis

    view = RunView.of(load([BUSY]))
    fit = view.fits[view.fits["path"] == "host pageable copy_ cpu"].iloc[0]
    assert basis(fit.to_dict(), view.largest_wait(fit)) == (
        "no β: its largest size took under 2× as long as one with 1/16 of its bytes or fewer: the bytes set at most 1% "
        "of its time; 1 size that ran from the host CPU cache left out; 64 MiB left out, whose rounds waited for "
        "the CPU")


def test_the_pipelined_half_of_beta_is_placed_as_the_synchronized_one_is():
    """The simulated run's sweep jumps from 1 KiB to 1 MiB: the synchronized loop's half of β (591 KiB) went unplaced,
    while its device-time fit placed one at 107 KiB, between the same two sizes. Neither is placed now, both said alike;
    the H200's (122-123 KiB, between 16 and 256 KiB) still is."""
    from xferbench.analyze.report.model_text import alpha_beta

    _, sentence = alpha_beta(RunView.of(load([ROOT / "tests" / "data" / "sim-2gpu.json"])))
    assert ("α = 2 µs host to device (half of β not placed: the fit puts half of β at 107 KiB, between 1 KiB and 1 MiB, "
            "the nearest sizes it kept, 1,024× apart) and 2 µs device to host (half of β not placed") in sentence
    h200 = ROOT / "reports" / "samples" / "h200"
    _, sentence = alpha_beta(RunView.of(load([h200 / "full.json.gz", h200 / "quick-scenarios.json"])))
    assert "α = 2.28-2.3 µs host to device (half of β at 122-123 KiB)" in sentence


def test_a_line_that_misses_a_small_size_it_kept_places_no_half_of_beta():
    """The quiet CPU run's gloo all_reduce: α 297 µs, β 1.04 GB/s, where its 1 KiB took 3.8× the line. The line was held
    only to sizes past half of β and said "fit over all sizes" unqualified; it now names the size it misses. The
    quick run's isend_irecv, whose 4 B rounds waited for the CPU (100 calls: 73 ms at fastest, 141 ms at the median),
    fits no line. The H200's fits, which meet their small sizes, are unchanged (golden)."""
    from xferbench.analyze.report.model_text import fit_table

    def basis(sample: Path) -> dict[str, str]:
        return {row["path"]: row["beta_basis"] for row in fit_table(RunView.of(load([sample])))}

    assert basis(CPU)["all_reduce gloo x2"] == ("fit over all sizes; the line through α and the stated β (1.04 GB/s) "
                                               "misses the time measured at 1 KiB 3.82×, so no half of β")
    assert basis(CPU_QUICK)["isend_irecv gloo x2"] == "too few sizes, 4 B left out, whose rounds waited for the CPU"


def test_the_simulated_table_places_no_pipelined_half_its_sentence_does_not():
    """A second reading: the simulated page's table still gave the pipelined half of β at 107 KiB (between 1 KiB and
    1 MiB) that its sentence no longer placed; its no-op caption named one yardstick where the figure draws two; and
    all_gather's line, 2.001x off at 1 MiB under the "over 2x" rule, read "2×"."""
    from xferbench.analyze.report.captions import figure_words
    from xferbench.analyze.report.model_text import fit_table, miss_times

    view = RunView.of(load([ROOT / "tests" / "data" / "sim-2gpu.json"]))
    rows = {row["path"]: row for row in fit_table(view)}
    assert math.isnan(rows["h2d pinned non-blocking to cpu->cuda:0"]["pipelined_half_bytes"])
    assert "misses the time measured at 1 MiB 2.001×" in rows["all_gather gloo x2"]["beta_basis"]
    assert miss_times(2.6) == "2.6" and miss_times(10.49) == "10.5" and miss_times(181.2) == "181" and miss_times(2.0004) == "2"
    _, caption = figure_words(view)["noop"]
    assert "the cheapest real copy measured and the cheapest the cost model priced" in caption
    h200 = ROOT / "reports" / "samples" / "h200"
    placed = {row["path"]: row for row in fit_table(RunView.of(load([h200 / "full.json.gz"])))}
    assert placed["h2d pinned non-blocking copy_ cpu->cuda:0"]["pipelined_half_bytes"] > 0


def test_a_busy_run_fits_no_beta_through_one_call_rounds_that_waited():
    """A second and a third reading: the busy run's clone (51.3 ms at fastest, 66.5 ms at the median) and one-thread
    copy_ (7.18 against 14.3 ms, in clusters off the ticks' multiples) gave β = 1.07 and 4.75 GB/s from medians that
    waited for the CPU. Their 64 MiB is left out of the fit and said so; the finding states no β."""
    from xferbench.analyze.report.model_text import fit_table

    view = RunView.of(load([BUSY]))
    rows = {row["path"]: row for row in fit_table(view)}
    for path in ("host pageable clone cpu", "host single_thread cpu"):
        assert pd.isna(rows[path]["stated_gbps"])
        assert rows[path]["beta_basis"].endswith("; 1 MiB, 64 MiB left out, whose rounds waited for the CPU")
    found = latency_bound(view)
    assert found is not None and found.headline == (
        "No bandwidth β is stated: host pageable copy_ cpu's largest size it kept (1 KiB; 64 MiB left out, whose rounds "
        "waited for the CPU) took under 2× as long as one with 1/16 of its bytes or fewer: the bytes set at most 1% of "
        "its time.")
    big = view.rows["path"].eq("host single_thread cpu") & view.rows["nbytes"].eq(64 * 2**20)
    assert pd.isna(view.rows.loc[big, "bandwidth_gbps"].iloc[0])  # no GB/s anywhere: the hover and CSV read the view
    assert view.results.frame.loc[big, "bandwidth_gbps"].iloc[0] == pytest.approx(4.7, abs=0.05)  # the run keeps it


def test_an_unjudged_growth_still_says_what_its_medians_did():
    """The CPU sample's second module .to(cpu): 39.9 µs at 3.75 KiB, 39.6 µs at 38.2 MiB. With no evidence of the
    run's drift nothing is judged, but 0.992× as long at 10,421× the bytes is said (a reading found "whether it grows
    with the bytes, can't tell" hid that the bytes do not set it), and only whether it differs from 1 is left open."""
    from xferbench.analyze.report.findings import scenario_findings

    (said,) = scenario_findings(RunView.of(load([CPU])), "module_to")[:1]
    assert said.endswith("and at 10,421× the bytes it took 0.992× as long (whether that differs from 1, can't tell: "
                         "the run repeated no case to measure its drift).")


def test_a_size_whose_one_call_rounds_waited_states_no_gb_s_anywhere():
    """The busy run's 64 MiB clone (51.3 ms fastest, 66.5 ms median) and one-thread copy_: the first screen states no
    GB/s of them, and the appendix neither (a reading found 1.01 and 4.7 GB/s there); its copy_, on the ticks, says so
    its own way. The quick run's scenarios name the cases whose rounds waited (its 304 ms placement: 236 ms fastest)."""
    from xferbench.analyze.report.page import _table
    from xferbench.analyze.report.story import Story

    rows = {(r["path"], r["nbytes"]): r for r in _table(RunView.of(load([ROOT / "tests" / "data" / "cpu-busy-host.json"])))}
    for path in ("host pageable clone cpu", "host single_thread cpu"):
        assert math.isnan(rows[path, 64 * 2**20]["bandwidth_gbps"])
        assert rows[path, 64 * 2**20]["calls"] == "30 × 1, its rounds waited for the CPU"
    assert rows["host pageable copy_ cpu", 64 * 2**20]["calls"].endswith("a wait for the CPU is part of them")
    assert rows["host pageable clone cpu", 1024]["bandwidth_gbps"] > 0  # a size that did not wait keeps its figure
    text, _ = Story.of(RunView.of(load([CPU_QUICK]))).scenarios["placement"]
    assert text.endswith("Rounds that waited for the CPU, as the notice at the top reads them (each median holds the "
                         "wait): convert_on_cpu at 1.15 MiB, convert_on_cpu at 9.19 MiB.")
    # every size of the module's second move, its rounds of 100 calls, in order of size (a reading found 393 KiB,
    # 4.02 ms at fastest and 16.2 ms at the median, left out)
    text, _ = Story.of(RunView.of(load([CPU_QUICK]))).scenarios["module_to"]
    assert text.endswith("(each median holds the wait): again at 3.75 KiB, again at 393 KiB, again at 38.2 MiB.")
    assert "Rounds that waited" not in Story.of(RunView.of(load([CPU]))).scenarios["placement"][0]


def test_a_beta_on_a_run_without_a_cache_size_says_its_largest_size_may_have_run_from_one(tmp_path):
    """The CPU sample's β runs through 16 MiB, whose copy reads and writes 32 MiB (the L3 its sibling runs record): it
    recorded no cache size, so the β finding says so, as the host-copy finding above it does; the same run with a 4 MiB
    cache recorded (its 16 MiB beyond it) does not."""
    (said,) = [s for s in findings(RunView.of(load([CPU]))) if s.headline.startswith("Called back to back")]
    assert said.headline.endswith("β = 14.8-25.6 GB/s (xferbench recorded no cache size: whether 16 MiB ran from a cache "
                                  "is not known).")
    assert "xferbench recorded no cache size:" in str(said)
    data = json.loads(CPU.read_text())
    data["machine_info"]["xferbench"].setdefault("host", {})["cache_bytes"] = {"L2": 2**20, "L3": 2**22}
    (tmp_path / "cached.json").write_text(json.dumps(data))
    said = [str(s) for s in findings(RunView.of(load([tmp_path / "cached.json"])))]
    assert any("Called back to back" in s for s in said) and not any("xferbench recorded no cache size:" in s for s in said)


def test_a_line_that_fits_no_size_carries_no_cache_caveat():
    """The host sweep's paths fit no line (each misses a measured size 4.3-44×): no β is quoted, so nothing to caveat
    about the cache, though that run recorded no cache size either."""
    said = findings(RunView.of(load([ROOT / "tests" / "data" / "cpu-host-sweep.json"])))
    (line,) = [s for s in said if s.headline.startswith("No line of a fixed cost")]
    assert line.headline.endswith("each misses a measured size (4.3-44.1×).") and "cache size" not in line.headline


def test_a_loaded_run_s_point_to_point_span_gives_its_fastest_rounds_too():
    """The quick run's 4 B messages: medians 344 µs to 2.87 ms one way, 3 of 5 cases holding a wait for the CPU (rounds
    of 100 calls far past their fastest). A reading found the span's top end load, not the message: the fastest rounds
    are said beside it; its 16 MiB all_reduce, rounds of 4 calls 78.9 ms to 150 ms, states no bus bandwidth."""
    from xferbench.analyze.report.distributed import distributed_findings

    view = RunView.of(load([CPU_QUICK]))
    said = " ".join(distributed_findings(view.rows, view.ratio, view.waits))
    assert ("a 4 B message took 344 µs to 2.87 ms one way across its 5 point-to-point cases (medians of 5+ rounds each; "
            "3 of them hold a wait for the CPU; at their fastest rounds 207 µs to 2.68 ms).") in said
    assert ("all_reduce of 16 MiB took 37.5 ms: its median round of 4 calls took 150 ms, its fastest 78.9 ms: a wait for "
            "the CPU is part of that time, so no bus bandwidth.") in said
    quiet = " ".join(distributed_findings((v := RunView.of(load([CPU]))).rows, v.ratio, v.waits))
    assert "hold a wait" not in quiet and "reached" in quiet


def test_a_bandwidth_figure_names_the_points_it_does_not_draw():
    """The quick run's host chart ended at 1 KiB: its 1 MiB and 64 MiB rows state no GB/s (their rounds waited for the
    CPU), and a reading found them dropped without a word. The caption names them; a quiet run's names none."""
    from xferbench.analyze.report.captions import figure_words

    _, caption = figure_words(RunView.of(load([CPU_QUICK])))["bandwidth-host"]
    assert caption.endswith(" Not drawn, stating no bandwidth (the table says why): host pageable copy_ cpu at 1 MiB, "
                            "64 MiB; host pageable clone cpu at 1 MiB, 64 MiB; host single_thread cpu at 1 MiB, 64 MiB.")
    assert "Not drawn" not in figure_words(RunView.of(load([CPU])))["bandwidth-host"][1]


def test_a_module_move_whose_medians_waited_is_bounded_by_its_fastest_rounds_alone():
    """The quick run's module sizes with no block of another loop: their medians still hold a wait for the CPU (rounds
    of 100 calls, 4 ms and more past their fastest), so the fastest rounds bound the call, not the medians' growth."""
    from xferbench.families.base import Rule
    from xferbench.families.module_to import finding

    view = RunView.of(load([CPU_QUICK]))
    rows = view.rows[view.rows["op"] == "module_to"].assign(mixed_iterations=False)
    rows.attrs["ratio"] = Rule(view.ratio)
    (said,) = [s for s in finding(rows) if s.startswith("A second")]
    assert said.endswith("and its fastest rounds took 38.8-40.6 µs a call, 40.6 µs at 38.2 MiB: 986 GB/s, were those "
                         "bytes copied.") and "the bytes it took" not in said


def test_a_larger_size_that_waited_still_bounds_a_small_size_s_growth():
    """The quick run's gloo send_recv 4 B and all_gather 8 B: their 16-fold larger sizes' rounds waited for the CPU
    (1 KiB: 212 → 427 ms and 48.3 → 76.4 ms a round of 100), so those medians hold more than the calls took, and the
    growth's far end still bounds them: under 2x, the small sizes' GB/s is no bandwidth (a reading found the mark gone
    when the larger size was flagged). Past 2x, the share k times the bytes leaves them decides."""
    view = RunView.of(load([CPU_QUICK]))
    rows = view.rows
    for path, nbytes in (("send_recv gloo x2", 4), ("all_gather gloo x2", 8)):
        (label,) = rows.index[rows["path"].eq(path) & rows["nbytes"].eq(nbytes)]
        wait = view.no_bandwidth[label]
        assert wait.larger and pd.notna(wait.small["on_ticks"]) and wait.growth.high < 2 and wait.share < 0.01
    # past 2x, the bytes' share by k times the bytes in at most h times the time, (h - 1) / (k - 1), under 1/15: the
    # ring's 4 B beside its 1 KiB (rounds 16.9-263 ms: 0.916x (0.188-4.47) at 256x), isend_irecv rank1->rank0's 1 KiB
    # beside its 16 MiB (at most 827x at 16,384x: a reading found its 0.012 GB/s unmarked); zeros' 1 MiB beside its
    # 64 MiB (at most 9.25x at 64x: 13%) stands
    for path, nbytes, share in (("send_recv ring gloo x2", 4, 0.0136), ("isend_irecv gloo x2 rank1->rank0", 1024, 0.0504),
                                ("create zeros on cpu", 2**20, None)):
        (label,) = rows.index[rows["path"].eq(path) & rows["nbytes"].eq(nbytes)]
        wait = view.no_bandwidth.get(label)
        assert (wait.share if wait else None) == (pytest.approx(share, abs=1e-4) if share else None)
    # a smaller size that waited too took less than its median: no far end bounds its growth (the module's 3.75 KiB
    # beside its 393 KiB, both rounds of 100 calls far past their fastest, 1.18x at most as if neither waited)
    (module,) = rows.index[rows["op"].eq("module_to") & rows["nbytes"].eq(3840)]
    assert pd.notna(rows.at[module, "on_ticks"]) and module not in view.no_bandwidth


def test_the_fit_table_quotes_no_gb_s_the_appendix_marks_as_no_bandwidth():
    """The quick run's gloo all_reduce and reduce_scatter keep only their smallest size (1 KiB and 16 MiB waited): its
    GB/s (0.00000748, 0.0000119) is no bandwidth (‡), so the α/β table's "largest size kept" cell says "–", and no
    algbw note explains a figure it does not give (a reading took 1.19e-5 GB/s for the path's large-message figure)."""
    from xferbench.analyze.report.model_text import fit_table

    view = RunView.of(load([CPU_QUICK]))
    rows = {row["path"]: row for row in fit_table(view)}
    for path, nbytes in (("all_reduce gloo x2", 4), ("reduce_scatter gloo x2", 8)):
        row = rows[path]
        assert row["largest_bytes"] == nbytes and math.isnan(row["largest_gbps"]) and "algbw" not in row["beta_basis"]
    assert rows["all_gather gloo x2"]["largest_gbps"] > 1 and "algbw" in rows["all_gather gloo x2"]["beta_basis"]


def test_a_busy_run_whose_rounds_show_no_tick_reads_its_waits_by_the_longest():
    """tests/data/cpu-threads-sample.json ran at load 11.6 on 2 CPUs, yet no two cases lay on one tick's multiples (its
    16 MiB copy_'s rounds lay on one, 20 ms: no evidence of a tick). Its waits are read by the longest tick (its 1 MiB
    copy_: 1.27 ms a round at fastest, 21.6 ms at the median, stated 4.86 GB/s before): the notice counts them and says
    how; with none read, it says none was, lest its silence read as "no round waited"."""
    from xferbench.analyze.report.story import _busy

    notice = _busy(RunView.of(load([THREADS])))
    assert notice is not None and notice.endswith(
        " Rounds that waited for the CPU: 6 cases whose median round stood past their fastest by at least 7.5 ms (3/4 of "
        "the longest scheduler tick, 10 ms) and by half that fastest round, or whose every round stood as far past a "
        "larger size's median (no tick was found: no two cases with rounds on two of its multiples); no β is fitted through "
        "them. None states a bandwidth; each took at most its median: a comparison keeps the end of its interval a wait "
        "leaves, or the order of interleaved rounds.")
    results = load([THREADS])  # none so far past: the notice says no wait was read, and that a median may hold one
    results.frame["waited_off_ticks"] = False
    assert (_busy(RunView.of(results)) or "").endswith(
        " No scheduler tick was found in its rounds (two cases or more with rounds on two of its multiples), and no "
        "median round stood 7.5 ms past its fastest: a median may still hold a wait.")
    assert "No scheduler tick" not in (_busy(RunView.of(load([CPU_QUICK]))) or "")


def test_a_bandwidth_figure_with_no_bandwidth_to_draw_says_so_in_its_place():
    """The loaded run's host copies, 4 B to 1 KiB, are all ‡ (their bytes set too little of their time): a reading
    found a chart of crosses alone under a caption of lines and fitted curves (its 1 and 64 MiB waited: not drawn). The
    chart gives way to one line, which says no more than the appendix's ‡ and – rows do; the quiet run's, with
    bandwidths to draw, stays a chart."""
    from xferbench.analyze.report.plots import bandwidth_of

    assert bandwidth_of(RunView.of(load([LOADED])), "host") == (
        "no size states a bandwidth in this run (the appendix says why of each size).")
    assert not isinstance(bandwidth_of(RunView.of(load([CPU])), "host"), str)

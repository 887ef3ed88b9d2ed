"""The simulated machine's spec and cost model, unit by unit (no benchmark runs, no wall clock).

tests/test_simulate.py runs whole pipelines on the simulated machine; these tests check the
parts those runs rest on directly, so that a wrong price, a spec accepted that should be
refused (or the reverse), or an error message that no longer names the key is caught in
milliseconds: a figure the simulated machine gives is only worth what its model is.
"""

import math
import re

import pytest

from xferbench.measure import simulate
from xferbench.measure.cases import Case
from xferbench.measure.simulate import (
    CLOCK,
    DRIFT_PERIOD_S,
    PATHS,
    TICK_S,
    Link,
    MachineSpec,
    PathCost,
    SimBackend,
    SimClock,
    SpecError,
    describe,
    load_spec,
    parse_spec,
    path_of,
)

#: Every path priced differently, so a case charged to the wrong path shows in its figure.
PRICES = {"h2d_pinned": (2.0, 50.0), "h2d_pageable": (6.0, 20.0), "d2h_pinned": (3.0, 45.0),
          "d2h_pageable": (8.0, 10.0), "d2d": (1.5, 1500.0), "peer": (3.5, 300.0)}


def spec_data(**top):
    """A valid spec as parsed TOML, with ``top`` keys added or replaced."""
    data = {"gpus": 2, "sync_us": 5.0, "dispatch_ns": 400, "launch_us": 4.0,
            "paths": {name: {"alpha_us": a, "GBps": g} for name, (a, g) in PRICES.items()}}
    return data | top


def refused(data) -> str:
    with pytest.raises(SpecError) as error:
        parse_spec(data)
    return str(error.value)


class TestSpec:
    def test_a_minimal_spec_takes_the_documented_defaults(self):
        spec = parse_spec(spec_data(), "spec.toml")
        assert (spec.gpus, spec.sync_us, spec.dispatch_ns, spec.launch_us) == (2, 5.0, 400.0, 4.0)
        assert (spec.name, spec.memory_gib, spec.noise, spec.seed, spec.drift) == ("simulated GPU", 80.0, 0.0, 0, 0.0)
        assert (spec.pin_GBps, spec.host_copy_GBps, spec.kernel_slowdown, spec.duplex, spec.shared_host_GBps,
                spec.numa_nodes, spec.remote_GBps) == (6.0, 10.0, 1.0, True, None, 1, None)
        assert (spec.decode_GBps, spec.unpin_GBps) == (2.0, 20.0)
        assert spec.source == "spec.toml" and parse_spec(spec_data()).source == ""
        assert spec.link == Link(None, None, None, None)
        assert spec.paths == {name: PathCost(a, g, 1.0) for name, (a, g) in PRICES.items()}
        assert list(spec.paths) == list(PATHS)

    def test_whole_numbers_given_for_figures_become_floats(self):
        """dispatch_ns = 400 in TOML is an int; the spec (and its JSON) holds 400.0."""
        spec = parse_spec(spec_data(sync_us=5, memory_gib=16))
        assert type(spec.dispatch_ns) is float and type(spec.sync_us) is float and type(spec.memory_gib) is float
        assert type(spec.gpus) is int and type(spec.paths["d2d"].alpha_us) is float

    def test_optional_keys_are_read(self):
        spec = parse_spec(spec_data(name="H100", memory_gib=94.0, noise=0.02, seed=7, drift=0.05,
                                    link={"pcie_gen": 5, "pcie_width": 16, "nvlink_version": 4, "nvlink_links": 18}))
        assert (spec.name, spec.memory_gib, spec.noise, spec.seed, spec.drift) == ("H100", 94.0, 0.02, 7, 0.05)
        assert spec.link == Link(pcie_gen=5, pcie_width=16, nvlink_version=4, nvlink_links=18)

    def test_the_scenario_keys_are_read(self):
        spec = parse_spec(spec_data(pin_GBps=3, host_copy_GBps=12.5, kernel_slowdown=1.5, duplex=False,
                                    shared_host_GBps=40, numa_nodes=2, remote_GBps=20))
        assert (spec.pin_GBps, spec.host_copy_GBps, spec.kernel_slowdown, spec.duplex, spec.shared_host_GBps,
                spec.numa_nodes, spec.remote_GBps) == (3.0, 12.5, 1.5, False, 40.0, 2, 20.0)
        assert type(spec.numa_nodes) is int and type(spec.pin_GBps) is float

    def test_limits_that_are_still_allowed(self):
        """Zero costs, one GPU, a jitter just below 1 and the smallest positive bandwidth are valid."""
        data = spec_data(gpus=1, sync_us=0, dispatch_ns=0, launch_us=0, noise=0.99, drift=0.99, pin_GBps=1e-9,
                         remote_GBps=1e-9, numa_nodes=1)
        data["paths"]["d2d"] = {"alpha_us": 0, "GBps": 1e-9, "slowdown": 1e-9}
        spec = parse_spec(data)
        assert spec.gpus == 1 and spec.noise == 0.99 and spec.drift == 0.99
        assert spec.paths["d2d"] == PathCost(0.0, 1e-9, 1e-9)

    @pytest.mark.parametrize(("change", "message"), [
        ({"gpus": 0}, "gpus must be at least 1, got 0"),
        ({"noise": 1.0}, "noise is a relative jitter below 1, got 1.0"),
        ({"drift": 1}, "drift is a relative wander below 1, got 1.0"),
        ({"colour": 3}, "unknown key colour; expected one of gpus, sync_us, dispatch_ns, launch_us, name, memory_gib, "
                        "noise, seed, drift, pin_GBps, host_copy_GBps, decode_GBps, unpin_GBps, kernel_slowdown, duplex, "
                        "shared_host_GBps, numa_nodes, remote_GBps, peer_duplex, shared_peer_GBps"),
        ({"duplex": 1}, "duplex must be true or false, got 1"),
        ({"duplex": "yes"}, "duplex must be true or false, got 'yes'"),
        ({"pin_GBps": 0}, "pin_GBps must be > 0, got 0.0"),
        ({"host_copy_GBps": 0}, "host_copy_GBps must be > 0, got 0.0"),
        ({"decode_GBps": 0}, "decode_GBps must be > 0, got 0.0"),
        ({"unpin_GBps": -1}, "unpin_GBps must be a finite number >= 0, got -1"),
        ({"kernel_slowdown": 0.0}, "kernel_slowdown must be > 0, got 0.0"),
        ({"shared_host_GBps": 0}, "shared_host_GBps must be > 0, got 0.0"),
        ({"numa_nodes": 0}, "numa_nodes must be > 0, got 0"),
        ({"remote_GBps": 0}, "remote_GBps must be > 0, got 0.0"),
        ({"numa_nodes": 1.5}, "numa_nodes must be a whole number, got 1.5"),
        ({"gpus": 1.5}, "gpus must be a whole number, got 1.5"),
        ({"seed": 2.0}, "seed must be a whole number, got 2.0"),
        ({"gpus": True}, "gpus must be a number, got True"),
        ({"sync_us": "5"}, "sync_us must be a number, got '5'"),
        ({"sync_us": -5}, "sync_us must be a finite number >= 0, got -5"),
        ({"launch_us": math.inf}, "launch_us must be a finite number >= 0, got inf"),
        ({"dispatch_ns": math.nan}, "dispatch_ns must be a finite number >= 0, got nan"),
        ({"name": ""}, "name must be a non-empty string, got ''"),
        ({"name": 3}, "name must be a non-empty string, got 3"),
        ({"paths": 3}, "missing table [paths] (h2d_pinned, h2d_pageable, d2h_pinned, d2h_pageable, d2d, peer)"),
        ({"link": 5}, "link must be a table"),
        ({"link": {"pcie": 5}}, "unknown key link.pcie; expected one of pcie_gen, pcie_width, nvlink_version, "
                                "nvlink_links"),
        ({"link": {"pcie_gen": 4.5}}, "link.pcie_gen must be a whole number, got 4.5"),
    ])
    def test_a_bad_top_level_key_is_named(self, change, message):
        assert refused(spec_data(**change)) == message

    @pytest.mark.parametrize("key", ["gpus", "sync_us", "dispatch_ns", "launch_us"])
    def test_every_required_key_is_required(self, key):
        data = spec_data()
        del data[key]
        assert refused(data) == f"missing key {key}"

    def test_missing_paths_table(self):
        data = spec_data()
        del data["paths"]
        assert refused(data) == "missing table [paths] (h2d_pinned, h2d_pageable, d2h_pinned, d2h_pageable, d2d, peer)"

    @pytest.mark.parametrize(("path", "value", "message"), [
        ("d2d", 3, "paths.d2d must be a table like { alpha_us = 2.0, GBps = 55 }"),
        ("d2d", {"alpha_us": 1}, "missing key paths.d2d.GBps"),
        ("peer", {"GBps": 1}, "missing key paths.peer.alpha_us"),
        ("d2d", {"alpha_us": 1, "GBps": 0}, "paths.d2d.GBps must be > 0, got 0.0"),
        ("d2d", {"alpha_us": 1, "GBps": 2, "slowdown": 0}, "paths.d2d.slowdown must be > 0, got 0.0"),
        ("h2d_pinned", {"alpha": 1, "GBps": 2}, "unknown key paths.h2d_pinned.alpha; expected one of alpha_us, GBps, "
                                                "slowdown"),
        ("h2d_pinned", {"alpha_us": -1, "GBps": 2}, "paths.h2d_pinned.alpha_us must be a finite number >= 0, got -1"),
    ])
    def test_a_bad_path_is_named(self, path, value, message):
        data = spec_data()
        data["paths"][path] = value
        assert refused(data) == message

    def test_unknown_and_missing_paths(self):
        data = spec_data()
        data["paths"]["d2x"] = data["paths"].pop("d2d")
        assert refused(data) == ("unknown key paths.d2x; expected one of h2d_pinned, h2d_pageable, d2h_pinned, "
                                 "d2h_pageable, d2d, peer")
        del data["paths"]["d2x"]
        assert refused(data) == "missing key paths.d2d"

    def test_as_json_is_the_whole_spec(self):
        spec = parse_spec(spec_data(link={"pcie_gen": 4}), "s.toml")
        data = spec.as_json()
        assert data["paths"]["peer"] == {"alpha_us": 3.5, "GBps": 300.0, "slowdown": 1.0}
        assert data["link"] == {"pcie_gen": 4, "pcie_width": None, "nvlink_version": None, "nvlink_links": None}
        assert data["gpus"] == 2 and data["source"] == "s.toml" and data["name"] == "simulated GPU"
        assert list(data) == ["gpus", "sync_us", "dispatch_ns", "launch_us", "paths", "link", "name", "memory_gib",
                              "noise", "seed", "drift", "pin_GBps", "host_copy_GBps", "decode_GBps", "unpin_GBps",
                              "kernel_slowdown", "duplex",
                              "shared_host_GBps", "numa_nodes", "remote_GBps", "peer_duplex", "shared_peer_GBps",
                              "source"]  # what machine_info records, nothing else


class TestLoadSpec:
    def test_reads_toml_and_records_where_from(self, tmp_path):
        path = tmp_path / "spec.toml"
        path.write_text("gpus = 1\nsync_us = 5\ndispatch_ns = 1\nlaunch_us = 1\n[paths]\n"
                        + "".join(f"{p} = {{ alpha_us = 1, GBps = 10 }}\n" for p in PATHS))
        spec = load_spec(path)
        assert spec.gpus == 1 and spec.source == str(path)
        assert load_spec(str(path)) == spec

    def test_missing_file_names_the_reason(self, tmp_path):
        with pytest.raises(SpecError, match=r"^cannot read it: No such file or directory$"):
            load_spec(tmp_path / "nowhere.toml")

    def test_not_utf8(self, tmp_path):
        path = tmp_path / "spec.toml"
        path.write_bytes(b"gpus = \xff\n")
        with pytest.raises(SpecError, match=r"^cannot read it: 'utf-8' codec can't decode byte 0xff"):
            load_spec(path)

    def test_not_toml(self, tmp_path):
        path = tmp_path / "spec.toml"
        path.write_text("gpus = [\n")
        with pytest.raises(SpecError, match=r"^not TOML: "):
            load_spec(path)

    def test_a_valid_toml_that_is_a_bad_spec(self, tmp_path):
        path = tmp_path / "spec.toml"
        path.write_text("gpus = 1\n")
        with pytest.raises(SpecError, match=r"^missing key sync_us$"):
            load_spec(path)


def test_path_cost_is_alpha_plus_bytes_over_bandwidth_times_slowdown():
    assert PathCost(2.0, 10.0).seconds(1_000_000) == pytest.approx(2e-6 + 1e-4, rel=1e-12)
    assert PathCost(2.0, 10.0, 1.5).seconds(1_000_000) == pytest.approx(1.5 * (2e-6 + 1e-4), rel=1e-12)
    assert PathCost(0.0, 1.0).seconds(0) == 0.0
    assert PathCost(0.0, 1.0).seconds(10**9) == 1.0  # 1 GB at 1 GB/s: exactly one second (GB, not GiB)


def test_a_capped_path_keeps_its_fixed_cost_and_slowdown():
    """A shared or remote link caps a path's bandwidth; a cap above it, or none, leaves it as it is."""
    cost = PathCost(2.0, 50.0, 1.5)
    assert cost.capped(None) is cost and cost.capped(50.0) is cost and cost.capped(80.0) is cost
    assert cost.capped(20.0) == PathCost(2.0, 20.0, 1.5)


def test_describe_marks_the_fingerprint_and_replaces_every_link_figure():
    spec = parse_spec(spec_data(link={"pcie_gen": 4, "pcie_width": 8, "nvlink_version": 3, "nvlink_links": 12}))
    fingerprint = {"driver": "550.54", "nvml": True, "devices": [
        {"name": "real", "pcie_generation": 5, "pcie_width": 16, "pcie_max_generation": 5, "pcie_max_width": 16,
         "nvlink_version": None, "nvlink_links": None, "memory_peak_gbps": 3350.0}] * 2}
    describe(spec, fingerprint)
    assert fingerprint["simulated"] == spec.as_json()
    assert fingerprint["driver"] is None and fingerprint["nvml"] is False
    for device in fingerprint["devices"]:
        assert device == {"name": "real", "pcie_generation": 4, "pcie_width": 8, "pcie_max_generation": 4,
                          "pcie_max_width": 8, "nvlink_version": 3, "nvlink_links": 12, "memory_peak_gbps": None}
    bare: dict = {}
    describe(spec, bare)  # a fingerprint without devices is marked all the same
    assert bare["simulated"] == spec.as_json()


class TestClock:
    def test_real_time_until_a_simulated_case_is_timed(self, monkeypatch):
        clock = SimClock()
        monkeypatch.setattr(simulate.time, "perf_counter", lambda: 123.5)
        assert clock() == 123.5 and clock.now == 0.0

    def test_each_reading_moves_one_tick(self):
        """pytest-benchmark reads its timer until it moves: a simulated clock must tick."""
        clock = SimClock()
        clock.simulating, clock.now = True, 1.0
        assert clock() == 1.0 + TICK_S
        assert clock() == 1.0 + TICK_S + TICK_S
        assert TICK_S == 1e-9

    def test_a_new_clock_is_real_and_at_zero(self):
        clock = SimClock()
        assert clock.now == 0.0 and clock.simulating is False

    def test_reset(self):
        clock = SimClock()
        clock.simulating, clock.now = True, 3.0
        clock.reset()
        assert (clock.now, clock.simulating) == (0.0, False)

    def test_the_json_names_the_simulated_timer(self):
        """pytest-benchmark writes its timer as module.name: a reader sees the clock was simulated."""
        assert f"{CLOCK.__module__}.{CLOCK.__name__}" == "xferbench.measure.simulate.CLOCK (simulated)"


H2D = dict(op="h2d", method="copy_", src="cpu", dst="cuda:0")
D2H = dict(op="d2h", method="copy_", src="cuda:1", dst="cpu")


class TestPaths:
    @pytest.mark.parametrize(("case", "path"), [
        (Case(**H2D, shape=(4,), host_memory="pinned"), "h2d_pinned"),
        (Case(**H2D, shape=(4,), host_memory="pageable"), "h2d_pageable"),
        (Case(**H2D, shape=(4,)), "h2d_pageable"),
        (Case(**D2H, shape=(4,), host_memory="pinned"), "d2h_pinned"),
        (Case(**D2H, shape=(4,)), "d2h_pageable"),
        (Case("d2d", "clone", "cuda:0", "cuda:0", (4,)), "d2d"),
        (Case("peer", "to", "cuda:0", "cuda:1", (4,)), "peer"),
        (Case("create", "zeros", "cuda:0", "cuda:0", (4,)), None),
        (Case("noop", "cuda", "cuda:0", "cuda:0", (4,)), None),
        (Case("host", "clone", "cpu", "cpu", (4,)), None),
    ])
    def test_path_of(self, case, path):
        assert path_of(case) == path


def backend(gpus=2, **top) -> SimBackend:
    return SimBackend(parse_spec(spec_data(gpus=gpus, **top)))


def nbytes(n):
    return (n // 4,)  # float32 elements for n bytes


class TestPlan:
    """What one call costs: (host seconds, device, device seconds, whether the host waits)."""

    @pytest.mark.parametrize(("host_memory", "non_blocking", "waits"), [
        ("pinned", True, False), ("pinned", False, True), ("pageable", True, True), ("pageable", False, True),
        (None, True, True)])
    def test_copies_to_and_from_the_host(self, host_memory, non_blocking, waits):
        """Only a non_blocking copy with pinned memory returns before the copy is done."""
        sim = backend()
        path = f"h2d_{host_memory or 'pageable'}"
        case = Case(**H2D, shape=nbytes(4096), host_memory=host_memory, non_blocking=non_blocking)
        assert sim.plan(case) == (4e-6, 0, sim.spec.paths[path].seconds(4096), waits)
        back = Case(**D2H, shape=nbytes(4096), host_memory=host_memory, non_blocking=non_blocking)
        path = f"d2h_{host_memory or 'pageable'}"
        assert sim.plan(back) == (4e-6, 1, sim.spec.paths[path].seconds(4096), waits)

    def test_device_copies_run_on_the_source_stream_without_waiting(self):
        sim = backend()
        assert sim.plan(Case("peer", "to", "cuda:1", "cuda:0", nbytes(1024))) == (
            4e-6, 1, sim.spec.paths["peer"].seconds(1024), False)
        assert sim.plan(Case("d2d", "clone", "cuda:1", "cuda:1", nbytes(1024))) == (
            4e-6, 1, sim.spec.paths["d2d"].seconds(1024), False)

    def test_a_noop_and_an_empty_tensor_cost_a_dispatch_only(self):
        sim = backend()
        assert sim.plan(Case("noop", "cuda", "cuda:1", "cuda:1", (4,))) == pytest.approx((400e-9, None, 0.0, False))
        assert sim.plan(Case("create", "empty", "cuda:1", "cuda:1", nbytes(1 << 20))) == pytest.approx(
            (400e-9, None, 0.0, False))

    def test_a_fill_is_priced_as_a_same_device_write(self):
        sim = backend()
        assert sim.plan(Case("create", "zeros", "cuda:1", "cuda:1", nbytes(1 << 20))) == (
            4e-6, 1, sim.spec.paths["d2d"].seconds(1 << 20), False)

    @pytest.mark.parametrize("case", [Case("create", "zeros", "cpu", "cpu", (4,)),
                                      Case("host", "clone", "cpu", "cpu", (4,))])
    def test_what_has_no_price_is_refused(self, case):
        with pytest.raises(ValueError, match=f"^the simulated machine has no cost for {case.op} {case.method}$"):
            backend().plan(case)


class TestIssue:
    def test_queued_work_overlaps_the_host_and_a_synchronize_waits_for_it(self):
        sim = backend()
        sim.issue(1e-6, 0, 10e-6, False)
        assert sim.clock.now == 1e-6 and sim.busy_until == pytest.approx([11e-6, 0.0])
        assert sim.device_work == [10e-6, 0.0]
        sim.issue(1e-6, 0, 10e-6, False)  # queued behind the first
        assert sim.clock.now == 2e-6 and sim.busy_until[0] == pytest.approx(21e-6)
        assert sim.device_work[0] == pytest.approx(20e-6)
        sim.synchronize(0)
        assert sim.clock.now == pytest.approx(21e-6 + 5e-6)

    def test_a_waiting_call_returns_when_its_work_is_done(self):
        sim = backend()
        sim.issue(1e-6, 1, 10e-6, True)
        assert sim.clock.now == pytest.approx(11e-6) and sim.busy_until == [0.0, pytest.approx(11e-6)]

    def test_work_on_an_idle_stream_starts_now(self):
        sim = backend()
        sim.clock.now = 50e-6
        sim.issue(0.0, 0, 10e-6, False)
        assert sim.busy_until[0] == pytest.approx(60e-6)

    def test_no_device_means_host_time_only(self):
        sim = backend()
        sim.issue(3e-6, None, 10e-6, True)
        assert sim.clock.now == 3e-6 and sim.busy_until == [0.0, 0.0] and sim.device_work == [0.0, 0.0]

    def test_synchronize_of_a_device_done_long_ago_costs_sync_us(self):
        sim = backend()
        sim.issue(0.0, 1, 1e-6, False)
        sim.clock.now = 100e-6
        sim.synchronize(1)
        assert sim.clock.now == pytest.approx(105e-6)

    def test_a_call_issued_as_planned(self):
        sim = backend()
        case = Case(**H2D, shape=nbytes(1 << 20), host_memory="pinned", non_blocking=True)
        sim.issue(*sim.plan(case))
        cost = sim.spec.paths["h2d_pinned"].seconds(1 << 20)
        assert sim.clock.now == 4e-6 and sim.busy_until[0] == pytest.approx(4e-6 + cost)
        assert sim.device_work[0] == pytest.approx(cost)

    def test_a_new_backend_starts_its_clock_at_zero(self):
        clock = SimClock()
        clock.now, clock.simulating = 9.0, True
        sim = SimBackend(parse_spec(spec_data(gpus=3)), clock)
        assert sim.clock is clock and (clock.now, clock.simulating) == (0.0, False)
        assert sim.busy_until == [0.0] * 3 and sim.device_work == [0.0] * 3


class TestSideStreams:
    """A concurrent family's copy engines: side streams of a device run beside its default stream."""

    def test_a_side_stream_runs_beside_the_default_one(self):
        sim = backend()
        sim.issue(0.0, 0, 10e-6, False)
        sim.issue(0.0, 0, 4e-6, False, stream="d2h")  # starts now, not after the default stream's work
        assert sim.side_streams == {(0, "d2h"): pytest.approx(4e-6)} and sim.busy_until[0] == pytest.approx(10e-6)
        sim.issue(0.0, 0, 4e-6, False, stream="d2h")  # queued behind the first on its own stream
        assert sim.side_streams[(0, "d2h")] == pytest.approx(8e-6)
        assert sim.device_work[0] == pytest.approx(18e-6)

    def test_a_waiting_call_on_a_side_stream_returns_when_it_is_done(self):
        sim = backend()
        sim.issue(1e-6, 1, 3e-6, True, stream="h2d")
        assert sim.clock.now == pytest.approx(4e-6) and sim.busy_until == [0.0, 0.0]

    def test_synchronize_waits_for_the_devices_side_streams_only(self):
        sim = backend()
        sim.issue(0.0, 0, 20e-6, False, stream="h2d")
        sim.issue(0.0, 1, 90e-6, False, stream="h2d")
        sim.synchronize(0)
        assert sim.clock.now == pytest.approx(20e-6 + 5e-6)  # not device 1's 90 us

    def test_simulating_runs_the_simulated_clock_inside_only(self):
        sim = backend()
        with sim.simulating():
            assert sim.clock.simulating is True
        assert sim.clock.simulating is False
        with pytest.raises(RuntimeError), sim.simulating():
            raise RuntimeError("a scenario failed")
        assert sim.clock.simulating is False


class FixedDraw:
    """A random source whose every Gaussian draw is ``value``; records how it was asked."""

    def __init__(self, value):
        self.value, self.asked = value, []

    def gauss(self, mu, sigma):
        self.asked.append((mu, sigma))
        return self.value


class TestVariation:
    def test_exact_without_noise_and_drift(self):
        sim = backend()
        assert sim._factor() == 1.0
        sim.issue(2e-6, 0, 3e-6, True)
        assert sim.clock.now == pytest.approx(5e-6)

    def test_noise_scales_host_and_device_time_by_a_standard_normal_draw(self):
        sim = backend(noise=0.1)
        sim._rng = FixedDraw(2.0)
        sim.issue(10e-6, 0, 10e-6, True)
        assert sim.clock.now == pytest.approx(12e-6 + 12e-6)
        assert sim.device_work[0] == pytest.approx(12e-6)
        assert sim._rng.asked == [(0.0, 1.0), (0.0, 1.0)]

    def test_a_cost_never_drops_below_a_tenth_of_itself(self):
        sim = backend(noise=0.9)
        sim._rng = FixedDraw(-5.0)
        assert sim._factor() == 0.1
        sim._rng = FixedDraw(-0.5)
        assert sim._factor() == pytest.approx(0.55)

    def test_drift_wanders_with_the_simulated_clock(self):
        """Drift is a sine of period DRIFT_PERIOD_S: +drift a quarter in, -drift three quarters in."""
        sim = backend(drift=0.2)
        assert DRIFT_PERIOD_S == 60.0
        sim.clock.now = DRIFT_PERIOD_S / 4
        assert sim._factor() == pytest.approx(1.2)
        sim.clock.now = 3 * DRIFT_PERIOD_S / 4
        assert sim._factor() == pytest.approx(0.8)
        sim.clock.now = DRIFT_PERIOD_S / 12  # sin = 1/2
        assert sim._factor() == pytest.approx(1.1)
        sim.clock.now = 3 * DRIFT_PERIOD_S / 4
        start = sim.clock.now
        sim._host(10e-6)
        assert sim.clock.now - start == pytest.approx(8e-6)

    def test_drift_and_noise_multiply(self):
        sim = backend(drift=0.2, noise=0.1)
        sim._rng = FixedDraw(1.0)
        sim.clock.now = DRIFT_PERIOD_S / 4
        assert sim._factor() == pytest.approx(1.2 * 1.1)

    def test_the_seed_decides_the_draws(self):
        def draws(seed):
            sim = backend(noise=0.05, seed=seed)
            return [sim._factor() for _ in range(5)]

        assert draws(3) == draws(3) != draws(4)
        assert len(set(draws(3))) == 5


class TestDeviceBackend:
    def test_what_the_suite_asks_of_a_device(self):
        sim = backend(gpus=3, name="H100", memory_gib=1.5)
        assert sim.device_count() == 3
        assert sim.device_name(2) == "H100 (simulated)"
        assert sim.memory_info(0) == (int(1.5 * 2**30), int(1.5 * 2**30))
        assert sim.can_access_peer(0, 1) and sim.can_access_peer(2, 0) and not sim.can_access_peer(1, 1)
        assert sim.empty_cache() is None
        assert sim.tensor_device("cuda:2") == "cpu"
        payload = object()
        assert sim.pin_memory(payload) is payload
        assert (sim.type, sim.simulated) == ("cuda", True)

    def test_event_seconds_read_the_device_work_per_call_in_three_windows(self):
        sim = backend()
        calls = []

        def fn():
            calls.append(1)
            sim.issue(1e-6, 1, 2e-6 * len(calls), False)  # each call costs more than the last

        times = sim.event_seconds(fn, 1, 4)
        assert len(calls) == 12
        assert times == pytest.approx([2e-6 * 2.5, 2e-6 * 6.5, 2e-6 * 10.5])
        assert sim.event_seconds(fn, 0, 2) == [0.0, 0.0, 0.0]  # work on another device is not this one's

    def test_timed_charges_the_clock_while_simulating(self):
        sim = backend()
        case = Case(**H2D, shape=nbytes(1 << 20), host_memory="pinned", non_blocking=True)
        ran = []
        with sim.timed(case, lambda: ran.append(1)) as call:
            assert sim.clock.simulating
            assert call() is None
        assert not sim.clock.simulating
        assert ran == []  # the data moves in the verification call, not in the timed one
        assert sim.clock.now == pytest.approx(4e-6) and sim.device_work[0] == pytest.approx(
            sim.spec.paths["h2d_pinned"].seconds(1 << 20))

    def test_timed_stops_simulating_when_the_timed_code_fails(self):
        sim = backend()
        with pytest.raises(RuntimeError), sim.timed(Case("d2d", "clone", "cuda:0", "cuda:0", (4,)), lambda: None):
            raise RuntimeError("boom")
        assert not sim.clock.simulating

    def test_a_host_only_case_runs_for_real_on_the_real_clock(self):
        sim = backend()

        def op():
            return "ran"

        with sim.timed(Case("host", "clone", "cpu", "cpu", (4,)), op) as call:
            assert call is op and not sim.clock.simulating

    def test_a_sync_case_times_the_backends_own_synchronize(self):
        sim = backend()
        sim.issue(0.0, 0, 7e-6, False)

        def op():
            sim.synchronize(0)

        with sim.timed(Case("sync", "synchronize", "cuda:0", "cuda:0", (1,)), op) as call:
            assert call is op and sim.clock.simulating
            call()
        assert sim.clock.now == pytest.approx(12e-6)


def test_error_messages_are_single_lines():
    """A spec error is printed as one usage line: no message may span lines."""
    for change in ({"gpus": 0}, {"colour": 1}, {"paths": 3}, {"link": 5}):
        assert "\n" not in refused(spec_data(**change))
    assert re.fullmatch(r"[^\n]+", refused(spec_data(noise=2.0)))
    assert isinstance(parse_spec(spec_data()), MachineSpec)


BOUNDED_SPEC = {"gpus": 2, "sync_us": 5.0, "dispatch_ns": 400.0, "launch_us": 4.0,
                "paths": {name: {"alpha_us": 2.0, "GBps": 50.0}
                          for name in ("h2d_pinned", "h2d_pageable", "d2h_pinned", "d2h_pageable", "d2d", "peer")}}


@pytest.mark.hostile
class TestSimulatedSpecBounds:
    @pytest.mark.parametrize(("change", "message"), [
        ({"gpus": 10**9}, "gpus must be at most 64"),
        ({"launch_us": 1e308}, "launch_us must be at most"),
        ({"sync_us": 1e7}, "sync_us must be at most"),
        ({"dispatch_ns": 1e300}, "dispatch_ns must be at most"),
        ({"paths": {**BOUNDED_SPEC["paths"], "peer": {"alpha_us": 1e300, "GBps": 50.0}}}, "paths.peer.alpha_us must be at most"),
    ])
    def test_a_typo_sized_spec_is_refused_before_planning(self, change, message):
        """gpus = 1000000000 used to exhaust the host's memory while the case matrix was planned (killed,
        not refused); a launch of 1e308 us overflows the simulated clock."""
        from xferbench.measure.simulate import SpecError, parse_spec

        with pytest.raises(SpecError, match=message):
            parse_spec(BOUNDED_SPEC | change)

    def test_the_largest_allowed_spec_loads(self):
        from xferbench.measure.simulate import parse_spec

        spec = parse_spec(BOUNDED_SPEC | {"gpus": 64, "launch_us": 1e6, "dispatch_ns": 1e9})
        assert spec.gpus == 64


def test_every_ordered_pair_has_the_one_simulated_link_class():
    assert backend(3).peer_link_classes(["cuda:0", "cuda:1", "cuda:2"]) == {
        (s, d): "peer (one simulated price)" for s in ("cuda:0", "cuda:1", "cuda:2")
        for d in ("cuda:0", "cuda:1", "cuda:2") if s != d}


def test_waiting_for_a_device_synchronizes_it_and_never_sticks():
    sim = backend()
    sim.issue(0.0, 0, 1e-3, False)
    assert sim.wait(0, 10.0) is True and sim.clock.now == pytest.approx(1e-3 + 5e-6)


class TestSpecFile:
    def test_a_fifo_is_refused_without_blocking(self, tmp_path):
        import os

        os.mkfifo(tmp_path / "spec.toml")
        with pytest.raises(SpecError) as error:
            load_spec(tmp_path / "spec.toml")
        assert str(error.value) == "not a regular file (a FIFO, device or socket); give a TOML file"

    def test_a_spec_of_the_largest_size_is_read_one_byte_more_is_refused(self, tmp_path):
        path = tmp_path / "spec.toml"
        path.write_text("gpus = 1\n" + "#" * ((1 << 20) - len("gpus = 1\n")))
        with pytest.raises(SpecError, match=r"^missing key sync_us$"):  # read whole, then judged as a spec
            load_spec(path)
        path.write_text("gpus = 1\n" + "#" * ((1 << 20) + 1 - len("gpus = 1\n")))
        with pytest.raises(SpecError) as error:
            load_spec(path)
        assert str(error.value) == "larger than 1 MiB; a machine spec is a few lines"

    def test_a_spec_nested_too_deeply_is_one_line(self, tmp_path):
        path = tmp_path / "spec.toml"
        path.write_text("gpus = " + "[" * 100_000 + "]" * 100_000 + "\n")
        with pytest.raises(SpecError) as error:
            load_spec(path)
        assert str(error.value) == "not a machine spec: nested too deeply"

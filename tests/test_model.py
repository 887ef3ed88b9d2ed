from pathlib import Path

import numpy as np
import pytest

from handfed import SIZES as HANDFED_SIZES
from handfed import bench, gpu_machine, sweep, write
from xferbench.analyze.model import BETA_CAP_TOLERANCE, fit_alpha_beta, fit_paths, link_peak, roofs
from xferbench.analyze.results import load

SIZES = np.array([4.0**k for k in range(1, 16)])  # 4 B .. 1 GiB


class TestFit:
    @pytest.mark.parametrize(("alpha", "beta"), [(8e-6, 25.0), (2e-6, 1500.0), (30e-6, 6.0), (1e-6, 55.0)])
    def test_recovers_known_values(self, alpha, beta):
        """Exact timings from t = alpha + n/beta give back alpha and beta within 2%."""
        fit = fit_alpha_beta(SIZES, alpha + SIZES / (beta * 1e9))
        assert fit.alpha_s == pytest.approx(alpha, rel=0.02)
        assert fit.beta_gbps == pytest.approx(beta, rel=0.02)

    def test_recovers_through_noise_and_an_outlier(self):
        """1% multiplicative noise and one wild point still give alpha and beta within 2%."""
        rng = np.random.default_rng(7)
        t = (5e-6 + SIZES / 50e9) * rng.lognormal(0, 0.01, len(SIZES))
        t[7] *= 4  # one round hit by a page fault storm
        fit = fit_alpha_beta(SIZES, t)
        assert fit.alpha_s == pytest.approx(5e-6, rel=0.02)
        assert fit.beta_gbps == pytest.approx(50.0, rel=0.02)

    def test_half_peak_is_alpha_times_beta(self):
        fit = fit_alpha_beta(SIZES, 10e-6 + SIZES / 20e9)
        assert fit.half_peak_bytes == pytest.approx(10e-6 * 20e9, rel=0.02)
        n = fit.half_peak_bytes
        assert n / fit.seconds(n) / 1e9 == pytest.approx(fit.beta_gbps / 2)

    def test_needs_three_sizes(self):
        """Two sizes cannot separate latency from bandwidth robustly."""
        assert fit_alpha_beta(np.array([4.0, 1024.0]), np.array([1e-6, 2e-6])) is None


def machine(**device):
    return {"xferbench": {"devices": [{"device": "cuda:0", **device}]}}


class TestLinkPeak:
    def test_pcie_from_max_generation(self):
        """The maximum link is used: an idle GPU reports a lower current generation."""
        info = machine(pcie_generation=1, pcie_width=16, pcie_max_generation=5, pcie_max_width=16)
        peak, name = link_peak(info, "h2d", "cpu", "cuda:0")
        assert peak == pytest.approx(63.0, rel=0.001)
        assert name == "PCIe Gen5 x16"
        assert link_peak(machine(pcie_max_generation=4, pcie_max_width=16), "d2h", "cuda:0", "cpu")[0] == \
            pytest.approx(31.5, rel=0.001)

    def test_nvlink(self):
        peak, _ = link_peak(machine(nvlink_links=18, nvlink_version="4.0"), "peer", "cuda:0", "cuda:1")
        assert peak == 450.0

    @pytest.mark.parametrize("op", ["h2d", "peer", "d2d", "host"])
    def test_unknown_is_none(self, op):
        """Without NVML facts the link is unknown, never guessed."""
        assert link_peak(machine(pcie_generation=None), op, "cpu" if op == "h2d" else "cuda:0", "cuda:0") is None


# --- cache-aware fits (tests/data/cpu-host-sweep.json is a real CPU run that leaves the caches) ---


SWEEP = Path(__file__).parent / "data" / "cpu-host-sweep.json"
MiB = 2**20


def _fits(results, machine_info=None):
    fits = fit_paths(results.frame, results.machine_info if machine_info is None else machine_info)
    return fits.set_index("path")


class TestCacheAwareFit:
    def test_real_sweep_without_cache_sizes_is_capped_at_the_largest_size(self):
        """The real run's fit over all sizes says ~60 GB/s; 256 MiB measured 14 (copy_) and 1.3 (clone): β says that."""
        fits = _fits(load([SWEEP]))
        for path, largest in (("host pageable copy_ cpu", 13.997), ("host pageable clone cpu", 1.2618)):
            assert fits.loc[path, "stated_gbps"] == pytest.approx(largest, rel=1e-3)
            assert fits.loc[path, "beta_gbps"] > 50  # the model's extrapolation, kept but never stated
            assert fits.loc[path, "beta_basis"].startswith("capped at the largest size measured (fit over all sizes gave")

    @pytest.mark.parametrize("sample", ["cpu-host-sweep.json", "cpu-sample.json"])
    def test_beta_never_above_what_the_largest_size_measured(self, sample):
        fits = fit_paths(load([SWEEP.parent / sample]).frame)
        stated = fits[fits["stated_gbps"].notna()]
        assert (stated["stated_gbps"] <= BETA_CAP_TOLERANCE * stated["largest_gbps"] + 1e-12).all()

    def test_host_cache_sizes_mark_the_resident_sizes(self):
        """With a 32 MiB L3 recorded, sizes up to 64 MiB are cache-resident; β is what 256 MiB measured."""
        results = load([SWEEP])
        machine = {**results.machine_info, "xferbench": {**results.machine_info["xferbench"],
                                                          "host": {"cache_bytes": {"L1d": 49152, "L2": MiB,
                                                                                   "L3": 32 * MiB}}}}
        fits = _fits(results, machine)
        row = fits.loc["host pageable copy_ cpu"]
        assert row["resident_sizes"] == 7 and row["cache_bytes"] == 32 * MiB
        assert row["stated_gbps"] == pytest.approx(13.997, rel=1e-3)
        assert row["beta_basis"].startswith("measured at the largest size beyond the cache")

    def test_l2_resident_same_device_copies_are_left_out_of_beta(self, tmp_path):
        """Same-device copies up to 2 x L2 run 3x faster than memory; β comes from the sizes beyond only."""
        l2 = 50 * 10**6
        sizes = [4**k for k in range(1, 17)]  # 4 B .. 4 GiB
        benchmarks = [bench("d2d", "copy_", "cuda:0", "cuda:0", n,
                            4e-6 + n / ((3 if n <= 2 * l2 else 1) * 1500e9)) for n in sizes]
        results = load([write(tmp_path / "r.json", benchmarks, gpu_machine(l2_cache_bytes=l2))])
        row = _fits(results).loc["d2d copy_ cuda:0"]
        assert row["resident_sizes"] == sum(n <= 2 * l2 for n in sizes)
        assert row["beta_basis"] == "fit beyond the cache"
        assert row["beta_gbps"] == pytest.approx(1500, rel=0.02) and row["stated_gbps"] == row["beta_gbps"]

    def test_recorded_cache_resident_flag_wins(self, tmp_path):
        """A benchmark that says it ran from cache is never used for β, whatever the fingerprint says."""
        benchmarks = [b | {"extra_info": b["extra_info"] | {"cache_resident": True}}
                      for b in sweep("host", "copy_", "cpu", "cpu", 1e-6, 20.0, host_memory="pageable")]
        fits = _fits(load([write(tmp_path / "r.json", benchmarks, gpu_machine())]))
        assert fits.loc["host pageable copy_ cpu", "beta_basis"] == "every size fits in cache"
        assert np.isnan(fits.loc["host pageable copy_ cpu", "stated_gbps"])

    def test_a_clean_sweep_keeps_its_fit(self, tmp_path):
        """Nothing resident and no cap needed: β is the fit over all sizes."""
        benchmarks = sweep("h2d", "to", "cpu", "cuda:0", 8e-6, 25.0, host_memory="pinned")
        row = _fits(load([write(tmp_path / "r.json", benchmarks, gpu_machine())])).loc["h2d pinned to cpu->cuda:0"]
        assert row["beta_basis"] == "fit over all sizes"
        assert row["stated_gbps"] == pytest.approx(25.0, rel=0.02)
        assert len(HANDFED_SIZES) == row["sizes"]


class TestRoofs:
    def test_pageable_moves_are_bounded_by_the_host_copy_measured_in_the_run(self, tmp_path):
        benchmarks = (sweep("h2d", "to", "cpu", "cuda:0", 8e-6, 12.0, host_memory="pageable")
                      + sweep("host", "copy_", "cpu", "cpu", 1e-6, 9.0, host_memory="pageable"))
        results = load([write(tmp_path / "r.json", benchmarks, gpu_machine())])
        bounds = roofs(results.frame, results.machine_info, "h2d", "cpu", "cuda:0", "pageable")
        assert [name for _, name in bounds] == ["PCIe Gen4 x16", "host memory copy (copy_, 268,435,456 B, this run)"]
        assert bounds[1][0] == pytest.approx(268435456 / (1e-6 + 268435456 / 9e9) / 1e9)
        assert [name for _, name in roofs(results.frame, results.machine_info, "h2d", "cpu", "cuda:0", "pinned")] == \
            ["PCIe Gen4 x16"]

    def test_a_simulated_machine_has_no_host_ceiling(self, tmp_path):
        """Simulated device paths and a host copy measured on the real CPU are not bounds of each other."""
        benchmarks = (sweep("h2d", "to", "cpu", "cuda:0", 8e-6, 12.0, host_memory="pageable")
                      + sweep("host", "copy_", "cpu", "cpu", 1e-6, 1.5, host_memory="pageable"))
        machine = gpu_machine()
        machine["xferbench"]["simulated"] = {"name": "spec"}
        results = load([write(tmp_path / "r.json", benchmarks, machine)])
        assert [name for _, name in roofs(results.frame, results.machine_info, "h2d", "cpu", "cuda:0", "pageable")] \
            == ["PCIe Gen4 x16"]

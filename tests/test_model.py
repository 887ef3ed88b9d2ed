import numpy as np
import pytest

from xferbench.analyze.model import fit_alpha_beta, link_peak

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

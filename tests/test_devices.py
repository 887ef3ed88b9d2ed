import pytest
import torch

from xferbench import try_all_gpus, try_gpu
from xferbench.measure.devices import TorchBackend, accelerator_index, available_devices, parse_device, parse_device_list

from fakes import FakeBackend


class TestParseDevice:
    @pytest.mark.parametrize(("text", "device"), [("cpu", "cpu"), ("cuda", "cuda:0"), ("cuda:1", "cuda:1"),
                                                  (" xpu:2 ", "xpu:2"), ("cpu:0", "cpu")])
    def test_valid(self, text, device):
        """Device strings are normalized to ``type:index`` (``cpu`` alone)."""
        assert parse_device(text) == device

    @pytest.mark.parametrize("text", ["cuda : 0", "gpu0", "CUDA:0", "cuda:-1", "cpu:1", ""])
    def test_invalid(self, text):
        """The lesson's ``'cuda : 0'`` and made-up names are refused."""
        with pytest.raises(ValueError):
            parse_device(text)


class TestParseDeviceList:
    available = ("cpu", "cuda:0")

    def test_all(self):
        """``all`` is every device that exists."""
        assert parse_device_list("all", self.available) == ["cpu", "cuda:0"]

    def test_subset(self):
        """A list is normalized and deduplicated."""
        assert parse_device_list("cuda,cuda:0,cpu", self.available) == ["cuda:0", "cpu"]

    def test_absent_device_names_what_exists(self):
        """An absent device is refused with the devices that do exist."""
        with pytest.raises(ValueError, match=r"cuda:7 does not exist on this machine; it has: cpu, cuda:0"):
            parse_device_list("cpu,cuda:7", self.available)


class TestDiscovery:
    def test_available_devices_with_fakes(self, fake_backend):
        """cpu first, then one entry per accelerator."""
        expected = ["cpu"] + [f"cuda:{i}" for i in range(fake_backend.gpus)]
        assert available_devices(fake_backend) == expected

    def test_try_gpu_with_two_gpus(self):
        """try_gpu(i) returns accelerator i when it exists, else cpu."""
        backend = FakeBackend(gpus=2)
        assert try_gpu(1, backend) == torch.device("cuda:1")
        assert try_gpu(2, backend) == torch.device("cpu")
        assert try_all_gpus(backend) == [torch.device("cuda:0"), torch.device("cuda:1")]

    @pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only answer")
    def test_real_backend_on_cpu_machine(self):
        """On a CPU-only machine try_gpu(10) is cpu and try_all_gpus() is [cpu]."""
        assert try_gpu(10) == torch.device("cpu")
        assert try_gpu() == torch.device("cpu")
        assert try_all_gpus() == [torch.device("cpu")]
        assert available_devices(TorchBackend()) == ["cpu"]

    def test_accelerator_index(self):
        """The index of an accelerator string; None for the CPU."""
        assert accelerator_index("cuda:3") == 3
        assert accelerator_index("cpu") is None

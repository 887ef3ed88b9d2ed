"""Which GPU each rank of a torchrun or srun world takes, and what the roll call records of it (on fakes: no GPU here)."""

from types import SimpleNamespace

import pytest
import torch

from xferbench.measure.distributed import DistributedError
from xferbench.measure.distributed import torchrun as torchrun_module
from xferbench.measure.distributed.world import check_own_gpus, rank_place

#: srun --ntasks-per-node=8 --gpus-per-task=1 on the second of two nodes: Slurm binds one GPU to each task.
SLURM_BOUND = {"SLURM_PROCID": "13", "SLURM_NTASKS": "16", "SLURM_LOCALID": "5", "SLURM_TASKS_PER_NODE": "8(x2)",
               "SLURM_NODEID": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1", "CUDA_VISIBLE_DEVICES": "5"}


class Joined(Exception):
    """Raised by the fake join: the rank got as far as the rendezvous."""


@pytest.fixture
def gpus(monkeypatch, tmp_path):
    """This process sees ``count`` fake GPUs; the rank stops at the rendezvous, which records its backend and device."""
    joined: list[tuple[str, str]] = []

    def see(count: int, env: dict[str, str]) -> list[tuple[str, str]]:
        for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "CUDA_VISIBLE_DEVICES"):
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0)
        monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
        monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (2**36, 2**37))
        monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: SimpleNamespace(
            pci_domain_id=0, pci_bus_id=0x18 + index, pci_device_id=0))

        def join(backend, init_method, rank, world_size, timeout_s, device, **kwargs):
            joined.append((backend, device))
            raise Joined
        monkeypatch.setattr(torchrun_module, "join", join)
        monkeypatch.chdir(tmp_path)
        return joined
    return see


class TestSlurmBinding:
    def test_one_gpu_bound_per_task_is_cuda_0_on_nccl(self, gpus):
        """--gpus-per-task=1: the task sees one GPU (its own); it runs nccl on cuda:0, not gloo on the CPU."""
        joined = gpus(1, SLURM_BOUND)
        assert torchrun_module.main(["--out", "run.json"]) == 2  # the fake rendezvous failed: the world did not form
        assert joined == [("nccl", "cuda:0")]

    def test_nccl_asked_with_one_gpu_bound_per_task_runs(self, gpus):
        joined = gpus(1, SLURM_BOUND)
        torchrun_module.main(["--backend", "nccl", "--out", "run.json"])
        assert joined == [("nccl", "cuda:0")]

    def test_fewer_gpus_than_ranks_unbound_is_an_error_not_gloo(self, gpus, capsys):
        """8 ranks share 2 visible GPUs: never a silent 8-rank gloo run where GPUs exist."""
        joined = gpus(2, {"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "3", "LOCAL_WORLD_SIZE": "8",
                          "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"})
        assert torchrun_module.main(["--out", "run.json"]) == 2
        err = capsys.readouterr().err
        assert joined == [] and err.count("\n") == 1
        assert "nccl needs one GPU per rank, and this node runs 8 ranks on 2 GPU(s)" in err
        assert "srun --gpus-per-task=1" in err and "--backend gloo" in err

    def test_gloo_only_when_asked_or_without_gpus(self, gpus):
        env = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
               "MASTER_PORT": "1"}
        joined = gpus(2, env)
        torchrun_module.main(["--backend", "gloo", "--out", "run.json"])
        torchrun_module.main(["--out", "run.json"])
        assert joined == [("gloo", "cpu"), ("nccl", "cuda:1")]


class TestRollCall:
    def test_each_rank_records_its_device_bus_id_and_visible_devices(self, tmp_path):
        cuda = SimpleNamespace(get_device_properties=lambda index: SimpleNamespace(
            pci_domain_id=0, pci_bus_id=0x9a, pci_device_id=0), nccl=SimpleNamespace(version=lambda: (2, 21, 5)))
        (tmp_path / "mlx5_0").mkdir()
        (tmp_path / "mlx5_1").mkdir()
        env = {"CUDA_VISIBLE_DEVICES": "5", "NCCL_IB_HCA": "mlx5_0", "NCCL_DEBUG": "WARN", "HOME": "/root"}
        place = rank_place("cuda:0", 5, cuda=cuda, env=env, hcas=tmp_path)
        assert place == {"local_rank": 5, "device": "cuda:0", "cuda_visible_devices": "5", "pci_bus_id": "0000:9a:00.0",
                         "nccl_version": "2.21.5", "nccl_env": {"NCCL_DEBUG": "WARN", "NCCL_IB_HCA": "mlx5_0"},
                         "hcas": ["mlx5_0", "mlx5_1"]}
        assert rank_place("cpu", 0, env={}, hcas=tmp_path / "none") == {
            "local_rank": 0, "device": "cpu", "cuda_visible_devices": None, "nccl_env": {}, "hcas": []}

    def test_an_older_torch_without_bus_ids_records_none(self):
        cuda = SimpleNamespace(get_device_properties=lambda index: SimpleNamespace(name="GPU"))
        assert rank_place("cuda:1", 1, cuda=cuda, env={})["pci_bus_id"] is None

    def test_two_ranks_of_a_node_on_one_gpu_are_named(self):
        """Both see one GPU and call it cuda:0, but it is the same GPU (a CUDA_VISIBLE_DEVICES set for the whole job)."""
        places = [{"device": "cuda:0", "pci_bus_id": "0000:18:00.0", "cuda_visible_devices": "0"}] * 2 + [
            {"device": "cuda:0", "pci_bus_id": "0000:18:00.0", "cuda_visible_devices": "0"}]
        with pytest.raises(DistributedError, match=r"^ranks 0 and 1 on a both run on the GPU at 0000:18:00.0 "):
            check_own_gpus(["a", "a", "b"], places)
        check_own_gpus(["a", "b", "c"], places)  # one a node: each its own
        check_own_gpus(["a", "a"], [{"device": "cpu"}, {"device": "cpu"}])  # gloo on the CPU: nothing to share


class TestFreeMemory:
    def test_the_allocators_cached_blocks_count_as_free(self, monkeypatch):
        """After a 56 GiB case the allocator keeps its blocks: the driver says 50 GiB free, but 46 GiB more are
        cached and unused, so a 70 GiB case fits (the pytest path counts them the same way)."""
        from xferbench.measure.distributed.world import free_bytes

        gib = 2**30
        monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (50 * gib, 141 * gib))
        monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: 60 * gib)
        monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: 14 * gib)
        assert free_bytes("cuda:0", 8) == 96 * gib


class TestLaunchMatchesTheWorld:
    """A world that formed otherwise than launched is named, not measured (it would exit 0 with ranks missing)."""

    def test_ranks_per_node_that_differ_from_the_launch(self):
        places = [{"per_node": 2, "nnodes": 2}] * 2 + [{"per_node": 2, "nnodes": 2}] * 3
        with pytest.raises(DistributedError, match=r"^rank 2 on b was started as one of 2 ranks on its node, and 3 "
                                                   r"joined from b; start every node with the same --nproc-per-node"):
            torchrun_module.check_launch(["a", "a", "b", "b", "b"], places)

    def test_nodes_that_differ_from_nnodes(self):
        with pytest.raises(DistributedError, match=r"^rank 0 on a was started for 2 node\(s\) \(--nnodes\), and the "
                                                   r"world holds ranks of 1: a;"):
            torchrun_module.check_launch(["a", "a"], [{"per_node": 2, "nnodes": 2}] * 2)

    @pytest.mark.parametrize(("nodes", "shares"), [(["a", "a", "b"], "a 2, b 1: a world of 3"),
                                                   (["a", "a", "b", "b", "b"], "a 2, b 3: a world of 5")])
    def test_nodes_launched_with_different_nproc_per_node(self, nodes, shares):
        """torchrun --nproc-per-node=2 on one node and 1 (or 3) on the other: each rank's launch agrees with its
        node, and torchrun forms a world of 3 (or 5) that would measure without a word."""
        places = [{"per_node": nodes.count(node), "nnodes": 2} for node in nodes]
        with pytest.raises(DistributedError, match=rf"^the nodes run different numbers of ranks \({shares}\); start "
                                                   r"every node with the same --nproc-per-node"):
            torchrun_module.check_launch(nodes, places)

    def test_a_launch_as_told_passes(self):
        torchrun_module.check_launch(["a", "a", "b", "b"], [{"per_node": 2, "nnodes": 2}] * 4)
        torchrun_module.check_launch(["a", "b"], [{}, {}])  # a launcher that says nothing: nothing to check

    @pytest.mark.parametrize(("env", "nnodes"), [({"GROUP_WORLD_SIZE": "2"}, 2), ({"SLURM_NNODES": "4"}, 4),
                                                 ({"SLURM_JOB_NUM_NODES": "3"}, 3), ({}, None)])
    def test_the_launchers_node_count(self, env, nnodes):
        assert torchrun_module._nnodes(env) == nnodes

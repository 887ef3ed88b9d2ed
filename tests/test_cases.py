import pytest

from xferbench.measure.cases import PROFILES, Case, Skipped, build_cases, core_ops
from xferbench.units import parse_sizes

SIZES = [4, 1024]


def devices_for(gpus: int) -> list[str]:
    return ["cpu"] + [f"cuda:{i}" for i in range(gpus)]


def ids(planned) -> list[str]:
    return [p.id for p in planned if isinstance(p, Case)]


def skips(planned) -> dict[str, str]:
    return {p.id: p.reason for p in planned if isinstance(p, Skipped)}


class TestCase:
    def test_h2d_id_reads_like_the_issue(self):
        """An h2d id names memory, blocking, method, size, dtype and direction."""
        case = Case("h2d", "copy_", "cpu", "cuda:0", (16 * 2**20,), "float32", "pinned", True)
        assert case.id == "pinned-nonblocking-copy_-64MiB-float32-cpu->cuda:0"
        assert case.nbytes == 64 * 2**20

    def test_lesson_shape_label(self):
        """The lesson's torch.ones(2, 3) case is labelled by its shape."""
        case = Case("create", "ones", "cuda:0", "cuda:0", (2, 3))
        assert case.id == "ones-2x3-float32-cuda:0"
        assert case.nbytes == 24

    def test_extra_info_contract(self):
        """extra_info carries every identity field of the data contract."""
        info = Case("d2h", "copy_", "cuda:1", "cpu", (8,), "float16", "pinned", True).extra_info()
        assert info == {"xfer_schema": 1, "op": "d2h", "src": "cuda:1", "dst": "cpu", "nbytes": 16,
                        "dtype": "float16", "shape": [8], "host_memory": "pinned", "non_blocking": True,
                        "method": "copy_", "variant": None, "world_size": None, "backend": None}

    @pytest.mark.parametrize("kwargs", [{"dtype": "float8"}, {"shape": ()}, {"shape": (0,)},
                                        {"host_memory": "locked"}])
    def test_rejects_impossible_values(self, kwargs):
        """A case cannot be built with an unknown dtype, an empty shape or unknown memory."""
        fields = {"op": "host", "method": "clone", "src": "cpu", "dst": "cpu", "shape": (4,)} | kwargs
        with pytest.raises(ValueError):
            Case(**fields)

    def test_hashable_identity(self):
        """Equal cases are equal and hash alike, so they can key dicts and sets."""
        a = Case("host", "clone", "cpu", "cpu", (4,))
        assert a == Case("host", "clone", "cpu", "cpu", (4,)) and len({a, Case("host", "clone", "cpu", "cpu", (4,))}) == 1


class TestMatrixCpuOnly:
    def test_every_accelerator_family_skips_with_reason(self):
        """With no GPU, h2d/d2h/d2d/peer are one skip each, naming the devices."""
        for op in ("h2d", "d2h", "d2d"):
            assert skips(build_cases(op, ["cpu"], SIZES, ["float32"])) == {
                f"{op}-no-accelerator": f"{op} needs an accelerator; the devices measured are: cpu"}
        assert skips(build_cases("peer", ["cpu"], SIZES, ["float32"])) == {
            "peer-needs-two-accelerators": "peer copies need two accelerators; found 0 (none)"}

    def test_host_create_noop_run(self):
        """The CPU still measures creation, host copies and no-ops."""
        assert ids(build_cases("host", ["cpu"], SIZES, ["float32"])) == [
            "pageable-clone-4B-float32-cpu->cpu", "pageable-copy_-4B-float32-cpu->cpu",
            "pageable-copy_-4B-float32-single_thread-cpu->cpu",
            "pageable-clone-1KiB-float32-cpu->cpu", "pageable-copy_-1KiB-float32-cpu->cpu",
            "pageable-copy_-1KiB-float32-single_thread-cpu->cpu"]
        assert len(ids(build_cases("create", ["cpu"], SIZES, ["float32"]))) == 8
        assert ids(build_cases("noop", ["cpu"], SIZES, ["float32"])) == [
            "to-4B-float32-cpu", "to-4B-float32-str-cpu", "cpu-4B-float32-cpu", "to-1KiB-float32-cpu",
            "to-1KiB-float32-str-cpu", "cpu-1KiB-float32-cpu"]


class TestMatrixOneGpu:
    devices = devices_for(1)

    def test_h2d_variants(self):
        """h2d: 2 memories x 2 blocking modes x (to, cuda, copy_) per size."""
        h2d = ids(build_cases("h2d", self.devices, [1024], ["float32"]))
        assert len(h2d) == 12
        assert "pageable-blocking-to-1KiB-float32-cpu->cuda:0" in h2d
        assert "pinned-nonblocking-cuda-1KiB-float32-cpu->cuda:0" in h2d

    def test_d2h_variants(self):
        """d2h: allocating moves into pageable memory, copy_ into pageable and pinned."""
        assert ids(build_cases("d2h", self.devices, [1024], ["float32"])) == [
            "pageable-blocking-cpu-1KiB-float32-cuda:0->cpu",
            "pageable-blocking-to-1KiB-float32-cuda:0->cpu",
            "pageable-blocking-copy_-1KiB-float32-cuda:0->cpu",
            "pinned-blocking-copy_-1KiB-float32-cuda:0->cpu",
            "pinned-nonblocking-copy_-1KiB-float32-cuda:0->cpu",
            "pinned-nonblocking-to-1KiB-float32-cuda:0->cpu",  # torch pins a non-blocking copy to the CPU
        ]

    def test_peer_skips_with_one_gpu(self):
        """One GPU: peer is skipped and says how many were found."""
        assert skips(build_cases("peer", self.devices, SIZES, ["float32"])) == {
            "peer-needs-two-accelerators": "peer copies need two accelerators; found 1 (cuda:0)"}

    def test_noop_has_cuda_method_on_gpu(self):
        """The no-op .cuda(i) exists on the GPU, .cpu() on the CPU."""
        assert ids(build_cases("noop", self.devices, [4], ["float32"])) == [
            "to-4B-float32-cpu", "to-4B-float32-str-cpu", "cpu-4B-float32-cpu", "to-4B-float32-cuda:0",
            "to-4B-float32-str-cuda:0", "cuda-4B-float32-cuda:0"]

    def test_xpu_has_no_cuda_method(self):
        """Non-CUDA accelerators get .to() but never .cuda()."""
        assert all("-cuda-" not in i for i in ids(build_cases("h2d", ["cpu", "xpu:0"], [4], ["float32"])))


class TestMatrixThreeGpus:
    devices = devices_for(3)

    def test_every_ordered_pair(self):
        """Peer covers each ordered pair i != j once per method: 3 x 2 x 2 = 12."""
        peer = build_cases("peer", self.devices, [1024], ["float32"])
        pairs = {(c.src, c.dst) for c in peer}
        assert pairs == {(f"cuda:{i}", f"cuda:{j}") for i in range(3) for j in range(3) if i != j}
        assert len(peer) == 12

    def test_d2d_per_device(self):
        """d2d runs on each GPU, never across."""
        d2d = build_cases("d2d", self.devices, [1024], ["float32"])
        assert {(c.src, c.dst) for c in d2d} == {("cuda:0", "cuda:0"), ("cuda:1", "cuda:1"), ("cuda:2", "cuda:2")}

    def test_gpu_only_selection(self):
        """Without cpu in the list, h2d says so instead of running."""
        assert skips(build_cases("h2d", self.devices[1:], [4], ["float32"])) == {
            "h2d-no-cpu": "h2d needs cpu in --xfer-devices"}


class TestSizes:
    def test_noop_measured_at_smallest_and_largest(self):
        """No-ops do not depend on size: only both ends of the sweep are run."""
        noop = build_cases("noop", ["cpu"], [4, 1024, 2**20], ["float32"])
        assert {c.size_label for c in noop} == {"4B", "1MiB"}

    def test_size_not_a_whole_element_is_skipped(self):
        """4 bytes hold no float64; that size is skipped with a reason."""
        planned = build_cases("host", ["cpu"], [4, 16], ["float64"])
        assert skips(planned) == {"4B-float64": "4B is not a whole number of float64 elements"}
        assert ids(planned) == ["pageable-clone-16B-float64-cpu->cpu", "pageable-copy_-16B-float64-cpu->cpu",
                                "pageable-copy_-16B-float64-single_thread-cpu->cpu"]

    def test_unknown_op(self):
        """Only the known families can be built."""
        with pytest.raises(ValueError, match="unknown op"):
            build_cases("teleport", ["cpu"], SIZES, ["float32"])

    def test_ops_list(self):
        assert core_ops() == ("h2d", "d2h", "d2d", "peer", "host", "create", "noop", "sync")


class TestNoSizeAxis:
    """A family with ``sizes="none"`` (sync: nothing moves) has one case per device, no size anywhere."""

    def test_sync_is_one_case_per_gpu_whatever_the_sizes_and_dtypes(self):
        planned = build_cases("sync", devices_for(2), [4, 1024, 2**26, (2, 3)], ["float32", "float16", "int8"])
        assert ids(planned) == ["synchronize-cuda:0", "synchronize-cuda:1"]
        assert skips(planned) == {}

    def test_its_rows_carry_no_payload(self):
        """Report rows and compare keys see 0 bytes, not the size of a label."""
        (case, _) = build_cases("sync", devices_for(2), SIZES, ["float32"])
        assert case.nbytes == 0 and case.extra_info()["nbytes"] == 0
        assert not case.sized and Case("d2d", "clone", "cuda:0", "cuda:0", (4,)).sized

    def test_a_size_that_is_no_whole_element_does_not_skip_it(self):
        """3 B is no float32, but sync has no size to be wrong: it still runs."""
        assert ids(build_cases("sync", devices_for(1), [3], ["float32"])) == ["synchronize-cuda:0"]


class TestMmapThresholdSizes:
    def test_full_profile_brackets_glibcs_largest_mmap_threshold(self):
        """24, 31 and 33 MiB sit around glibc's 32 MiB ceiling for its mmap threshold, where a fresh
        allocation becomes a new mapping; the sweep stays in ascending order."""
        sizes = parse_sizes(PROFILES["full"])
        assert {24 * 2**20, 31 * 2**20, 33 * 2**20} <= set(sizes)
        byte_sizes = [s for s in sizes if isinstance(s, int)]
        assert byte_sizes == sorted(byte_sizes) and byte_sizes[-1] == 2**30

    def test_a_variant_is_part_of_the_identity(self):
        """The single-thread host copy is another case than torch's copy_ of the same size."""
        plain = Case("host", "copy_", "cpu", "cpu", (4,), host_memory="pageable")
        single = Case("host", "copy_", "cpu", "cpu", (4,), host_memory="pageable", variant="single_thread")
        assert plain.id != single.id and plain.identity().key != single.identity().key
        assert single.extra_info()["variant"] == "single_thread"

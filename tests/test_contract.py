"""The data contract: what names a measurement, how it is written and read back, what makes runs comparable."""

import dataclasses
import gzip
import json
import math
import re
import sys
from pathlib import Path
from typing import ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xferbench.contract import (
    DEVICE_TIME_METHODS,
    IDENTITY,
    MEASURED,
    NAME_LIMIT,
    SCHEMA_VERSION,
    ContractError,
    Fingerprint,
    Identity,
    environment_differences,
    hardware_differences,
    hardware_identity,
    identity_from,
    machine_differences,
    machine_identity,
    measured_from,
    simulation_mismatch,
    software_changes,
    software_environment,
)

from hostile_inputs import property_settings

H2D = Identity(op="h2d", method="copy_", src="cpu", dst="cuda:0", nbytes=1024, dtype="float32", shape=(256,),
               host_memory="pinned", non_blocking=True)


def info(**changes):
    """H2D's extra_info with some fields changed (a value of ... removes the field)."""
    data = H2D.extra_info() | changes
    return {k: v for k, v in data.items() if v is not ...}


class TestIdentityRecord:
    def test_extra_info_is_json_ready_and_versioned(self):
        """The record goes into pytest-benchmark's JSON: schema version first, the shape as a list, every field."""
        data = H2D.extra_info()
        assert next(iter(data)) == "xfer_schema"
        assert data["xfer_schema"] == SCHEMA_VERSION
        assert data["shape"] == [256]
        assert set(data) == {"xfer_schema", *IDENTITY}
        assert data["host_memory"] == "pinned" and data["non_blocking"] is True

    def test_round_trip(self):
        """What the measuring side writes, the analysis side reads back as the same identity."""
        assert identity_from(H2D.extra_info()) == H2D

    def test_key_tells_every_field_apart(self):
        """Two cases that differ in any one identity field (shape too) never match in compare."""
        changed = {"op": "d2h", "method": "to", "src": "cuda:1", "dst": "cuda:1", "nbytes": 2048, "dtype": "float16",
                   "shape": (16, 16), "host_memory": "pageable", "non_blocking": False, "variant": "v",
                   "world_size": 2, "backend": "gloo"}
        assert set(changed) == set(IDENTITY)
        keys = {dataclasses.replace(H2D, **{name: value}).key for name, value in changed.items()}
        assert len(keys | {H2D.key}) == len(IDENTITY) + 1

    def test_key_lists_the_fields_in_order(self):
        assert H2D.key == "h2d|copy_|cpu|cuda:0|1024|float32|(256,)|pinned|True|None|None|None"


class TestPathLabel:
    @pytest.mark.parametrize(("changes", "label"), [
        ({}, "h2d pinned non-blocking copy_ cpu->cuda:0"),
        ({"host_memory": None, "non_blocking": False, "method": "to"}, "h2d to cpu->cuda:0"),
        ({"dtype": "float16"}, "h2d pinned non-blocking copy_ float16 cpu->cuda:0"),
        ({"op": "d2d", "src": "cuda:0", "host_memory": None, "non_blocking": False, "method": "clone"},
         "d2d clone cuda:0"),
        ({"op": "allreduce", "world_size": 2, "backend": "nccl", "src": "rank0:cuda", "dst": "all:cuda"},
         "allreduce nccl x2"),
        ({"op": "allreduce", "world_size": 4, "backend": "gloo", "dtype": "bfloat16", "src": "rank0:cpu",
          "dst": "all:cpu"}, "allreduce gloo x4 bfloat16"),
        ({"op": "send_recv", "world_size": 4, "backend": "gloo", "src": "rank0:cpu", "dst": "rank1:cpu"},
         "send_recv gloo x4"),
        ({"op": "send_recv", "world_size": 4, "backend": "gloo", "src": "rank0:cpu", "dst": "rank2:cpu"},
         "send_recv gloo x4 rank0->rank2"),
        ({"op": "send_recv", "world_size": 2, "backend": "nccl", "src": "rank0:cuda", "dst": "rank1:cuda"},
         "send_recv nccl x2"),
        ({"op": "send_recv", "world_size": 2, "backend": "nccl", "src": "rank1:cuda", "dst": "rank0:cuda"},
         "send_recv nccl x2 rank1->rank0"),
        ({"op": "send_recv", "world_size": 4, "backend": "gloo", "src": "rank0:cpu", "dst": "rank3:cpu",
          "variant": "overlap"}, "send_recv overlap gloo x4 rank0->rank3"),
        ({"op": "send_recv", "world_size": 4, "backend": "gloo", "src": "rank2:cpu", "dst": "rank1:cpu"},
         "send_recv gloo x4 rank2->rank1"),
        ({"op": "pingpong", "variant": "pingpong"}, "pingpong cpu->cuda:0"),
        ({"op": "sync_stall", "variant": "queued", "src": "cuda:0"}, "sync_stall queued cuda:0"),
        ({"op": "noop", "method": "cuda", "src": "cuda:1"}, "noop .cuda() on cuda:1"),
        ({"op": "create", "method": "zeros", "src": "cuda:0"}, "create zeros on cuda:0"),
        ({"op": "create", "method": "ones", "dtype": "int8"}, "create ones on cpu int8"),
    ])
    def test_label(self, changes, label):
        """The name a path gets in tables and legends says what differs: memory, blocking, dtype, devices."""
        assert dataclasses.replace(H2D, **changes).path == label


class TestIdentityFrom:
    @pytest.mark.parametrize("name", ["op", "method", "src", "dst", "nbytes", "dtype", "shape"])
    def test_missing_required_field(self, name):
        """A JSON without a required field is refused, naming the field."""
        with pytest.raises(ContractError, match=f"^field '{name}' is missing$"):
            identity_from(info(**{name: ...}))

    def test_missing_optional_fields_take_defaults(self):
        """An older JSON without the optional fields reads as pageable-less, blocking, single-process."""
        identity = identity_from(info(host_memory=..., non_blocking=..., variant=..., world_size=..., backend=...))
        assert (identity.host_memory, identity.non_blocking, identity.variant, identity.world_size,
                identity.backend) == (None, False, None, None, None)

    def test_reads_each_field_from_its_own_key(self):
        """Non-default values of every optional field come back from their own key."""
        identity = identity_from(info(variant="queued", world_size=4, backend="gloo", non_blocking=False,
                                      host_memory="pageable", dtype="int8", shape=[2, 3]))
        assert identity == dataclasses.replace(H2D, variant="queued", world_size=4, backend="gloo", non_blocking=False,
                                               host_memory="pageable", dtype="int8", shape=(2, 3))

    def test_a_missing_field_does_not_hide_later_ones(self):
        """A distributed case without host memory still reads its world size and backend."""
        identity = identity_from(info(host_memory=..., world_size=2, backend="nccl"))
        assert (identity.host_memory, identity.world_size, identity.backend) == (None, 2, "nccl")

    @pytest.mark.parametrize("name", ["op", "method", "src", "dst", "dtype", "host_memory", "variant", "backend"])
    def test_a_text_longer_than_any_case_name_is_refused(self, name):
        """A 5 MB path took matplotlib minutes to lay out in each legend; refused in one short line."""
        with pytest.raises(ContractError, match=f"^field '{name}' is 5,000,000 characters long, more than any") as error:
            identity_from(info(**{name: "m" * 5_000_000}))
        assert len(str(error.value)) < 100
        assert identity_from(info(**{name: "m" * NAME_LIMIT})).key

    @property_settings(150)
    @given(text=st.text(min_size=1, max_size=2 * NAME_LIMIT + 10))
    def test_any_method_is_read_or_refused_by_its_length(self, text):
        try:
            identity = identity_from(info(method=text))
        except ContractError as error:
            assert len(text) > NAME_LIMIT and "\n" not in str(error)
        else:
            assert identity.method == text and len(text) <= NAME_LIMIT

    def test_dimensions_of_one(self):
        """A shape may have dimensions of 1 (a single row), only 0 and negatives are refused."""
        assert identity_from(info(shape=[1, 4])).shape == (1, 4)

    def test_unknown_keys_are_ignored(self):
        """Fields a newer version adds do not stop an older reader."""
        assert identity_from(info(future_field=[1, 2])) == H2D

    @pytest.mark.parametrize(("name", "value", "message"), [
        ("op", "", "field 'op' must be a non-empty string, got ''"),
        ("op", 3, "field 'op' must be a non-empty string, got 3"),
        ("nbytes", -1, "field 'nbytes' must be a whole number >= 0, got -1"),
        ("nbytes", 1.5, "field 'nbytes' must be a whole number >= 0, got 1.5"),
        ("nbytes", True, "field 'nbytes' must be a whole number >= 0, got True"),
        ("nbytes", "1024", "field 'nbytes' must be a whole number >= 0, got '1024'"),
        ("non_blocking", 1, "field 'non_blocking' must be true or false, got 1"),
        ("non_blocking", "true", "field 'non_blocking' must be true or false, got 'true'"),
        ("shape", [], "field 'shape' must be a list of positive whole numbers, got []"),
        ("shape", [2, 0], "field 'shape' must be a list of positive whole numbers, got [2, 0]"),
        ("shape", [2.0], "field 'shape' must be a list of positive whole numbers, got [2.0]"),
        ("shape", (2, 3), "field 'shape' must be a list of positive whole numbers, got (2, 3)"),
        ("world_size", -2, "field 'world_size' must be a whole number >= 0, got -2"),
        ("host_memory", 0, "field 'host_memory' must be a non-empty string, got 0"),
    ])
    def test_wrong_type_is_named(self, name, value, message):
        """A field of the wrong type is refused with the field and the value it had, not read as something else."""
        with pytest.raises(ContractError, match=f"^{re.escape(message)}$"):
            identity_from(info(**{name: value}))

    def test_zero_is_a_whole_number(self):
        """nbytes 0 is valid data (an empty tensor), not a type error."""
        assert identity_from(info(nbytes=0)).nbytes == 0

    def test_long_values_are_cut_in_the_message(self):
        """A huge wrong value does not flood the one-line error."""
        with pytest.raises(ContractError) as error:
            identity_from(info(op=["x" * 500]))
        assert str(error.value) == "field 'op' must be a non-empty string, got " + repr(["x" * 500])[:60]

    def test_contract_error_is_a_value_error(self):
        """The CLI's bad-input handling (ValueError -> exit 2) catches contract errors."""
        assert issubclass(ContractError, ValueError)


class TestMeasuredFrom:
    def test_absent_and_null_fields_are_none(self):
        """Every measured field is reported, None where the run did not record it."""
        assert measured_from({"clock": None}) == dict.fromkeys(MEASURED)

    def test_values_are_type_checked_and_floats_widened(self):
        """An integer device time in JSON reads as a float; the rest keep their values."""
        values = {"clock": "cuda_event", "device_seconds": 2, "device_repeats": 10, "peer_access": True,
                  "queued_seconds": 0.5,
                  "bus_factor": 1.5, "round_trip": False, "size_unit": "params", "cache_resident": True}
        measured = measured_from(values)
        assert measured == dict.fromkeys(MEASURED) | values
        assert type(measured["device_seconds"]) is float

    def test_faults_and_device_time_method_are_contract_fields(self):
        """Faults per call (a float: a count averaged over calls) and how device time was taken."""
        measured = measured_from({"minor_faults_per_call": 16385, "device_time_method": "nonblocking_twin"})
        assert measured["minor_faults_per_call"] == 16385.0 and type(measured["minor_faults_per_call"]) is float
        assert measured["device_time_method"] == "nonblocking_twin"
        assert DEVICE_TIME_METHODS == ("profiler", "nonblocking_twin", "events")
        with pytest.raises(ContractError, match="minor_faults_per_call"):
            measured_from({"minor_faults_per_call": -1})

    @pytest.mark.parametrize(("name", "value", "message"), [
        ("device_seconds", -1.0, "field 'device_seconds' must be a finite number >= 0, got -1.0"),
        ("device_seconds", math.nan, "field 'device_seconds' must be a finite number >= 0, got nan"),
        ("device_seconds", math.inf, "field 'device_seconds' must be a finite number >= 0, got inf"),
        ("device_seconds", "1e-6", "field 'device_seconds' must be a finite number >= 0, got '1e-6'"),
        ("bus_factor", True, "field 'bus_factor' must be a finite number >= 0, got True"),
        ("round_trip", "yes", "field 'round_trip' must be true or false, got 'yes'"),
        ("clock", "", "field 'clock' must be a non-empty string, got ''"),
    ])
    def test_wrong_type_is_named(self, name, value, message):
        """A NaN, negative or mistyped timing is refused by name rather than plotted."""
        with pytest.raises(ContractError) as error:
            measured_from({name: value})
        assert str(error.value) == message

    def test_lists_of_every_rank(self):
        """Per-rank timings and hosts come back as lists, each element checked."""
        measured = measured_from({"rank_seconds": [[1e-3, 2], [3e-3]], "rank_hosts": ["node0", "node1"]})
        assert measured["rank_seconds"] == [[1e-3, 2.0], [3e-3]]
        assert type(measured["rank_seconds"][0][1]) is float
        assert measured["rank_hosts"] == ["node0", "node1"]

    @pytest.mark.parametrize(("name", "value", "message"), [
        ("rank_seconds", 1e-3, "field 'rank_seconds' must be a list, got 0.001"),
        ("rank_seconds", [1e-3], "field 'rank_seconds' must be a list, got 0.001"),
        ("rank_seconds", [[1e-3, -1.0]], "field 'rank_seconds' must be a finite number >= 0, got -1.0"),
        ("rank_hosts", ["node0", ""], "field 'rank_hosts' must be a non-empty string, got ''"),
    ])
    def test_list_errors_name_the_field(self, name, value, message):
        """A malformed per-rank list is refused naming the field and the bad element."""
        with pytest.raises(ContractError) as error:
            measured_from({name: value})
        assert str(error.value) == message

    def test_zero_is_a_valid_time(self):
        """A zero device time (a no-op) is a measurement, not an error."""
        assert measured_from({"queued_seconds": 0})["queued_seconds"] == 0.0

    def test_the_largest_finite_float_is_a_number_not_an_overflow(self):
        """Finite is the bound: the largest float JSON can hold reads back, only inf and beyond are refused."""
        assert measured_from({"bus_factor": sys.float_info.max})["bus_factor"] == sys.float_info.max
        with pytest.raises(ContractError):
            measured_from({"bus_factor": 10 ** 309})  # an int past the largest float


def machine(*names, cpu="Xeon", **block):
    return {"cpu": {"brand_raw": cpu}, "xferbench": {"devices": [{"name": n} for n in names], **block}}


ROOT = Path(__file__).resolve().parents[1]


class TestFingerprint:
    """xferbench's machine section, typed once: what every reader of the fingerprint goes through."""

    def test_old_run_without_section_knows_nothing(self):
        """A run without the section (older, or another tool's JSON), or with one that is not an object,
        says unknown everywhere: never simulated, no devices, no versions, and not a crash."""
        for machine_info in ({"cpu": {"brand_raw": "Xeon"}}, {"xferbench": "weird"}, {"xferbench": None},
                             {"xferbench": {}}):
            fingerprint = Fingerprint.of(machine_info)
            assert (fingerprint.section, fingerprint.simulated, fingerprint.spec) == ({}, False, None)
            assert (fingerprint.devices, machine_identity(machine_info)["GPUs"], fingerprint.device("cuda:0")) == (
                [], None, None)
            assert list(software_environment(machine_info).values()) == [None] * 6

    def test_malformed_devices(self):
        """Devices that are not a list, or entries that are not records, are left out of the records, and
        name no GPU."""
        assert Fingerprint.of({"xferbench": {"devices": None, "torch": "2.5"}}).devices == []
        machine_info = {"xferbench": {"devices": ["H100", {"device": "cuda:0", "name": "A100"}]}}
        fingerprint = Fingerprint.of(machine_info)
        assert fingerprint.devices == [{"device": "cuda:0", "name": "A100"}]
        assert machine_identity(machine_info)["GPUs"] == [None, "A100"]
        assert fingerprint.device("cuda:0") == {"device": "cuda:0", "name": "A100"}

    def test_simulated_run(self):
        """The simulated machine's run (tests/data/sim-2gpu.json) is simulated, with its spec; a flag that is
        set but not a spec still counts as simulated (one check for every reader), and no spec to read."""
        machine_info = json.loads((ROOT / "tests" / "data" / "sim-2gpu.json").read_text())["machine_info"]
        fingerprint = Fingerprint.of(machine_info)
        assert fingerprint.simulated
        assert fingerprint.spec == machine_info["xferbench"]["simulated"] and fingerprint.spec["gpus"] == 2
        assert machine_identity(machine_info)["GPUs"] == ["illustrative PCIe Gen5 GPU (simulated)"] * 2
        assert fingerprint.device("cuda:1")["nvlink_links"] == 18
        odd = Fingerprint.of({"xferbench": {"simulated": True}})
        assert (odd.simulated, odd.spec) == (True, None)
        assert not Fingerprint.of({"xferbench": {"simulated": None, "torch": "2.5"}}).simulated

    def test_real_h200_run(self):
        """The real H200 sample: one H200, its versions, measured (not simulated)."""
        data = json.loads(gzip.decompress((ROOT / "reports" / "samples" / "h200" / "full.json.gz").read_bytes()))
        fingerprint = Fingerprint.of(data["machine_info"])
        assert not fingerprint.simulated and fingerprint.spec is None
        assert machine_identity(data["machine_info"]) == {
            "GPUs": ["NVIDIA H200"], "torch": "2.11.0+cu130", "CUDA": "13.0", "HIP": None, "driver": "580.159.04",
            "CPU": "Intel(R) Xeon(R) Processor", "simulated": False}
        assert {k: hardware_identity(data["machine_info"])[k] for k in ("GPU memory", "PCIe link", "NVLink")} == {
            "GPU memory": [150109880320], "PCIe link": ["Gen5 x16"], "NVLink": None}
        assert fingerprint.device("cuda:0")["name"] == "NVIDIA H200" and fingerprint.device("cuda:1") is None


class TestMachineIdentity:
    def test_fields(self):
        """GPUs by name, torch, CUDA, HIP, driver and CPU brand decide whether two runs compare."""
        info = machine("H100", "H100", driver="550.54", torch="2.5.1", cuda="12.4", hip="6.1")
        assert machine_identity(info) == {"GPUs": ["H100", "H100"], "torch": "2.5.1", "CUDA": "12.4", "HIP": "6.1",
                                          "driver": "550.54", "CPU": "Xeon", "simulated": False}
        assert machine_identity(machine("H100", simulated={"gpus": 1}))["simulated"] is True

    def test_foreign_json_records_nothing(self):
        """A pytest-benchmark JSON without xferbench's block tells nothing, so nothing is compared."""
        assert machine_identity({"cpu": "weird"}) == dict.fromkeys(["GPUs", "torch", "CUDA", "HIP", "driver", "CPU",
                                                                     "simulated"])
        assert machine_identity({"xferbench": "weird"})["GPUs"] is None

    def test_malformed_devices(self):
        """A devices entry that is not a list, or a device that is not a record, reads as no name, not a crash."""
        assert machine_identity({"xferbench": {"devices": "H100", "torch": "2.5"}})["GPUs"] == []
        assert machine_identity({"xferbench": {"devices": ["H100", {"name": "A100"}]}})["GPUs"] == [None, "A100"]


class TestMachineDifferences:
    def test_each_difference_is_one_readable_line(self):
        """The refusal to compare names what changed, old -> new, in a fixed order."""
        base = machine("H100", driver="550", torch="2.4.0", cuda="12.4")
        new = machine("H200", "H200", cpu="EPYC", driver="560", torch="2.5.1", cuda="12.6")
        assert machine_differences(base, new) == ["GPUs [H100] -> [H200, H200]", "torch 2.4.0 -> 2.5.1",
                                                  "CUDA 12.4 -> 12.6", "driver 550 -> 560", "CPU Xeon -> EPYC"]

    def test_gpu_lost(self):
        """A run on a box whose GPUs vanished says so in words."""
        assert machine_differences(machine("H100"), machine()) == ["GPUs [H100] -> no GPU"]

    def test_same_machine(self):
        assert machine_differences(machine("H100", torch="2.5"), machine("H100", torch="2.5")) == []

    def test_unrecorded_fields_are_not_compared(self):
        """An older JSON that does not record torch is not refused for it."""
        assert machine_differences(machine("H100"), machine("H100", torch="2.5", hip="6.1")) == []
        assert machine_differences(machine("H100", torch="2.5"), machine("H100")) == []


class TestSimulationMismatch:
    @pytest.mark.parametrize(("base", "new", "which"), [({"gpus": 2}, None, ("base", "new")),
                                                        (None, {"gpus": 2}, ("new", "base"))])
    def test_simulated_against_measured_is_refused(self, base, new, which):
        """The refusal says which run is the simulated one."""
        kwargs = [{"simulated": spec} if spec else {} for spec in (base, new)]
        assert simulation_mismatch(machine("H100", **kwargs[0]), machine("H100", **kwargs[1])) == (
            f"the {which[0]} run is simulated (--xfer-simulate) and the {which[1]} run is measured; "
            "a simulated figure is never compared with a measurement")

    def test_like_with_like_or_unknown_is_allowed(self):
        """Two simulated runs, two measured runs, or a foreign JSON that cannot tell, are not refused here."""
        simulated = machine("H100", simulated={"gpus": 2})
        assert simulation_mismatch(simulated, machine("H100", simulated={"gpus": 4})) is None
        assert simulation_mismatch(machine("H100"), machine("H100")) is None
        assert simulation_mismatch({}, simulated) is None
        assert simulation_mismatch(simulated, {}) is None

    def test_listed_among_machine_differences(self):
        assert machine_differences(machine("H100"), machine("H100", simulated={"gpus": 1})) == ["simulated False -> True"]


GIB = 2**30


def gpu(memory: int | None = 80 * GIB, generation: int | None = 5, nvlink: int | None = None, **block) -> dict:
    """A one-GPU run's machine_info: its memory, PCIe generation (x16) and NVLink links, version 4.0 (None: not
    recorded)."""
    device = {"name": "NVIDIA H100", "memory_bytes": memory, "pcie_max_generation": generation,
              "pcie_max_width": 16, "nvlink_links": nvlink, "nvlink_version": "4.0"}
    return {"cpu": {"brand_raw": "EPYC"}, "xferbench": {"torch": "2.13.0", "devices": [device], **block}}


class TestHardwareIdentity:
    """What the machine *is*: a difference here is another machine, which compare refuses."""

    def test_fields(self):
        info = {"cpu": {"brand_raw": "EPYC"}, "python_version": "3.11.7",
                "xferbench": {"torch": "2.13.0", "cuda": "12.8", "hip": None, "driver": "570.1",
                              "pytest_benchmark": "5.1.0", "devices": [{"name": "H200", "memory_bytes": 1}]}}
        assert hardware_identity(info) == {"GPUs": ["H200"], "CPU": "EPYC", "simulated": False, "GPU memory": [1],
                                           "PCIe link": None, "NVLink": None}
        assert hardware_identity(gpu(simulated={"gpus": 1}))["simulated"] is True

    def test_links_name_pcie_and_nvlink(self):
        """A device's links are its PCIe generation and width and its NVLink version and count, each or unknown."""
        links = ("PCIe link", "NVLink")
        assert [hardware_identity(gpu())[k] for k in links] == [["Gen5 x16"], None]
        assert [hardware_identity(gpu(nvlink=18))[k] for k in links] == [["Gen5 x16"], [["4.0", 18]]]
        assert [hardware_identity(gpu(generation=None, nvlink=18))[k] for k in links] == [None, [["4.0", 18]]]
        # no NVLink (0) is not a link; a device recording neither is unknown, as is a run where no device does
        assert [hardware_identity(gpu(generation=None, nvlink=0))[k] for k in links] == [None, None]
        two = gpu()
        two["xferbench"]["devices"].append({"name": "NVIDIA H100"})
        assert hardware_identity(two)["PCIe link"] == ["Gen5 x16", None]
        assert hardware_identity(two)["GPU memory"] == [80 * GIB, None]

    def test_unrecorded_run_knows_nothing(self):
        """A foreign JSON (no section, a CPU that is not a record) records no hardware, so none is compared."""
        assert hardware_identity({"cpu": "EPYC"}) == dict.fromkeys(["GPUs", "CPU", "simulated", "GPU memory",
                                                                    "PCIe link", "NVLink"])
        assert hardware_identity(gpu(memory=None))["GPU memory"] is None

    def test_other_gpu_memory_or_links_are_another_machine(self):
        """Each written as the page writes it (machine_facts.py)."""
        assert hardware_differences(gpu(), gpu()) == []
        assert hardware_differences(gpu(), gpu(94 * GIB)) == ["GPU memory [80 GiB] -> [94 GiB]"]
        assert hardware_differences(gpu(generation=4), gpu()) == ["PCIe link [PCIe Gen4 x16] -> [PCIe Gen5 x16]"]
        assert hardware_differences(gpu(nvlink=12), gpu(nvlink=18)) == ["NVLink [NVLink 4.0 x12] -> [NVLink 4.0 x18]"]
        assert hardware_differences(gpu(), gpu() | {"cpu": {"brand_raw": "Xeon"}}) == ["CPU EPYC -> Xeon"]
        # unrecorded (an older run, no NVML) is not held against a run, on either side
        assert hardware_differences({"xferbench": {"devices": [{"name": "NVIDIA H100"}]}}, gpu()) == []
        assert hardware_differences(gpu(), {"xferbench": {"devices": [{"name": "NVIDIA H100"}]}}) == []

    def test_a_lost_gpu_is_said_in_words(self):
        assert hardware_differences(gpu(), {"xferbench": {"devices": []}}) == ["GPUs [NVIDIA H100] -> no GPU"]


class TestSoftwareEnvironment:
    """The software a run measured through: it may change between runs of one machine, and compare shows it."""

    INFO: ClassVar[dict] = {"cpu": {"brand_raw": "EPYC"}, "python_version": "3.11.7",
                            "xferbench": {"torch": "2.13.0", "cuda": "12.8", "hip": None, "driver": "570.1",
                                          "pytest_benchmark": "5.1.0", "devices": [{"name": "H200"}]}}

    def test_fields(self):
        assert software_environment(self.INFO) == {"torch": "2.13.0", "CUDA": "12.8", "HIP": None,
                                                   "driver": "570.1", "Python": "3.11.7",
                                                   "pytest-benchmark": "5.1.0"}
        assert software_environment({"python_version": 3.11}) == dict.fromkeys(
            ["torch", "CUDA", "HIP", "driver", "Python", "pytest-benchmark"])

    def test_hardware_and_software_are_apart(self):
        upgraded = {**self.INFO, "python_version": "3.12.1",
                    "xferbench": self.INFO["xferbench"] | {"torch": "2.14.0", "driver": "575.2"}}
        assert environment_differences(self.INFO, upgraded) == ["torch 2.13.0 → 2.14.0", "driver 570.1 → 575.2",
                                                                "Python 3.11.7 → 3.12.1"]
        assert hardware_differences(self.INFO, upgraded) == []
        assert environment_differences(self.INFO, self.INFO) == []

    def test_a_build_without_cuda_is_none_where_both_record_torch(self):
        """Both runs recorded their torch: a CUDA of None is a CPU build, and a change to a CUDA build is named."""
        cpu = {"torch": "2.13.0+cpu", "CUDA": None, "HIP": None}
        cuda = {"torch": "2.13.0+cu128", "CUDA": "12.8", "HIP": None}
        assert software_changes(cpu, cuda) == ["torch 2.13.0+cpu → 2.13.0+cu128", "CUDA none → 12.8"]
        assert software_changes(cuda, cpu) == ["torch 2.13.0+cu128 → 2.13.0+cpu", "CUDA 12.8 → none"]
        rocm = {"torch": "2.13.0+rocm6.4", "CUDA": None, "HIP": "6.4"}
        assert software_changes(cpu, rocm) == ["torch 2.13.0+cpu → 2.13.0+rocm6.4", "HIP none → 6.4"]

    def test_unrecorded_fields_are_not_compared(self):
        """Where a run did not record its torch, a None CUDA is unknown, not a CPU build; a field either run
        lacks is not compared."""
        assert software_changes({"torch": None, "CUDA": None}, {"torch": "2.13.0", "CUDA": "12.8"}) == []
        assert software_changes({"torch": "2.13.0", "CUDA": None}, {"torch": None, "CUDA": "12.8"}) == []
        assert software_changes({"torch": "2.13.0", "driver": None}, {"torch": "2.13.0", "driver": "570"}) == []
        assert software_changes({"torch": "2.13.0", "driver": "570"}, {"torch": "2.13.0"}) == []
        assert software_changes({"driver": "570"}, {"driver": "575"}) == ["driver 570 → 575"]


def _ranks(*records: dict) -> dict:
    return {"xferbench": {"ranks": [{"rank": i} | r for i, r in enumerate(records)]}}


def test_an_nccl_change_between_runs_is_named():
    """Issue 51: each rank's NCCL (torch's, else the version NCCL's own log said) is named where it changed."""
    base = _ranks({"nccl_version": "2.21.5"}, {"nccl_version": "2.21.5"})
    logged = _ranks({"nccl": {"version": "2.26.2", "net": "IB"}}, {"nccl": {"version": "2.26.2"}})
    assert environment_differences(base, logged) == ["NCCL 2.21.5 → 2.26.2"]
    assert environment_differences(base, base) == []
    assert environment_differences(base, _ranks({}, {"nccl": "junk"})) == []  # not recorded: nothing to compare
    mixed = _ranks({"nccl_version": "2.21.5"}, {"nccl_version": "2.26.2"})
    assert environment_differences(base, mixed) == ["NCCL 2.21.5 → 2.21.5, 2.26.2"]

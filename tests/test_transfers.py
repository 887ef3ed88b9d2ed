import dataclasses
import functools
import json
import re
import sys
import types
import weakref

import pytest
import torch

from xferbench.measure import timing, transfers
from xferbench.measure.cases import Case
from xferbench.measure.hardware.devices import Wedged
from xferbench.measure.hardware.faults import fault_calls
from xferbench.measure.transfers import (
    Buffers,
    CannotRun,
    CopyMismatch,
    bytes_needed,
    operation,
    pattern,
    prepare,
    run_case,
    verify,
)
from xferbench.units import DTYPE_SIZES

from fakes import FakeBackend, FakeBenchmark

HOST_COPY = Case("host", "copy_", "cpu", "cpu", (1000,), "float32", "pageable")


class TestPattern:
    @pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int8, torch.uint8])
    def test_exact_in_every_dtype(self, dtype):
        """The pattern survives a round trip through every supported dtype."""
        values = pattern((300,), dtype, "cpu")
        assert torch.equal(values.to(torch.int32), torch.arange(300, dtype=torch.int32) % 127)

    def test_neighbours_differ(self):
        """Not all ones: a copy that fills a constant is caught."""
        assert pattern((4,), torch.float32, "cpu").tolist() == [0.0, 1.0, 2.0, 3.0]


class TestVerify:
    def test_good_copy_passes(self):
        """A destination equal to the source passes."""
        buffers = prepare(HOST_COPY)
        verify(HOST_COPY, buffers, buffers.dst.copy_(buffers.src))

    def test_corrupted_copy_fails(self):
        """One wrong element fails with its count and index."""
        buffers = prepare(HOST_COPY)
        result = buffers.dst.copy_(buffers.src)
        result[500] = -1
        with pytest.raises(CopyMismatch, match=r"at 1 of 1000 elements \(first at index 500\)"):
            verify(HOST_COPY, buffers, result)

    def test_copy_that_never_happened_fails(self):
        """A zeroed destination (the copy did not run) fails."""
        buffers = prepare(HOST_COPY)
        with pytest.raises(CopyMismatch):
            verify(HOST_COPY, buffers, buffers.dst)

    def test_wrong_dtype_or_shape_fails(self):
        buffers = prepare(HOST_COPY)
        with pytest.raises(CopyMismatch, match="float64"):
            verify(HOST_COPY, buffers, buffers.src.double())

    def test_noop_must_return_same_object(self):
        """A no-op that returned a copy is a failure, even with equal values."""
        case = Case("noop", "to", "cpu", "cpu", (8,))
        buffers = prepare(case)
        verify(case, buffers, buffers.src)
        with pytest.raises(CopyMismatch, match="returned a new object"):
            verify(case, buffers, buffers.src.clone())

    @pytest.mark.parametrize(("method", "bad"), [("zeros", 1.0), ("ones", 0.0), ("rand", 1.0)])
    def test_creation_values_checked(self, method, bad):
        """zeros/ones/rand results are checked for their values."""
        case = Case("create", method, "cpu", "cpu", (4,))
        verify(case, Buffers(None, None), getattr(torch, method)(4))
        with pytest.raises(CopyMismatch):
            verify(case, Buffers(None, None), torch.full((4,), bad))


class TestRunCaseOnCpu:
    @pytest.mark.parametrize("case", [
        HOST_COPY,
        Case("host", "clone", "cpu", "cpu", (2, 3)),
        Case("create", "rand", "cpu", "cpu", (2, 3)),
        Case("create", "empty", "cpu", "cpu", (64,), "uint8"),
        Case("noop", "cpu", "cpu", "cpu", (16,)),
        Case("noop", "to", "cpu", "cpu", (16,)),
    ], ids=lambda c: c.id)
    def test_extra_info_contract(self, case, fake_benchmark):
        """A CPU case fills the data contract and has no device time; one that touches host memory
        (a no-op touches nothing) records its minor page faults per call."""
        info = run_case(case, fake_benchmark, FakeBackend(gpus=0))
        faults = {} if case.op == "noop" else {"minor_faults_per_call": info.get("minor_faults_per_call")}
        assert info == case.extra_info() | {"clock": "wall+sync"} | faults
        assert case.op == "noop" or type(info["minor_faults_per_call"]) is float
        assert fake_benchmark.group == f"{case.op} cpu->cpu"

    def test_corrupting_operation_fails_the_case(self, monkeypatch, fake_benchmark):
        """A copy path that delivers wrong data fails after timing."""
        real = transfers.operation

        def corrupting(case, buffers, backend=None):
            op = real(case, buffers, backend)
            return lambda: op().mul_(2)

        monkeypatch.setattr(transfers, "operation", corrupting)
        with pytest.raises(CopyMismatch):
            run_case(HOST_COPY, fake_benchmark, FakeBackend())


def cpu_stand_in(monkeypatch):
    """Run accelerator cases' logic on CPU tensors: prepare/operation/verify on cpu."""
    ran = []

    def prepare_on_cpu(case, backend=None):
        return Buffers(src=pattern(case.shape, torch.float32, "cpu"), dst=None)

    def op_on_cpu(case, buffers, backend=None):
        return lambda: ran.append(case.id) or buffers.src.clone()

    monkeypatch.setattr(transfers, "prepare", prepare_on_cpu)
    monkeypatch.setattr(transfers, "operation", op_on_cpu)
    monkeypatch.setattr(transfers, "verify", lambda case, buffers, result, where=None, kept=False: None)
    return ran


class TestRunCaseWithFakeGpus:
    def test_h2d_synchronizes_device_every_call_and_times_events(self, monkeypatch):
        """Warm-up, timed and verify calls each end with a sync of cuda:1; events on cuda:1."""
        cpu_stand_in(monkeypatch)
        backend = FakeBackend(gpus=2)
        bench = FakeBenchmark(calls=5, median=1e-3)
        case = Case("h2d", "to", "cpu", "cuda:1", (256,), host_memory="pinned", non_blocking=True)
        info = run_case(case, bench, backend)
        events = [c for c in backend.calls if c[0] == "events"]
        assert events == [("events", 1, 66)]  # 0.2 s of events a case, shared by 3 windows, at 1 ms a call
        # 3 warm-up + 5 timed + the calls whose faults are counted + 1 verified call, then one
        # sync before and after the events.
        assert backend.syncs() == [1] * (3 + 5 + fault_calls(1e-3) + 1 + 2)
        assert info["device_seconds"] == backend.event_s
        assert info["host_memory"] == "pinned" and info["non_blocking"] is True

    @pytest.mark.parametrize("op, src, dst", [("h2d", "cpu", "cuda:0"), ("d2h", "cuda:0", "cpu")])
    def test_pageable_copies_take_no_device_time(self, monkeypatch, op, src, dst):
        """A pageable copy is staged by the host: events around it would time the host's memcpy
        too (on an H200 they read 1.4x the wall time), so no device time is recorded for it."""
        cpu_stand_in(monkeypatch)
        backend = FakeBackend(gpus=1)
        info = run_case(Case(op, "to", src, dst, (256,), host_memory="pageable"), FakeBenchmark(calls=2), backend)
        assert not [c for c in backend.calls if c[0] == "events"]
        assert "device_seconds" not in info and info["host_memory"] == "pageable"
        pinned = run_case(Case(op, "to", src, dst, (256,), host_memory="pinned"), FakeBenchmark(calls=2), backend)
        assert pinned["device_seconds"] == backend.event_s

    def test_peer_records_access_and_syncs_both(self, monkeypatch):
        """A peer case synchronizes source and destination and records peer access."""
        cpu_stand_in(monkeypatch)
        backend = FakeBackend(gpus=3, peer=False)
        info = run_case(Case("peer", "copy_", "cuda:2", "cuda:0", (4,)), FakeBenchmark(calls=1), backend)
        assert info["peer_access"] is False
        assert backend.syncs()[:2] == [2, 0]
        assert next(c for c in backend.calls if c[0] == "events")[1] == 2

    def test_a_stuck_peer_copy_fails_its_case_and_skips_later_ones_on_its_gpus(self, monkeypatch):
        """A peer copy whose synchronize never completes (IOMMU/ACS) raises Wedged at its deadline;
        later cases on either GPU are skipped with the reason, while cases elsewhere still run."""
        cpu_stand_in(monkeypatch)
        monkeypatch.setattr(transfers, "_WEDGED", {})
        monkeypatch.setattr(timing, "DEADLINE_FLOOR_S", 0.01)
        backend = FakeBackend(gpus=3, stuck=True)
        peer = Case("peer", "copy_", "cuda:0", "cuda:1", (4,))
        with pytest.raises(Wedged, match="cuda:0 still had its copy queued"):
            run_case(peer, FakeBenchmark(calls=1), backend)
        assert ("wait", 0, timing.copy_deadline(16)) in backend.calls
        assert transfers._WEDGED == {"cuda:0": peer.id, "cuda:1": peer.id}
        assert ("empty_cache",) not in backend.calls  # freeing memory would wait for the stuck copy
        with pytest.raises(CannotRun, match=f"cuda:1 has a stuck copy from {peer.id}"):
            run_case(Case("d2d", "clone", "cuda:1", "cuda:1", (4,)), FakeBenchmark(calls=1), backend)
        backend.stuck = False  # synchronizes without a deadline would hang; cuda:2's never wait
        assert run_case(Case("d2d", "clone", "cuda:2", "cuda:2", (4,)), FakeBenchmark(calls=1), backend)

    def test_only_peer_copies_wait_with_a_deadline(self, monkeypatch):
        """Other copies keep the plain synchronize whose cost their figures hold."""
        cpu_stand_in(monkeypatch)
        backend = FakeBackend(gpus=2)
        run_case(Case("d2d", "clone", "cuda:1", "cuda:1", (4,)), FakeBenchmark(calls=1), backend)
        assert {c[0] for c in backend.calls} & {"wait", "synchronize"} == {"synchronize"}
        before = len(backend.calls)
        run_case(Case("peer", "copy_", "cuda:0", "cuda:1", (4,)), FakeBenchmark(calls=1), backend)
        assert {c[0] for c in backend.calls[before:]} & {"wait", "synchronize"} == {"wait"}

    def test_a_faulted_peer_copy_marks_its_gpus_as_a_stuck_one_does(self, monkeypatch):
        """A copy that faulted leaves a sticky CUDA error, which the event's query raises: the case fails with
        CUDA's reason and its GPUs are refused to later cases, as after a stuck copy; nothing is freed."""
        cpu_stand_in(monkeypatch)
        monkeypatch.setattr(transfers, "_WEDGED", {})
        backend = FakeBackend(gpus=3, fault=True)
        peer = Case("peer", "copy_", "cuda:0", "cuda:1", (4,))
        with pytest.raises(Wedged, match=r"^cuda:0: a CUDA error on its stream \(CUDA error: an illegal memory"):
            run_case(peer, FakeBenchmark(calls=1), backend)
        assert transfers.wedged() == {"cuda:0": peer.id, "cuda:1": peer.id}
        assert ("empty_cache",) not in backend.calls

    def test_a_fault_under_a_plain_synchronize_marks_the_gpu_too(self, monkeypatch):
        cpu_stand_in(monkeypatch)
        monkeypatch.setattr(transfers, "_WEDGED", {})
        case = Case("d2d", "clone", "cuda:2", "cuda:2", (4,))
        with pytest.raises(Wedged, match=r"^cuda:2: a CUDA error on its stream"):
            run_case(case, FakeBenchmark(calls=1), FakeBackend(gpus=3, fault=True))
        assert transfers.wedged() == {"cuda:2": case.id}

    def test_a_fault_in_a_scenario_marks_its_gpus_too(self, monkeypatch):
        """A scenario synchronizes plainly; the sticky error its synchronize raises marks its GPU as a copy's does."""
        import dataclasses

        from xferbench.measure.families import base, registry, scenario

        monkeypatch.setattr(transfers, "_WEDGED", {})
        monkeypatch.setattr(scenario, "missing_cuda", lambda devices: None)  # the fake GPU counts as one
        case = next(c for c in registry.plan("sync_stall", ["cpu", "cuda:0"], "quick")
                    if isinstance(c, scenario.Scenario))
        family = registry.SCENARIO_FAMILIES[case.op]
        monkeypatch.setitem(registry.SCENARIO_FAMILIES, case.op,
                            dataclasses.replace(family, prepare=lambda c, sync: base.Prepared(sync)))
        with pytest.raises(Wedged, match=r"^cuda:0: a CUDA error on its stream"):
            registry.run(case, FakeBenchmark(calls=1), FakeBackend(gpus=1, fault=True))
        assert transfers.wedged() == {"cuda:0": case.id}

    def test_after_a_stuck_copy_no_memory_is_given_back_anywhere(self, monkeypatch):
        """cudaFree synchronizes implicitly, and torch's empty_cache frees on every device: once a copy is
        stuck, a later case elsewhere (here one that runs out of memory, whose handler frees) would hang on it."""
        monkeypatch.setattr(transfers, "_WEDGED", {})
        backend = FakeBackend(gpus=3)
        backend.wedged_streams.add(0)
        transfers.mark_wedged(["cuda:0", "cuda:1"], "peer-copy_-4B")

        def oom(case, backend=None):
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.00 GiB")

        monkeypatch.setattr(transfers, "prepare", oom)
        with pytest.raises(CannotRun, match="out of memory"):
            run_case(Case("d2d", "clone", "cuda:2", "cuda:2", (256,)), FakeBenchmark(), backend)
        assert ("empty_cache",) not in backend.calls

    def test_after_a_stuck_copy_the_pinned_cache_is_kept(self, monkeypatch):
        """cudaFreeHost synchronizes implicitly too: the pinned host cache emptied between families (and before
        a NUMA or all-GPU case) would wait for the stuck copy for ever."""
        from xferbench.measure.session import run_state

        monkeypatch.setattr(transfers, "_WEDGED", {})
        backend = FakeBackend(gpus=2)
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
        monkeypatch.setattr(torch.accelerator, "empty_host_cache", backend.empty_host_cache)
        run_state.empty_pinned_cache()
        assert backend.calls == [("empty_host_cache",)]  # emptied while nothing is stuck
        backend.wedged_streams.add(1)
        transfers.mark_wedged(["cuda:0", "cuda:1"], "peer-copy_-4B")
        run_state.empty_pinned_cache()
        assert backend.calls == [("empty_host_cache",)]

    @pytest.mark.parametrize(("case", "rule"), [
        (Case("peer", "copy_", "cuda:0", "cuda:1", (4,)), "event_poll"),
        (Case("d2d", "clone", "cuda:1", "cuda:1", (4,)), "synchronize"),
        (Case("h2d", "to", "cpu", "cuda:0", (4,), host_memory="pinned"), "synchronize"),
        (Case("host", "clone", "cpu", "cpu", (4,), host_memory="pageable"), None),
        (Case("noop", "to", "cuda:0", "cuda:0", (4,)), None),
    ], ids=lambda v: getattr(v, "id", str(v)))
    def test_each_row_says_how_its_calls_were_synchronized(self, monkeypatch, case, rule):
        """A peer copy ends each call by polling an event with a deadline, the others by a plain synchronize:
        the two cost a call different fixed times, so the row records which (contract.SYNC_RULES); a host or
        bare case has none."""
        cpu_stand_in(monkeypatch)
        info = run_case(case, FakeBenchmark(calls=1), FakeBackend(gpus=2))
        assert info.get("sync_rule") == rule

    def test_not_enough_device_memory_skips(self):
        """A case larger than free device memory cannot run, and says how much it needs."""
        backend = FakeBackend(gpus=1, free=2**30)
        case = Case("d2d", "clone", "cuda:0", "cuda:0", (2**28,))
        with pytest.raises(CannotRun, match=r"needs 5 GiB on cuda:0, 1 GiB free"):
            run_case(case, FakeBenchmark(), backend)

    def test_out_of_memory_becomes_a_skip(self, monkeypatch):
        """An OOM raised while running frees memory and turns into CannotRun."""
        def oom(case, backend=None):
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.00 GiB")

        monkeypatch.setattr(transfers, "prepare", oom)
        with pytest.raises(CannotRun, match="out of memory at 1KiB: CUDA out of memory"):
            run_case(Case("d2d", "clone", "cuda:0", "cuda:0", (256,)), FakeBenchmark(), FakeBackend(gpus=1))

    def test_other_errors_propagate(self, monkeypatch):
        """Errors that are not OOM are real failures, not skips."""
        monkeypatch.setattr(transfers, "prepare", lambda case, backend=None: (_ for _ in ()).throw(RuntimeError("bad")))
        with pytest.raises(RuntimeError, match="bad"):
            run_case(HOST_COPY, FakeBenchmark(), FakeBackend())


def test_bytes_needed_counts_both_ends():
    """Source and destination devices are each charged for what lives there, the
    pattern built to verify against included."""
    case = Case("h2d", "to", "cpu", "cuda:0", (256,), host_memory="pageable")
    assert bytes_needed(case) == {"cpu": 2048, "cuda:0": 2048 + 1024 + 127 * 8}


def test_bytes_needed_counts_the_pattern_of_small_dtypes():
    """For int8, pattern() holds one period of int32 and of int8 besides the payload: an
    estimate that forgets them lets a case start that then runs out of memory."""
    case = Case("h2d", "to", "cpu", "cuda:0", (256,), "int8", host_memory="pageable")
    assert bytes_needed(case) == {"cpu": 256 + 127 * 5, "cuda:0": 2 * 256 + 256 + 127 * 5}


class TestEveryDtype:
    @pytest.mark.parametrize("dtype", sorted(DTYPE_SIZES))
    @pytest.mark.parametrize(("op", "method"), [("create", m) for m in ("empty", "zeros", "ones", "rand")]
                             + [("host", "copy_"), ("host", "clone"), ("noop", "to")])
    def test_runs_or_skips_with_a_reason(self, dtype, op, method, fake_benchmark):
        """Every dtype --xfer-dtypes accepts runs every CPU case, except rand of an integer
        type, which torch has no kernel for: a skip that says so, not a failed run."""
        case = Case(op, method, "cpu", "cpu", (6,), dtype, "pageable" if op == "host" else None)
        if op == "create" and method == "rand" and not getattr(torch, dtype).is_floating_point:
            with pytest.raises(CannotRun, match=f"torch.rand has no {dtype} kernel"):
                run_case(case, fake_benchmark, FakeBackend())
        else:
            assert run_case(case, fake_benchmark, FakeBackend())["dtype"] == dtype


class TestTimedCall:
    @pytest.mark.parametrize("case", [
        Case("noop", "to", "cpu", "cpu", (4,)), Case("noop", "cpu", "cpu", "cpu", (4,)),
        HOST_COPY, Case("host", "clone", "cpu", "cpu", (4,)), Case("create", "zeros", "cpu", "cpu", (4,)),
    ], ids=lambda c: c.id)
    def test_no_python_frame_around_the_call(self, case):
        """The timed call is bound with functools.partial (or is the bound method): a lambda
        adds a Python frame per call, about a quarter of a CPU no-op's figure."""
        op = operation(case, prepare(case))
        assert not isinstance(op, types.FunctionType), op
        assert isinstance(op, functools.partial | types.BuiltinMethodType | types.MethodWrapperType), type(op)

    def test_noop_to_is_timed_in_the_form_its_case_names(self):
        """.to(torch.device) is the plain case, .to('cpu') with a string its "str" variant: torch parses the string on
        every call, and users write strings (312 ns against 207 ns on the H200 sample's host)."""
        plain = operation(Case("noop", "to", "cpu", "cpu", (4,)), prepare(Case("noop", "to", "cpu", "cpu", (4,))))
        case = Case("noop", "to", "cpu", "cpu", (4,), variant="str")
        text = operation(case, prepare(case))
        assert plain.args == (torch.device("cpu"),) and type(plain.args[0]) is torch.device
        assert text.args == ("cpu",) and type(text.args[0]) is str
        assert case.id == "to-16B-float32-str-cpu"

    def test_gpu_noop_is_timed_bare(self, monkeypatch):
        """A no-op enqueues nothing: no synchronize in its warm-up or timed calls, no events;
        only the verification call outside the timed region synchronizes."""
        cpu_stand_in(monkeypatch)
        backend = FakeBackend(gpus=1)
        info = run_case(Case("noop", "cuda", "cuda:0", "cuda:0", (4,)), FakeBenchmark(calls=5), backend)
        assert backend.syncs() == [0]
        assert not [c for c in backend.calls if c[0] == "events"]
        assert "device_seconds" not in info

    def test_sync_times_the_synchronize_alone(self):
        """The sync family's call is one synchronize of its device, timed bare."""
        backend = FakeBackend(gpus=2)
        run_case(Case("sync", "synchronize", "cuda:1", "cuda:1", (1,)), FakeBenchmark(calls=5), backend)
        # 3 warm-up + 5 timed calls, each one synchronize; then the verification call's own
        # call and the synchronize after it.
        assert backend.syncs() == [1] * (3 + 5 + 2)


class TestOutOfMemory:
    def test_memory_is_given_back_after_the_buffers_are_released(self, monkeypatch):
        """When an OOM is handled, the buffers the failed call held are gone before the
        cache is emptied; emptied inside the handler, the traceback would still hold them."""
        alive_at_empty_cache = []
        buffers = []

        def run_out(case, benchmark, backend, *_):
            big = torch.ones(1024)
            buffers.append(weakref.ref(big))
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.00 GiB")

        class Backend(FakeBackend):
            def empty_cache(self):
                alive_at_empty_cache.append(buffers[0]() is not None)

        monkeypatch.setattr(transfers, "_run", run_out)
        with pytest.raises(CannotRun, match="out of memory"):
            run_case(Case("d2d", "clone", "cuda:0", "cuda:0", (256,)), FakeBenchmark(), Backend(gpus=1))
        assert alive_at_empty_cache == [False]


def test_noop_statistics_are_per_call(fake_benchmark):
    """A no-op is timed NOOP_CALLS calls per iteration; the figures kept are per call."""
    fake_benchmark.stats.stats.data[:] = [d * transfers.NOOP_CALLS for d in (2e-7, 3e-7, 4e-7)]
    run_case(Case("noop", "to", "cpu", "cpu", (4,)), fake_benchmark, FakeBackend())
    assert fake_benchmark.stats.stats.median == pytest.approx(3e-7)
    assert fake_benchmark.stats.iterations == transfers.NOOP_CALLS


class TestFaultsPerCall:
    def test_faults_counted_over_calls_of_their_own(self, monkeypatch, fake_benchmark):
        """The ru_minflt delta over the counting calls, divided by them: a call that faults 7 pages
        records 7.0, whatever the timed calls did."""
        from xferbench.measure.hardware import faults

        counter = {"faults": 0}
        monkeypatch.setattr(faults, "minor_faults", lambda: counter["faults"])
        real = transfers.operation

        def faulting(case, buffers, backend=None):
            op = real(case, buffers, backend)

            def call():
                counter["faults"] += 7
                return op()
            return call

        monkeypatch.setattr(transfers, "operation", faulting)
        info = run_case(Case("host", "clone", "cpu", "cpu", (16,)), fake_benchmark, FakeBackend())
        assert info["minor_faults_per_call"] == 7.0

    @pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_minflt counts page faults on Linux")
    def test_a_fresh_mapping_faults_its_pages_in(self):
        """Measured for real: 64 MiB is above glibc's largest mmap threshold (32 MiB), so each
        allocation is a fresh mapping and touching it faults at least once per 2 MiB huge page;
        writing into memory already touched faults (almost) nothing."""
        from xferbench.measure.hardware.faults import faults_per_call

        reused = torch.empty(2**24)
        reused.fill_(0)
        assert faults_per_call(lambda: torch.empty(2**24).fill_(1), 3) >= 32
        assert faults_per_call(lambda: reused.fill_(1), 3) < 32

    def test_counted_calls_fit_the_budget(self):
        """As many calls as fit 50 ms: a slow call (thousands of faults) once, a tiny one 100 times."""
        assert (fault_calls(1.0), fault_calls(1e-3), fault_calls(1e-9), fault_calls(None)) == (1, 50, 100, 1)

    def test_simulated_copies_record_no_faults(self):
        """A simulated accelerator's copy only charges a clock: faults of its calls would be none of
        the copy's. A host case on the simulated machine, and a real device case, record them."""
        assert not transfers.counts_faults("h2d", ("cpu", "cuda:0"), simulated=True)
        assert transfers.counts_faults("h2d", ("cpu", "cuda:0"), simulated=False)
        assert transfers.counts_faults("host", ("cpu",), simulated=False)
        assert not transfers.counts_faults("noop", ("cpu",), simulated=False)
        assert not transfers.counts_faults("d2d", ("cuda:0",), simulated=False)

    def test_device_cases_that_touch_the_host_record_faults(self, monkeypatch):
        cpu_stand_in(monkeypatch)
        case = Case("d2h", "cpu", "cuda:0", "cpu", (256,), host_memory="pageable")
        assert "minor_faults_per_call" in run_case(case, FakeBenchmark(calls=2), FakeBackend(gpus=1))
        same_device = Case("d2d", "clone", "cuda:0", "cuda:0", (256,))
        assert "minor_faults_per_call" not in run_case(same_device, FakeBenchmark(calls=2), FakeBackend(gpus=1))


class TestSingleThread:
    def test_the_call_runs_on_one_thread_and_the_count_is_restored(self, monkeypatch, fake_benchmark):
        """The single_thread host copy runs (warm-up, timed and counted calls) with one intra-op
        thread; the thread count is what it was afterwards, also for the cases that follow."""
        seen = []
        real = transfers.operation

        def recording(case, buffers, backend=None):
            op = real(case, buffers, backend)
            return lambda: seen.append(torch.get_num_threads()) or op()

        monkeypatch.setattr(transfers, "operation", recording)
        before = torch.get_num_threads()
        torch.set_num_threads(2)
        try:
            case = Case("host", "copy_", "cpu", "cpu", (16,), host_memory="pageable", variant="single_thread")
            info = run_case(case, fake_benchmark, FakeBackend())
            assert set(seen[:-1]) == {1} and torch.get_num_threads() == 2
            assert info["variant"] == "single_thread" and info["method"] == "copy_" and info["op"] == "host"
            seen.clear()
            run_case(HOST_COPY, fake_benchmark, FakeBackend())
            assert set(seen) == {2}
        finally:
            torch.set_num_threads(before)


class TestDeviceTimeMethod:
    def test_blocking_pinned_copy_is_timed_by_its_nonblocking_twin(self, monkeypatch):
        """Without a profiler, the events enclose the non-blocking twin's calls, and the row says so."""
        ran = cpu_stand_in(monkeypatch)
        backend = FakeBackend(gpus=1)
        case = Case("h2d", "to", "cpu", "cuda:0", (256,), host_memory="pinned")
        info = run_case(case, FakeBenchmark(calls=2), backend)
        twin = Case("h2d", "to", "cpu", "cuda:0", (256,), host_memory="pinned", non_blocking=True)
        assert info["device_time_method"] == "nonblocking_twin" and info["device_seconds"] == backend.event_s
        assert ran[-info["device_repeats"] - 1:-1] == [twin.id] * info["device_repeats"]  # then verified

    def test_nonblocking_copy_is_timed_by_events_around_itself(self, monkeypatch):
        ran = cpu_stand_in(monkeypatch)
        case = Case("d2h", "to", "cuda:0", "cpu", (256,), host_memory="pinned", non_blocking=True)
        info = run_case(case, FakeBenchmark(calls=2), FakeBackend(gpus=1))
        assert info["device_time_method"] == "events" and set(ran) == {case.id}

    def test_a_copy_into_fresh_pinned_memory_is_timed_into_one_pinned_buffer(self, monkeypatch):
        """.to('cpu', non_blocking=True) pins a fresh block each call, and back to back behind the spin none is
        free again: 40 x 256 MiB of cudaHostAlloc in one case. Its device time is the same copy into one pinned
        buffer pinned once for the case, and the row says so."""
        ran = cpu_stand_in(monkeypatch)
        backend = FakeBackend(gpus=1)
        case = Case("d2h", "to", "cuda:0", "cpu", (256,), host_memory="pinned", non_blocking=True)
        info = run_case(case, FakeBenchmark(calls=2), backend)
        assert info["device_time_stand_in"] == "pinned_destination" and info["device_time_method"] == "events"
        assert info["device_seconds"] == backend.event_s
        assert len(ran) == 3 + 2 + fault_calls(1e-3) + 1  # warm-up, timed, faults counted, verified: never in a window
        assert [c for c in backend.calls if c[0] == "pin_memory"] == [("pin_memory",)]
        for own in (dataclasses.replace(case, method="copy_"), dataclasses.replace(case, non_blocking=False)):
            assert "device_time_stand_in" not in run_case(own, FakeBenchmark(calls=2), backend)  # their own call

    def test_a_profiler_that_records_the_copy_is_preferred(self, monkeypatch):
        cpu_stand_in(monkeypatch)
        backend = FakeBackend(gpus=1, profile_s=4e-6)
        case = Case("d2h", "copy_", "cuda:0", "cpu", (256,), host_memory="pinned")
        info = run_case(case, FakeBenchmark(calls=2), backend)
        assert (info["device_seconds"], info["device_time_method"]) == (4e-6, "profiler")


#: A session on two fake GPUs whose peer copies never complete: tensors live on the host, as a simulated
#: GPU's do, and the deadline is cut to a hundredth of a second.
STUCK_CONFTEST = """
pytest_plugins = ("xferbench.measure.session.plugin",)
from fakes import FakeBackend
from xferbench.measure import timing

timing.DEADLINE_FLOOR_S = 0.01

class StuckPeers(FakeBackend):
    def tensor_device(self, device):
        return "cpu"

    def wait(self, index, seconds):
        self.stuck = True  # only peer copies wait with a deadline
        return super().wait(index, seconds)

def pytest_xfer_make_backend(config):
    return StuckPeers(gpus=2)
"""

STUCK_BENCH = """
import pytest

@pytest.mark.xfer("peer")
def test_peer(xfer_case, xfer):
    xfer(xfer_case)

@pytest.mark.xfer("host")
def test_zz_host(xfer_case, xfer):
    xfer(xfer_case)

@pytest.mark.xfer("all_gpus_host")
def test_zz_all_gpus(xfer_case, xfer):
    xfer(xfer_case)
"""


def test_a_stuck_peer_copy_fails_in_one_journal_line_and_the_session_goes_on(pytester, monkeypatch):
    """The first peer case fails at its deadline with a one-line reason in the journal; the other
    peer cases, and the copies of every GPU at once, are skipped (their GPUs are stuck), the host cases
    still run, and the session ends."""
    # The run is in this process: what it marks stuck, and the deadline its conftest cuts, end with this test.
    monkeypatch.setattr(transfers, "_WEDGED", {})
    monkeypatch.setattr(timing, "DEADLINE_FLOOR_S", timing.DEADLINE_FLOOR_S)
    pytester.makeconftest(STUCK_CONFTEST)
    pytester.makepyfile(test_stuck_session=STUCK_BENCH)  # not test_run: tests/test_run.py may be imported already
    result = pytester.runpytest("--xfer-devices=cpu,cuda:0,cuda:1", "--xfer-sizes=4B", "--benchmark-max-time=0.001",
                                "--benchmark-json=run.json", "-p", "no:cacheprovider", "-rs")
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] == 1 and outcomes["passed"] >= 1 and outcomes["skipped"] >= 1
    lines = [json.loads(line) for line in (pytester.path / "run.journal.jsonl").read_text().splitlines()]
    (failed,) = [line["failed"] for line in lines if "failed" in line]
    assert "test_peer" in failed["test"]
    assert re.fullmatch(r".*: cuda:\d still had its copy queued after 0 s: a wedged copy .*; later cases on it "
                        r"are skipped", failed["reason"])
    stuck = [line for line in result.outlines if "has a stuck copy from" in line]
    assert any("copy_-4B-float32-cuda:1->cuda:0: cuda:1 has" in line for line in stuck)
    assert any("h2d_all-64MiB-cpu->all:cuda: cuda:0 has" in line for line in stuck)
    assert "end" in lines[-1]
    assert (pytester.path / "run.json").exists()
    assert set(transfers._WEDGED) == {"cuda:0", "cuda:1"}


class TestSimulatedCasesShareTheirBuffers:
    """On a simulated machine the timed calls touch no data, so a case's real cost is its buffers: cases of
    one shape in a row build the pattern once per role, and the verification still catches a bad copy."""

    @pytest.fixture
    def sim(self, monkeypatch):
        from xferbench.measure.simulate import PATHS, SimBackend, parse_spec

        built = []
        original = transfers.pattern
        monkeypatch.setattr(transfers, "pattern", lambda *a: built.append(a) or original(*a))
        transfers._KEPT.clear()
        spec = parse_spec({"gpus": 4, "sync_us": 5.0, "dispatch_ns": 400, "launch_us": 4.0,
                           "paths": {p: {"alpha_us": 2.0, "GBps": 10.0} for p in PATHS}})
        yield SimBackend(spec), built
        transfers._KEPT.clear()

    def peer_cases(self, method, shape=(1000,)):
        return [Case("peer", method, f"cuda:{s}", f"cuda:{d}", shape) for s in range(4) for d in range(4) if s != d]

    @pytest.mark.parametrize("method", ["to", "copy_"])
    def test_every_pair_of_one_size_builds_two_patterns_in_all(self, sim, method):
        """The source and the expected pattern, once for the 12 pairs (the old harness built 24 of each)."""
        backend, built = sim
        for case in self.peer_cases(method):
            run_case(case, FakeBenchmark(calls=2), backend)
        assert len(built) == 2
        run_case(Case("peer", method, "cuda:0", "cuda:1", (2000,)), FakeBenchmark(calls=2), backend)
        assert len(built) == 4  # a new size: a new source and pattern

    def test_one_host_call_is_verified_once(self, sim, monkeypatch):
        """Pairs that differ in their endpoints alone run the same host call on the same buffers: verified
        once; another method, blocking mode or size is another call."""
        backend, _ = sim
        verified = []
        real = transfers.verify
        monkeypatch.setattr(transfers, "verify", lambda case, *a, **k: verified.append(case.id) or real(case, *a, **k))
        for case in self.peer_cases("to") + self.peer_cases("copy_"):
            run_case(case, FakeBenchmark(calls=1), backend)
        run_case(Case("peer", "to", "cuda:0", "cuda:1", (1000,), non_blocking=True), FakeBenchmark(calls=1), backend)
        run_case(Case("peer", "to", "cuda:0", "cuda:1", (10,)), FakeBenchmark(calls=1), backend)
        assert verified == ["blocking-to-4000B-float32-cuda:0->cuda:1", "blocking-copy_-4000B-float32-cuda:0->cuda:1",
                            "nonblocking-to-4000B-float32-cuda:0->cuda:1", "blocking-to-40B-float32-cuda:0->cuda:1"]

    def test_a_bad_copy_still_fails_every_case(self, sim, monkeypatch):
        """Kept buffers make no case unable to fail: a copy that drops one element fails each pair."""
        backend, _ = sim
        real = transfers.operation

        def dropping(case, buffers, backend=None):
            op = real(case, buffers, backend)
            return lambda: op().index_fill_(0, torch.tensor([7]), -1)

        monkeypatch.setattr(transfers, "operation", dropping)
        for case in self.peer_cases("to")[:3]:
            with pytest.raises(CopyMismatch, match=r"at 1 of 1000 elements \(first at index 7\)"):
                run_case(case, FakeBenchmark(calls=1), backend)

    def test_a_move_that_hands_back_its_source_fails(self, sim, monkeypatch):
        """Both ends of a simulated copy are host memory, where the source holds the pattern as well: a move
        that returns the source itself, not a copy, must fail there too."""
        backend, _ = sim
        monkeypatch.setattr(transfers, "operation", lambda case, buffers, backend=None: lambda: buffers.src)
        with pytest.raises(CopyMismatch, match="the source's own memory, not a copy"):
            run_case(self.peer_cases("to")[0], FakeBenchmark(calls=1), backend)

    def test_copy_destination_starts_zeroed(self, sim):
        """copy_'s kept destination is zeroed for each case, as a fresh one is."""
        backend, _ = sim
        case = self.peer_cases("copy_")[0]
        first = transfers.prepare(case, backend)
        first.dst.fill_(5)
        again = transfers.prepare(case, backend)
        assert again.dst is first.dst and not again.dst.any()

    def test_a_case_that_runs_for_real_gives_the_kept_buffers_back(self, sim):
        backend, _ = sim
        run_case(self.peer_cases("to")[0], FakeBenchmark(calls=1), backend)
        assert transfers._KEPT._tensors
        run_case(HOST_COPY, FakeBenchmark(calls=1), backend)
        assert not transfers._KEPT._tensors

from xferbench.measure.timing import device_seconds, event_device, synchronized

from fakes import FakeBackend


class TestSynchronized:
    def test_host_only_is_the_function_itself(self):
        """No accelerator involved: nothing is wrapped, nothing is synchronized."""
        backend = FakeBackend(gpus=2)

        def fn():
            return 1

        assert synchronized(fn, ("cpu",), backend) is fn
        assert backend.calls == []

    def test_every_involved_device_after_each_call(self):
        """A peer copy synchronizes both devices after every call, in order."""
        backend = FakeBackend(gpus=3)
        order = []
        call = synchronized(lambda: order.append("op") or "result", ("cuda:2", "cuda:0"), backend)
        assert call() == "result"
        assert call() == "result"
        assert backend.syncs() == [2, 0, 2, 0]

    def test_h2d_syncs_only_the_device(self):
        """cpu -> cuda:1 synchronizes cuda:1 only (not the current device)."""
        backend = FakeBackend(gpus=2)
        synchronized(lambda: None, ("cpu", "cuda:1"), backend)()
        assert backend.syncs() == [1]


class TestDeviceTime:
    def test_events_on_source_device_for_peer(self):
        """Peer copies are timed on the source device's stream."""
        assert event_device("cuda:1", "cuda:0") == 1
        assert event_device("cpu", "cuda:2") == 2
        assert event_device("cuda:3", "cpu") == 3
        assert event_device("cpu", "cpu") is None

    def test_median_and_synchronized_around(self):
        """Device time is the events' median, with both devices idle before and after."""
        backend = FakeBackend(gpus=2, event_s=2e-6)
        assert device_seconds(lambda: None, "cuda:0", "cuda:1", backend, repeats=7) == 2e-6
        assert backend.calls == [("synchronize", 0), ("synchronize", 1), ("events", 0, 7),
                                 ("synchronize", 0), ("synchronize", 1)]

    def test_host_case_has_no_device_time(self):
        assert device_seconds(lambda: None, "cpu", "cpu", FakeBackend(gpus=1), 3) is None

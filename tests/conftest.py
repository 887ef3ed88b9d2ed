import contextlib
import os
import time

import pytest

# Loaded before any test, so that pytester's in-process runs keep them: such a run unloads every module
# it imported itself, and numpy's extensions (reached through scipy by the analysis side) cannot be
# loaded twice in one process ("cannot load module more than once per process"), which failed whichever
# in-process run came second to import them.
import scipy.optimize
import scipy.stats  # noqa: F401
import torch  # noqa: F401
from hypothesis import HealthCheck, settings

from fakes import FakeBackend, FakeBenchmark
from processes import become_subreaper, kill_tree, live_children

# The test command's verdict is a function of the code: each property test draws the same examples every run (seeded
# from the test itself), as many as it always has, with no clock in the verdict (no deadline, no "too slow" check).
# Exploring is apart: `tox -e fuzz` (--hypothesis-profile=fuzz) draws fresh examples, 5x as many
# (hostile_inputs.examples scales each test's own count).
settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("fuzz", max_examples=500, deadline=None, print_blob=True)
settings.load_profile("ci")  # --hypothesis-profile, read after this file, replaces it

#: How long a test's child processes get to finish exiting after the test, before they count as left behind.
EXIT_GRACE_S = 30.0


def _left_behind(before: dict[int, str]) -> dict[int, str]:
    """Children not in ``before`` that are still running after the grace period."""
    deadline = time.monotonic() + EXIT_GRACE_S
    while (left := {pid: cmd for pid, cmd in live_children().items() if pid not in before}) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def _end(processes: dict[int, str]) -> None:
    """Kill what a test left behind, with all below it, so that it cannot disturb the tests after it."""
    for pid in processes:
        kill_tree(pid)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


@pytest.fixture(autouse=True)
def no_process_outlives_its_test():
    """A test that leaves a child process running fails, naming it, and the child is ended: a helper rank
    or a pytest run left behind would otherwise load the machine, hold ports, or hang a later test."""
    before = live_children()
    yield
    left = _left_behind(before)
    if left:
        _end(left)
        pytest.fail("the test left child processes running (ended now): "
                    + "; ".join(f"{pid}: {cmd}" for pid, cmd in left.items()), pytrace=False)


#: What a pytest-xdist worker has in its environment, which the pytest sessions a test starts must not inherit:
#: pytest-benchmark reads PYTEST_XDIST_WORKER as "under xdist" and then refuses --benchmark-only.
XDIST_ENVIRONMENT = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


def pytest_configure(config: pytest.Config) -> None:
    for name in XDIST_ENVIRONMENT:
        os.environ.pop(name, None)
    # Orphans (a torchrun rank whose launcher was killed) are handed to this process, where the
    # guards below see them, instead of to init, where they would run on unseen.
    become_subreaper()


@pytest.hookimpl(trylast=True)  # under pytest-xdist: after the controller has shut its workers down
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Session- and module-scoped fixtures end their children too: none may outlive the test session."""
    if hasattr(session.config, "workerinput"):
        # A pytest-xdist worker cannot fail the run from here (its exit status is already sent). What it
        # leaves behind is handed, when it exits, to the controller (a subreaper too), which checks below.
        return
    left = _left_behind({})
    if left:
        _end(left)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        print("\nchild processes left running at the end of the tests (ended now): "
              + "; ".join(f"{pid}: {cmd}" for pid, cmd in left.items()))


@pytest.fixture
def fake_benchmark() -> FakeBenchmark:
    return FakeBenchmark()


@pytest.fixture(params=[0, 1, 3], ids=lambda n: f"{n}gpu")
def fake_backend(request: pytest.FixtureRequest) -> FakeBackend:
    return FakeBackend(gpus=request.param)

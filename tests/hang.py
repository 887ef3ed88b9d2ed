"""A guard for tests whose failure mode is a hang (a FIFO opened for reading, a stuck loader)."""

import contextlib
import signal


@contextlib.contextmanager
def no_hang(seconds: int = 60):
    """Fail, rather than wait forever, if the block blocks (SIGALRM interrupts a blocking open)."""
    def hung(signum, frame):
        raise AssertionError(f"still running after {seconds} s: it hangs")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)

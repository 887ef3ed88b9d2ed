"""Synchronizing an idle device: ``torch.cuda.synchronize(i)`` with nothing queued.
What a caller pays who wraps every no-op or small move in a synchronize."""

import pytest


@pytest.mark.xfer("sync")
def test_sync(xfer_case, xfer):
    xfer(xfer_case)

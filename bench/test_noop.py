"""``.cuda(i)``, ``.to(device)`` and ``.cpu()`` on a tensor already there: the same
object comes back and nothing is copied; what is left is PyTorch's dispatch cost."""

import pytest


@pytest.mark.xfer("noop")
def test_noop(xfer_case, xfer):
    xfer(xfer_case)

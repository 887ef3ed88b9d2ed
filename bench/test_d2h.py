"""Device to host: ``.cpu()`` / ``.to('cpu')`` into fresh pageable memory, and
``copy_`` into preallocated pageable or pinned buffers (pinned also non-blocking)."""

import pytest


@pytest.mark.xfer("d2h")
def test_d2h(xfer_case, xfer):
    xfer(xfer_case)

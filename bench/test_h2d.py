"""Host to device: pageable vs pinned sources, blocking vs ``non_blocking=True``,
allocating (``.to``, ``.cuda``) vs preallocated (``dst.copy_(src)``)."""

import pytest


@pytest.mark.xfer("h2d")
def test_h2d(xfer_case, xfer):
    xfer(xfer_case)

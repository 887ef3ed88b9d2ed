"""Device i to device j for every ordered pair i != j (NVLink or PCIe peer, or staged)."""

import pytest


@pytest.mark.xfer("peer")
def test_peer(xfer_case, xfer):
    xfer(xfer_case)

"""Tensor creation on each device: ``torch.empty/zeros/ones/rand(..., device=d)``.

Every tensor is created on the CPU unless a device is given; these create directly
on the device, so nothing crosses a link.
"""

import pytest


@pytest.mark.xfer("create")
def test_create(xfer_case, xfer):
    xfer(xfer_case)

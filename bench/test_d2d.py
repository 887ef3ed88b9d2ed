"""Copies within one device (``clone``, ``copy_``): the device's memory bandwidth."""

import pytest


@pytest.mark.xfer("d2d")
def test_d2d(xfer_case, xfer):
    xfer(xfer_case)

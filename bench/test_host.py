"""Host-memory copies (``clone``, ``copy_``): the reference every machine can measure."""

import pytest


@pytest.mark.xfer("host")
def test_host(xfer_case, xfer):
    xfer(xfer_case)

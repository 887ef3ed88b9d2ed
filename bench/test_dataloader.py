"""dataloader: a DataLoader feeding the GPU, per batch from next() until the batch is on the device
(pin_memory, num_workers, non_blocking), the loader alone, worker start-up and the first batch."""

import pytest


@pytest.mark.xfer("dataloader")
def test_dataloader(xfer_case, xfer):
    xfer(xfer_case)

"""dataloader: an input pipeline as a training loop runs it. On the first GPU, per training step, the share of it
the GPU waits for input with each option (workers, pin_memory, non_blocking, prefetch_factor, a side stream); to the
host, the loader alone, start-up, first batch and short epochs (persistent_workers, start methods)."""

import pytest


@pytest.mark.xfer("dataloader")
def test_dataloader(xfer_case, xfer):
    xfer(xfer_case)

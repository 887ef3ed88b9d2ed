"""What users ask about moving data, each a scenario family (``op`` = its name in the data contract).

- batching: 1024 x 4 KiB ``.to(device)`` against ``torch.cat`` then one copy, and one copy of a
  contiguous 4 MiB buffer.
- copy_overlap: a non-blocking pinned host-to-device copy on a side stream while a kernel runs,
  against the kernel and the copy in sequence on one stream (and each alone).
- state_dict: ``{k: v.cpu()}`` of a module's ``state_dict()`` against ``.to('cpu', non_blocking=True)``
  and one synchronize.

Each needs an accelerator (skipped with a reason on a CPU-only machine); on a simulated machine
(``--xfer-simulate``) each is priced in the spec's terms, its rows labelled simulated.
"""

import pytest


@pytest.mark.xfer("batching")
def test_batching(xfer_case, xfer):
    xfer(xfer_case)


@pytest.mark.xfer("copy_overlap")
def test_copy_overlap(xfer_case, xfer):
    xfer(xfer_case)


@pytest.mark.xfer("state_dict")
def test_state_dict(xfer_case, xfer):
    xfer(xfer_case)

""".to('cpu', non_blocking=True) with its results freed and kept (``xferbench.families.d2h_kept``): the caching host
allocator's block handed back against a fresh pinned allocation each call of a first pass, a second pass, a kept
result given back, and .cpu() freed and kept. Needs an accelerator (skipped with a reason on a CPU-only machine); on
a simulated machine (``--xfer-simulate``) it is priced in the spec's terms, its rows labelled simulated.
"""

import pytest


@pytest.mark.xfer("d2h_kept")
def test_d2h_kept(xfer_case, xfer):
    xfer(xfer_case)

"""``.cpu()`` taken apart (``xferbench.measure.families.d2h_registered``): ``.cpu()``, ``copy_`` into a touched
pageable buffer, into the same kind of buffer registered with the driver (``cudaHostRegister``), and into
pinned memory. Needs an accelerator (skipped with a reason on a CPU-only machine); on a simulated machine
(``--xfer-simulate``) it is priced in the spec's terms, its rows labelled simulated.
"""

import pytest


@pytest.mark.xfer("d2h_registered")
def test_d2h_registered(xfer_case, xfer):
    xfer(xfer_case)

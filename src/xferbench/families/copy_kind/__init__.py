"""copy_kind: a contiguous same-dtype move (one DMA or memcpy) against a strided source or a
dtype-converting ``.to()`` (a kernel, or a host-side copy first).

Its record and what the report says about it (torch-free); what it runs is ``run.py``.
"""

from __future__ import annotations

from ..base import Family

RECORD = Family("copy_kind", "Copy engine against kernel copies", ".to() of a contiguous same-dtype tensor against a strided "
                "or a dtype-converting one", "concurrent", "tab:cyan",
                caption="memcpy: a contiguous, same-dtype move is one DMA (or memcpy). strided: a non-dense view is first "
                        "made contiguous (on the host, in pageable memory; on the device, by a kernel). convert: .to(dev, "
                        "float16) converts on the CPU when blocking, on the GPU after a float32 copy when non_blocking. "
                        "Bytes are the source's, counted once.")

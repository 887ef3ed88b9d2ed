"""copy_kind: a contiguous same-dtype move (one DMA or memcpy) against a strided source or a
dtype-converting ``.to()`` (a kernel, or a host-side copy first).

Its record and what the report says about it (torch-free); what it runs is ``run.py``.
"""

from __future__ import annotations

from ..base import ChangeSpec, Family

RECORD = Family("copy_kind", "Copy engine against kernel copies", ".to() of a contiguous same-dtype tensor against a strided "
                "or a dtype-converting one", "concurrent", "tab:cyan",
                staged=("convert", "strided"),  # blocking: converted or made contiguous on the host first
                changes=(ChangeSpec("convert-on-gpu-after-copy", "Convert dtype on the GPU",
                                    "y = x.to(device, torch.float16)", "y = x.to(device, torch.float16, non_blocking=True)",
                                    {"op": "copy_kind", "variant": "convert"},
                                    {"op": "copy_kind", "variant": "convert_nonblocking"},
                                    "x pinned: non_blocking converts on the GPU (holding x as float32), blocking on the "
                                    "CPU; write x after synchronizing"),),
                caption="memcpy: a contiguous, same-dtype move is one DMA (or memcpy). strided: a non-dense view is first "
                        "made contiguous (on the host, in pageable memory; on the device, by a kernel). convert: .to(dev, "
                        "float16) converts on the CPU when blocking, on the GPU after a float32 copy when non_blocking. "
                        "Bytes are the source's, counted once.")

"""Copies at once, copy paths and NUMA placement (``xferbench.measure.families``).

- bidir: host-to-device and device-to-host at once on two streams of each GPU, and alone;
- all_gpus_host: every GPU copying from (or to) the host at once, next to one GPU alone;
- copy_kind: contiguous same-dtype ``.to()`` (one DMA / memcpy) against a strided source
  and a dtype-converting ``.to()``;
- numa: pinned copies with the host buffer on the GPU's NUMA node and on another one;
- peer_bidir: GPU a to GPU b and b to a at once, and each alone, for the pairs the peer plan sweeps;
- peer_all: every GPU copying to the next one at once (a ring).
"""

import pytest


@pytest.mark.xfer("bidir")
def test_bidir(xfer_case, xfer):
    xfer(xfer_case)


@pytest.mark.xfer("all_gpus_host")
def test_all_gpus_host(xfer_case, xfer):
    xfer(xfer_case)


@pytest.mark.xfer("copy_kind")
def test_copy_kind(xfer_case, xfer):
    xfer(xfer_case)


@pytest.mark.xfer("numa")
def test_numa(xfer_case, xfer):
    xfer(xfer_case)


@pytest.mark.xfer("peer_bidir")
def test_peer_bidir(xfer_case, xfer):
    xfer(xfer_case)


@pytest.mark.xfer("peer_all")
def test_peer_all(xfer_case, xfer):
    xfer(xfer_case)

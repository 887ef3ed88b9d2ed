"""Scenarios from the lesson, each a family with ``op`` = its name in the data contract.

- module_to: ``net.to(device)`` for nn.Sequential stacks of Linear layers, first move
  (copies every parameter) and again (nothing to copy, every parameter still walked).
- forward: ``net(X)`` with net and X on the same device.
- sync_stall: ``.item()``, ``.cpu()``, ``.tolist()``, ``str(t)`` behind 2 ms of queued
  GPU work, next to a ``non_blocking`` copy into pinned memory completed by an event.
- pin_memory: ``t.pin_memory()`` cold (host cache emptied first) and cached, and
  ``t.to(dev)`` against pin-then-move and a reused pinned buffer.
- placement: uint8 image batches that must become normalized float32 on the device:
  convert on the CPU then move 4x the bytes, or move uint8 and convert there.
- cuda_vs_to: ``.cuda(i)``, ``.to('cuda:i')``, ``.to(torch.device)``, ``non_blocking``,
  and ``Module.to`` against ``Module.cuda``.
"""

import pytest


@pytest.mark.xfer("module_to")
def test_module_to(xfer_case, xfer):
    xfer(xfer_case)


@pytest.mark.xfer("forward")
def test_forward(xfer_case, xfer):
    xfer(xfer_case)


@pytest.mark.xfer("sync_stall")
def test_sync_stall(xfer_case, xfer):
    xfer(xfer_case)


@pytest.mark.xfer("pin_memory")
def test_pin_memory(xfer_case, xfer):
    xfer(xfer_case)


@pytest.mark.xfer("placement")
def test_placement(xfer_case, xfer):
    xfer(xfer_case)


@pytest.mark.xfer("cuda_vs_to")
def test_cuda_vs_to(xfer_case, xfer):
    xfer(xfer_case)

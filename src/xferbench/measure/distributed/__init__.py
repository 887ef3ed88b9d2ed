"""Transfers between processes and nodes with torch.distributed.

Four modules, one job each:

- ``operations``: the cases (ops, sizes, pairs of ranks by the link they cross), each
  rank's buffers, the timed call, the check of what was delivered, bus factors;
- ``world``: the ranks (device ownership, rendezvous, node names, faults), the timing
  of every round on every rank, and the 2-rank world inside pytest;
- ``torchrun``: ``torchrun ... -m xferbench.distributed``, validated up front, writing
  a pytest-benchmark JSON;
- ``watch``: each rank's heartbeat in the store and deadline per step, so that a world
  that hangs (NCCL raises nothing) still names the rank and writes what finished;

with ``options`` holding the profile record and the option table both front-ends share.
"""

from .errors import DistributedError, VerificationError
from .operations import DIST_OPS, DistCase, build_dist_cases, bus_factor, calls_for, world_backend
from .options import PROFILES
from .pytest_world import World, free_port
from .torchrun import main

__all__ = [
    "DIST_OPS",
    "PROFILES",
    "DistCase",
    "DistributedError",
    "VerificationError",
    "World",
    "build_dist_cases",
    "bus_factor",
    "calls_for",
    "free_port",
    "main",
    "world_backend",
]

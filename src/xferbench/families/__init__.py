"""Every benchmark family, in report order: one line a family.

In the spirit of nvbandwidth's ``createTestcases()`` and pyperf's ``OPERATIONS``: a scenario or concurrent
family is one folder here (``<op>/__init__.py``: its record and the report's sentences, torch-free;
``<op>/run.py``: its plan, sizes, preparation and simulated price, what the measuring side runs), named once
below. The core and distributed families are tables of records (``core.py``, ``distributed.py``); what a
record is and the helpers every stage calls are ``base.py``. Adding one is docs/contributing.md, "Adding a
scenario". Importing this package imports no ``run.py``: the analysis side reads it without torch.
"""

from __future__ import annotations

from . import (
    all_gpus_host,
    batching,
    bidir,
    copy_kind,
    copy_overlap,
    cuda_vs_to,
    d2h_kept,
    d2h_registered,
    dataloader,
    forward,
    module_to,
    numa,
    peer_all,
    peer_bidir,
    pin_memory,
    placement,
    state_dict,
    sync_stall,
)
from .base import (
    FAMILIES,
    KINDS,
    Family,
    Variant,
    by_op,
    family,
    fitted_ops,
    moving_ops,
    ops,
    order_of,
    register,
)
from .core import CORE
from .distributed import DISTRIBUTED

__all__ = [
    "FAMILIES",
    "KINDS",
    "Family",
    "Variant",
    "family",
    "fitted_ops",
    "moving_ops",
    "ops",
    "order_of",
    "register",
]


FAMILIES.update(by_op((
    *CORE,
    module_to.RECORD,
    forward.RECORD,
    sync_stall.RECORD,
    pin_memory.RECORD,
    placement.RECORD,
    cuda_vs_to.RECORD,
    batching.RECORD,
    copy_overlap.RECORD,
    state_dict.RECORD,
    d2h_registered.RECORD,
    d2h_kept.RECORD,
    dataloader.RECORD,
    bidir.RECORD,
    all_gpus_host.RECORD,
    copy_kind.RECORD,
    numa.RECORD,
    peer_bidir.RECORD,
    peer_all.RECORD,
    *DISTRIBUTED,
)))

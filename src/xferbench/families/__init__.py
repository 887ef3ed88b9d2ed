"""Every benchmark family, in report order: one name a family.

In the spirit of nvbandwidth's ``createTestcases()`` and pyperf's ``OPERATIONS``: a scenario or concurrent
family is one folder here (``<op>/__init__.py``: its record and the report's sentences, torch-free;
``<op>/run.py``: its plan, sizes, preparation and simulated price, what the measuring side runs), named once
below. The core and distributed families are tables of records (``core.py``, ``distributed.py``); what a
record is and the helpers every stage calls are ``base.py``. Adding one is docs/contributing.md, "Adding a
scenario". Importing this package imports no ``run.py``: the analysis side reads it without torch.
"""

from __future__ import annotations

from importlib import import_module

from .base import FAMILIES, Family, Variant, by_op, family, fitted_ops, moving_ops, ops, order_of
from .core import CORE
from .distributed import DISTRIBUTED

__all__ = ["FAMILIES", "Family", "Variant", "family", "fitted_ops", "moving_ops", "ops", "order_of"]


#: The scenario and concurrent families, a folder each, in report order (after the core ones, before the
#: distributed); imported by name so that a new family is one word here.
FOLDERS = ("module_to", "forward", "sync_stall", "pin_memory", "placement", "cuda_vs_to", "batching", "copy_overlap",
           "state_dict", "d2h_registered", "d2h_kept", "dataloader", "bidir", "all_gpus_host", "copy_kind", "numa",
           "peer_bidir", "peer_all")
FAMILIES.update(by_op((*CORE, *(import_module(f"{__name__}.{name}").RECORD for name in FOLDERS), *DISTRIBUTED)))

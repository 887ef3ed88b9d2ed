"""xferbench: what creating PyTorch tensors and moving them between devices costs, explained."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["__version__", "try_all_gpus", "try_gpu"]
__version__ = "0.1.0"

if TYPE_CHECKING:
    from .measure.hardware.devices import try_all_gpus, try_gpu


def __getattr__(name: str) -> Any:
    # Lazy, so `import xferbench` (the report side) does not import torch.
    if name in ("try_gpu", "try_all_gpus"):
        import importlib

        # By name, so the analysis side (which imports this package) has no import edge to measure/.
        return getattr(importlib.import_module("xferbench.measure.hardware.devices"), name)
    raise AttributeError(f"module 'xferbench' has no attribute {name!r}")

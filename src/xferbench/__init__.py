"""xferbench: what creating PyTorch tensors and moving them between devices costs, explained."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["__version__", "try_all_gpus", "try_gpu"]
__version__ = "0.1.0"

if TYPE_CHECKING:
    from .devices import try_all_gpus, try_gpu


def __getattr__(name: str) -> Any:
    # Lazy, so `import xferbench` (the report side) does not import torch.
    if name in ("try_gpu", "try_all_gpus"):
        from . import devices

        return getattr(devices, name)
    raise AttributeError(f"module 'xferbench' has no attribute {name!r}")

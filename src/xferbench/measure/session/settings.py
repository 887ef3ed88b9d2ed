"""The run's settings: decided once, when the plugin configures the run, and read by every hook after.

Its own module so that the hooks of ``run_state``, ``estimate`` and the plugin read them alike,
without reaching into the plugin (which loads those modules by name: an import back would be a
circle that neither Python nor import-linter sees).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ...units import Size
from ..cases import PeerPlan
from ..hardware.devices import DeviceBackend

__all__ = ["XferSettings", "configured", "settings", "store"]


@dataclass(frozen=True)
class XferSettings:
    backend: DeviceBackend
    devices: tuple[str, ...]
    sizes: tuple[int | Size, ...]
    dtypes: tuple[str, ...]
    profile: str
    peers: PeerPlan | None = None  # the peer family's pairs (--xfer-peer-pairs); None: every pair


_SETTINGS = pytest.StashKey[XferSettings]()


def store(config: pytest.Config, chosen: XferSettings) -> None:
    config.stash[_SETTINGS] = chosen


def configured(config: pytest.Config) -> bool:
    """Whether the plugin configured this run (not under ``-p no:benchmark``, nor before its pytest_configure)."""
    return _SETTINGS in config.stash


def settings(config: pytest.Config) -> XferSettings:
    return config.stash[_SETTINGS]

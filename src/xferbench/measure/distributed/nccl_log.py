"""What NCCL and torch.distributed were configured with, and what NCCL chose, from NCCL's own log.

A 2x8 run that fell back from InfiniBand to TCP prints normal-looking bus bandwidth: only NCCL's log says
which network and transports it chose. So each nccl rank writes NCCL's INFO log (subsystems INIT, NET and
GRAPH) to a file of its own, and ``summary`` reads it back after the communicator formed. No torch here.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["CONF_LIMIT", "configured", "log_env", "summary"]

#: The most characters of an NCCL configuration file kept in the JSON (a conf file is a few lines).
CONF_LIMIT = 4096

_VERSION = re.compile(r"NCCL INFO NCCL version (\d+\.\d+\.\d+)")
_NETWORK = re.compile(r"NCCL INFO Using network (\w+)")
_VIA = re.compile(r"NCCL INFO Channel \d+(?:/\d+)? : \d+\[\w+\] -> \d+\[\w+\](?: \[\w+\])? via ([A-Za-z0-9_/ ]+?)\s*$")


def summary(text: str) -> dict[str, Any]:
    """NCCL's version, network (``IB``, ``Socket``) and the transports its channels use, each with how many
    channel lines name it (``P2P/IPC``, ``SHM``, ``NET/IB``, ``NET/Socket``), from the INFO lines of ``text``;
    empty where the log says none of it."""
    found: dict[str, Any] = {}
    transports: dict[str, int] = {}
    for line in text.splitlines():
        if (version := _VERSION.search(line)) and "version" not in found:
            found["version"] = version.group(1)
        elif network := _NETWORK.search(line):
            found["network"] = network.group(1)
        elif via := _VIA.search(line):
            transport = _transport(via.group(1))
            transports[transport] = transports.get(transport, 0) + 1
    if transports:
        found["transports"] = dict(sorted(transports.items()))
    return found


def _transport(via: str) -> str:
    """``NET/IB/0/GDRDMA`` -> ``NET/IB``; ``P2P/IPC/read`` -> ``P2P/IPC``; ``SHM/direct/direct`` -> ``SHM``."""
    parts = via.split()[0].split("/")
    return "/".join(parts[:2]) if parts[0] in ("NET", "P2P") and len(parts) > 1 else parts[0]


def log_env(env: Mapping[str, str], folder: Path, rank: int) -> dict[str, str]:
    """The variables that make NCCL write its choices to this rank's file, unless the user set them (their NCCL_DEBUG
    and NCCL_DEBUG_FILE win: nothing is parsed then)."""
    if "NCCL_DEBUG" in env or "NCCL_DEBUG_FILE" in env:
        return {}
    return {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": env.get("NCCL_DEBUG_SUBSYS", "INIT,NET,GRAPH"),
            "NCCL_DEBUG_FILE": str(folder / f"nccl.{rank}.log")}


def configured(env: Mapping[str, str] | None = None, etc: Path = Path("/etc/nccl.conf")) -> dict[str, Any]:
    """torch.distributed's and NCCL's settings outside NCCL_*: TORCH_DISTRIBUTED_DEBUG (DETAIL slows every call),
    TORCH_NCCL_*, and the NCCL configuration files (/etc/nccl.conf, NCCL_CONF_FILE), each cut at CONF_LIMIT."""
    env = os.environ if env is None else env
    files: dict[str, str] = {}
    for path in (etc, *([Path(env["NCCL_CONF_FILE"])] if env.get("NCCL_CONF_FILE") else [])):
        # absent (the usual case) or unreadable: nothing to record
        with contextlib.suppress(OSError), path.open(errors="replace") as conf:
            files[str(path)] = conf.read(CONF_LIMIT)
    return {"torch_env": {k: v for k, v in sorted(env.items())
                          if k == "TORCH_DISTRIBUTED_DEBUG" or k.startswith("TORCH_NCCL_")},
            "nccl_conf": files}

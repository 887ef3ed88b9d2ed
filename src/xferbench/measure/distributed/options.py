"""The distributed profile and options: one table, two front-ends.

``OPTIONS`` lists every setting the two ways of running share (the 2-rank world
inside pytest and the torchrun entry point); ``add_to_pytest`` turns it into
``--xfer-dist-*`` options and ``add_to_argparse`` into the entry point's flags, so a
limit or a default is written once. The parsers validate at the boundary: a bad
value is a usage error naming the flag, before any rank tries to rendezvous.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["OPTIONS", "PROFILES", "Option", "Profile", "positive_int", "positive_seconds", "fraction"]


@dataclass(frozen=True)
class Profile:
    """What ``--xfer-profile`` / ``--profile`` means for the distributed cases."""

    name: str
    sizes: str  # the sweep, in --xfer-sizes syntax
    rounds: int  # rounds per case (each rank times every round)
    warmup: int = 2  # calls made before the first timed round
    plateau: bool = True  # an nccl world sweeps on to the bus-bandwidth plateau (operations.plateau_sizes)
    rails_most: int | None = None  # --pairs rails: the rails other than rank 0's at sizes up to this only


#: ``quick`` keeps the 2-rank world inside a CPU-only run short; ``full`` stops at
#: 64 MiB so a one-GPU full run stays within minutes (``--mem-fraction`` goes further).
PROFILES: dict[str, Profile] = {
    # The world's 44 cases at 4 sizes and 10 rounds were most of a quick CPU run (75 s in all on 2 cores). At 3
    # sizes, 5 rounds each case still has a median, each rank its share of slowest rounds, each op its
    # latency (4B, 1KiB) and bus bandwidth (16MiB), and compare's rank test its smallest sample.
    "quick": Profile("quick", "4B,1KiB,16MiB", rounds=5),
    # 30 rounds of up to 100 calls at 13 sizes were most of the 8-GPU simulated full profile's time (628 of 990 s of
    # its real clock's estimate then); 10 rounds still hold 1,000 calls of a small op, 40 of a large one, and x16 steps
    # (powers of two, as nccl-tests sweeps) still draw the latency, the knee and the bandwidth.
    "full": Profile("full", "4B..64MiB:x16", rounds=10),
    # A cluster's first look, for torchrun: latency (4 B, 1 KiB), the knee and bus bandwidth up to 256 MiB, every op
    # and link at each, but the rails other than rank 0's (--pairs rails) up to 16 MiB: at 256 MiB over Ethernet
    # they alone were priced at 11 min on assumed link speeds.
    "cluster": Profile("cluster", "4B,1KiB,64KiB,1MiB,16MiB,256MiB", rounds=10, plateau=False, rails_most=2**24),
}

#: More rounds than this per case only multiplies the JSON (every rank's time of every round is kept).
MAX_ROUNDS = 10_000


def _parsed(text: str, kind: type[float] | type[int], what: str, ok: Callable[[float], bool], bounds: str) -> Any:
    """``text`` as ``kind``, refused in one line (argparse's exit 2) where it is not ``what`` or not ``bounds``."""
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
    if not (math.isfinite(value) and ok(value)):
        raise argparse.ArgumentTypeError(f"{text!r}: must be {bounds}")
    return value


def positive_seconds(text: str) -> float:
    return _parsed(text, float, "a number of seconds", lambda v: v > 0, "a finite number of seconds above 0")


def positive_int(text: str) -> int:
    return _parsed(text, int, "a whole number", lambda v: 1 <= v <= MAX_ROUNDS, f"between 1 and {MAX_ROUNDS}")


def fraction(text: str) -> float:
    return _parsed(text, float, "a number", lambda v: 0 < v < 1, "a fraction between 0 and 1, e.g. 0.5")


@dataclass(frozen=True)
class Option:
    """One setting: ``--NAME`` for torchrun, ``--xfer-dist-NAME`` inside pytest."""

    name: str
    help: str
    default: Any = None
    parse: Callable[[str], Any] | None = None
    choices: tuple[str, ...] | None = None
    metavar: str | None = None

    @property
    def dest(self) -> str:
        return self.name.replace("-", "_")

    def check(self, text: str) -> Any:
        """``text`` parsed as argparse would (type and choices), or ValueError with argparse's words."""
        if self.choices is not None and text not in self.choices:
            raise ValueError(f"invalid choice: {text!r} (choose from {', '.join(map(repr, self.choices))})")
        try:
            return self.parse(text) if self.parse is not None else text
        except argparse.ArgumentTypeError as error:
            raise ValueError(str(error)) from None

    def kwargs(self) -> dict[str, Any]:
        given = {"type": self.parse, "choices": None if self.choices is None else list(self.choices), "metavar": self.metavar}
        return {"default": self.default, "help": self.help, **{key: value for key, value in given.items() if value is not None}}


OPTIONS: tuple[Option, ...] = (
    Option("backend", "torch.distributed backend: auto (nccl with one GPU per rank; under torchrun, nccl wherever "
           "GPUs are visible, gloo where none is), gloo or nccl",
           "auto", choices=("auto", "gloo", "nccl")),
    Option("timeout", "a rank that dies or never joins ends the run after this many seconds (default: 60)",
           60.0, positive_seconds, metavar="SECONDS"),
    Option("rounds", "timed rounds per case (default: the profile's, 5 quick, 10 full)", None, positive_int,
           metavar="N"),
    Option("mem-fraction", "also scan sizes up to the largest that fits this fraction of free device memory "
           "(host memory for gloo) on every rank, e.g. 0.5 (default: off)", None, fraction, metavar="F"),
)


def add_to_argparse(parser: argparse.ArgumentParser) -> None:
    for option in OPTIONS:
        parser.add_argument(f"--{option.name}", dest=option.dest, **option.kwargs())


def add_to_pytest(group: Any) -> None:
    """``group`` is a pytest OptionGroup (typed loosely: pytest is not imported here).

    Values are checked by ``Option.check`` when pytest configures (the plugin), not by argparse:
    pytest prints argparse's refusal over four lines (usage, error, inifile, rootdir)."""
    for option in OPTIONS:
        kwargs = {key: value for key, value in option.kwargs().items() if key not in ("type", "choices")}
        group.addoption(f"--xfer-dist-{option.name}", dest=f"xfer_dist_{option.dest}", **kwargs)


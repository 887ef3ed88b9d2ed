"""What goes wrong in a world of ranks, as the run tells it: each error's message is one line naming who."""

from __future__ import annotations

__all__ = ["CaseSkipped", "DistributedError", "VerificationError"]


class DistributedError(RuntimeError):
    """The world could not be formed or broke; the message names the rank, host and address."""


class VerificationError(RuntimeError):
    """A collective delivered wrong data; the message names the ranks that hold it."""


class CaseSkipped(RuntimeError):
    """Every rank skipped this case (some rank could not hold it); the message says which and why."""

"""forward: ``net(X)`` with the module and its input on one device.

Its record and what the report says about it (torch-free); what it runs is ``run.py``.
"""

from __future__ import annotations

from ..base import Family

RECORD = Family("forward", "Scenario: a forward pass where the data is (net(X))", "net(X) with net and X on one device",
                "scenario", "tab:cyan", moves_payload=False,
                caption="net and X on the same device; a mismatch is an error (checked_forward says which tensor to move).")

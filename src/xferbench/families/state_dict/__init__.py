"""state_dict: ``{k: v.cpu()}`` of a module's state_dict against ``.to('cpu', non_blocking=True)`` and one
synchronize.

Its record and what the report says about it (torch-free); what it runs is ``run.py``.
"""

from __future__ import annotations

from ..base import Family

RECORD = Family("state_dict", "Scenario: a state_dict() to the CPU",
                "{k: v.cpu()} of a module's state_dict against .to('cpu', non_blocking=True) and one synchronize",
                "scenario", "tab:cyan",
                caption="cpu: every tensor of net.state_dict() copied with .cpu(), one blocking copy into fresh pageable "
                        "memory each; nonblocking: .to('cpu', non_blocking=True) for each (torch returns pinned memory), "
                        "then one synchronize before the tensors are read.")

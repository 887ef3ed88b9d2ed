"""cuda_vs_to: ``.cuda(i)``, ``.to('cuda:i')``, ``.to(torch.device)`` and ``Module.to``/``.cuda``, side by side.

Its record and what the report says about it (torch-free); what it runs is ``run.py``.
"""

from __future__ import annotations

from ..base import Family

# No finding of its own: its calls run the same code, so the drift verdict (report/drift_text.py) judges each size's
# pair by its own interval; a spread per size beside it said "drift" where that verdict says "told apart".
RECORD = Family("cuda_vs_to", "Scenario: .cuda() against .to()", ".cuda(i), .to('cuda:i'), .to(torch.device), Module.to/.cuda",
                "scenario", "tab:cyan",
                caption="Tensor.cuda(i), .to('cuda:i') and .to(torch.device) have the same semantics; what each costs is "
                        "measured below, size by size. "
                        "Module.to and Module.cuda both move parameters in place and return the module itself.",
                same_code=(("variant", ("cuda", "to_str", "to_device"), ".cuda(i), .to('cuda:i') and .to(torch.device)"),
                           ("variant", ("module_to", "module_cuda"), "Module.to and Module.cuda")))

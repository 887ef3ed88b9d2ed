"""Make sure the environment has torch, without replacing one that is there.

tox calls this before the tests and the benchmarks. A GPU box's own torch (a CUDA
or ROCm build, seen through tox's system_site_packages) is used as it is; only
where there is none is ``XFERBENCH_TORCH`` (default ``torch==2.13.0``) installed.
Set ``XFERBENCH_TORCH`` to another requirement, or point pip at a CPU-only index
with ``PIP_INDEX_URL``, to choose the build that gets installed.
"""

import importlib.util
import os
import subprocess
import sys

if importlib.util.find_spec("torch") is None:
    requirement = os.environ.get("XFERBENCH_TORCH", "torch==2.13.0")
    if not requirement.strip() or requirement.lstrip().startswith("-"):
        # pip would read it as an option (or install nothing): refuse it before pip sees it.
        print(f"ensure_torch: XFERBENCH_TORCH={requirement!r} is not a requirement; set it like torch==2.13.0",
              file=sys.stderr)
        sys.exit(2)
    print(f"ensure_torch: no torch in this environment; installing {requirement}", flush=True)
    subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", requirement])
else:
    import torch

    print(f"ensure_torch: using the installed torch {torch.__version__}", flush=True)

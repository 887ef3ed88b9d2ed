"""``python -m xferbench.distributed``: the torchrun entry point (and the pytest world's helper rank).

The code lives in ``xferbench.measure.distributed``; this name is the command users type.
"""

import sys

from .measure.distributed.torchrun import main

if __name__ == "__main__":
    sys.exit(main())

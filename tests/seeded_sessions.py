"""Run the simulated machine's pinned copies once per seed, paired and unpaired, in one process (torch imported once):
``python tests/seeded_sessions.py OUT SEEDS``. tests/test_paired_verdicts.py reads the runs it writes."""

import sys
from pathlib import Path

import pytest

from xferbench.measure.session import summary

#: One GPU whose costs wander 10% (a sine of 60 simulated s) with 2% jitter a cost; d2h pinned priced exactly 1.10x h2d
#: pinned (α and 1/β both 1.1x), the host's own costs next to nothing so that wall time is the copy's.
SPEC = """gpus = 1
sync_us = 0.001
dispatch_ns = 1
launch_us = 0.001
drift = 0.1
noise = 0.02
seed = {seed}
[paths]
h2d_pinned   = {{ alpha_us = 2.0, GBps = 44 }}
h2d_pageable = {{ alpha_us = 6.0, GBps = 20 }}
d2h_pinned   = {{ alpha_us = 2.2, GBps = 40 }}
d2h_pageable = {{ alpha_us = 8.0, GBps = 10 }}
d2d          = {{ alpha_us = 1.5, GBps = 1500 }}
peer         = {{ alpha_us = 3.5, GBps = 300 }}
"""
#: The blocking pinned .to(), .cuda() (the same code) and copy_ of both directions.
CASES = "pinned-blocking-to or pinned-blocking-cuda or pinned-blocking-copy_"


def main(out: Path, seeds: int) -> int:
    summary.summary_lines = lambda _: []  # the end-of-run findings: not what these runs are for
    for seed in range(seeds):
        spec = out / f"spec{seed}.toml"
        spec.write_text(SPEC.format(seed=seed))
        for blocks in ("paired", "1"):
            code = pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:randomly", f"--xfer-simulate={spec}",
                                "--xfer-sizes=64MiB", f"--xfer-blocks={blocks}", "bench/test_h2d.py",
                                "bench/test_d2h.py", "-k", CASES, "--benchmark-only",
                                f"--benchmark-json={out / f'{blocks}-{seed}.json'}"])
            if code != 0:
                return int(code)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), int(sys.argv[2])))

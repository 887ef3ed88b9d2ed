"""xferbench.bench.test_sync, the benchmark shipped in the package (an installed xferbench runs it from any folder):
edit it there; this file lets `pytest bench` run it from a checkout."""

from xferbench.bench.test_sync import *  # noqa: F403

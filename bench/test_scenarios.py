"""xferbench.bench.test_scenarios, the benchmark shipped in the package (an installed xferbench runs it from any folder):
edit it there; this file lets `pytest bench` run it from a checkout."""

from xferbench.bench.test_scenarios import *  # noqa: F403

"""xferbench.bench.test_d2h_registered, the benchmark shipped in the package (an installed xferbench runs it from any
folder): edit it there; this file lets `pytest bench` run it from a checkout."""

from xferbench.bench.test_d2h_registered import *  # noqa: F403

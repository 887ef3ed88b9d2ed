"""Loading runs: pytest-benchmark JSON and journals checked into rows, the per-run cache, storage folders
and their history, the recorded peer plan."""

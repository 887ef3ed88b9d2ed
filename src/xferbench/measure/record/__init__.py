"""What a run writes, below everything that measures: pytest-benchmark's stats and JSON (the adapter) and the
run's journal of finished cases. The pytest session and the timed calls (transfers, the distributed world) both
use them, so they sit under both and no import goes back up."""

"""The pytest session: the plugin and its options, the run's state, the journal, the estimate and the summary."""

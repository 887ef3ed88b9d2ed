"""The pytest session: the plugin and its options, the run's settings and state, the estimate and the summary."""

"""The benchmarks run with xferbench's pytest plugin."""

pytest_plugins = ("xferbench.measure.session.plugin",)

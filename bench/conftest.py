"""The benchmarks run with xferbench's pytest plugin (allowed here: pytest loads this conftest first, as the folder
given, or through --pyargs)."""

pytest_plugins = ("xferbench.measure.session.plugin",)

"""The benchmarks run with xferbench's pytest plugin. Each file here imports its family's benchmark from
``xferbench.bench`` (src/xferbench/bench/), where the benchmarks live once: the installed package carries them."""

pytest_plugins = ("xferbench.measure.session.plugin",)

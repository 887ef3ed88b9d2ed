"""The benchmarks, written once: ``pytest bench --benchmark-only`` runs them from a checkout, and pyproject maps this
folder as the package ``xferbench.bench`` (``package-dir``), so an installed xferbench runs the same files from any
folder (``xferbench run``, ``pytest --pyargs xferbench.bench --benchmark-only``).

One file per family, each test a line: ``@pytest.mark.xfer(op)`` and the ``xfer_case, xfer`` fixtures of the
plugin (``xferbench.measure.session.plugin``), which this folder's ``conftest.py`` loads.
"""

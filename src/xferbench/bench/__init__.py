"""The benchmarks, shipped in the package: ``pytest --pyargs xferbench.bench --benchmark-only`` or ``xferbench run``
measure from any folder; a checkout's ``bench/`` runs these same files (each of its files imports one of these).

One file per family, each test a line: ``@pytest.mark.xfer(op)`` and the ``xfer_case, xfer`` fixtures of the
plugin (``xferbench.measure.session.plugin``), which this folder's ``conftest.py`` loads.
"""

"""The test suite; its layout mirrors the library (``tests/spec/kinds/test_<module>.py`` for
``lie_stats/spec/kinds/<module>.py``, ``tests/report/``, ``tests/stats/``,
``tests/architectures/``; ``tests/test_<module>.py`` for a top-level module), and
``tests/faults/`` holds the fault-injection tests.

Shared test helpers, one home each:

``tests/_spec_cubes.py``
    Planted datasets and cubes with known effects, the resample counts (``FAST``), and spec
    builders for the spec, plugin, export and report tests.
``tests/_cubes.py``
    Model shapes and random shards of every variable.
``tests/_checkpoints.py``
    Tiny seeded Hugging Face checkpoints, runs and hub caches.
``tests/stats/_sim.py``
    Null simulators and the calibration band of the statistics tests.
``tests/architectures/_reproduce.py``
    The attention-reproduction check and the two tests every adapter family runs.

Fixtures are in ``tests/conftest.py`` (checkpoints, the planted datasets, the compressed
cube, no network) and ``tests/report/conftest.py`` (the results the report tests read).
"""

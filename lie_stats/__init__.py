"""lie_stats: pre-registered, testable science about the weight geometry of attention heads.

The data flow: source -> adapter -> head weights -> operators -> metrics -> cube -> store,
and hypothesis module -> selection -> statistical test -> verdict -> report.

The public API, in the style of xarray (``import lie_stats as ls``):

* :func:`extract`: checkpoints (folders, ``hf:`` ids, or model objects in memory) -> a metric
  cube (an ``xarray.Dataset``; a NetCDF file only with ``out=``); :func:`open_cube` reads one,
  :func:`load_dataset` opens a dataset card's cube; :func:`delta_cube`: a run's checkpoints
  -> the cube of their parameter deltas against the first (``lie-stats extract --delta``);
* :class:`HypothesisSpec` (with :class:`Select`, :class:`Prediction`) declares a hypothesis,
  :class:`OutOfScope` a claim not testable here;
* :func:`evaluate` (on a spec's datasets) and :func:`evaluate_cube` (on a cube in hand)
  give a :class:`~lie_stats.spec.Result` with its verdict; :class:`Magnitude` declares the
  size a claim states, :class:`Fidelity` how a test relates to the claim's source;
* :func:`run`: hypothesis modules -> a :class:`ResultsTable` (``.to_dataframe()``), the
  engine of ``lie-stats run`` without pytest;
* :func:`test_kinds`: the registry of test kinds (``lie-stats kinds`` prints it);
* the errors, all subclasses of :class:`LieStatsError`.

The names load on first use, so ``import lie_stats`` (and the pytest plugin, which every
pytest run of the environment loads) stays light.

PYTEST_DONT_REWRITE: the library is not test code, so pytest's assertion rewriting, which
it applies to the package of every plugin it loads, leaves this module as it is. ``lie-stats
run`` starts pytest from inside the package, already imported, where pytest would otherwise
warn that it cannot rewrite it (pytest's documented opt-out, "Disabling assert rewriting").

>>> import lie_stats as ls
>>> sorted(ls.test_kinds())[:3]
['boundary_ratio', 'class_auc', 'class_interaction']
"""

from __future__ import annotations

import importlib
from typing import Any

from ._version import __version__
from .errors import (
    ArchitectureError,
    CheckpointError,
    CubeError,
    LieStatsError,
    MetricError,
    SpecError,
    StatsInputError,
)

#: Public name -> the module that defines it (imported on first access).
_LAZY = {
    "HypothesisSpec": "lie_stats.spec",
    "Select": "lie_stats.spec",
    "Prediction": "lie_stats.spec",
    "Magnitude": "lie_stats.spec",
    "Fidelity": "lie_stats.spec",
    "run": "lie_stats.engine",
    "ResultsTable": "lie_stats.engine",
    "OutOfScope": "lie_stats.spec",
    "evaluate": "lie_stats.spec",
    "evaluate_cube": "lie_stats.spec",
    "test_kinds": "lie_stats.spec",
    "open_cube": "lie_stats.cube",
    "load_dataset": "lie_stats.datasets",
    "extract": "lie_stats.extraction.api",
    "delta_cube": "lie_stats.extraction.delta",
    "DatasetError": "lie_stats.datasets",
    "ProbeError": "lie_stats.extraction.probe",
}

__all__ = [
    "__version__",
    "HypothesisSpec",
    "Select",
    "Prediction",
    "Magnitude",
    "Fidelity",
    "OutOfScope",
    "evaluate",
    "run",
    "ResultsTable",
    "evaluate_cube",
    "open_cube",
    "load_dataset",
    "extract",
    "delta_cube",
    "test_kinds",
    "LieStatsError",
    "CheckpointError",
    "ArchitectureError",
    "MetricError",
    "CubeError",
    "SpecError",
    "StatsInputError",
    "DatasetError",
    "ProbeError",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'lie_stats' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this hook
    return value


def __dir__() -> list[str]:
    return sorted(__all__)

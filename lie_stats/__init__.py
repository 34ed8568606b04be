"""lie_stats: pre-registered, testable science about the weight geometry of attention heads.

See DESIGN.md for the data flow: source -> adapter -> head weights -> operators -> metrics
-> cube -> store, and hypothesis module -> selection -> statistical test -> verdict -> report.
"""

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

__all__ = [
    "__version__",
    "LieStatsError",
    "CheckpointError",
    "ArchitectureError",
    "MetricError",
    "CubeError",
    "SpecError",
    "StatsInputError",
]

"""Exception classes of lie_stats.

Every error names the file, tensor, variable or field at fault and what was expected
(DESIGN.md, conventions). All derive from :class:`LieStatsError` so that callers can
catch the package's errors without catching programming errors.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = [
    "LieStatsError",
    "CheckpointError",
    "ArchitectureError",
    "MetricError",
    "CubeError",
    "SpecError",
    "StatsInputError",
    "did_you_mean",
]


class LieStatsError(Exception):
    """Base class of every error raised on purpose by lie_stats."""


class CheckpointError(LieStatsError):
    """A checkpoint (file or folder) is missing, corrupt, or not what its config says."""


class ArchitectureError(CheckpointError):
    """A config names an architecture no adapter supports, or its tensors do not fit it."""


class MetricError(LieStatsError, KeyError):
    """Unknown or duplicate metric name, or a metric asked of the wrong family."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


class CubeError(LieStatsError):
    """A cube (in memory or NetCDF on disk) breaks the contract of DESIGN.md."""


class SpecError(LieStatsError):
    """A hypothesis module's declaration is malformed (unknown metric, dataset, test, ...)."""


class StatsInputError(LieStatsError, ValueError):
    """Input to a statistical function that no test can be computed on."""


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """Return `` Did you mean 'x'?`` for the closest choice, or an empty string.

    Examples
    --------
    >>> did_you_mean("comutator", ["commutator", "killing"])
    " Did you mean 'commutator'?"
    >>> did_you_mean("zzz", ["commutator"])
    ''
    """
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""

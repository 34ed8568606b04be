"""The verdict of a spec on its selected data: the one place a kind's binding and rule run.

:func:`decide_input` runs the kind's binding on its input (the statistic of
:mod:`lie_stats.stats`) and decides the result row with the kind's rule and the declared
magnitude (:func:`lie_stats.spec.magnitude.decide`); :func:`decide_arrays` first builds that
input (:class:`~lie_stats.spec.tables.TestInput`) from the selected arrays. The evaluation
of a spec on a cube (:func:`lie_stats.spec.evaluation.run_once`) and every simulated draw of
the design diagnosis (:mod:`lie_stats.diagnosis`) call it, so a simulated verdict is decided
exactly as the reported one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import StatsInputError
from .. import columns as C
from .magnitude import decide
from .rules import Decision
from .tables import TestInput

__all__ = ["Decided", "decide_arrays", "decide_input"]


@dataclass(frozen=True)
class Decided:
    """A spec's decision on one input.

    ``verdict`` combines the kind's rule (``direction``) with the declared ``magnitude``;
    ``row`` is the kind's result row (empty when the test is ``undefined`` on the input:
    then the verdict is inconclusive and ``reason`` is the statistic's message); ``ctx`` is
    the decision context the rule read (None when undefined).
    """

    verdict: str
    reason: str
    direction: str
    magnitude: Any
    row: Mapping[str, Any]
    data: TestInput
    ctx: Decision | None
    undefined: bool = False


def decide_input(spec: Any, data: TestInput, *, dataset: str = "") -> Decided:
    """The kind's binding on ``data``, then its rule and the declared magnitude on
    ``dataset`` (:func:`lie_stats.spec.magnitude.decide`), at the alpha of ``data.params``.

    Raises
    ------
    SpecError
        The kind rejects its input (a malformed selection for this kind).
    """
    kind = spec.kind
    try:
        row = kind.run(data)
    except StatsInputError as e:
        return Decided(C.INCONCLUSIVE, str(e), C.INCONCLUSIVE, None, {}, data, None, undefined=True)
    params = data.params
    ctx = Decision(spec.prediction, float(params["alpha"]), dict(spec.reference), params)
    verdict, reason, direction, magnitude = decide(kind, row, ctx, dataset)
    return Decided(verdict, reason, direction, magnitude, row, data, ctx)


def decide_arrays(spec: Any, arrays: Mapping[str, Any], params: Mapping[str, Any], *,
                  dataset: str = "") -> Decided:
    """:func:`decide_input` on the selected ``arrays`` (role -> DataArray) with the
    resolved ``params``."""
    data = TestInput(arrays=arrays, params=params, prediction=spec.prediction,
                     reference=dict(spec.reference), dataset=dataset)
    return decide_input(spec, data, dataset=dataset)

"""Results: :class:`Result`, one hypothesis on one dataset (a row of ``results.json``).

A result carries its verdict and reason, the test's numbers (:data:`lie_stats.schema.STAT_COLUMNS`
and the kind's extra columns), the declaration it came from (selection, parameters,
prediction, reference, hash), its specification curve, and, once the gates have seen it,
the pinned verdict and the test outcome. :meth:`Result.row` is its JSON-ready record.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from .parts import jsonable

__all__ = ["Result", "json_number", "result_for", "NO_DATASET"]

#: The ``dataset`` of an out-of-scope claim's result.
NO_DATASET = "-"


@dataclass
class Result:
    """The outcome of one hypothesis on one dataset (one row of reports/results.json).

    The fields of :data:`lie_stats.schema.RESULT_FIELDS` plus ``source``, ``reason``,
    ``build`` (the command that builds missing data), ``extra`` (the test's other numeric
    columns), the declared ``selection``, ``params`` and ``prediction``, the specification
    curve (one entry per analysis choice), the pinned verdict and hash with the flag
    ``declaration_changed`` and the pytest ``outcome`` (filled in by the plugin), and
    ``data`` (the selected values, for figures; not serialized).
    """

    id: str
    claim: str
    source: str
    dataset: str
    verdict: str
    reason: str
    gate: str
    test: str
    spec_hash: str
    reference: dict[str, Any]
    statistic: float = math.nan
    p_value: float = math.nan
    effect: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    n: float = math.nan
    build: str = ""
    extra: dict[str, float] = field(default_factory=dict)
    selection: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    prediction: dict[str, Any] = field(default_factory=dict)
    spec_curve: list[dict[str, Any]] = field(default_factory=list)
    module: str = ""
    notes: str = ""
    pinned_verdict: str | None = None
    pinned_hash: str | None = None
    declaration_changed: bool = False
    outcome: str = ""
    data: Any = field(default=None, repr=False)

    @property
    def key(self) -> str:
        """Registry key: ``<id>::<dataset>``."""
        return f"{self.id}::{self.dataset}"

    @property
    def spec_curve_share(self) -> float:
        """Share of the non-skipped analysis choices whose verdict equals this one (NaN if none)."""
        done = [c for c in self.spec_curve if c["verdict"] != "skipped"]
        if not done:
            return math.nan
        return sum(c["verdict"] == self.verdict for c in done) / len(done)

    @property
    def spec_curve_supported(self) -> float:
        """Share of the non-skipped analysis choices whose verdict is ``supported`` (NaN if none)."""
        done = [c for c in self.spec_curve if c["verdict"] != "skipped"]
        if not done:
            return math.nan
        return sum(c["verdict"] == "supported" for c in done) / len(done)

    def row(self) -> dict[str, Any]:
        """The JSON-ready record (full precision; NaN as None)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "data":
                continue
            out[f.name] = json_number(getattr(self, f.name))
        out["spec_curve_share"] = json_number(self.spec_curve_share)
        out["spec_curve_supported"] = json_number(self.spec_curve_supported)
        if out["n"] is not None and float(out["n"]).is_integer():
            out["n"] = int(out["n"])  # a count
        return out


def json_number(value: Any) -> Any:
    """``value`` with numpy numbers as Python ones and non-finite floats as None (JSON null).

    >>> json_number({"a": np.float64(1.5), "b": [float("nan"), np.int64(2)]})
    {'a': 1.5, 'b': [None, 2]}
    """
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return v if math.isfinite(v) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, Mapping):
        return {k: json_number(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_number(v) for v in value]
    return value


def result_for(spec: Any, dataset: str, verdict: str, reason: str) -> Result:
    """A :class:`Result` of ``spec`` on ``dataset`` with its declaration filled in and no
    numbers yet."""
    return Result(
        id=spec.id, claim=spec.claim, source=spec.source, dataset=dataset, verdict=verdict,
        reason=reason, gate=spec.gate, test=spec.test, spec_hash=spec.spec_hash(),
        reference=jsonable(spec.reference),
        selection={k: v.declaration() for k, v in spec.selection.items()},
        params=jsonable(spec.resolved_params()), prediction=spec.prediction.declaration(),
        module=spec.module, notes=spec.notes,
    )

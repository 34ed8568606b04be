"""Results: :class:`Result`, one hypothesis on one dataset (a row of ``results.json``).

A result carries its verdict and reason, the test's numbers (:data:`lie_stats.columns.STAT_COLUMNS`
and the kind's extra columns), the declaration it came from (selection, parameters,
prediction, reference, hash), its magnitude against the claim's figure
(:mod:`lie_stats.spec.magnitude`), its one-sentence ``finding``, its multiplicity family,
its specification curve, and, once the gates have seen it, the pinned verdict and the test
outcome. :meth:`Result.row` is its JSON-ready record.

Specification curve. Each analysis choice records its ``estimand``: the operator
compression of its selections (``"none"`` for exact operators, ``"adaptive"``,
``"fixed:64"``; None for variables without one). Exact and compressed operators are
different estimands (the A10 control), so the shares count only the choices of the main
analysis's estimand; the others form their own curves (``spec_curve_by_estimand``). A
choice that is inconclusive by construction is ``dropped`` with the reason and counted in
no share: the test is undefined on its data, or its exact permutation null has too few
arrangements for any p below alpha. ``spec_curve_n`` is the denominator of the shares.

Multiplicity. Each result belongs to a family (its spec's ``multiplicity_family``, by
default the claim id before the first "-": "A3" for A3, A3-runs, A3-pythia), across the
datasets of a run. In a family of more than one test, every result but the family's
declared primary (``HypothesisSpec.primary``, at most one per dataset) is decided at the
level Holm's procedure gives it within the family (:func:`family_adjusted_p`): its rule runs
at ``alpha * p / p_holm``, so its ``p_value`` passes exactly when the Holm-adjusted p is below
alpha, and its refuting tail and any other p the rule reads are held to the same level; a
supported verdict whose adjusted p is not below alpha is inconclusive whatever decided it
(:func:`lie_stats.spec.evaluation.decide_in_family`). ``multiplicity["decided_by"]`` says
what decided: ``"primary"`` (the family's primary, on its raw p), ``"holm"`` (the adjusted
p), ``"raw"`` (a family of one test: its raw p is the family's) or ``"none"`` (no p decided:
an interval rule, the magnitude, or no decision). :func:`assign_multiplicity` also records
each result's Holm-adjusted ``p_value`` (``p_adjusted``) and the family's size.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np

from .. import columns as C
from .magnitude import NOT_DECLARED, finding, qualifier
from .parts import jsonable

__all__ = ["Result", "json_number", "result_for", "NO_DATASET", "claim_family", "assign_multiplicity",
           "family_adjusted", "family_adjusted_p", "is_p_column", "MULTIPLICITY_METHOD", "curve_shares",
           "DECIDED_BY"]

#: Values of ``multiplicity["decided_by"]`` (see the module docstring).
DECIDED_BY = ("primary", "holm", "raw", "none")

#: The adjustment within a claim's family (family-wise error, Holm 1979).
MULTIPLICITY_METHOD = "holm"

#: The ``dataset`` of an out-of-scope claim's result.
NO_DATASET = "-"


@dataclass(frozen=True)
class Result:
    """The outcome of one hypothesis on one dataset (one row of reports/results.json).

    A result is an immutable value: each later stage (the gate, the diagnosis, the test
    outcome) makes a new one with :meth:`evolve`; setting an attribute raises
    ``dataclasses.FrozenInstanceError``.

    The fields of :data:`lie_stats.columns.RESULT_FIELDS` plus ``source``, ``reason``,
    ``build`` (the command that builds missing data), ``extra`` (the test's other numeric
    columns), the declared ``selection``, ``params`` and ``prediction``, the specification
    curve (one entry per analysis choice), the pinned verdict and hash with the flag
    ``declaration_changed``, the pin the last re-pinning replaced (``previous_pin``), the pin's
    record of changes to the declaration or rule (``pin_history``, oldest first), the
    gate's ``outcome`` (as pytest's outcome of its item), the design ``diagnosis``
    (:mod:`lie_stats.diagnosis`; None until the engine attaches it, and then a row field), and
    ``data`` (the selected values, for figures; not serialized), and ``fidelity``
    (``{"status": "as_stated" | "proxy", "differs": [...]}``, the declaration's
    :class:`~lie_stats.spec.parts.Fidelity`: how the test relates to the source's design).
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
    fidelity: dict[str, Any] = field(default_factory=lambda: {"status": "as_stated", "differs": []})
    magnitude: dict[str, Any] = field(default_factory=lambda: {
        "status": "not_tested", "estimate": None, "reference": None, "band": None, "reason": NOT_DECLARED})
    finding: str = ""
    multiplicity: dict[str, Any] = field(default_factory=dict)
    estimand: str | None = None
    pinned_verdict: str | None = None
    pinned_hash: str | None = None
    declaration_changed: bool = False
    previous_pin: dict[str, Any] | None = None
    pin_history: list[dict[str, str]] | None = None
    outcome: str = ""
    diagnosis: dict[str, Any] | None = None
    data: Any = field(default=None, repr=False, compare=False)
    undefined: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        if not self.multiplicity:
            object.__setattr__(self, "multiplicity", {
                "family": claim_family(self.id), "method": MULTIPLICITY_METHOD,
                "p_adjusted": None, "decided_by": "none"})
        if not self.finding and self.verdict in (C.SKIPPED, "out_of_scope"):
            object.__setattr__(self, "finding", finding(self.verdict, self.verdict, self.reason, {},
                                                        self.prediction, self.magnitude))

    def evolve(self, **changes: Any) -> "Result":
        """A new result with ``changes`` applied (this one is left as it is).

        >>> r = Result(id="X1", claim="c", source="s", dataset="d", verdict="skipped", reason="r",
        ...            gate="report", test="t", spec_hash="h", reference={})
        >>> r.evolve(outcome="skipped").outcome, r.outcome
        ('skipped', '')
        """
        return replace(self, **changes)

    @property
    def key(self) -> str:
        """Registry key: ``<id>::<dataset>``."""
        return f"{self.id}::{self.dataset}"

    @property
    def qualifier(self) -> str:
        """What qualifies the verdict: ``"magnitude undetermined"`` for a supported direction
        whose interval only overlaps the claim's band (:func:`lie_stats.spec.magnitude.qualifier`),
        else ``""``."""
        return qualifier(self.verdict, self.magnitude)

    def _counted(self) -> list[dict[str, Any]]:
        """The choices the shares count: not skipped, not dropped, of the main estimand."""
        return [c for c in self.spec_curve if c["verdict"] != C.SKIPPED and not c.get("dropped")
                and c.get("estimand", self.estimand) == self.estimand]

    @property
    def spec_curve_n(self) -> int:
        """The denominator of the shares: choices not skipped, not dropped, of the main estimand."""
        return len(self._counted())

    @property
    def spec_curve_share(self) -> float:
        """Share of the counted analysis choices (:attr:`spec_curve_n`) whose verdict equals
        this one (NaN if none)."""
        return curve_shares(self._counted(), self.verdict)[0]

    @property
    def spec_curve_supported(self) -> float:
        """Share of the counted analysis choices whose verdict is ``supported`` (NaN if none)."""
        return curve_shares(self._counted(), self.verdict)[1]

    @property
    def spec_curve_by_estimand(self) -> dict[str, dict[str, Any]]:
        """One curve per estimand (compression): ``{"n", "share", "supported", "dropped"}``,
        ``share`` against this result's verdict; keyed ``"-"`` for choices without one."""
        out: dict[str, dict[str, Any]] = {}
        for c in self.spec_curve:
            key = str(c.get("estimand", self.estimand) or "-")
            out.setdefault(key, {"choices": [], "dropped": 0})
            if c.get("dropped"):
                out[key]["dropped"] += 1
            elif c["verdict"] != C.SKIPPED:
                out[key]["choices"].append(c)
        curves = {}
        for key, v in out.items():
            share, supported = curve_shares(v["choices"], self.verdict)
            curves[key] = {"n": len(v["choices"]), "share": share, "supported": supported,
                           "dropped": v["dropped"]}
        return curves

    def row(self) -> dict[str, Any]:
        """The JSON-ready record (full precision; NaN as None)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name in ("data", "undefined") or (f.name == "diagnosis" and not self.diagnosis):
                continue
            out[f.name] = json_number(getattr(self, f.name))
        out["spec_curve_share"] = json_number(self.spec_curve_share)
        out["spec_curve_supported"] = json_number(self.spec_curve_supported)
        out["spec_curve_n"] = self.spec_curve_n
        out["qualifier"] = self.qualifier
        out["spec_curve_by_estimand"] = json_number(self.spec_curve_by_estimand)
        if out[C.N] is not None and float(out[C.N]).is_integer():
            out[C.N] = int(out[C.N])  # a count
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


def curve_shares(choices: list[dict[str, Any]], verdict: str) -> tuple[float, float]:
    """Shares of ``choices`` whose verdict equals ``verdict``, and that are ``supported``
    (NaN, NaN when there are none).

    >>> curve_shares([{"verdict": "supported"}, {"verdict": "inconclusive"}], "supported")
    (0.5, 0.5)
    """
    if not choices:
        return math.nan, math.nan
    n = len(choices)
    return (sum(c["verdict"] == verdict for c in choices) / n,
            sum(c["verdict"] == C.SUPPORTED for c in choices) / n)


def claim_family(ident: str) -> str:
    """The default multiplicity family of a result: its claim id before the first "-".

    >>> claim_family("A3-normalized"), claim_family("B5")
    ('A3', 'B5')
    """
    return str(ident).split("-", 1)[0]


def _family_of(record: Mapping[str, Any]) -> str:
    mult = record.get("multiplicity") or {}
    return str(mult.get("family") or claim_family(record.get("id", "")))


def family_adjusted(records: list[dict[str, Any]], method: str = MULTIPLICITY_METHOD) -> list[float | None]:
    """Each record's p adjusted within its family (:func:`lie_stats.stats.adjust_pvalues`);
    None for skipped results and results without a finite p (they are in no family).

    >>> family_adjusted([{"id": "A3", "verdict": "supported", "p_value": 0.01},
    ...                  {"id": "A3-runs", "verdict": "refuted", "p_value": 0.04},
    ...                  {"id": "B5", "verdict": "inconclusive", "p_value": 0.04}])
    [0.02, 0.04, 0.04]
    """
    from ..stats import adjust_pvalues

    out: list[float | None] = [None] * len(records)
    families: dict[str, list[int]] = {}
    for i, r in enumerate(records):
        p = r.get(C.P_VALUE)
        if r.get("verdict") in (C.SKIPPED, "out_of_scope") or p is None or not math.isfinite(float(p)):
            continue
        families.setdefault(_family_of(r), []).append(i)
    for members in families.values():
        adjusted = adjust_pvalues(np.array([float(records[i][C.P_VALUE]) for i in members]), method=method)
        for i, a in zip(members, adjusted):
            out[i] = float(a)
    return out


def is_p_column(name: str) -> bool:
    """Whether a result column is a p-value (``p_value`` or ``p_*``) that a rule may read.

    >>> is_p_column("p_value"), is_p_column("p_opposite"), is_p_column("n_perm")
    (True, True, False)
    """
    return name == C.P_VALUE or name.startswith("p_")


def family_adjusted_p(results: Sequence[Any], method: str = MULTIPLICITY_METHOD
                      ) -> tuple[dict[str, float | None], dict[str, int]]:
    """Each result's ``p_value`` adjusted within its family, and each family's size.

    A family (``multiplicity["family"]``) holds the results that are neither skipped nor
    out of scope and have a finite ``p_value``; its size is their number (a result without
    a p counts in no family's size and gets ``None``).

    Returns
    -------
    (adjusted, sizes)
        ``adjusted``: result key -> the Holm-adjusted p (or None); ``sizes``: result key ->
        the size of its family (also for results without a p).

    >>> a = Result(id="A3", claim="c", source="s", dataset="d", verdict="supported", reason="r",
    ...            gate="report", test="t", spec_hash="h", reference={}, p_value=0.016)
    >>> b = a.evolve(id="A3-runs", p_value=0.02)
    >>> c = a.evolve(id="A3-agree", p_value=float("nan"))
    >>> adjusted, sizes = family_adjusted_p([a, b, c])
    >>> adjusted, sizes["A3-agree::d"]
    ({'A3::d': 0.032, 'A3-runs::d': 0.032, 'A3-agree::d': None}, 2)
    """
    records = [{"id": r.id, "verdict": r.verdict, C.P_VALUE: r.p_value,
                "multiplicity": r.multiplicity} for r in results]
    adjusted = family_adjusted(records, method)
    sizes: dict[str, int] = {}
    for r, a in zip(records, adjusted):
        if a is not None:
            fam = _family_of(r)
            sizes[fam] = sizes.get(fam, 0) + 1
    return ({r.key: a for r, a in zip(results, adjusted)},
            {r.key: sizes.get(_family_of(rec), 0) for r, rec in zip(results, records)})


def assign_multiplicity(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Fill in each record's ``multiplicity``: ``{"family", "method", "p_adjusted",
    "decided_by"}``, the p adjusted within the record's family (Holm).

    Records are the rows of one run (:meth:`Result.row`); a record without the field gets
    the default family of its id and ``decided_by`` ``"none"``. Returns ``records``.

    >>> recs = assign_multiplicity([{"id": "A3", "verdict": "supported", "p_value": 0.01},
    ...                             {"id": "A3-runs", "verdict": "supported", "p_value": 0.02}])
    >>> [r["multiplicity"]["p_adjusted"] for r in recs], recs[0]["multiplicity"]["family"]
    ([0.02, 0.02], 'A3')
    """
    adjusted = family_adjusted(records, MULTIPLICITY_METHOD)
    for r, a in zip(records, adjusted):
        mult = dict(r.get("multiplicity") or {})
        mult["family"] = _family_of(r)
        mult["method"] = MULTIPLICITY_METHOD
        mult["p_adjusted"] = a
        mult.setdefault("decided_by", "none")
        r["multiplicity"] = mult
    return records


def result_for(spec: Any, dataset: str, verdict: str, reason: str) -> Result:
    """A :class:`Result` of ``spec`` on ``dataset`` with its declaration filled in and no
    numbers yet (magnitude not tested, with the reason)."""
    mag = spec.prediction.magnitude
    magnitude = {"status": "not_tested", "estimate": None, "reference": None, "band": None,
                 "reason": NOT_DECLARED}
    if mag is not None:
        magnitude.update(reference=float(mag.reference), band=[float(mag.low), float(mag.high)],
                         reason=("not evaluated" if verdict == C.SKIPPED
                                 else "the result has no estimate on these data"))
    return Result(
        id=spec.id, claim=spec.claim, source=spec.source, dataset=dataset, verdict=verdict,
        reason=reason, gate=spec.gate, test=spec.test, spec_hash=spec.spec_hash(),
        reference=jsonable(spec.reference),
        selection={k: v.declaration() for k, v in spec.selection.items()},
        params=jsonable(spec.resolved_params()), prediction=spec.prediction.declaration(),
        module=spec.module, notes=spec.notes, fidelity=spec.fidelity_record(dataset), magnitude=magnitude,
        multiplicity={"family": spec.multiplicity_family or claim_family(spec.id),
                      "method": MULTIPLICITY_METHOD, "p_adjusted": None, "decided_by": "none"},
        estimand=selection_estimand(spec.selection),
    )


def selection_estimand(selection: Mapping[str, Any]) -> str | None:
    """The operator compression a selection reads (``"none"``, ``"adaptive"``,
    ``"fixed:64"``, several joined by ``"+"``), or None when no variable has one.

    >>> from lie_stats.spec.parts import Select
    >>> selection_estimand({"x": Select("commutator_var", family="Q", projection="adaptive")})
    'adaptive'
    """
    found = sorted({str(sel.projection) for sel in selection.values() if getattr(sel, "projection", None)})
    return "+".join(found) if found else None

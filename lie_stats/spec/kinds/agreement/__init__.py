"""Agreement of a hypothesis's verdict across compressions: ``verdict_agreement``, built
with :func:`compression_agreement`.

The target hypothesis's selection is repeated once per compression (METRICS.md §2), the
target's test and decision rule run on the units every compression has, and the verdicts
are compared. The roles of ``verdict_agreement`` are derived from the target's
(``<role>__c<i>``), for any role any registered kind names, read when a spec is checked.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .... import schema
from ....errors import SpecError, StatsInputError
from .... import columns as C
from ....columns import AGREE_VERDICT, N_OPPOSITE
from ...declaration import HypothesisSpec
from ...magnitude import decide
from ...parts import SWEEP_SELECT, Prediction, check_projection, jsonable, replace
from ...registry import all_roles, get_kind, register_test
from ...rules import Decision, finite
from ...tables import TestInput

__all__ = ["compression_agreement", "compression_tag", "agreement_role", "decide_agreement",
           "VERDICT_CODES", "AGREE_SEP", "AGREE_MAX"]

#: Verdict codes of ``verdict_agreement`` (its effect is the range of these codes).
VERDICT_CODES = {"supported": 1.0, "inconclusive": 0.0, "refuted": -1.0}
#: Separator of a derived role: ``<role>__c<i>`` for the i-th compression.
AGREE_SEP = "__c"
#: Most compressions one agreement compares.
AGREE_MAX = 4


def agreement_role(role: str, i: int) -> str:
    """The derived role of ``role`` under the ``i``-th compression.

    >>> agreement_role("values", 2)
    'values__c2'
    """
    return f"{role}{AGREE_SEP}{i}"


def compression_tag(compression: str) -> str:
    """A compression as a column-name tag (``fixed:64`` -> ``fixed_64``).

    >>> compression_tag("fixed:64"), compression_tag("none")
    ('fixed_64', 'none')
    """
    return re.sub(r"[^A-Za-z0-9]+", "_", str(compression)).strip("_")


def _is_agreement_role(role: str) -> bool:
    """<role>__c<i> for any registered kind's role, i < 4"""
    base, sep, index = role.rpartition(AGREE_SEP)
    return bool(sep) and index.isdigit() and int(index) < AGREE_MAX and base in all_roles()


def _run_verdict_agreement(data: TestInput) -> Any:
    """Evaluate the target's test under each compression on the units every compression
    has (same models, layers, heads and steps), and compare the verdicts: each the target's
    verdict as its own evaluation gives it, its direction and then its declared magnitude on
    this dataset (a supported direction whose estimate lies outside the band is refuted)."""
    import pandas as pd
    import xarray as xr

    p = data.params
    comps = [str(c) for c in p["compressions"]]
    kind = get_kind(p["target_test"])
    roles = sorted({r.rsplit(AGREE_SEP, 1)[0] for r in data.arrays})
    per_comp: list[dict[str, Any]] = [{} for _ in comps]
    for role in roles:
        arrays = xr.align(*(data.arrays[agreement_role(role, i)] for i in range(len(comps))),
                          join="inner")
        ok = np.logical_and.reduce([np.isfinite(a.values) for a in arrays])
        if not ok.any():
            raise StatsInputError(f"verdict_agreement: no unit of selection {role!r} has data under "
                                  f"every compression ({', '.join(comps)}).")
        first = arrays[0]
        mask = xr.DataArray(ok, dims=first.dims,
                            coords={d: first[d] for d in first.dims if d in first.indexes})
        for i, a in enumerate(arrays):
            per_comp[i][role] = a.where(mask)
    prediction = Prediction.from_declaration(p["target_prediction"])
    tparams = dict(p["target_params"])
    reference = dict(p["target_reference"] or {})
    alpha = float(tparams.get("alpha", 0.05))
    out: dict[str, float] = {}
    codes = []
    for i, comp in enumerate(comps):
        sub = TestInput(arrays=per_comp[i], params=tparams, prediction=prediction, reference=reference,
                        dataset=data.dataset)
        try:
            row = kind.run(sub)
            # the target's verdict as its own evaluation gives it: direction, then magnitude
            verdict, *_ = decide(kind, row, Decision(prediction, alpha, reference, tparams), data.dataset)
        except StatsInputError:
            row, verdict = {}, "inconclusive"
        tag = compression_tag(comp)
        codes.append(VERDICT_CODES[verdict])
        out[f"{AGREE_VERDICT}_{tag}"] = VERDICT_CODES[verdict]
        for col in (C.EFFECT, C.CI_LOW, C.CI_HIGH, C.P_VALUE):
            out[f"{col}_{tag}"] = float(row.get(col, math.nan))
    opposite = sum(1 for a, b in itertools.combinations(codes, 2) if a * b < 0)
    head = {C.N: len(comps), C.STATISTIC: float(len(set(codes))), C.P_VALUE: math.nan,
            C.EFFECT: float(max(codes) - min(codes)), C.CI_LOW: math.nan, C.CI_HIGH: math.nan}
    return pd.DataFrame([{**head, **out, N_OPPOSITE: float(opposite)}])


def decide_agreement(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """Refuted only when the compressions reach opposite decisions (one "supported", another
    "refuted", each at the target's alpha); supported when the range of the verdict codes
    (supported +1, inconclusive 0, refuted -1) is within the prediction's bound and some
    verdict is decisive; inconclusive otherwise: every compression inconclusive, a code
    missing, or verdicts that differ only in being decisive (supported or refuted beside
    inconclusive), which the target test's own noise gives at its power.

    Why. The compressions measure one estimand with noise: even when they truly agree, a
    target with power between 0 and 1 is decisive under one and inconclusive under another
    in many data sets (A6's coin flip gave a false "refuted" in 14 % of such cases). Opposite
    decisions are the disagreement a calibrated target rarely produces by chance (each
    direction's error is below alpha).

    >>> from lie_stats.spec import Prediction
    >>> ctx = Decision(Prediction("equivalent", bound=0.5), 0.05, {}, {"compressions": ["none", "fixed:64"]})
    >>> decide_agreement({"effect": 0.0, "verdict_none": 1.0, "verdict_fixed_64": 1.0}, ctx)[0]
    'supported'
    >>> decide_agreement({"effect": 1.0, "verdict_none": 1.0, "verdict_fixed_64": 0.0}, ctx)[0]
    'inconclusive'
    >>> decide_agreement({"effect": 2.0, "verdict_none": 1.0, "verdict_fixed_64": -1.0}, ctx)[0]
    'refuted'
    """
    comps = [str(c) for c in ctx.params.get("compressions") or ()]
    codes = [row.get(f"{AGREE_VERDICT}_{compression_tag(c)}") for c in comps]
    if not codes or not finite(row.get(C.EFFECT), *codes):
        return "inconclusive", "the target's verdict is missing under some compression"
    names = {code: name for name, code in VERDICT_CODES.items()}
    text = "; ".join(f"{c}: {names.get(float(code), code)}" for c, code in zip(comps, codes))
    bound = float(ctx.prediction.bound if ctx.prediction.bound is not None else 0.5)
    values = [float(code) for code in codes]
    if max(values) > 0 and min(values) < 0:
        return "refuted", f"the compressions reach opposite decisions ({text})"
    if all(code == 0.0 for code in values):
        return "inconclusive", f"every compression is inconclusive ({text}): no conclusion to compare"
    if max(values) - min(values) > bound:
        return "inconclusive", (f"the verdicts differ only in being decisive ({text}), which the "
                                f"target test's own noise gives; no opposite decisions")
    return "supported", f"the same conclusion under every compression ({text})"


def compression_agreement(
    target: HypothesisSpec,
    *,
    id: str,
    claim: str,
    source: str,
    compressions: Sequence[str] = ("none", "adaptive", "fixed:64"),
    tolerance: float = 0.5,
    gate: str = "pinned",
    datasets: Sequence[str] | None = None,
    notes: str = "",
) -> HypothesisSpec:
    """A spec testing that ``target``'s verdict is the same under every compression.

    The target's selection is repeated once per compression (roles ``<role>__c<i>``, the
    variable's projection set to the compression); evaluation keeps the units every
    compression has data for, runs the target's test and decision rule on each, and
    compares the verdicts (:func:`decide_agreement`). The target's whole declaration (test,
    resolved parameters, prediction, reference) is part of this spec's parameters, so its
    pre-registration hash changes when the target's does.

    Parameters
    ----------
    target : HypothesisSpec
        The hypothesis whose conclusion must not depend on the compression.
    id, claim, source, gate, notes
        As :class:`HypothesisSpec`.
    compressions : sequence of str
        Two to four compressions (METRICS.md §2); the first is listed first in reports.
    tolerance : float, default 0.5
        Largest range of the verdict codes (supported +1, inconclusive 0, refuted -1) that
        supports agreement: 0.5 demands identical verdicts; 1.5 accepts a decisive verdict
        beside inconclusive ones. Whatever the tolerance, only opposite decisions refute
        (:func:`decide_agreement`).
    datasets : sequence of str, optional
        Default: the target's.

    Returns
    -------
    HypothesisSpec
        Test ``verdict_agreement``, prediction ``equivalent`` within ``tolerance``; the
        target's choices other than ``projection`` become its specification curve.

    Raises
    ------
    SpecError
        The target selects no variable with a projection dimension, too few or too many
        compressions, an unknown compression.

    Examples
    --------
    >>> from lie_stats.spec import HypothesisSpec, Prediction, Select
    >>> t = HypothesisSpec(id="T1", claim="c", source="s", datasets=("toy",), test="trend",
    ...     selection={"values": Select("abelian_fraction", step="all", family="Q", projection="none")},
    ...     prediction=Prediction("positive"), gate="report")
    >>> a = compression_agreement(t, id="T1-agree", claim="same verdict", source="s")
    >>> sorted(a.selection), a.test
    (['values__c0', 'values__c1', 'values__c2'], 'verdict_agreement')
    """
    if not isinstance(target, HypothesisSpec):
        raise SpecError(f"compression_agreement({id!r}): target must be a HypothesisSpec, got "
                        f"{type(target).__name__}.")
    comps = tuple(str(c) for c in compressions)
    if not 2 <= len(comps) <= AGREE_MAX or len(set(comps)) != len(comps):
        raise SpecError(f"compression_agreement({id!r}): expected 2 to {AGREE_MAX} distinct "
                        f"compressions, got {comps!r}.")
    for c in comps:
        check_projection(c, target, "compressions")
    if not any(schema.PROJECTION in schema.VARIABLES[s.metric].dims for s in target.selection.values()):
        raise SpecError(f"compression_agreement({id!r}): target {target.id!r} selects no variable "
                        f"with a projection dimension; its verdict cannot depend on the compression.")
    known = all_roles()
    selection = {}
    for role, sel in target.selection.items():
        if role not in known:
            raise SpecError(f"compression_agreement({id!r}): role {role!r} of target {target.id!r} "
                            f"is not one verdict_agreement knows ({', '.join(known)}).")
        has = schema.PROJECTION in schema.VARIABLES[sel.metric].dims
        for i, comp in enumerate(comps):
            selection[agreement_role(role, i)] = replace(sel, projection=comp) if has else sel
    params = {
        "target_id": target.id, "target_test": target.test,
        "target_params": jsonable(target.resolved_params()),
        "target_prediction": target.prediction.declaration(),
        "target_reference": jsonable(target.reference), "compressions": list(comps),
    }
    choices = {k: v for k, v in target.choices.items()
               if k in SWEEP_SELECT and k != schema.PROJECTION}
    return HypothesisSpec(
        id=id, claim=claim, source=source,
        datasets=tuple(datasets) if datasets is not None else target.datasets,
        selection=selection, test="verdict_agreement", params=params,
        prediction=Prediction("equivalent", bound=float(tolerance)),
        reference={"claim": "identical", "target": target.id}, gate=gate, choices=choices,
        notes=notes,
    )


register_test("verdict_agreement", _run_verdict_agreement, decide_agreement, roles=(),
              role_pattern=_is_agreement_role,
              params={"target_id": None, "target_test": None, "target_params": None,
                      "target_prediction": None, "target_reference": None, "compressions": None},
              required_params=("target_id", "target_test", "target_params", "target_prediction",
                               "target_reference", "compressions"),
              directions=("equivalent",),
              description="the target hypothesis's verdict (its direction, then its declared "
                          "magnitude) under each compression, on the units "
                          "every compression has; supported when the verdict codes agree within "
                          "the bound, refuted only by opposite decisions (build with "
                          "compression_agreement)")

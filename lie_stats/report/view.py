"""What the reports show of the results, as plain data for the templates (``templates/``).

The reports are read claim by claim: results are grouped by their claim (the id up to its
first ``-``: ``A10-eq-af`` belongs to ``A10``), each claim shows one main result on the
first screen, and every result keeps its full details below. The main result is chosen
among the claim's results that were run and test the claim as stated (``fidelity`` status
``as_stated``) when there are any, else among all its results: the result whose id is the
claim's own, else the first that was run and tests the claim's figure, else the first that
was run. A claim led by a proxy says so beside its verdict ("no test as stated", or "test as
stated not run" when one was declared but skipped, with the aspects the proxy differs in). This module decides every word and number
of that view; :mod:`lie_stats.report.templates` only lays them out (escaped by the template
engine for HTML, by :func:`lie_stats.report.text.md_text` for Markdown).

Fields other parts of lie_stats add to a results row are read when present and shown as
``-`` when absent: ``magnitude`` (``status``, ``estimate``, ``reference``, ``band``,
``reason``), ``finding`` (one sentence), ``diagnosis`` (``fpr``, ``power``, ``coverage``,
``type_s``, ``n_sims``, ``seed``, ``reason``, and ``fpr_robust`` with ``robust``, the
false-positive rates under alternative nulls: "not diagnosed under alternative nulls" while
absent) and ``multiplicity`` (``family``, ``method``,
``p_adjusted``, ``decided_by``) and ``fidelity`` (``status``, ``differs``).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from .. import columns as C
from ..diagnosis.calibration import ROBUST_FACTOR
from .text import estimate_text, fmt, reference_text

__all__ = ["VERDICT_ORDER", "P_LEGEND", "GATE_LEGEND", "claim_key", "natural_key", "p_label", "gate_text",
           "outside_interval", "result_view", "claim_views", "summary_counts", "limiting_unit",
           "LIMITING_UNITS", "fidelity_texts", "fidelity_note", "design_flags", "robust_fpr_text",
           "DESIGN_FLAG_CODES", "LOW_POWER", "LOW_COVERAGE", "ROBUST_FPR_FACTOR"]

#: The verdicts in the order the reports count them.
VERDICT_ORDER = tuple(dict.fromkeys((*C.VERDICTS, "out_of_scope")))

#: What each p label of the reports means.
P_LEGEND = {
    "permutation p": "share of the kind's permutations of the data (within strata) giving an effect at "
                     "least as extreme as the one observed",
    "TOST p": "the larger of the two one-sided p-values of an equivalence test: small means the "
              "difference lies inside the bound",
    "bootstrap p": "from the bootstrap distribution of the estimate, against the prediction's value",
    "Wald p": "Wald test of one coefficient of a fitted model",
    "p": "a p-value the kind defines in its own rule (docs/kinds.md); '-' where the kind decides "
         "without one",
}

#: The gate outcomes in words (apart from the verdict).
GATE_LEGEND = {
    "pin held": "the verdict equals the one pinned for this declaration",
    "pin broken": "the verdict, or the declaration, differs from the pinned one",
    "replicated": "a replication gate: the verdict is supported",
    "replication failed": "a replication gate: the verdict is not supported",
    "reported": "a report gate: shown, never fails",
    "not run": "the dataset's cube is absent (skipped)",
    "not checked": "written outside a gated run (no pytest outcome)",
}

#: Kinds whose p-value the row alone does not name.
_P_BY_KIND = {"mixed_model": "Wald p", "correlation_equivalence": "TOST p", "replication": "permutation p"}


#: The unit a kind's test resamples or flips, where it is not what ``n`` counts: the extra
#: column that counts it and its name. ``n`` is what the estimate averages (checkpoints,
#: heads, units); the p-value's resolution and the test's power are those of this unit.
LIMITING_UNITS: Mapping[str, tuple[str, str]] = {
    "trend": ("n_runs", "runs"),  # sign flips over runs; n counts checkpoints
    "iut_equivalence": ("n_replicates", "runs per unit"),  # between-run noise of each unit
    "enrichment": ("n_strata", "clusters"),  # first and last swapped in whole clusters
    "head_mean": ("n_clusters", "clusters"),  # cluster bootstrap and sign flips
    "share_above": ("n_clusters", "clusters"),
    "tost_paired": ("n_clusters", "clusters"),
    "ratio_of_changes": ("n_clusters", "clusters"),  # Fieller's t: df = clusters - strata
    "boundary_ratio": ("n_layers", "layers"),  # layers permuted
    "enrichment_profile": ("n_layers", "layers"),
    "depth_crossover": ("n_layers", "layers"),
}


def limiting_unit(record: Mapping[str, Any]) -> str:
    """The unit that limits a result's test beside its ``n``, as ``"2 runs"`` (``""`` when
    the kind's unit is what ``n`` counts, or the row does not give it): display only, read
    from the row's ``extra`` (:data:`LIMITING_UNITS`; a kind not listed there that reports
    ``n_runs`` is read as limited by its runs).

    >>> limiting_unit({"test": "trend", "n": 17, "extra": {"n_runs": 2}})
    '2 runs'
    >>> limiting_unit({"test": "tost_paired", "n": 12, "extra": {"n_clusters": 12}})
    ''
    >>> limiting_unit({"test": "ratio_of_changes", "n": 96, "extra": {"df": 14, "n_strata": 2}})
    '16 clusters'
    """
    extra = record.get("extra") or {}
    column, unit = LIMITING_UNITS.get(str(record.get("test") or ""), ("n_runs", "runs"))
    value = extra.get(column)
    if column == "n_clusters" and value is None and _number(extra.get("df")) \
            and _number(extra.get("n_strata")):
        value = extra["df"] + extra["n_strata"]
    if not _number(value):
        return ""
    n = record.get(C.N)
    if _number(n) and float(n) == float(value):
        return ""
    return f"{fmt(value)} {unit}"


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def claim_key(result_id: str) -> str:
    """The claim a result belongs to: its id up to the first ``-``.

    >>> claim_key("A10-eq-af-none-adaptive"), claim_key("B3"), claim_key("gating-v0.4")
    ('A10', 'B3', 'gating')
    """
    return str(result_id).split("-", 1)[0] or str(result_id)


def natural_key(text: str) -> tuple:
    """Sort key that orders numbers by value: A2 before A10.

    >>> sorted(["A10", "B1", "A2", "A1"], key=natural_key)
    ['A1', 'A2', 'A10', 'B1']
    """
    return tuple((0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.findall(r"\d+|\D+", str(text)))


def p_label(record: Mapping[str, Any]) -> str:
    """What a result's ``p_value`` is, named for the reader (a key of :data:`P_LEGEND`).

    From the kind where it alone says, else from the row: a TOST (``t_lower``/``t_upper``
    in ``extra``), a permutation (``n_perm`` in ``extra`` or ``params``), a bootstrap
    (``n_boot``), else ``p``.

    >>> p_label({"test": "tost_paired", "extra": {"t_lower": 1, "t_upper": 2}})
    'TOST p'
    >>> p_label({"test": "enrichment", "extra": {"n_perm": 9999}, "params": {"n_boot": 2000}})
    'permutation p'
    >>> p_label({"test": "share_above", "extra": {"n_boot": 2000}}), p_label({"test": "none"})
    ('bootstrap p', 'p')
    """
    test = str(record.get("test") or "")
    extra = record.get("extra") or {}
    params = record.get("params") or {}
    if test in _P_BY_KIND:
        return _P_BY_KIND[test]
    if {"t_lower", "t_upper"} <= set(extra) or test.startswith("tost"):
        return "TOST p"
    if "n_perm" in extra or "n_perm" in params:
        return "permutation p"
    if "n_boot" in extra or "n_boot" in params:
        return "bootstrap p"
    return "p"


def gate_text(record: Mapping[str, Any]) -> str:
    """The gate's outcome in words of its own (a key of :data:`GATE_LEGEND`), never the
    verdict's: a refuted result whose pin held reads "pin held".

    >>> gate_text({"gate": "pinned", "outcome": "passed", "verdict": "refuted"})
    'pin held'
    >>> gate_text({"gate": "replication", "outcome": "failed", "verdict": "inconclusive"})
    'replication failed'
    >>> gate_text({"gate": "pinned", "outcome": "", "verdict": "skipped"})
    'not run'
    """
    gate, outcome = record.get("gate"), record.get("outcome") or ""
    if record.get("verdict") == C.SKIPPED or outcome == "skipped":
        return "not run"
    if not outcome:
        return "not checked"
    if gate == "pinned":
        return "pin held" if outcome == "passed" else "pin broken"
    if gate == "replication":
        return "replicated" if outcome == "passed" else "replication failed"
    return "reported" if outcome == "passed" else f"{gate}: {outcome}"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def outside_interval(effect: Any, lo: Any, hi: Any) -> bool:
    """Whether a point estimate lies outside its own interval (beyond round-off): a
    percentile bootstrap interval of a biased statistic can, and the reader must be told.

    >>> outside_interval(0.851, 1.09, 1.30), outside_interval(1.2, 1.09, 1.30), outside_interval(1.0, None, 2)
    (True, False, False)
    """
    e, a, b = _number(effect), _number(lo), _number(hi)
    if e is None or a is None or b is None:
        return False
    tol = 1e-9 * max(abs(e), abs(a), abs(b), 1e-300)
    return e < min(a, b) - tol or e > max(a, b) + tol


def _magnitude_text(mag: Mapping[str, Any]) -> str:
    if not mag:
        return "-"
    parts = [str(mag.get("status") or "-")]
    if mag.get("estimate") is not None or mag.get("reference") is not None:
        parts.append(f"{fmt(mag.get('estimate'))} vs {fmt(mag.get('reference'))}")
    band = mag.get("band")
    if isinstance(band, (list, tuple)) and len(band) == 2:
        parts.append(f"band [{fmt(band[0])}, {fmt(band[1])}]")
    if mag.get("reason"):
        parts.append(str(mag["reason"]))
    return "; ".join(parts)


def _diagnosis_text(diag: Mapping[str, Any]) -> str:
    if not diag:
        return "-"
    keys = ("fpr", "power", "coverage", "type_s", "n_sims", "seed")
    text = ", ".join(f"{k} {fmt(diag.get(k))}" for k in keys if k in diag)
    text += f"; FPR under other plausible nulls: {robust_fpr_text(diag)}"
    text += f"; {diag['reason']}" if diag.get("reason") else ""
    return text + (f"; simulated as {diag['design']}" if diag.get("design") else "")


def _multiplicity_text(mult: Mapping[str, Any]) -> str:
    if not mult:
        return "-"
    size = mult.get("family_size")
    return (f"family {mult.get('family', '-')}" + (f" of {size} tests" if size else "")
            + f", {mult.get('method', '-')}: adjusted p {fmt(mult.get('p_adjusted'))}, decided by "
            f"{mult.get('decided_by', '-')}" + (" (the family's primary)" if mult.get("primary") else ""))


def _selection_text(selection: Mapping[str, Any]) -> str:
    parts = []
    for role, sel in selection.items():
        extras = ", ".join(f"{k}={v}" for k, v in sel.items() if k != "metric")
        parts.append(f"{role} = {sel.get('metric')}" + (f" ({extras})" if extras else ""))
    return "; ".join(parts)


def anchor(text: str) -> str:
    """An HTML id / Markdown link target from any text (letters, digits, ``-``).

    >>> anchor("A10-eq on panel"), anchor("B3::pico_pythia")
    ('a10-eq-on-panel', 'b3-pico-pythia')
    """
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-") or "x"


def fidelity_texts(fid: Mapping[str, Any] | None) -> tuple[str, str, str]:
    """A result's fidelity for the reader: its status (``""`` when the row has none), the
    short label (``"as stated"``, ``"proxy: intervention, population"``: the aspects that
    differ) and the full text (each difference).

    >>> fidelity_texts({"status": "proxy", "differs": ["population: tiny runs", "sample size: 2 runs",
    ...                                                "population: not Pythia"]})
    ('proxy', 'proxy: population, sample size', 'proxy; population: tiny runs; sample size: 2 runs; population: not Pythia')
    >>> fidelity_texts({"status": "as_stated", "differs": []})[1:], fidelity_texts(None)
    (('as stated', 'as stated'), ('', '-', '-'))
    """
    if not fid or not fid.get("status"):
        return "", "-", "-"
    status = str(fid["status"])
    differs = [str(d) for d in fid.get("differs") or []]
    if status == "as_stated":
        return status, "as stated", "as stated" + "".join(f"; {d}" for d in differs)
    aspects = dict.fromkeys(d.split(":", 1)[0].strip() for d in differs if ":" in d)
    label = status.replace("_", " ") + (f": {', '.join(aspects)}" if aspects else "")
    return status, label, status.replace("_", " ") + "".join(f"; {d}" for d in differs)


def result_view(r: Mapping[str, Any]) -> dict[str, Any]:
    """Everything the reports show of one results row (strings, not yet escaped)."""
    mag = r.get("magnitude") or {}
    diag = r.get("diagnosis") or {}
    mult = r.get("multiplicity") or {}
    params = ", ".join(f"{k}={v}" for k, v in (r.get("params") or {}).items())
    pred = r.get("prediction") or {}
    label = p_label(r)
    outside = outside_interval(r.get(C.EFFECT), r.get(C.CI_LOW), r.get(C.CI_HIGH))
    gate = gate_text(r)
    limit = limiting_unit(r)
    out_of_scope = r.get("verdict") == "out_of_scope" or str(r.get("reason") or "").startswith("out of scope")
    flags = design_flags(r)
    # an out-of-scope record tested nothing: no fidelity to show
    fidelity, fidelity_label, fidelity_text = fidelity_texts(None if out_of_scope else r.get("fidelity"))
    numbers = [
        ("n", fmt(r.get(C.N)) + (f" (limited by: {limit})" if limit else "")),
        ("statistic", fmt(r.get(C.STATISTIC))),
        (label, fmt(r.get(C.P_VALUE))), ("p (Holm, across the report)", fmt(r.get(C.P_HOLM))),
        ("p (BH, across the report)", fmt(r.get(C.P_BH))),
        ("effect [interval]", estimate_text(r.get(C.EFFECT), r.get(C.CI_LOW), r.get(C.CI_HIGH))
         + (" (outside its interval)" if outside else "")),
    ] + [(str(k), fmt(v)) for k, v in (r.get("extra") or {}).items()]
    facts = [
        ("claim", str(r.get("claim", ""))), ("source", str(r.get("source") or "-")),
        ("data", f"dataset {r.get('dataset')}; {_selection_text(r.get('selection') or {})}"),
        ("fidelity to the source's design", fidelity_text),
        ("test", f"{r.get('test')} ({params})"),
        ("prediction", ", ".join(f"{k} {v}" for k, v in pred.items()) or "-"),
        ("essay figure", reference_text(r.get("reference") or {})),
        ("verdict", f"{r.get('verdict')}" + (f" ({r['qualifier']})" if r.get("qualifier") else "")
         + f": {r.get('reason', '')}"),
        ("gate", f"{r.get('gate')}: {gate}"),
        ("magnitude", _magnitude_text(mag)),
        ("diagnosis", _diagnosis_text(diag)),
        ("multiplicity", _multiplicity_text(mult)),
        ("pre-registration hash", str(r.get("spec_hash"))),
    ]
    if r.get("build"):
        facts.append(("build the data", str(r["build"])))
    if r.get("pinned_verdict"):
        facts.append(("pinned", f"{r['pinned_verdict']} (hash {str(r.get('pinned_hash'))[:12]})"))
    if r.get("notes"):
        facts.append(("notes", str(r["notes"])))
    for h in r.get("pin_history") or ():  # the declaration's changes, oldest first
        facts.append((f"changed {h.get('on')}", str(h.get("change"))))
    curve = []
    for c in r.get("spec_curve") or []:
        flag = outside_interval(c.get(C.EFFECT), c.get(C.CI_LOW), c.get(C.CI_HIGH))
        curve.append({"choice": ", ".join(f"{k}={v}" for k, v in (c.get("choice") or {}).items()),
                      "verdict": str(c.get("verdict")),
                      "estimate": estimate_text(c.get(C.EFFECT), c.get(C.CI_LOW), c.get(C.CI_HIGH)),
                      "outside": flag, "p": fmt(c.get(C.P_VALUE))})
    share, sup = r.get("spec_curve_share"), r.get("spec_curve_supported")
    title = f"{r.get('id')} on {r.get('dataset')}"
    return {
        "id": str(r.get("id")), "dataset": str(r.get("dataset")), "title": title,
        "anchor": "r-" + anchor(f"{r.get('id')}::{r.get('dataset')}"), "claim_key": claim_key(r.get("id", "")),
        "claim": str(r.get("claim", "")), "verdict": str(r.get("verdict")),
        "qualifier": str(r.get("qualifier") or ""),
        "fidelity": fidelity, "fidelity_label": fidelity_label,
        "out_of_scope": out_of_scope,
        "gate": str(r.get("gate")), "gate_text": gate, "gate_ok": gate not in ("pin broken", "replication failed"),
        "estimate": estimate_text(r.get(C.EFFECT), r.get(C.CI_LOW), r.get(C.CI_HIGH)), "outside": outside,
        "p_label": label, "p": fmt(r.get(C.P_VALUE)),
        "essay": reference_text(r.get("reference") or {}),
        "essay_words": reference_text({str(k).replace("_", " "): v for k, v in (r.get("reference") or {}).items()}),
        "magnitude": str(mag.get("status") or "-").replace("_", " "), "magnitude_text": _magnitude_text(mag),
        "tests_figure": mag.get("reference") is not None,
        "power": fmt(diag.get("power")) if diag else "-",
        "design_flags": [text for _, text in flags],
        "design_codes": "".join(code for code, _ in flags),
        "finding": str(r.get("finding") or ""),
        "flag": _flag(r), "flag_short": _flag_short(r),
        "facts": facts, "numbers": numbers, "curve": curve,
        "curve_text": _curve_text(r, share, sup) if curve else "",
        "curve_outside": sum(c["outside"] for c in curve),
        "figure": r.get("figure"),
    }


#: Below this simulated power a decided result is flagged (:func:`design_flags`).
LOW_POWER = 0.5
#: Below this simulated coverage of its interval a result is flagged.
LOW_COVERAGE = 0.9
#: A result is flagged when its false-positive rate under the alternative nulls exceeds this
#: multiple of its alpha.
ROBUST_FPR_FACTOR = ROBUST_FACTOR  # the limit the engine applies (lie_stats.diagnosis.calibration)
#: The design flags' one-letter codes (the console table's ``flags`` column) and meanings.
DESIGN_FLAG_CODES = {
    "P": "low power (under 0.5) or no power figure",
    "C": "interval coverage under 0.9 in simulation",
    "R": "false-positive rate under other plausible nulls above twice alpha",
}


def _alpha(r: Mapping[str, Any]) -> float:
    alpha = _number((r.get("params") or {}).get("alpha"))
    return alpha if alpha is not None and 0 < alpha < 1 else 0.05


def _pct(value: float) -> str:
    return f"{fmt(100 * value)} %"


def _robust(diag: Mapping[str, Any]) -> tuple[float | None, str, Any, list[str], int]:
    """``(fpr_robust, worst null, its n_sims, the nulls not simulated with why, how many nulls)``."""
    robust = diag.get("robust") if isinstance(diag.get("robust"), Mapping) else {}
    worst: tuple[str, float, Any] | None = None
    missing = []
    for name, rec in robust.items():
        rec = rec if isinstance(rec, Mapping) else {}
        fpr = _number(rec.get("fpr"))
        if fpr is None:
            missing.append(f"{str(name).replace('_', ' ')}: not simulated" + (f", {rec['reason']}" if rec.get("reason") else ""))
        elif worst is None or fpr > worst[1]:
            worst = (str(name), fpr, rec.get("n_sims"))
    name, n = (worst[0].replace("_", " "), worst[2]) if worst else ("", None)
    return _number(diag.get("fpr_robust")), name, n, missing, len(robust)


def robust_fpr_text(diag: Mapping[str, Any] | None) -> str:
    """The false-positive rate under the alternative nulls, in words: the largest share of
    simulations the rule said supported under a null other than the design's own, with the
    null that gave it; "not diagnosed under alternative nulls" when the diagnosis has not
    simulated them.

    >>> robust_fpr_text({"fpr": 0.0})
    'not diagnosed under alternative nulls'
    >>> robust_fpr_text({"fpr_robust": 0.04})
    '4 %'
    >>> robust_fpr_text({"fpr_robust": 0.12, "robust": {"heavy_tails": {"fpr": 0.12, "n_sims": 200, "reason": ""},
    ...                                                 "shared": {"fpr": None, "n_sims": 0, "reason": "no layers"}}})
    '12 % (the largest of 2 alternative nulls: heavy tails, 200 simulations; shared: not simulated, no layers)'
    """
    diag = diag or {}
    if "fpr_robust" not in diag:
        return "not diagnosed under alternative nulls"
    value, worst, n, missing, count = _robust(diag)
    if value is None:
        return "not computed" + (f" ({'; '.join(missing)})" if missing else "")
    if not count:  # the largest rate without the per-null records
        return _pct(value)
    head = f"the largest of {count} alternative nulls" + (f": {worst}, {n} simulations" if worst else "")
    return f"{_pct(value)} (" + "; ".join([head, *missing]) + ")"


def design_flags(r: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What the diagnosis says against a decided result's design, as ``(code, sentence)``
    (codes of :data:`DESIGN_FLAG_CODES`): power under :data:`LOW_POWER` or no power figure,
    worded for the verdict it qualifies (under "supported", a weak design's estimate is
    likely exaggerated: a type M error; under another verdict, the design could easily miss
    the effect); coverage under :data:`LOW_COVERAGE`; a false-positive rate under the
    alternative nulls (``fpr_robust``) above :data:`ROBUST_FPR_FACTOR` times alpha. Nothing
    for a result not decided (skipped, out of scope).

    >>> [c for c, _ in design_flags({"verdict": "supported", "diagnosis": {"power": 0.3, "n_sims": 200}})]
    ['P']
    >>> design_flags({"verdict": "refuted", "diagnosis": {"power": 0.9, "coverage": 0.95, "fpr_robust": 0.05}})
    []
    >>> design_flags({"verdict": "skipped"})
    []
    """
    verdict = str(r.get("verdict") or "")
    if verdict not in (C.SUPPORTED, C.REFUTED, C.INCONCLUSIVE):
        return []
    diag = r.get("diagnosis") or {}
    n_sims = diag.get("n_sims")
    sims = f" of {n_sims} simulations" if n_sims else " of the simulations"
    out: list[tuple[str, str]] = []
    power = _number(diag.get("power"))
    if power is None:
        why = f" ({diag['reason']})" if diag.get("reason") else ""
        out.append(("P", f"No power figure{why}: how likely this design is to detect the claimed "
                         f"effect is unknown, so the verdict's weight is unknown too."))
    elif power < LOW_POWER:
        head = f"Low power: with the claimed effect planted, this design decides supported in {_pct(power)}{sims}"
        if verdict == C.SUPPORTED:
            out.append(("P", f"{head}. A supported verdict from a design this weak likely exaggerates "
                             f"the effect (a type M error): read the estimate as an overstatement of its size."))
        else:
            out.append(("P", f"{head}. The design could easily miss the effect, so this {verdict} "
                             f"verdict says little against the claim."))
    coverage = _number(diag.get("coverage"))
    if coverage is not None and coverage < LOW_COVERAGE:
        out.append(("C", f"Low coverage: the interval held the true value in {_pct(coverage)}{sims} "
                         f"(under {_pct(LOW_COVERAGE)}); it is narrower than it claims to be."))
    robust, worst, _, _, _ = _robust(diag)
    alpha = _alpha(r)
    if robust is not None and robust > ROBUST_FPR_FACTOR * alpha:
        under = f" (under {worst})" if worst else ""
        out.append(("R", f"False positives under other plausible nulls: with no effect, the rule decides "
                         f"supported in {_pct(robust)} of simulations{under}, above twice alpha "
                         f"({fmt(ROBUST_FPR_FACTOR * alpha)}): the rule is not calibrated on data like "
                         f"these, so it cannot say supported here (a supported rule reads inconclusive)."))
    return out


def _flag(r: Mapping[str, Any]) -> str:
    """The result's flag, only where something changed: the last re-pinning changed its
    verdict (was -> now), or its declaration changed since its verdict was pinned and was not
    re-pinned. A pin replaced with the same verdict is not flagged (the changelog lists it).

    >>> _flag({"verdict": "refuted", "previous_pin": {"verdict": "supported"}})
    'verdict changed at the last re-pinning: was supported'
    >>> _flag({"verdict": "refuted", "declaration_changed": True,
    ...        "previous_pin": {"verdict": "refuted", "spec_hash": "a"}})
    ''
    >>> _flag({"verdict": "refuted", "declaration_changed": True})
    'declaration changed after its verdict was pinned'
    """
    prev = r.get("previous_pin")
    if prev and prev.get("verdict") != r.get("verdict"):
        return f"verdict changed at the last re-pinning: was {str(prev.get('verdict')).replace('_', ' ')}"
    if r.get("declaration_changed") and not prev:
        return "declaration changed after its verdict was pinned"
    return ""


def _flag_short(r: Mapping[str, Any]) -> str:
    """:func:`_flag` in a few words, for the summary table (its full text is the title)."""
    prev = r.get("previous_pin")
    if prev and prev.get("verdict") != r.get("verdict"):
        return f"was {str(prev.get('verdict')).replace('_', ' ')}"
    return "declaration changed" if _flag(r) else ""


def _curve_text(r: Mapping[str, Any], share: Any, sup: Any) -> str:
    """The specification curve's shares, with the denominator they were computed over (the
    main estimand's choices, not skipped, not dropped) and what was left out of it."""
    n = r.get("spec_curve_n", len(r.get("spec_curve") or []))
    text = (f"{fmt(100 * share) if share is not None else '-'} % of {n} analysis choices agree with "
            f"the verdict; {fmt(100 * sup) if sup is not None else '-'} % support the claim.")
    curves = r.get("spec_curve_by_estimand") or {}
    dropped = sum(int(v.get("dropped") or 0) for v in curves.values())
    others = [f"{k}: {v.get('n')} choices" for k, v in curves.items() if k != str(r.get("estimand") or "-") and v.get("n")]
    if dropped:
        text += f" {dropped} dropped as inconclusive by construction (see each choice's reason)."
    if others:
        text += " Other estimands, not pooled: " + "; ".join(others) + "."
    return text


def _pick(views: Sequence[Mapping[str, Any]], key: str) -> Mapping[str, Any] | None:
    """The claim's own result that was run, else its first result that was run and tests the
    claim's figure (its declaration has a magnitude; not a direction-only check beside it),
    else its first result that was run, else its own result, else its first (None if none)."""
    run = [v for v in views if v["verdict"] != C.SKIPPED]
    for pool in ([v for v in run if v["id"] == key], [v for v in run if v.get("tests_figure")], run,
                 [v for v in views if v["id"] == key], views):
        if pool:
            return pool[0]
    return None


def _main_of(views: Sequence[Mapping[str, Any]], key: str) -> Mapping[str, Any]:
    """The claim's main result: picked (:func:`_pick`) among its results that were run and
    test the claim as stated when there are any, else among all its results."""
    stated = [v for v in views if v.get("fidelity") == "as_stated" and v["verdict"] != C.SKIPPED]
    main = _pick(stated, key) or _pick(views, key)
    if main is None:
        raise ValueError(f"claim {key!r} has no result")
    return main


def fidelity_note(main: Mapping[str, Any], views: Sequence[Mapping[str, Any]]) -> str:
    """What the claim row says of its main result's fidelity: ``"as stated"``; for a proxy,
    ``"no test as stated"`` (none of the claim's results is as stated) or ``"test as stated
    not run"`` (one is declared but was skipped), then the proxy's label; ``""`` when the rows
    carry no fidelity or the main result is an out-of-scope record (nothing was tested; an
    out-of-scope record counts as no test as stated).

    >>> p = {"fidelity": "proxy", "fidelity_label": "proxy: population", "verdict": "refuted"}
    >>> fidelity_note(p, [p])
    'no test as stated; proxy: population'
    >>> fidelity_note(p, [p, {"fidelity": "as_stated", "verdict": "skipped"}])
    'test as stated not run; proxy: population'
    >>> fidelity_note(p, [p, {"fidelity": "as_stated", "verdict": "skipped", "out_of_scope": True}])
    'no test as stated; proxy: population'
    """
    if main.get("out_of_scope"):
        return ""
    if main.get("fidelity") == "as_stated":
        return "as stated"
    if main.get("fidelity") != "proxy":
        return ""
    declared = any(v.get("fidelity") == "as_stated" and not v.get("out_of_scope") for v in views)
    return ("test as stated not run" if declared else "no test as stated") + f"; {main.get('fidelity_label')}"


def claim_views(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The results grouped by claim (:func:`claim_key`), claims in natural order (A2 before
    A10), each with its main result and the count of verdicts of all its results.

    >>> groups = claim_views([{"id": "A10-x", "dataset": "d", "verdict": "refuted"},
    ...                       {"id": "A2", "dataset": "d", "verdict": "supported"},
    ...                       {"id": "A10", "dataset": "d", "verdict": "skipped"}])
    >>> [(g["key"], g["main"]["id"], g["others"]) for g in groups]
    [('A2', 'A2', ''), ('A10', 'A10-x', '+1: 1 skipped')]
    """
    views = [result_view(r) for r in records]
    keys = sorted({v["claim_key"] for v in views}, key=natural_key)
    out = []
    for key in keys:
        mine = [v for v in views if v["claim_key"] == key]
        main = _main_of(mine, key)
        rest = Counter(v["verdict"] for v in mine if v is not main)
        others = ", ".join(f"{rest[k]} {k.replace('_', ' ')}" for k in VERDICT_ORDER if rest[k])
        others += "".join(f", {n} {k}" for k, n in rest.items() if k not in VERDICT_ORDER)
        out.append({"key": key, "anchor": "claim-" + anchor(key), "main": main, "results": mine,
                    "fidelity_note": fidelity_note(main, mine),
                    "others": f"+{len(mine) - 1}: {others}" if len(mine) > 1 else ""})
    return out


def change_views(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The results whose pin the last re-pinning replaced (``previous_pin``): what was pinned,
    what is pinned now, whether the declaration changed (its hash) or only the verdict (a rule
    or the data changed), the reason recorded with the re-pinning (``lie-stats run
    --update-verdicts --pin-reason``), and the latest change in the pin's record
    (``pin_history``). ``known``: whether the earlier verdict was known when the declaration
    changed: it was, whenever a pin of the old declaration existed (a pin is a verdict that
    was seen); "-" when the declaration did not change.

    >>> change_views([{"id": "A1", "dataset": "d", "verdict": "refuted", "spec_hash": "h2",
    ...                "previous_pin": {"verdict": "supported", "spec_hash": "h1"},
    ...                "pin_history": [{"on": "2026-12-02", "change": "the band is declared."}]}])[0]["why"]
    'declaration changed: 2026-12-02: the band is declared.'
    """
    out = []
    for r in records:
        prev = r.get("previous_pin")
        if not prev:
            continue
        declared = prev.get("spec_hash") != r.get("spec_hash")
        history = r.get("pin_history") or []
        note = f"{history[-1].get('on')}: {history[-1].get('change')}" if history else ""
        why = ("declaration changed" if declared else
               "same declaration: the test's rule, its statistic or the data changed")
        if prev.get("reason"):
            why += f" ({prev['reason']})"
        out.append({"title": f"{r.get('id')} on {r.get('dataset')}",
                    "anchor": "r-" + anchor(f"{r.get('id')}::{r.get('dataset')}"),
                    "was": str(prev.get("verdict")), "now": str(r.get("verdict")),
                    "verdict_changed": prev.get("verdict") != r.get("verdict"),
                    "known": ("yes" if prev.get("verdict") else "no") if declared else "-",
                    "why": why + (f": {note}" if declared and note else "")})
    return sorted(out, key=lambda c: natural_key(c["title"]))


def verdict_word(r: Mapping[str, Any]) -> str:
    """The verdict a reader counts: ``out_of_scope`` for a claim recorded as not testable
    (its row's verdict is ``skipped`` on no dataset), else the row's verdict.

    >>> verdict_word({"verdict": "skipped", "dataset": "-", "reason": "out of scope: r"})
    'out_of_scope'
    """
    if r.get("verdict") == C.SKIPPED and str(r.get("reason", "")).startswith("out of scope"):
        return "out_of_scope"
    return str(r.get("verdict"))


def summary_counts(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Counts of the first screen: verdicts (every one of :data:`VERDICT_ORDER`, zeros
    included; out-of-scope claims as such, :func:`verdict_word`), summing to the rows, and
    gate outcomes (passed, failed, not run).

    >>> c = summary_counts([{"verdict": "refuted", "gate": "pinned", "outcome": "passed"},
    ...                     {"verdict": "skipped", "gate": "pinned", "outcome": "skipped"}])
    >>> c["verdicts"][:2], c["gates"]
    ([('supported', 0), ('refuted', 1)], [('passed', 1), ('failed', 0), ('not run', 1), ('not checked', 0)])
    """
    verdicts = Counter(verdict_word(r) for r in records)
    order = list(VERDICT_ORDER) + sorted(k for k in verdicts if k not in VERDICT_ORDER)
    words = Counter(gate_text(r) for r in records)
    failed = words["pin broken"] + words["replication failed"] + sum(
        n for w, n in words.items() if w not in GATE_LEGEND)
    passed = words["pin held"] + words["replicated"] + words["reported"]
    return {"n": len(records), "claims": len({claim_key(r.get("id", "")) for r in records}),
            "verdicts": [(k, verdicts[k]) for k in order],
            "gates": [("passed", passed), ("failed", failed), ("not run", words["not run"]),
                      ("not checked", words["not checked"])]}

"""Each kind under nulls other than its own, on the structure of the real head data.

The committed diagnoses (hypotheses/diagnosis.json, attached to every row of
reports/results.json; tests/test_committed_report.py keeps both current with the code)
simulate every bundled result's rule under its design's null and under the alternative nulls
of lie_stats.diagnosis.robust: heavier tails, stronger dependence, and where it applies an
effect shared by whole layers. A kind is calibrated on a result's data when its share
"supported" under each of them lies inside the 99 % band of Binomial(n_sims, alpha). Where it
does not, the result must say "inconclusive" (lie_stats.diagnosis.calibration), never
"supported".
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from lie_stats.diagnosis.robust import ALTERNATIVES

from ._design import binomial_band

ROOT = Path(__file__).resolve().parents[2]
ROWS = json.loads((ROOT / "reports" / "results.json").read_text(encoding="utf-8"))
DIAGNOSED = [r for r in ROWS if (r.get("diagnosis") or {}).get("fpr") is not None]


def _outside(row):
    """The alternative nulls under which the row's rule says supported more often than the
    band allows: [(null, count, n, upper)]."""
    alpha = float(row["params"].get("alpha", 0.05))
    out = []
    for name, rec in row["diagnosis"]["robust"].items():
        if rec.get("fpr") is None:
            continue
        n = int(rec["n_sims"])
        count = round(rec["fpr"] * n)
        upper = binomial_band(n, alpha)[1]
        if count > upper:
            out.append((name, count, n, upper))
    return out


def test_every_diagnosed_result_is_simulated_under_every_alternative_null():
    assert len(DIAGNOSED) >= 100  # the bundled results with data and a design
    names = {a.name for a in ALTERNATIVES}
    for row in DIAGNOSED:
        diag = row["diagnosis"]
        assert set(diag["robust"]) == names, row["id"]
        applied = [rec for rec in diag["robust"].values() if rec["fpr"] is not None]
        for rec in diag["robust"].values():  # a figure, or the reason there is none
            assert rec["fpr"] is not None or rec["reason"].startswith("not applicable"), (row["id"], rec)
        assert diag["fpr_robust"] == (max(rec["fpr"] for rec in applied) if applied else None)
    # heavy tails apply wherever there is a measured role
    assert sum(r["diagnosis"]["robust"]["heavy_tails"]["fpr"] is not None for r in DIAGNOSED) >= 0.9 * len(DIAGNOSED)


KINDS = sorted({r["test"] for r in DIAGNOSED})


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_is_inside_its_band_or_says_inconclusive(kind):
    rows = [r for r in DIAGNOSED if r["test"] == kind]
    for row in rows:
        outside = _outside(row)
        if outside:
            assert row["verdict"] != "supported", (row["id"], row["dataset"], outside)


def test_every_result_over_twice_alpha_is_flagged_and_not_supported():
    """Over twice alpha under any null, the design's own included: flagged "R" in the report
    when the alternatives gave it, and never "supported" (the engine's limit)."""
    from lie_stats.diagnosis.calibration import ROBUST_FACTOR
    from lie_stats.report.view import design_flags

    for row in DIAGNOSED:
        alpha = float(row["params"].get("alpha", 0.05))
        worst = max([row["diagnosis"]["fpr"], *[rec["fpr"] for rec in row["diagnosis"]["robust"].values()
                                                 if rec["fpr"] is not None]])
        if worst > ROBUST_FACTOR * alpha:
            assert row["verdict"] != "supported", (row["id"], row["dataset"], worst)
        if (row["diagnosis"]["fpr_robust"] or 0) > ROBUST_FACTOR * alpha:
            assert "R" in [code for code, _ in design_flags(row)], (row["id"], row["dataset"])

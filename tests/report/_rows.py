"""Results rows for the report tests that need no cube: every field a results row has,
with the fields other parts add (magnitude, finding, diagnosis, multiplicity) on some rows
and absent from others."""

from __future__ import annotations

from typing import Any


def row(id: str, dataset: str = "toy", **over: Any) -> dict[str, Any]:
    base = {
        "id": id, "dataset": dataset, "claim": f"claim of {id.split('-')[0]}", "source": "essay",
        "test": "enrichment", "gate": "pinned", "outcome": "passed", "verdict": "supported",
        "reason": "p < alpha", "n": 96, "statistic": 2.0, "p_value": 0.001, "effect": 1400.0,
        "ci_low": 770.0, "ci_high": 2400.0, "reference": {"ratio": 500.0}, "extra": {"n_perm": 999},
        "params": {"n_perm": 999}, "prediction": {"direction": "positive"}, "selection": {},
        "spec_hash": "0" * 64, "spec_curve": [], "spec_curve_share": None, "spec_curve_supported": None,
        "pinned_verdict": None, "pinned_hash": None, "declaration_changed": False, "build": None,
        "notes": "", "module": "m.py", "figure": None,
    }
    base.update(over)
    return base


#: Fields the magnitude and diagnosis helpers add to a row.
ADDED = {
    "magnitude": {"status": "outside", "estimate": 1400.0, "reference": 500.0, "band": [166.7, 1500.0],
                  "reason": "x/÷3 band"},
    "finding": "direction replicated; magnitude 1,400x [770, 2,400] vs 500x: inside the band x/÷3",
    "diagnosis": {"fpr": 0.049, "power": 0.81, "coverage": 0.95, "type_s": 0.0, "n_sims": 1000,
                  "seed": 1, "reason": None},
    "multiplicity": {"family": "A", "method": "holm", "p_adjusted": 0.004, "decided_by": "adjusted"},
}

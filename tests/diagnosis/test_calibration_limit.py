"""A supported verdict whose rule is not calibrated under an alternative null says
inconclusive (lie_stats.diagnosis.calibration), through the engine as in every shell."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import lie_stats as ls
from lie_stats.diagnosis.calibration import ROBUST_FACTOR, limit_to_calibrated
from lie_stats.spec import Result

from .._spec_cubes import make_datasets


def _result(verdict: str, fprs: dict, alpha: float = 0.05) -> Result:
    robust = {name: {"fpr": fpr, "n_sims": 100, "reason": "", "what": f"{name} in words"}
              for name, fpr in fprs.items()}
    return Result(id="X1", claim="c", source="s", dataset="d", verdict=verdict, reason="p 0.01 < 0.05",
                  gate="report", test="correlation", spec_hash="h", reference={},
                  params={"alpha": alpha}, finding="direction replicated (negative: -0.3); verdict supported",
                  diagnosis={"fpr": 0.02, "fpr_robust": max(fprs.values()), "robust": robust})


def test_supported_becomes_inconclusive_when_an_alternative_null_exceeds_the_limit():
    r = _result("supported", {"heavy_tails": 0.04, "shared_effect": 0.31})
    out = limit_to_calibrated(r)
    assert r.verdict == "supported"  # a new value; the old one is as it was
    assert out.verdict == "inconclusive"
    assert "shared effect" in out.reason and "31%" in out.reason and "the rule gave supported" in out.reason
    assert out.finding.endswith("verdict inconclusive (the rule gave supported)")
    assert out.finding.startswith("direction replicated (negative: -0.3); not calibrated")


@pytest.mark.parametrize("verdict, fpr, alpha", [
    ("supported", ROBUST_FACTOR * 0.05, 0.05),   # at the limit: kept
    ("supported", 0.15, 0.1),                    # under 2 x its own alpha
    ("refuted", 0.9, 0.05),                      # only "supported" is limited
    ("inconclusive", 0.9, 0.05),
])
def test_verdicts_within_the_limit_or_not_supported_are_kept(verdict, fpr, alpha):
    r = _result(verdict, {"stronger_dependence": fpr}, alpha)
    assert limit_to_calibrated(r) is r


def test_no_diagnosis_or_no_applicable_alternative_keeps_the_verdict():
    r = _result("supported", {"heavy_tails": 0.5}).evolve(diagnosis=None)
    assert limit_to_calibrated(r) is r
    r = _result("supported", {"heavy_tails": 0.5})
    r = r.evolve(diagnosis={**r.diagnosis, "robust": {"heavy_tails": {"fpr": None, "reason": "not applicable"}}})
    assert limit_to_calibrated(r) is r


# A user's own kind that pools every head (a wrong test for a within-layer claim), declared
# with the built-in correlation design, on the synthetic cube whose x and y also differ by layer.
MODULE = '''
import numpy as np
import pandas as pd
from scipy import stats as sps

from lie_stats.diagnosis import DESIGNS
from lie_stats.spec import HypothesisSpec, Prediction, Select, register_test, test_kinds
from lie_stats.spec.rules import decide_directional


def _pooled(data):
    x, y = (np.asarray(data.arrays[r].values, dtype=float).ravel() for r in ("x", "y"))
    ok = np.isfinite(x) & np.isfinite(y)
    rho, p = sps.spearmanr(x[ok], y[ok])
    return pd.DataFrame([{"n": float(ok.sum()), "statistic": rho, "p_value": p, "effect": rho,
                          "ci_low": np.nan, "ci_high": np.nan}])


if "pooled_spearman" not in test_kinds():
    register_test("pooled_spearman", _pooled, decide_directional, roles=("x", "y"),
                  design=DESIGNS["correlation"])

POOLED = HypothesisSpec(
    id="P1", claim="contribution predicts change across all heads", source="own", datasets=("synth",),
    test="pooled_spearman", selection={"x": Select("head_contribution", step="first"),
                                       "y": Select("change_from_init")},
    prediction=Prediction("negative"), gate="report")
'''


def test_the_engine_limits_a_pooled_rule_the_shared_effect_null_catches(tmp_path):
    make_datasets(tmp_path / "datasets")
    (tmp_path / "hyp").mkdir()
    (tmp_path / "hyp" / "own_pooled.py").write_text(textwrap.dedent(MODULE))
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-m", "lie_stats", "diagnose", "hyp", "--datasets", "datasets",
                           "--n-sims", "20"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        table = ls.run([str(tmp_path / "hyp")], datasets_dir=tmp_path / "datasets")
    finally:
        os.chdir(cwd)
    (row,) = table.records()
    assert "robust" in row["diagnosis"], row["diagnosis"]
    robust = row["diagnosis"]["robust"]
    assert robust["shared_effect"]["fpr"] > ROBUST_FACTOR * 0.05, robust
    assert row["verdict"] == "inconclusive", row["reason"]
    assert "not calibrated on data like these" in row["reason"] and "the rule gave supported" in row["reason"]

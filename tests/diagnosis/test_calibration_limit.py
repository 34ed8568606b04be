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


def test_the_design_s_own_null_counts_too():
    r = _result("supported", {"heavy_tails": 0.0})
    r = r.evolve(diagnosis={**r.diagnosis, "fpr": 0.4})
    out = limit_to_calibrated(r)
    assert out.verdict == "inconclusive" and "under its own null" in out.reason


# A user's own kind that pools every head (a wrong test for a within-layer claim), declared
# with the built-in correlation design, on a cube whose layers differ together in x and y
# (a between-layer association, nothing within any layer).
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
    id="P1", claim="ov_norm predicts change across all heads", source="own", datasets=("layered",),
    test="pooled_spearman", selection={"x": Select("ov_norm", step="first"),
                                       "y": Select("change_from_init", step="last")},
    prediction=Prediction("negative"), gate="report")
'''


def _layered_dataset(root):
    """A card ``layered``: 12 layers x 16 heads, two checkpoints; x and y independent within
    every layer, their layer means moving together (y's down where x's are up)."""
    import numpy as np

    from lie_stats import cube

    from .._spec_cubes import FAMILIES, PROJECTIONS, _card, model_shape

    rng = np.random.default_rng(7)
    L, H = 12, 16
    offset = rng.normal(size=(L, 1))
    x = 2.0 + 0.5 * offset + 0.2 * rng.normal(size=(L, H))
    y = 1.0 - 0.5 * offset + 0.2 * rng.normal(size=(L, H))
    shards = [cube.checkpoint_shard({"ov_norm": x, "change_from_init": y * step / 1000}, model="m0",
                                    step=step, shape=model_shape(L, H), families=FAMILIES,
                                    projections=PROJECTIONS, provenance={"model": "m0", "step": step})
              for step in (0, 1000)]
    cube.write_cube(cube.merge_shards(shards), _card(root, "layered", ["layered.nc"], "python -m build") / "layered.nc")


def _cli(*args, cwd):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "lie_stats", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def test_the_engine_limits_a_pooled_rule_on_layered_data(tmp_path):
    import json

    _layered_dataset(tmp_path / "datasets")
    (tmp_path / "hyp").mkdir()
    (tmp_path / "hyp" / "own_pooled.py").write_text(textwrap.dedent(MODULE))
    proc = _cli("diagnose", "hyp", "--datasets", "datasets", "--n-sims", "20", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    proc = _cli("run", "hyp", "--datasets", "datasets", "--reports", "reports", cwd=tmp_path)
    (row,) = json.loads((tmp_path / "reports" / "results.json").read_text())
    diag = row["diagnosis"]
    assert diag["fpr"] > ROBUST_FACTOR * 0.05 or diag["fpr_robust"] > ROBUST_FACTOR * 0.05, diag
    assert row["verdict"] == "inconclusive", (row["reason"], diag)
    assert "not calibrated on data like these" in row["reason"] and "the rule gave supported" in row["reason"]

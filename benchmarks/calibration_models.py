"""Full-size calibration figures of the model and rank kinds' verdicts.

Runs the simulations of tests/calibration/test_models.py and test_ranks.py with more
simulated data sets and writes benchmarks/calibration_models.md. The "AIC margin" rows are
the former model_comparison rule (margin >= 2) on the same simulated runs, for comparison.

    PYTHONPATH=. OMP_NUM_THREADS=1 python benchmarks/calibration_models.py
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from lie_stats.spec import Prediction
from tests.calibration import test_models as M
from tests.calibration import test_ranks as R
from tests.calibration._design import binomial_band

OUT = Path(__file__).with_suffix(".md")


def aic_rule(design, models, signal, seed, n_sims):
    """The former rule on the same draws: supported when the width model's AIC is lower by 2."""
    rng = np.random.default_rng(seed)
    mean = sum(b * design[c].to_numpy() for c, b in signal.items()) if signal else 0.0
    n = len(design)
    out = {"supported": 0, "refuted": 0}
    for _ in range(n_sims):
        y = mean + rng.normal(size=n)
        aic = {}
        for name, terms in models.items():
            X = np.column_stack([np.ones(n), design[terms].to_numpy()])
            rss = float(np.sum((y - X @ np.linalg.lstsq(X, y, rcond=None)[0]) ** 2))
            aic[name] = n * np.log(rss / n) + 2 * X.shape[1]
        margin = min(v for k, v in aic.items() if k != "width") - aic["width"]
        out["supported"] += int(margin >= 2)
        out["refuted"] += int(margin <= -2)
    return out


def main() -> None:
    rows = []
    t0 = time.time()

    def add(kind, case, counts, n, null_rate, power_key=None):
        band = binomial_band(n, null_rate) if null_rate else None
        sup, ref = counts.get("supported", 0) / n, counts.get("refuted", 0) / n
        p_text = f"{counts['p<alpha'] / n:.3f}" if "p<alpha" in counts else "-"
        band_text = f"{band[0] / n:.3f}-{band[1] / n:.3f}" if band else "-"
        power = f"{counts[power_key] / n:.3f}" if power_key else "-"
        rows.append(f"| {kind} | {case} | {n} | {sup:.3f} / {ref:.3f} | {band_text} | {p_text} | {power} |")

    n = 1000
    add("mixed_model", "null, 12 layers x 8 heads, ICC 0.5, layer means co-varying 0.9", 
        M._mixed_null(seed=111, n_sims=n, n_layers=12), n, 0.025)
    c = M._mixed_null(seed=112, n_sims=n, n_layers=5, sizes=[8, 6, 4, 8, 3], rescaled=200)
    add("mixed_model", f"null, 5 unequal layers (8, 6, 4, 8, 3); y x 20 same verdict and p in "
        f"{c['same_in_units_x20']}/200", c, n, 0.025)
    add("mixed_model", "within-layer rho 0.3, 12 x 8 (power)", M._mixed_null(seed=113, n_sims=300, n_layers=12,
        within_rho=0.3), 300, None, power_key="supported")
    n = 2000
    add("model_comparison", "null, A8 sweep (6 runs)", M._comparison(M.SWEEP, M.WIDTH_COUNT, {}, 121, n), n, 0.05)
    add("model_comparison", "null, A8 sweep: former AIC-margin rule", aic_rule(M.SWEEP, M.WIDTH_COUNT, {}, 121, n),
        n, 0.05)
    add("model_comparison", "count true (slope 1.5), A8 sweep: supported = false positive, refuted = power",
        M._comparison(M.SWEEP, M.WIDTH_COUNT, {"log2_n_heads": 1.5}, 122, n), n, 0.05, power_key="refuted")
    add("model_comparison", "count true, former AIC-margin rule",
        aic_rule(M.SWEEP, M.WIDTH_COUNT, {"log2_n_heads": 1.5}, 122, n), n, 0.05, power_key="refuted")
    add("model_comparison", "width true (slope 2), A8 sweep (power)",
        M._comparison(M.SWEEP, M.WIDTH_COUNT, {"log2_d_head": 2.0}, 123, n), n, 0.05, power_key="supported")
    add("model_comparison", "null, A9 panel (5 runs, correlated predictors)",
        M._comparison(M.PANEL, M.WIDTH_RATIO, {}, 131, n), n, 0.05)
    add("model_comparison", "null, A9 panel: former AIC-margin rule", aic_rule(M.PANEL, M.WIDTH_RATIO, {}, 131, n),
        n, 0.05)
    add("model_comparison", "ratio true (slope 10), A9 panel",
        M._comparison(M.PANEL, M.WIDTH_RATIO, {"d_head_over_d_model": 10.0}, 132, n), n, 0.05,
        power_key="refuted")
    n = 3000
    for runs, layers, units, seed in ((1, 5, 1, 141), (1, 12, 1, 142), (2, 6, 8, 143), (2, 12, 1, 144)):
        add("ratio_of_changes", f"above 1 (ci 0.95), ratio exactly 1, {runs} run(s) x {layers} layers x {units}",
            R._verdicts(Prediction("above", value=1.0), 0.95, 1.0, runs, layers, units, seed, n_sims=n), n, 0.025)
    add("ratio_of_changes", "A7 band [50, 5000] (ci 0.90), ratio 50 (edge), 2 x 12",
        R._verdicts(Prediction("equivalent", value=500.0, bound=1.0), 0.90, 50.0, 2, 12, 1, 145, n_sims=n), n, 0.05)
    add("ratio_of_changes", "A7 band, ratio 500 (power), 2 x 12",
        R._verdicts(Prediction("equivalent", value=500.0, bound=1.0), 0.90, 500.0, 2, 12, 1, 146, n_sims=1000),
        1000, None, power_key="supported")
    n = 1000
    add("delta_rank", "above 6 of 11, true rank 6 (4 per-layer + embedding 2x, 5 tie), 12 layers",
        R._rank_verdicts(np.array([1.0, 2, 2, 2, 2, 1, 1, 1, 1]), Prediction("above", value=6.0), 151, n), n, 0.025)
    add("delta_rank", "above 6, six per-layer categories 3x (true rank 8, power)",
        R._rank_verdicts(np.array([1.0, 3, 3, 3, 3, 3, 3, 1, 1]), Prediction("above", value=6.0), 152, 300), 300,
        None, power_key="supported")
    add("delta_order", "embedding, then c0, then c1; c0 and c1 tie (4x the rest), 12 layers",
        R._order_verdicts(np.array([4.0, 4, 1, 1, 1, 1, 1, 1, 1]), 153, n), n, 0.05)
    add("delta_order", "c0 twice c1, c1 four times the rest (power)",
        R._order_verdicts(np.array([8.0, 4, 1, 1, 1, 1, 1, 1, 1]), 154, 300), 300, None, power_key="supported")
    elapsed = time.time() - t0
    OUT.write_text("\n".join([
        "# Calibration of the model and rank kinds' verdicts",
        "",
        "Command: `PYTHONPATH=. OMP_NUM_THREADS=1 python benchmarks/calibration_models.py` "
        f"(AMD EPYC, 2 cores shared with other jobs; {elapsed:.0f} s). The simulations are those of "
        "tests/calibration/test_models.py and test_ranks.py (their docstrings give the structures) "
        "with more data sets and other seeds. Alpha 0.05; rates are supported / refuted shares; "
        "the band is the binomial 99 % band of the nominal null rate (one-sided 2.5 % per direction "
        "for two-sided and interval-level tests, 5 % for the F tests and the TOST edge); "
        "p<alpha is the rate of the deciding p (mixed model t test, the width model's F test); "
        "power is the share of the verdict named in the case.",
        "",
        "| kind | case | n sims | supported / refuted | band | p<alpha | power |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
        "Before (issue audit, the former rules): mixed_model 11-18 % false positives (random-intercept "
        "Wald slope mixing between- and within-layer slopes), its convergence flag depending on the units "
        "of y; model_comparison 21 % supported and 20 % refuted under a null (AIC margin 2, 5-6 runs; "
        "the AIC-margin rows above recompute it on these draws); ratio_of_changes 4-8 % supported against a "
        "one-sided 2.5 % (percentile bootstrap over 12-24 layers).",
        "",
        "Reading: Fieller's t test (ratio_of_changes) and the Holm pairwise tests (delta_rank) are "
        "conservative with few layers on heavy-tailed changes: their null rates lie at or below the band, "
        "never above it. delta_rank's power is low on 12 layers (Holm over ten pairs).",
        "",
    ]), encoding="utf-8")
    print(OUT.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()

"""Full-size calibration of the trend and interval kinds' VERDICTS (benchmarks/calibration_cal_trend.md).

Runs the simulations of ``tests/calibration/_design_cal_trend.py`` at full size and prints a
markdown table: kind, case, sims, null verdict rate (supported / refuted) with the 99 %
binomial band of its nominal size, p < alpha rate, and power under the stated effect.

    PYTHONPATH=. OMP_NUM_THREADS=1 python benchmarks/calibration_cal_trend.py [N_SIMS]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.calibration._design import binomial_band  # noqa: E402
from tests.calibration._design_cal_trend import (  # noqa: E402
    ALPHA, boundary_verdicts, crossover_verdicts, enrichment_verdicts, head_mean_verdicts,
    share_above_verdicts, trend_verdicts)

# kind, case, null(n, seed), power(n, seed) or None, effect, nominal one-direction size
CASES = [
    ("trend", "8 AR(1) runs (phi 0.7) x 17 checkpoints", lambda n, s: trend_verdicts(n, s),
     lambda n, s: trend_verdicts(n, s, slope=0.1), "rise 0.1 SD / checkpoint", ALPHA / 2),
    ("trend", "4 AR(1) runs: p_min 1/16", lambda n, s: trend_verdicts(n, s, n_runs=4),
     lambda n, s: trend_verdicts(n, s, n_runs=4, slope=0.3), "rise 0.3 SD / checkpoint", ALPHA / 2),
    ("depth_crossover", "12 layers x 8 heads, ICC 0.5, 8 checkpoints", lambda n, s: crossover_verdicts(n, s),
     lambda n, s: crossover_verdicts(n, s, gradient=3.0), "gradient +3 -> -3", ALPHA / 2),
    ("head_mean", "12 layers x 8, ICC 0.5", lambda n, s: head_mean_verdicts(n, s, [8] * 12),
     lambda n, s: head_mean_verdicts(n, s, [8] * 12, shift=0.6), "mean +0.6 SD", ALPHA / 2),
    ("head_mean", "8 unequal layers (2-12 heads)", lambda n, s: head_mean_verdicts(n, s, [2, 8, 4, 12, 6, 3, 8, 5]),
     lambda n, s: head_mean_verdicts(n, s, [2, 8, 4, 12, 6, 3, 8, 5], shift=0.6), "mean +0.6 SD", 6 / 256),
    ("head_mean", "6 layers (4/8 heads)", lambda n, s: head_mean_verdicts(n, s, [8, 4, 8, 4, 8, 4]),
     lambda n, s: head_mean_verdicts(n, s, [8, 4, 8, 4, 8, 4], shift=0.6), "mean +0.6 SD", 1 / 64),
    ("share_above", "10 layers x 8, ties (indicator)", lambda n, s: share_above_verdicts(n, s, [8] * 10),
     lambda n, s: share_above_verdicts(n, s, [8] * 10, share=0.75), "share 0.75 vs 0.5", ALPHA / 2),
    ("boundary_ratio", "12 layers, boundary 4 heads, interior 8", lambda n, s: boundary_verdicts(n, s, [4] + [8] * 10 + [4]),
     lambda n, s: boundary_verdicts(n, s, [4] + [8] * 10 + [4], boost=2.0), "boundary x2", 1 / 66),
    ("boundary_ratio", "12 layers x 8, summary cv", lambda n, s: boundary_verdicts(n, s, [8] * 12, summary="cv"),
     None, "", 1 / 66),
    ("enrichment", "8 layers x 8, layer effect shared by first and last",
     lambda n, s: enrichment_verdicts(n, s, [8] * 8),
     lambda n, s: enrichment_verdicts(n, s, [8] * 8, ratio=1.5), "ratio 1.5", ALPHA / 2),
]


def main(n: int) -> None:
    print(f"| kind | case | n sims | supported (null) | refuted (null) | 99 % band (each) | p < alpha (null) | power (supported) | effect |")
    print("|---|---|---|---|---|---|---|---|---|")
    for i, (kind, case, null, power, effect, size) in enumerate(CASES):
        t = time.time()
        c = null(n, 1000 + i)
        lo, hi = binomial_band(n, size)
        pw = power(n // 2, 2000 + i) if power else None
        pw_s = f"{pw['supported'] / (n // 2):.3f}" if pw else "-"
        print(f"| {kind} | {case} | {n} | {c['supported'] / n:.4f} | {c['refuted'] / n:.4f} | "
              f"[{lo / n:.4f}, {hi / n:.4f}] (size {size:.4f}) | {c['p<alpha'] / n:.4f} | {pw_s} | {effect} |",
              flush=True)
        print(f"<!-- {kind} {case}: {time.time() - t:.1f} s -->", file=sys.stderr)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)

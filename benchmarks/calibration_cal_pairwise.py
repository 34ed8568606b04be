"""Full calibration figures of the classification, group, pairwise and agreement kinds'
VERDICTS (the cases of tests/calibration/_cases_cal_pairwise.py, 1000 simulations each).

Usage (from the repository root)::

    OMP_NUM_THREADS=1 python benchmarks/calibration_cal_pairwise.py [N_SIMS] > table.md

Prints a markdown table: per case the counts of "supported" and "refuted" with the 99 %
binomial band of a calibrated verdict under a null case, the rate of p < alpha, and under a
planted effect the power ("supported" share; for ``verdict_agreement``, whose truth under
its null cases is agreement, a false positive is "refuted", and its power is the share
refuted when one compression reverses the effect). For ``verdict_agreement`` the p column
holds how many the old any-difference rule would have refuted.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.calibration._cases_cal_pairwise import CASES, run_case  # noqa: E402
from tests.calibration._design import binomial_band  # noqa: E402
from tests.calibration._design_cal_pairwise import increment_ratio, reverting_heads  # noqa: E402


def main(n: int) -> None:
    import numpy as np

    print("| kind | case | design | n sims | supported (99 % band) | refuted (99 % band) | "
          "p < alpha (99 % band) | power |")
    print("|---|---|---|---|---|---|---|---|")
    for i, (name, case) in enumerate(CASES.items()):
        t0 = time.time()
        c = run_case(case, n, seed=1000 + i)
        label = name.split("/", 1)[1]
        if case.null and case.kind == "verdict_agreement":
            # the truth is agreement: a false positive is "refuted", at most alpha of cases
            hi = binomial_band(n, 0.05)[1]
            cells = (str(c["supported"]), f"{c['refuted']} (<= {hi})",
                     f"old rule refuted {c['flag']}", "-")
        elif case.null:
            sb, rb, pb = (binomial_band(n, r) for r in (case.supported_rate, case.refuted_rate, case.p_rate))
            cells = (f"{c['supported']} ({sb[0]}-{sb[1]})", f"{c['refuted']} ({rb[0]}-{rb[1]})",
                     f"{c['flag']} ({pb[0]}-{pb[1]})", "-")
        else:
            power = (c["refuted"] if case.kind == "verdict_agreement" else c["supported"]) / n
            cells = (str(c["supported"]), str(c["refuted"]),
                     f"{c['flag'] / n:.3f}" if case.kind != "verdict_agreement" else f"old rule refuted {c['flag']}",
                     f"{power:.3f}")
        print(f"| {case.kind} | {label} | {case.description} | {n} | " + " | ".join(cells) + " |",
              flush=True)
        print(f"{name}: {time.time() - t0:.1f} s", file=sys.stderr)
    rng = np.random.default_rng(7)
    ratios = [increment_ratio(reverting_heads(rng)[0]) for _ in range(50)]
    print(f"\nvar(total log change) / sum var(log increments) of the AR(1) null heads: "
          f"{np.mean(ratios):.2f} (50 cubes; 1 for independent increments)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)

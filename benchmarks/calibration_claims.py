"""Full-size calibration of ``iut_equivalence`` (the A1 design): verdict rates on 1,000 nulls.

Run: ``PYTHONPATH=. OMP_NUM_THREADS=1 python benchmarks/calibration_claims.py`` (writes the
table to stdout; benchmarks/calibration_claims.md holds its output). The cases are those of
tests/calibration/test_intersection.py at full size.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.calibration._design import binomial_band  # noqa: E402
from tests.calibration._design_claims import iut_verdicts  # noqa: E402

N, ALPHA, CELLS, LAYERS = 1000, 0.05, 4, 12
B = float(np.log1p(1e-3))


def cases():
    sd = np.full((CELLS, LAYERS), B / 20)
    one = np.zeros((CELLS, LAYERS))
    one[1, 5] = B
    yield "one unit at +bound, others 0, SD b/20, independent", "null (supported)", one, sd, 0.0, 11
    rng = np.random.default_rng(12)
    het = np.exp(rng.normal(0.0, 0.5, size=(CELLS, LAYERS))) * B / 20
    at = np.zeros((CELLS, LAYERS))
    at.flat[int(np.argmax(het))] = B
    yield "one unit at +bound in the noisiest layer, lognormal layer SD, ICC 0.5", "null (supported)", at, het, 0.5, 12
    alt = B * np.where(np.arange(CELLS * LAYERS) % 2 == 0, 1.0, -1.0).reshape(CELLS, LAYERS)
    yield "every unit at ±bound, SD b, ICC 0.5", "null (refuted)", alt, np.full((CELLS, LAYERS), B), 0.5, 13
    zero = np.zeros((CELLS, LAYERS))
    yield "every change 0, SD b/10, ICC 0.5", "power (supported)", zero, np.full((CELLS, LAYERS), B / 10), 0.5, 14
    big = np.zeros((CELLS, LAYERS))
    big[2, 3] = 8 * B
    yield "one unit at 8 x bound, SD b, ICC 0.5", "power (refuted)", big, np.full((CELLS, LAYERS), B), 0.5, 16
    yield "every change 0, SD 20 b (the real data's ~2 %)", "resolution", zero, np.full((CELLS, LAYERS), 20 * B), 0.5, 15


def main() -> None:
    lo, hi = binomial_band(N, ALPHA)
    print(f"| kind | case | what | n sims | supported | refuted | inconclusive | 99 % band of alpha |")
    print("|---|---|---|---|---|---|---|---|")
    t0 = time.time()
    for name, what, mu, sd, icc, seed in cases():
        c = iut_verdicts(np.random.default_rng(seed), N, mu, sd, bound=1e-3, icc=icc)
        print(f"| iut_equivalence | {name} | {what} | {N} | {c['supported'] / N:.3f} | "
              f"{c['refuted'] / N:.3f} | {c['inconclusive'] / N:.3f} | [{lo / N:.3f}, {hi / N:.3f}] |")
    print(f"\nwall {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()

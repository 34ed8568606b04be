"""Full-size calibration figures of the correlation, replication and equivalence kinds.

Runs every case of ``tests/calibration/_design_corr.py`` (the same cases the CI-sized
``tests/calibration/test_{replication,equivalence,correlation}.py`` run with fewer
simulations) and writes the table of ``benchmarks/calibration_correlation.md``::

    PYTHONPATH=. OMP_NUM_THREADS=1 python benchmarks/calibration_correlation.py --n 1000

Each case: the kind's binding and decision rule on ``n`` simulated per-head tables
(``verdict_of_table``), seed 20261202 + the case's index.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.calibration._design import binomial_band  # noqa: E402
from tests.calibration._design_corr import ALPHA, CASES, run_case  # noqa: E402

SEED = 20261202


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000, help="simulations per case")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "calibration_correlation_table.md")
    args = ap.parse_args()
    lines = [
        f"| kind | case | data | n sims | supported | refuted | false-verdict rate (99 % band "
        f"of its count) | p < alpha ({ALPHA}) | power (supported) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    start = time.time()
    for i, case in enumerate(CASES.values()):
        t0 = time.time()
        r = run_case(case, args.n, SEED + i)
        n = r["n"]
        false = sum(r[v] for v in case.false)
        power = "-"
        if case.name.startswith("power"):
            # the planted effect: every wrong verdict is listed in `false`; power is supported
            band = f"{false / n:.3f} ({' / '.join(case.false)})"
            power = f"{r['supported'] / n:.3f}"
        else:
            lo, hi = binomial_band(n, case.rate)
            each = (f"; each <= {hi}" if len(case.false) > 1 else "")
            counts = " + ".join(str(r[v]) for v in case.false)
            band = (f"{false / n:.3f} = ({counts}) / {n} ({' / '.join(case.false)}; "
                    f"band at {case.rate:g}: [{lo}, {hi}]{each})")
        lines.append(f"| {case.kind} | {case.name} | {case.what} | {n} | {r['supported']} | "
                     f"{r['refuted']} | {band} | {r['p_below'] / n:.3f} ({case.p_column}) | {power} |")
        print(lines[-1], f"[{time.time() - t0:.0f} s]", flush=True)
    lines.append("")
    lines.append(f"{len(CASES)} cases x {args.n} simulations in {time.time() - start:.0f} s on "
                 f"{platform.processor() or platform.machine()} (python {platform.python_version()}).")
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

"""The committed reports/ is what the code produces from the committed data.

Runs ``lie-stats run`` on the repository's own hypotheses and datasets into a temporary
folder, as a separate process (a pytest session cannot host another one), and compares its
results.json with the committed one (all but the file paths): verdicts, reasons, ids and
every other string exactly, numbers within :data:`REL_TOL` relative or :data:`ABS_TOL`
absolute. A change to the code, a cube, a declaration or a pin that moves any number of the
report beyond that fails here until reports/ is regenerated (``lie-stats run``) and
committed with it.

Tolerances: the same run on an Intel AVX-512 and an AMD EPYC machine (other BLAS kernels,
other summation orders) gave numbers that differ by up to 4.5e-13 relative, and
results.json rounds to 12 significant digits (up to 5e-12 relative). ``REL_TOL`` = 1e-9 is
200 times that and still 6 digits finer than the 3 digits any report table shows.
``ABS_TOL`` = 1e-12 is for numbers that are zero up to round-off: a correlation of 4.8e-18
on one CPU is exactly 0 on another; no verdict rests on a number that small.
"""

from __future__ import annotations

import json
import math
import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
REL_TOL = 1e-9
ABS_TOL = 1e-12
PATHS = ("module", "figure")  # paths, relative to the reports folder


def differences(new, old, where=""):
    """Where ``new`` and ``old`` differ: strings, booleans, None, keys and lengths exactly;
    numbers beyond REL_TOL / ABS_TOL."""
    if isinstance(old, dict) and isinstance(new, dict):
        if set(old) != set(new):
            return [f"{where}: keys {sorted(set(old) ^ set(new))}"]
        return [d for k in sorted(old) for d in differences(new[k], old[k], f"{where}/{k}")]
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            return [f"{where}: {len(new)} items, committed {len(old)}"]
        return [d for i, (a, b) in enumerate(zip(new, old)) for d in differences(a, b, f"{where}[{i}]")]
    numbers = (int, float)
    if (isinstance(old, numbers) and isinstance(new, numbers)
            and not isinstance(old, bool) and not isinstance(new, bool)):
        same = math.isclose(new, old, rel_tol=REL_TOL, abs_tol=ABS_TOL)
        return [] if same else [f"{where}: {new!r}, committed {old!r}"]
    return [] if new == old and type(new) is type(old) else [f"{where}: {new!r}, committed {old!r}"]


def test_the_comparison_tolerates_cpu_noise_and_nothing_else():
    old = {"verdict": "supported", "p": 0.0123456789012, "r": 4.763982287261096e-18, "n": 96,
           "ok": True, "curve": [{"effect": -0.274}]}
    noisy = {**old, "p": old["p"] * (1 + 4.5e-13), "r": 0.0, "curve": [{"effect": -0.274 * (1 - 1e-12)}]}
    assert differences(noisy, old) == []
    assert differences({**old, "verdict": "refuted"}, old) == ["/verdict: 'refuted', committed 'supported'"]
    assert differences({**old, "p": old["p"] * (1 + 1e-7)}, old)  # a real change of a number
    assert differences({**old, "ok": 1}, old) and differences({**old, "curve": []}, old)


@pytest.mark.slow
def test_committed_report_matches_a_fresh_run(tmp_path):
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    proc = subprocess.run(
        [sys.executable, "-m", "lie_stats", "run", "--reports", str(tmp_path / "reports")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    fresh = json.loads((tmp_path / "reports" / "results.json").read_text())
    committed = json.loads((REPO / "reports" / "results.json").read_text())
    assert [(r["id"], r["dataset"]) for r in fresh] == [(r["id"], r["dataset"]) for r in committed]
    for new, old in zip(fresh, committed):
        new = {k: v for k, v in new.items() if k not in PATHS}
        old = {k: v for k, v in old.items() if k not in PATHS}
        diff = differences(new, old)
        assert not diff, f"{old['id']} on {old['dataset']}: the committed report is stale:\n" + "\n".join(diff[:20])

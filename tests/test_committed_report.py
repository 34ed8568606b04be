"""The committed reports/ is what the code produces from the committed data.

Runs ``lie-stats run`` on the repository's own hypotheses and datasets into a temporary
folder, as a separate process (a pytest session cannot host another one), and compares its
results.json with the committed one (all but the file paths). A change to the code, a cube, a
declaration or a pin that moves any number of the report fails here until reports/ is
regenerated (``lie-stats run``) and committed with it.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]


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
    where = ("module", "figure")  # paths, relative to the reports folder
    for new, old in zip(fresh, committed):
        new = {k: v for k, v in new.items() if k not in where}
        old = {k: v for k, v in old.items() if k not in where}
        assert new == old, f"{old['id']} on {old['dataset']}: the committed report is stale"

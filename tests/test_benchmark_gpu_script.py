"""The prepared device check (benchmarks/gpu.py, benchmarks/device_run.sh) keeps working here.

A session lent a GPU has 15 minutes of device time for it; a script broken by a later change
would spend them on an import error. So CI rehearses it on the CPU: ``gpu.py --rehearse``
runs its whole path (checkpoint, three extractions, agreement, results files) with the
"cuda" side on the CPU, and the shell script must parse.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]


def test_gpu_benchmark_rehearses_end_to_end(tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    run = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "gpu.py"), "--rehearse", "--shapes", "tiny", "--cuda-only=",
         "--out", str(out), "--work", str(tmp_path / "work")],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    record = json.loads((out / "gpu_results.json").read_text())
    row = record["shapes"]["tiny"]
    assert record["device"] == "cpu (rehearsal)"
    assert row["cuda_repeat_bitwise"] is True and row["all_within_tolerance"] is True
    # every variable of the cube compared, each identical (both sides ran on the CPU)
    assert len(row["agreement"]) >= 20
    assert all(v["max_abs"] == 0.0 and v["same_nan"] for v in row["agreement"].values())
    assert row["cpu"]["compute_s"] > 0 and row["cuda"]["wall_s"] > 0
    table = (out / "gpu_results.md").read_text().splitlines()
    assert table[-1].startswith("| tiny | ") and f"{len(row['agreement'])} of {len(row['agreement'])}" in table[-1]


def test_device_script_parses():
    run = subprocess.run(["bash", "-n", str(REPO / "benchmarks" / "device_run.sh")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr

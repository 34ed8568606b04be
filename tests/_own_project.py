"""A researcher's own project in a temporary folder, outside the checkout: a folder of own
hypothesis modules (``myhyp/``) and an own cube (``runs/mine.nc``), run as real processes.
Shared by the tests of own science and of a bad declaration."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from lie_stats import cube as cube_mod
from tests._spec_cubes import synth_cube


def run(*args, cwd) -> subprocess.CompletedProcess:
    """``python ARGS`` in ``cwd``, as a user would run it (no pytest variables inherited)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["OMP_NUM_THREADS"] = "1"
    return subprocess.run([sys.executable, *map(str, args)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def own_project(root: Path, module: str, text: str) -> Path:
    """``root`` with ``myhyp/<module>.py`` holding ``text`` and the own cube ``runs/mine.nc``."""
    (root / "myhyp").mkdir()
    (root / "myhyp" / f"{module}.py").write_text(textwrap.dedent(text))
    (root / "runs").mkdir()
    cube_mod.write_cube(synth_cube(), root / "runs" / "mine.nc")
    return root

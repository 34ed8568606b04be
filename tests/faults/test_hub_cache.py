"""`hf:` sources without a network, and a damaged hub cache: clear errors, no retries.

A local hub-format cache (``tests/_checkpoints.write_hub_cache``) and no network at all. With
``HF_ENDPOINT`` at an address nothing listens on and without ``HF_HUB_OFFLINE``, a real
``lie-stats extract`` process must fail at once (no retry loop, no traceback), say that the
hub is unreachable, and say how to use the cache (``HF_HUB_OFFLINE=1``) and what the cache
holds. With ``HF_HUB_OFFLINE=1``, each cache problem (a snapshot link to a deleted blob, a
``refs/main`` naming a missing snapshot, an unknown revision) is named with the cache folder
and the cached revisions.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from lie_stats import cli
from lie_stats.errors import CheckpointError
from lie_stats.extraction.sources import open_source

from .._checkpoints import commit_hash, make_checkpoint, write_hub_cache

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UNROUTABLE = "http://127.0.0.1:9"  # the discard port: nothing listens, connections are refused


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> pathlib.Path:
    return make_checkpoint("gpt2", tmp_path_factory.mktemp("hubsrc") / "ckpt", head=False, n_layers=1)


@pytest.fixture
def cache(tmp_path, source) -> pathlib.Path:
    root = tmp_path / "hub"
    write_hub_cache(root, "ORG/tiny", {"main": source, "step10": source})
    return root


def _no_network_run(cache: pathlib.Path, tmp_path: pathlib.Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_ENDPOINT=UNROUTABLE, HF_HUB_CACHE=str(cache), HF_HUB_DISABLE_TELEMETRY="1",
               PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""), OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "lie_stats", "extract", *args, "-o", str(tmp_path / "h.nc"),
                           "--families", "Q", "--quiet"], env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("repo, revisions", [("ORG/tiny", []), ("ORG/tiny", ["--revisions", "all"]),
                                             ("ORG/absent", [])])
def test_no_network_fails_at_once_and_says_how_to_use_the_cache(cache, tmp_path, repo, revisions):
    done = _no_network_run(cache, tmp_path, f"hf:{repo}", *revisions)
    assert done.returncode == cli.EXIT_USAGE, done.stderr
    err = done.stderr
    assert "Traceback" not in err and "Retrying" not in err, err
    assert f"hf:{repo}: the hub at {UNROUTABLE} is unreachable (ConnectError" in err, err
    if repo == "ORG/tiny":
        assert f"The cache {cache} holds ORG/tiny at revisions main, step10: set HF_HUB_OFFLINE=1" in err, err
    else:
        assert f"The cache {cache} holds no copy of ORG/absent; it holds ORG/tiny (set HF_HUB_OFFLINE=1" in err, err
    assert not (tmp_path / "h.nc").exists()


@pytest.fixture
def offline(monkeypatch, no_network):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _repo(cache: pathlib.Path) -> pathlib.Path:
    return cache / "models--ORG--tiny"


def test_offline_the_cache_works(cache, offline):
    (ck,) = open_source("hf:ORG/tiny", cache_dir=cache)
    assert ck.adapter().shape.n_layers == 1


def test_a_snapshot_link_to_a_deleted_blob(cache, offline):
    link = _repo(cache) / "snapshots" / commit_hash("ORG/tiny@main") / "config.json"
    blob = link.resolve()
    blob.unlink()
    with pytest.raises(CheckpointError) as e:
        open_source("hf:ORG/tiny", cache_dir=cache)
    msg = str(e.value)
    assert msg.startswith("hf:ORG/tiny@main/config.json: file not found (HF_HUB_OFFLINE"), msg
    assert str(cache) in msg and f"{link} links to" in msg and "a blob that was deleted" in msg, msg
    assert "cached revisions: main, step10" in msg, msg


@pytest.mark.parametrize("revisions", [None, "all"])
def test_a_repository_not_in_the_cache_lists_the_cached_ones(cache, offline, revisions):
    with pytest.raises(CheckpointError) as e:
        open_source("hf:ORG/tyni", revisions=revisions, cache_dir=cache)
    msg = str(e.value)
    assert msg.startswith("hf:ORG/tyni"), msg
    assert "it holds ORG/tiny" in msg, msg


def test_refs_main_naming_a_missing_snapshot(cache, offline):
    snapshot = _repo(cache) / "snapshots" / commit_hash("ORG/tiny@main")
    shutil.rmtree(snapshot)
    with pytest.raises(CheckpointError) as e:
        open_source("hf:ORG/tiny", cache_dir=cache)
    msg = str(e.value)
    assert f"{_repo(cache) / 'refs' / 'main'} names commit {snapshot.name}" in msg, msg
    assert f"whose snapshot {snapshot} is missing" in msg and "cached revisions: main, step10" in msg, msg


def test_an_unknown_revision_lists_the_cached_ones(cache, offline, capsys):
    with pytest.raises(CheckpointError) as e:
        open_source("hf:ORG/tiny", revisions=["step20"], cache_dir=cache)
    msg = str(e.value)
    assert f"the cache {cache}" in msg and "holds ORG/tiny at revisions main, step10, not 'step20'" in msg, msg
    assert "Did you mean 'step10'?" in msg

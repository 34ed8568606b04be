"""The Hugging Face hub behind ``hf:ORG/NAME`` sources: fetching files, offline mode, and
clear errors when the network or the cache fails.

:class:`_Hub` fetches one file of one revision through ``huggingface_hub`` (from the cache
only when ``HF_HUB_OFFLINE`` is set). Without a network the hub client retries each request
for about half a minute; :func:`_hub_unreachable` asks the endpoint once per process, with no
retries, so that a source fails at once, saying what the cache holds and how to use it
(:func:`_unreachable_error`). When a file is missing from the cache offline,
:func:`_cache_diagnosis` says why: the repository, the revision, its snapshot or the blob a
snapshot links to is absent, naming the cache folder and the cached revisions.
"""

from __future__ import annotations

import os
import pathlib
import re
from dataclasses import dataclass, field

from ..errors import CheckpointError, did_you_mean

__all__ = ["HF_PREFIX", "CONFIG_FILE"]

#: Prefix of hub sources.
HF_PREFIX = "hf:"
CONFIG_FILE = "config.json"


def _natural(name: str) -> tuple:
    """Sort key that orders ``step9`` before ``step10``."""
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name))


def _offline() -> bool:
    """Hub offline mode, read at call time (``HF_HUB_OFFLINE`` may be set after import)."""
    from huggingface_hub import constants

    env = os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in {"1", "ON", "YES", "TRUE"}
    return env or bool(constants.HF_HUB_OFFLINE)


@dataclass
class _Hub:
    """Where a hub checkpoint lives and how to fetch one of its files."""

    repo_id: str
    revision: str
    cache_dir: str | None
    fetched: list[str] = field(default_factory=list)

    def where(self, filename: str = "") -> str:
        return f"{HF_PREFIX}{self.repo_id}@{self.revision}" + (f"/{filename}" if filename else "")

    def fetch(self, filename: str, *, missing_ok: bool = False) -> pathlib.Path | None:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import (
            EntryNotFoundError, HfHubHTTPError, LocalEntryNotFoundError, OfflineModeIsEnabled,
            RepositoryNotFoundError, RevisionNotFoundError,
        )

        offline = _offline()
        try:
            path = hf_hub_download(self.repo_id, filename, revision=self.revision,
                                   cache_dir=self.cache_dir, local_files_only=offline)
        except (RepositoryNotFoundError, RevisionNotFoundError) as e:
            raise CheckpointError(f"{self.where()}: no such repository or revision on the hub ({e})") from e
        except (EntryNotFoundError, LocalEntryNotFoundError, OfflineModeIsEnabled) as e:
            if missing_ok:
                return None
            how = ""
            if offline:
                why = _cache_diagnosis(self.repo_id, self.revision, filename, self.cache_dir)
                how = (f" (HF_HUB_OFFLINE is set and the file is not in the cache "
                       f"{_cache_root(self.cache_dir)}: {why})")
            raise CheckpointError(f"{self.where(filename)}: file not found{how}") from e
        except (HfHubHTTPError, *_network_errors()) as e:
            raise CheckpointError(f"{self.where(filename)}: download failed: {e}") from e
        self.fetched.append(filename)
        return pathlib.Path(path)


def _cache_root(cache_dir: str | os.PathLike | None) -> pathlib.Path:
    from huggingface_hub import constants

    return pathlib.Path(cache_dir or constants.HF_HUB_CACHE)


def _cached_revisions(repo_id: str, cache_dir: str | os.PathLike | None) -> list[str] | None:
    """Revision names under ``refs/`` of a repository in the hub cache (None: not cached)."""
    from huggingface_hub.file_download import repo_folder_name

    refs = _cache_root(cache_dir) / repo_folder_name(repo_id=repo_id, repo_type="model") / "refs"
    if not refs.is_dir():
        return None
    return sorted((p.relative_to(refs).as_posix() for p in refs.rglob("*") if p.is_file()), key=_natural)


def _cached_repos(cache_dir: str | os.PathLike | None) -> list[str]:
    """The model repositories the hub cache holds (``ORG/NAME``, from its ``models--ORG--NAME``
    folders), sorted.

    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> (root / "models--EleutherAI--pythia-70m").mkdir(); (root / "datasets--x--y").mkdir()
    >>> _cached_repos(root)
    ['EleutherAI/pythia-70m']
    """
    root = _cache_root(cache_dir)
    try:
        names = [p.name for p in root.iterdir() if p.is_dir() and p.name.startswith("models--")]
    except OSError:
        return []
    return sorted(n[len("models--"):].replace("--", "/", 1) for n in names)


def _held_repos(cache_dir: str | os.PathLike | None) -> str:
    repos = _cached_repos(cache_dir)
    shown = ", ".join(repos[:10]) + (f" and {len(repos) - 10} more" if len(repos) > 10 else "")
    return f"it holds {shown}" if repos else "it holds no model repository"


def _cache_diagnosis(repo_id: str, revision: str, filename: str,
                     cache_dir: str | os.PathLike | None) -> str:
    """Why ``filename`` of ``repo_id@revision`` cannot be read from the hub cache, naming the
    cache folder and the revisions it holds.

    Examples
    --------
    >>> import tempfile
    >>> _cache_diagnosis("ORG/none", "main", "config.json", tempfile.mkdtemp())  # doctest: +ELLIPSIS
    'it holds no copy of ORG/none (no folder .../models--ORG--none; it holds no model repository): download it once with a network'
    """
    from huggingface_hub.file_download import repo_folder_name

    repo = _cache_root(cache_dir) / repo_folder_name(repo_id=repo_id, repo_type="model")
    revisions = _cached_revisions(repo_id, cache_dir)
    if not repo.is_dir():
        return (f"it holds no copy of {repo_id} (no folder {repo}; {_held_repos(cache_dir)}): "
                f"download it once with a network{did_you_mean(repo_id, _cached_repos(cache_dir))}")
    held = ", ".join(revisions or []) or "none"
    if re.fullmatch(r"[0-9a-f]{40}", revision):
        commit = revision
    elif revisions is not None and revision in revisions:
        commit = (repo / "refs" / revision).read_text(encoding="utf-8").strip()
    else:
        return (f"it holds {repo_id} at revisions {held}, not {revision!r}."
                f"{did_you_mean(revision, revisions or [])}")
    snapshot = repo / "snapshots" / commit
    if not snapshot.is_dir():
        return (f"{repo / 'refs' / revision} names commit {commit}, whose snapshot {snapshot} is "
                f"missing (a partly deleted cache?); cached revisions: {held}. Download the "
                f"revision again with a network")
    link = snapshot / filename
    if link.is_symlink() and not link.exists():
        return (f"{link} links to {os.readlink(link)!r}, a blob that was deleted (a cache cleanup?); "
                f"cached revisions: {held}. Download the revision again with a network")
    files = sorted(p.name for p in snapshot.iterdir())
    return (f"the snapshot {snapshot} of revision {revision!r} holds {', '.join(files) or 'no file'}, "
            f"not {filename}: download it once with a network")


#: Hub endpoints tried in this process: endpoint -> None (it answered) or why it did not.
_REACHABLE: dict[str, str | None] = {}


def _hub_unreachable() -> str | None:
    """None when the hub endpoint answers at all (any HTTP status); else the connection
    error. Asked once per process and endpoint, with the hub's own timeout and no retries."""
    from huggingface_hub import constants
    from huggingface_hub.utils import get_session

    endpoint = os.environ.get("HF_ENDPOINT") or constants.ENDPOINT
    if endpoint not in _REACHABLE:
        try:
            get_session().head(endpoint, timeout=constants.HF_HUB_ETAG_TIMEOUT, follow_redirects=False)
            _REACHABLE[endpoint] = None
        except _network_errors() as e:
            _REACHABLE[endpoint] = f"{type(e).__name__}: {e}"
    return _REACHABLE[endpoint]


def _network_errors() -> tuple[type[BaseException], ...]:
    """The exceptions of a failed connection: OSError and the hub client's HTTP library's
    ``TransportError`` (connect, read, timeout, proxy errors), whichever library it uses."""
    import importlib

    from huggingface_hub.utils import get_session

    lib = importlib.import_module(type(get_session()).__module__.split(".")[0])
    transport = getattr(lib, "TransportError", None)
    return (OSError,) + ((transport,) if isinstance(transport, type) else ())


def _unreachable_error(repo_id: str, cache_dir: str | None, why: str) -> CheckpointError:
    from huggingface_hub import constants

    endpoint = os.environ.get("HF_ENDPOINT") or constants.ENDPOINT
    root = _cache_root(cache_dir)
    revisions = _cached_revisions(repo_id, cache_dir)
    if revisions:
        use = (f"The cache {root} holds {repo_id} at revisions {', '.join(revisions)}: set "
               f"HF_HUB_OFFLINE=1 to extract from it without a network.")
    else:
        others = _cached_repos(cache_dir)
        held = (f"; it holds {', '.join(others[:10])}{' ...' if len(others) > 10 else ''} (set "
                f"HF_HUB_OFFLINE=1 to extract those without a network)" if others else "")
        use = (f"The cache {root} holds no copy of {repo_id}{held}: extract it once with a network, "
               f"or point HF_HUB_CACHE at a cache that holds it and set HF_HUB_OFFLINE=1.")
    return CheckpointError(f"{HF_PREFIX}{repo_id}: the hub at {endpoint} is unreachable ({why}). {use}")

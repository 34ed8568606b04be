"""Files, hashes and devices: the one home of the small mechanics every layer shares.

Atomic writes (a temporary file in the target's folder, fsync, rename: a failure leaves any
earlier file as it was), file and text hashes, canonical JSON (the form hashed for
pre-registration and written into NetCDF attributes), the CF global attributes of every
NetCDF file lie_stats writes, the resolution of a ``--device`` word to a torch device, and
the one check that a path built from an id, a name or a file's content stays inside its
folder (:func:`inside`). Strings read from files are escaped for each medium they are shown
in by :mod:`lie_stats._text`.

This module sits at the bottom of the data flow: it imports only the standard library,
numpy, :mod:`lie_stats.schema` and :mod:`lie_stats.errors` (torch lazily, in
:func:`resolve_device`), so that any module may use it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from . import schema
from ._version import __version__
from .errors import LieStatsError

__all__ = [
    "SHARED_MODE",
    "atomic_write",
    "write_text_atomic",
    "file_sha256",
    "text_sha256",
    "canonical_json",
    "canonical_hash",
    "utc_now",
    "cf_global_attrs",
    "resolve_device",
    "lock_path",
    "file_lock",
    "inside",
]

#: Permissions of what lie_stats writes for others to read (cubes, reports, indexes, pins);
#: ``mkstemp`` alone would make the file private (0600).
SHARED_MODE = 0o644

_BLOCK = 1 << 20


def atomic_write(path: str | os.PathLike, write: Callable[[Path], Any], *,
                 mode: int = SHARED_MODE, fsync: bool = True, mkdir: bool = True) -> Path:
    """Write ``path`` atomically: ``write(tmp)`` fills a temporary file beside it, which is
    fsynced, given ``mode`` and renamed onto ``path``.

    On any exception (disk full, interrupt) the temporary file is removed and whatever was
    at ``path`` before is left unchanged; the exception propagates.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> atomic_write(d / "a.txt", lambda tmp: tmp.write_text("hi")).read_text()
    'hi'
    >>> sorted(p.name for p in d.iterdir())
    ['a.txt']
    """
    path = Path(path)
    if mkdir:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        if fsync:
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def inside(folder: str | os.PathLike, *parts: str | os.PathLike, what: str = "file") -> Path:
    """``folder / parts...``, checked to stay inside ``folder``: the one way lie_stats builds a
    path from an id, a name or a file's content (a figure, an export, a shard, a lock, a
    cached or temporary file, a file an index names).

    The path is resolved (``..`` and symbolic links followed) and must lie inside the resolved
    ``folder`` (or be it); a part that is absolute, empty, or holds a NUL byte is refused too.
    The path returned is ``folder`` joined with the parts, as given (not resolved).

    Raises
    ------
    LieStatsError
        Naming the parts, the folder and ``what`` the path was for.

    Examples
    --------
    >>> inside("reports", "figures", "X1__toy.png").as_posix()
    'reports/figures/X1__toy.png'
    >>> inside("reports", "../x.png", what="figure")
    Traceback (most recent call last):
    ...
    lie_stats.errors.LieStatsError: figure path '../x.png' leaves its folder reports (it resolves to .../x.png); expected a name inside that folder.
    """
    folder = Path(folder)
    path = folder
    for part in parts:
        text = os.fspath(part)
        if not text or "\0" in text or os.path.isabs(text):
            raise LieStatsError(f"{what} path {text!r} is not a name inside its folder {folder}: "
                                f"expected a relative, non-empty name without NUL bytes.")
        path = path / text
    base = folder.resolve()
    real = path.resolve()
    if real != base and base not in real.parents:
        rel = "/".join(os.fspath(p) for p in parts)
        raise LieStatsError(f"{what} path {rel!r} leaves its folder {folder} (it resolves to "
                            f"{real}); expected a name inside that folder.")
    return path


def lock_path(path: str | os.PathLike) -> Path:
    """The lock file that guards ``path`` against concurrent writers: ``.<name>.lock`` beside it.

    >>> lock_path("/srv/hypotheses/verdicts.json").as_posix(), lock_path("/srv/reports/").name
    ('/srv/hypotheses/.verdicts.json.lock', '.reports.lock')
    """
    path = Path(os.path.abspath(path))
    return inside(path.parent, f".{path.name}.lock", what="lock file")


@contextlib.contextmanager
def file_lock(path: str | os.PathLike) -> Iterator[Path]:
    """Hold an exclusive ``fcntl`` lock on :func:`lock_path` of ``path`` for the block.

    A second writer of the same ``path`` (another process, or another open of it in this
    one) waits until the first leaves the block; the lock is released when the process
    dies, so a killed writer never leaves it held. The lock file stays (removing it would
    let two writers lock two different files); it is empty and hidden.

    Raises
    ------
    LieStatsError
        The lock file cannot be created (the folder is read-only or absent).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "verdicts.json"
    >>> with file_lock(target) as lock:
    ...     lock.name
    '.verdicts.json.lock'
    """
    import fcntl

    lock = lock_path(path)
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, SHARED_MODE)
    except OSError as e:
        raise LieStatsError(f"{lock}: cannot create the lock file that guards {Path(path).name} "
                            f"against concurrent writers ({e.strerror}); expected a writable "
                            f"folder {lock.parent}.") from e
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield lock
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def write_text_atomic(path: str | os.PathLike, text: str, *, mode: int = SHARED_MODE,
                      fsync: bool = False) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically, readable by all (0644 by default).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = write_text_atomic(pathlib.Path(tempfile.mkdtemp()) / "r" / "x.json", "{}\\n")
    >>> p.read_text(), oct(p.stat().st_mode & 0o777)
    ('{}\\n', '0o644')
    """
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"),
                        mode=mode, fsync=fsync)


def file_sha256(path: str | os.PathLike) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB blocks.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "f"
    >>> _ = p.write_bytes(b"abc")
    >>> file_sha256(p)[:16]
    'ba7816bf8f01cfea'
    """
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_BLOCK), b""):
            h.update(block)
    return h.hexdigest()


def text_sha256(text: str) -> str:
    """Hex sha256 of ``text`` encoded as UTF-8.

    >>> text_sha256("abc")[:16]
    'ba7816bf8f01cfea'
    """
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def canonical_json(value: Any) -> str:
    """The canonical JSON text of ``value``: sorted keys, no spaces, ASCII only, no NaN.

    This is the form that is hashed for pre-registration (:func:`canonical_hash`): two
    declarations hash alike exactly when their canonical texts are equal.

    >>> canonical_json({"b": 1, "a": [1.5, "é"]})
    '{"a":[1.5,"\\\\u00e9"],"b":1}'
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)


def canonical_hash(value: Any) -> str:
    """Hex sha256 of :func:`canonical_json` of ``value``.

    >>> canonical_hash({"a": 1}) == canonical_hash({"a": 1}), canonical_hash({"a": 1}) == canonical_hash({"a": 2})
    (True, False)
    """
    return hashlib.sha256(canonical_json(value).encode("ascii")).hexdigest()


def utc_now() -> str:
    """The current UTC time in ISO 8601, to the second (the ``created`` attribute)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def cf_global_attrs(provenance: Any, failed: Any = (), *, metrics_version: int | None = None,
                    created: str | None = None) -> dict[str, Any]:
    """The global attributes every cube-like NetCDF file of lie_stats carries.

    ``Conventions`` (CF-1.10), ``metrics_version``, ``lie_stats_version``, ``created`` and the
    provenance and failed-checkpoint lists as JSON strings (sorted keys).

    >>> attrs = cf_global_attrs([{"model": "m", "step": 0}], created="2026-01-01T00:00:00+00:00")
    >>> attrs["Conventions"], attrs["provenance"], attrs["failed_checkpoints"]
    ('CF-1.10', '[{"model": "m", "step": 0}]', '[]')
    """
    version = schema.METRICS_VERSION if metrics_version is None else metrics_version
    return {
        schema.ATTR_CONVENTIONS: "CF-1.10",
        schema.ATTR_METRICS_VERSION: np.int64(version),
        schema.ATTR_LIB_VERSION: __version__,
        schema.ATTR_CREATED: created if created is not None else utc_now(),
        schema.ATTR_PROVENANCE: json.dumps(provenance, sort_keys=True),
        schema.ATTR_FAILED: json.dumps(list(failed), sort_keys=True),
    }


def resolve_device(device: Any, *, error: type[Exception] = LieStatsError) -> Any:
    """A ``--device`` word (``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"``) or a
    ``torch.device`` -> a checked ``torch.device``.

    ``"auto"`` is CUDA when torch sees a CUDA device, else the CPU. A CUDA device asked for
    on a machine without one, or any other device type, raises ``error`` (a
    :class:`~lie_stats.errors.LieStatsError` unless the caller names its own class).

    Examples
    --------
    >>> resolve_device("cpu")
    device(type='cpu')
    >>> resolve_device("tpu")
    Traceback (most recent call last):
    ...
    lie_stats.errors.LieStatsError: Unsupported device 'tpu': expected 'auto', 'cpu' or 'cuda'.
    """
    import torch

    if isinstance(device, torch.device):
        dev = device
    elif device == "auto":
        dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        try:
            dev = torch.device(device)
        except (RuntimeError, TypeError) as e:
            raise error(f"Unsupported device {device!r}: expected 'auto', 'cpu' or 'cuda'.") from e
    if dev.type not in ("cpu", "cuda"):
        raise error(f"Unsupported device {device!r}: expected 'auto', 'cpu' or 'cuda'.")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise error(f"Device {device!r} asked for, but torch sees no CUDA device; "
                    f"use 'auto' or 'cpu'.")
    return dev


def terminal_safe(text: Any, *, one_line: bool = False) -> str:
    """:func:`lie_stats._text.terminal_line` under its former name, for
    :func:`lie_stats.diagnosis.diagnosis_table` only: the source of ``lie_stats.diagnosis`` is
    part of every cached diagnosis's code fingerprint, so editing that module would discard
    the committed ``hypotheses/diagnosis.json``. New code uses :mod:`lie_stats._text`.
    ``one_line`` is accepted and changes nothing (a newline shows as ``\\n`` either way).

    >>> terminal_safe("model\\x1b[31m\\nvalid: yes", one_line=True)
    'model\\\\x1b[31m\\\\nvalid: yes'
    """
    from ._text import terminal_line

    return terminal_line(text)

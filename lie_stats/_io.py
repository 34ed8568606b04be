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
    "JSON_MAX_BYTES",
    "JSON_MAX_DEPTH",
    "read_json",
    "loads_json",
    "path_problem",
    "expect_type",
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


#: Bounds of a JSON metadata file (config.json, an index, results.json, verdicts.json, the
#: diagnosis cache, a safetensors header), checked before it is parsed: Python's parser
#: recurses once per level of nesting, so a file nested thousands of levels deep would end
#: in a RecursionError rather than an error naming it. Real files stay far below both (the
#: committed results.json is 1.4 MB, 6 levels deep; a config.json is a few levels deep).
JSON_MAX_BYTES: int = 256 * 2**20
JSON_MAX_DEPTH: int = 64

_JSON_STRING = None


def _json_depth(text: str) -> int:
    """The deepest nesting of ``[`` / ``{`` in JSON text, counted without recursion (brackets
    inside strings are not counted).

    >>> _json_depth('{"a": [1, {"b": "[[["}]}'), _json_depth("3")
    (3, 0)
    """
    import re

    global _JSON_STRING
    if _JSON_STRING is None:
        _JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
    raw = np.frombuffer(_JSON_STRING.sub('""', text).encode("utf-8", "replace"), dtype=np.uint8)
    if raw.size == 0:
        return 0
    step = ((raw == ord("[")) | (raw == ord("{"))).astype(np.int64)
    step -= ((raw == ord("]")) | (raw == ord("}"))).astype(np.int64)
    return int(max(np.cumsum(step).max(), 0))


def loads_json(text: str | bytes, *, where: str, what: str = "JSON",
               error: type[Exception] = LieStatsError, max_depth: int = JSON_MAX_DEPTH,
               max_bytes: int = JSON_MAX_BYTES) -> Any:
    """Parse JSON text read from ``where``, its size and nesting checked first.

    Raises ``error`` naming ``where`` and what was expected (never a RecursionError, a
    MemoryError or a bare decoding error): text over ``max_bytes``, nested deeper than
    ``max_depth``, not UTF-8, or not JSON.

    Examples
    --------
    >>> loads_json('{"a": [1, 2]}', where="x.json")
    {'a': [1, 2]}
    >>> loads_json("[" * 5000 + "]" * 5000, where="deep.json")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lie_stats.errors.LieStatsError: deep.json: JSON nested 5000 levels deep; expected at most 64 ...
    """
    size = len(text)
    if size > max_bytes:
        raise error(f"{where}: {size} bytes of {what}, over the bound of {max_bytes} bytes "
                    f"lie_stats reads; expected a small metadata file.")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise error(f"{where}: not UTF-8 text ({e}); expected {what}.") from None
    depth = _json_depth(text)
    if depth > max_depth:
        raise error(f"{where}: JSON nested {depth} levels deep; expected at most {max_depth} "
                    f"levels ({what}); nothing of it was parsed.")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:  # JSONDecodeError is a ValueError
        raise error(f"{where}: not valid JSON ({e}); expected {what}.") from None


def path_problem(path: str | os.PathLike, expected: str = "a regular file") -> str | None:
    """Why ``path`` is not ``expected``, in words, or None when it is (or when it is simply
    absent: the caller says what is missing). Nothing is opened, so a FIFO cannot block.

    ``expected`` is ``"a regular file"`` or ``"a folder"``; the words name a folder, a FIFO,
    a socket, a device, a dangling link, a link loop, a path too long for the file system
    (``ENAMETOOLONG``) or a missing permission.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> path_problem(d)
    'a folder, not a regular file'
    >>> path_problem(d / "absent") is None, path_problem(d, "a folder") is None
    (True, True)
    >>> path_problem(d / ("x" * 300))  # doctest: +ELLIPSIS
    'a path too long for the file system (a name of 300 bytes; the file system allows ...'
    """
    import errno
    import stat

    path = Path(path)
    try:
        st = os.stat(path)
    except OSError as e:
        if e.errno == errno.ENAMETOOLONG:
            longest = max((len(os.fsencode(p)) for p in path.parts), default=0)
            try:
                name_max = os.pathconf(_existing_parent(path), "PC_NAME_MAX")
            except (OSError, ValueError):
                name_max = 255
            return (f"a path too long for the file system (a name of {longest} bytes; the file "
                    f"system allows {name_max} bytes per name; the whole path has "
                    f"{len(os.fsencode(str(path)))} bytes); expected {expected} at a shorter path")
        if e.errno == errno.ELOOP:
            return f"a symbolic link loop, not {expected}"
        if e.errno in (errno.EACCES, errno.EPERM):
            return f"not readable: no permission to look at it ({e.strerror}); expected {expected}"
        if e.errno == errno.ENOTDIR:
            return None  # a parent is a file: simply absent
        if e.errno == errno.ENOENT:
            if os.path.islink(path):
                return f"a dangling symbolic link to {os.readlink(path)!r}, not {expected}"
            return None
        return f"unreadable ({e.strerror}); expected {expected}"
    kinds = [(stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a folder"),
             (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")]
    kind = next((name for test, name in kinds if test(st.st_mode)), "a special file")
    return None if kind == expected else f"{kind}, not {expected}"


def _existing_parent(path: Path) -> Path:
    for parent in [path, *path.parents]:
        try:
            if parent.is_dir():
                return parent
        except OSError:
            continue
    return Path("/")


def read_json(path: str | os.PathLike, *, what: str = "JSON", where: str | None = None,
              error: type[Exception] = LieStatsError, max_depth: int = JSON_MAX_DEPTH,
              max_bytes: int = JSON_MAX_BYTES) -> Any:
    """Read a JSON metadata file with its kind, size and nesting checked before parsing
    (:func:`loads_json`); one bounded reader for every JSON file lie_stats reads.

    Raises ``error`` naming ``where`` (default: the path) when the path is not a regular
    file (a folder, a FIFO: nothing is opened), is over ``max_bytes``, is nested deeper
    than ``max_depth``, or is not JSON. A missing file raises ``FileNotFoundError`` (the
    caller knows what a missing file means).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "c.json"
    >>> _ = p.write_text('{"n": 1}')
    >>> read_json(p)
    {'n': 1}
    >>> _ = p.write_text('{"n": ' * 3000)
    >>> read_json(p, what="a config")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lie_stats.errors.LieStatsError: ...c.json: JSON nested 3000 levels deep; expected at most 64 levels (a config); ...
    """
    path = Path(path)
    where = str(path) if where is None else where
    problem = path_problem(path)
    if problem is not None:
        raise error(f"{where}: {problem}; expected {what}.")
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise
    except OSError as e:
        raise error(f"{where}: cannot read it ({e.strerror}); expected {what}.") from None
    if size > max_bytes:
        raise error(f"{where}: {size} bytes, over the bound of {max_bytes} bytes lie_stats reads "
                    f"for {what}; nothing of it was parsed.")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise
    except OSError as e:
        raise error(f"{where}: cannot read it ({e.strerror}); expected {what}.") from None
    return loads_json(data, where=where, what=what, error=error, max_depth=max_depth,
                      max_bytes=max_bytes)


def expect_type(value: Any, types: type | tuple[type, ...], *, where: str, field: str,
                expected: str, error: type[Exception] = LieStatsError) -> Any:
    """``value`` when it is an instance of ``types`` (a bool is not a number here), else
    ``error`` naming ``where``, ``field`` and ``expected``.

    >>> expect_type(3, int, where="c.json", field="n_layer", expected="an integer")
    3
    >>> expect_type([3], int, where="c.json", field="n_layer", expected="an integer")
    Traceback (most recent call last):
    ...
    lie_stats.errors.LieStatsError: c.json: field 'n_layer' is a list ([3]); expected an integer.
    """
    types = types if isinstance(types, tuple) else (types,)
    is_bool = isinstance(value, (bool, np.bool_))
    if isinstance(value, types) and not (is_bool and bool not in types and np.bool_ not in types):
        return value
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    raise error(f"{where}: field {field!r} is {_kind(value)} ({shown}); expected {expected}.")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, (bool, np.bool_)):
        return "a boolean"
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape}"
    names = {str: "a string", int: "an integer", float: "a number", list: "a list", dict: "an object",
             tuple: "a list"}
    for t, name in names.items():
        if isinstance(value, t):
            return name
    if isinstance(value, np.integer):
        return "an integer"
    if isinstance(value, np.floating):
        return "a number"
    return f"a {type(value).__name__}"

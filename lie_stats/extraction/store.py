"""The shard store of an extraction and the output it writes: what may be kept, what must be
redone, what must not be replaced.

An extraction writes each finished checkpoint as a shard in ``OUT.nc.shards/``
(:mod:`lie_stats.extraction.pipeline`). This module holds the store's lock (:func:`lock_store`), its
preparation for a run (:func:`prepare_store`), the check of each shard a ``--resume`` would
keep (:func:`shard_problems`: unreadable, of another checkpoint, made with other options, or
lacking a variable it recorded, each said by name), and the two checks of the output every
command that writes a cube makes before any work: where it goes (:func:`check_output`: the
folder, the name, a file that is not a cube) and that an existing cube is never replaced
unless the same run wrote it (:func:`check_replace`).
Notices (what was redone, what was left out) go to stderr through :func:`notice`, whatever
the progress setting, so that nothing is resolved silently.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._io import path_problem, read_json, write_text_atomic
from .._text import terminal_line
from ..cube import is_cube_file, open_cube, provenance_of, read_global_attrs, write_failure_advice
from ..errors import CubeError, LieStatsError

__all__ = ["lock_store", "prepare_store", "shard_problems", "check_output", "check_replace", "notice",
           "options_diff", "SHARD_KEY_SCHEME"]

#: How shard names are derived; written into each shard store (``shard_keys.json``) so that a
#: store whose shards were named another way is refused rather than matched wrongly.
SHARD_KEY_SCHEME = ("sha256 of [model, step, revision, path, the checkpoint's files, the run's "
                    "first checkpoint's files]")

_LOCK_NAME = "LOCK"
_KEYS_NAME = "shard_keys.json"
_OPTIONS_NAME = "options.json"


def notice(message: str) -> None:
    """Say something the user must know but that does not stop the run (to stderr, escaped)."""
    print(f"lie-stats extract: notice: {terminal_line(message)}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def lock_store(store: Path) -> Iterator[Path]:
    """Hold an exclusive lock on a shard store for the duration of a run.

    The lock is ``fcntl.flock`` on ``STORE/LOCK``, which names its holder (``pid@host``).
    The kernel releases it when the holder exits, however it exits (a killed run leaves
    no stale lock). ``flock`` is per host: two runs on different machines writing to one
    store on a network filesystem are not guarded (use one driver per store).

    Raises
    ------
    LieStatsError
        When another process holds the lock: names the store and the holder's pid.

    Examples
    --------
    >>> import tempfile
    >>> store = Path(tempfile.mkdtemp()) / "c.nc.shards"
    >>> with lock_store(store):
    ...     with lock_store(store):  # doctest: +ELLIPSIS
    ...         pass
    Traceback (most recent call last):
    ...
    lie_stats.errors.LieStatsError: ...c.nc.shards is in use by another extraction (pid ...
    """
    import fcntl

    store.mkdir(parents=True, exist_ok=True)
    lock_path = store / _LOCK_NAME
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "unknown"
            raise LieStatsError(
                f"{store} is in use by another extraction (pid {holder}, lock {lock_path}); "
                f"two runs writing one shard store would corrupt it. Wait for that run to "
                f"finish (then --resume), or write to another output."
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}@{os.uname().nodename}\n".encode(), 0)
        try:
            yield store
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _read_store_json(path: Path) -> Any:
    if not path.exists():
        return None
    return read_json(path, what="a file lie_stats wrote into its shard store")


def prepare_store(store: Path, wanted: Mapping[str, Any], *, resume: bool) -> None:
    """Make ``store`` ready for a run with the options ``wanted`` (held under its lock).

    A store holding shards is continued only with ``resume``, and only when its shards were
    named by :data:`SHARD_KEY_SCHEME`. Shards made with other options are not refused here:
    :func:`shard_problems` finds each one, and the run redoes it and says so.
    """
    keys_file = store / _KEYS_NAME
    keys = {"shard_key": SHARD_KEY_SCHEME}
    if store.exists() and any(store.glob("*.nc")):
        if not resume:
            raise LieStatsError(
                f"{store}: a shard store from an earlier run exists. Use --resume to continue it, "
                f"or remove the folder to start afresh."
            )
        if _read_store_json(keys_file) != keys:
            raise LieStatsError(
                f"{store}: the shard store was written by an earlier lie_stats whose shard names "
                f"do not include the hashes of the checkpoints' files, so --resume cannot tell "
                f"whether a shard still matches the files on disk. Remove the folder and rerun "
                f"without --resume."
            )
    store.mkdir(parents=True, exist_ok=True)
    for stale in store.glob(".*.tmp"):  # half-written shards of a killed run (the lock is ours)
        stale.unlink(missing_ok=True)
    write_text_atomic(store / _OPTIONS_NAME, json.dumps(dict(wanted), sort_keys=True))
    write_text_atomic(keys_file, json.dumps(keys, sort_keys=True))


def options_diff(have: Any, wanted: Mapping[str, Any]) -> str:
    """The options that differ, in words (``families Q -> Q,K``); empty when none do.

    >>> options_diff({"families": ["Q"], "seed": 0}, {"families": ["Q", "K"], "seed": 0})
    'families Q -> Q,K'
    """
    if not isinstance(have, Mapping):
        return f"options {have!r} -> {dict(wanted)}"

    def show(v: Any) -> str:
        return ",".join(map(str, v)) if isinstance(v, list) else json.dumps(v, sort_keys=True)

    out = []
    for key in sorted(set(have) | set(wanted)):
        if have.get(key) != wanted.get(key):
            out.append(f"{key} {show(have.get(key)) if key in have else '(unset)'} -> "
                       f"{show(wanted.get(key)) if key in wanted else '(unset)'}")
    return "; ".join(out)


def shard_problems(shards: Sequence[tuple[Path, str, int]], wanted: Mapping[str, Any]) -> list[str | None]:
    """For each shard ``(path, model, step)`` of a store, why it cannot be kept for checkpoint
    ``model`` at ``step`` under the options ``wanted`` (:meth:`ExtractOptions.result_key`), or
    None when it can.

    A shard must open as a valid cube (:func:`lie_stats.cube.open_cube`), hold exactly that
    checkpoint, have been made with the same options (each shard records its own), and hold
    every variable it recorded when it was written (a variable dropped from the file would
    otherwise become NaN in the merged cube without a word). A shard written before shards
    recorded their variables must hold every variable another shard of the store made with
    the same options holds.
    """
    out: list[str | None] = []
    legacy: list[tuple[int, Path, set[str]]] = []
    seen: set[str] = set()
    for path, model, step in shards:
        why, variables = _shard_problem(path, model=model, step=step, wanted=wanted)
        out.append(why)
        if why is None:
            if variables is None:
                legacy.append((len(out) - 1, path, _variables_of(path)))
            else:
                seen |= variables
    for i, path, held in legacy:
        missing = sorted((seen | set().union(*(h for _, _, h in legacy))) - held)
        if missing:
            out[i] = (f"{path}: variable(s) {', '.join(repr(v) for v in missing)} missing; expected "
                      f"the variables the other shards made with the same options hold")
    return out


def _variables_of(path: Path) -> set[str]:
    import xarray as xr

    with xr.open_dataset(path, engine="netcdf4") as ds:  # the header only
        return set(map(str, ds.data_vars))


def _shard_problem(path: Path, *, model: str, step: int,
                   wanted: Mapping[str, Any]) -> tuple[str | None, set[str] | None]:
    """Why one shard cannot be kept (or None), and the variables it recorded (None when it
    recorded none: a shard of an earlier lie_stats)."""
    try:
        ds = open_cube(path)
    except CubeError as e:
        return f"unreadable: {e}", None
    records = provenance_of(ds)
    holds = [(str(m), int(s)) for m in ds["model"].values.tolist() for s in ds["step"].values.tolist()]
    if holds != [(model, step)] or len(records) != 1:
        return (f"{path}: holds {', '.join(f'{m}@{s}' for m, s in holds) or 'nothing'} with "
                f"{len(records)} provenance record(s); expected exactly {model}@{step}"), None
    record = records[0]
    diff = options_diff(record.get("options"), wanted)
    if diff:
        return f"{path}: made with other options ({diff})", None
    variables = record.get("variables")
    if variables is None:
        return None, None
    if not (isinstance(variables, list) and all(isinstance(v, str) for v in variables)):
        return (f"{path}: its provenance field 'variables' is {str(variables)[:40]!r}; expected the "
                f"list of the variables it holds"), None
    missing = sorted(set(variables) - set(map(str, ds.data_vars)))
    if missing:
        return (f"{path}: variable(s) {', '.join(repr(v) for v in missing)} missing; expected the "
                f"{len(variables)} variables it recorded when it was written"), None
    return None, set(variables)


def _records_of(path: Path) -> list[dict] | None:
    """The provenance records in a cube file's header (None when unreadable)."""
    attrs = read_global_attrs(path)
    if attrs is None:
        return None
    try:
        import xarray as xr

        return provenance_of(xr.Dataset(attrs={"provenance": attrs.get("provenance", "[]")}))
    except CubeError:
        return None


def check_replace(out: Path, checkpoints: Sequence[tuple[str, int]], wanted: Mapping[str, Any], *,
                  resume: bool, force: bool, resumable: bool = True) -> None:
    """Refuse to replace an existing cube at ``out`` unless ``force``, or unless ``resume``
    continues the run that wrote it: every checkpoint it holds is one this run extracts (so
    the new cube holds them all again). With ``resume`` and other options than the cube's,
    the run goes on and says which options changed (its checkpoints are computed anew).

    Every command that writes a cube (``extract``, ``extract --delta``) refuses through here,
    with one message; ``resumable=False`` (a cube computed in one piece, like the
    parameter-delta cube) leaves ``--resume`` out of the advice.

    Raises
    ------
    LieStatsError
        Naming the file, what it holds and the flag that allows replacing it.
    """
    if force or not out.exists() or not is_cube_file(out):
        return  # a file that is not a cube: refused (or replaced with --force) by check_output
    records = _records_of(out)
    if records is None:
        raise LieStatsError(
            f"{out}: a cube is already there, and its provenance cannot be read, so no run can "
            f"tell it wrote it; extract never replaces an existing cube. Give --force to replace "
            f"it, or another -o."
        )
    held = [(str(r.get("model")), r.get("step")) for r in records]
    shown = ", ".join(f"{m}@{s}" for m, s in held[:6]) + (" ..." if len(held) > 6 else "")
    if not resume:
        resume_hint = " --resume to continue the run that wrote it," if resumable else ""
        raise LieStatsError(
            f"{out}: a cube is already there ({len(held)} checkpoint(s): {shown or 'none listed'}); "
            f"extract never replaces an existing cube. Give --force to replace it,{resume_hint} "
            f"or another -o."
        )
    ours = set(checkpoints)
    lost = [f"{m}@{s}" for m, s in held if (m, s) not in ours]
    if lost:
        raise LieStatsError(
            f"{out}: --resume continues the run that wrote this cube, but it holds checkpoint(s) "
            f"this run does not extract ({', '.join(lost[:6])}{' ...' if len(lost) > 6 else ''}); "
            f"replacing it would lose them. Give the same sources, --force to replace it, or "
            f"another -o."
        )
    diffs = sorted({options_diff(r.get("options"), wanted) for r in records} - {""})
    if diffs:
        notice(f"{out} was made with other options ({' | '.join(diffs)}); --resume extracts "
               f"with this run's options, redoing what they change, and replaces it.")


#: Characters :func:`lie_stats._io.atomic_write` adds to a name for its temporary file
#: (``.NAME.XXXXXXXX.tmp``), and the shard store's suffix.
_TMP_EXTRA = len(".") + len(".") + 8 + len(".tmp")


def check_output(out: str | os.PathLike, *, force: bool = False, store_suffix: str = "") -> Path:
    """Check where a cube is to be written, before any work, and return the path.

    The folder must exist and be writable (it is not created: a typo in ``-o`` would
    otherwise scatter cubes); the file name must fit the file system with the temporary name
    (and ``store_suffix``, an extraction's shard store) added; and an existing file is
    replaced only when it is a lie_stats cube (read from its header alone,
    :func:`lie_stats.cube.is_cube_file`) or ``force`` is given.

    Raises
    ------
    CubeError
        Naming the path and what was expected.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "notes.txt").write_text("my notes")
    >>> check_output(d / "notes.txt")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lie_stats.errors.CubeError: ...notes.txt exists and is not a lie_stats cube ...
    >>> check_output(d / "new.nc") == d / "new.nc"
    True
    """
    import errno

    out = Path(out)
    parent = out.parent
    for where, expected in ((parent, "a folder"), (out, "a regular file")):
        problem = path_problem(where, expected)  # too long for the file system, a FIFO, a loop
        if problem is not None and not problem.startswith(("a folder", "a regular file")):
            raise CubeError(f"{out}: {'it' if where == out else 'its folder ' + str(where)} is "
                            f"{problem} (-o).")
    if not parent.is_dir():
        raise CubeError(
            f"{out}: the output folder {parent} does not exist{' (it is a file)' if parent.exists() else ''}; "
            f"expected an existing folder (create it first: it is not created for you, so that a "
            f"typo in -o cannot scatter cubes)."
        )
    if out.is_dir():
        raise CubeError(f"{out}: is a folder; expected a cube file name (e.g. {out / 'cube.nc'}).")
    try:
        name_max = os.pathconf(parent, "PC_NAME_MAX")
    except (OSError, ValueError):
        name_max = 255
    longest = len(os.fsencode(out.name)) + max(_TMP_EXTRA, len(store_suffix))
    if longest > name_max:
        raise CubeError(
            f"{out}: the file name is {len(os.fsencode(out.name))} bytes; with the temporary and "
            f"shard-store names lie_stats adds ({longest} bytes) it exceeds the {name_max} bytes the "
            f"file system allows per name. Expected a shorter -o."
        )
    if not os.access(parent, os.W_OK):
        ro = bool(os.statvfs(parent).f_flag & os.ST_RDONLY)
        code = errno.EROFS if ro else errno.EACCES
        raise CubeError(f"{out}: cannot write in {parent}: "
                            f"{write_failure_advice(out, OSError(code, os.strerror(code)))}")
    if out.exists() and not force and not is_cube_file(out):
        raise CubeError(
            f"{out} exists and is not a lie_stats cube (its header lacks the cube's global "
            f"attributes); extract does not overwrite it. Expected a new file name or an earlier "
            f"cube; give --force to replace it anyway."
        )
    return out

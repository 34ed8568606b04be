"""How the reports folder is written: checked first, staged whole, swapped in at once, locked.

- :func:`check_reports_dir` says, before any evaluation, whether a folder can hold the
  reports (not a file, not read-only), so that a run fails at its start with exit 2 rather
  than after all its work.
- :func:`staged_reports` gives a staging folder beside the reports folder, filled by the
  caller; on success the staging folder replaces the reports folder in one rename
  (``renameat2(RENAME_EXCHANGE)`` where the kernel has it, else two renames), so a reader,
  a crash or a Ctrl-C sees either the earlier report or the new one, never a mix. Files of
  the earlier folder that lie_stats did not write are carried over. The whole write holds
  an ``fcntl`` lock on ``.<name>.lock`` beside the folder: two runs into one folder write
  one after the other, each a complete report.
- :func:`stable_numbers` rounds the numbers of ``results.json`` to :data:`RESULT_DIGITS`
  significant digits, and :func:`keep_identical_figures` keeps an earlier figure's bytes
  when the new one has the same pixels: what makes a report written on another CPU, or
  with another PNG encoder, the same files.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..errors import LieStatsError

__all__ = ["RESULT_DIGITS", "stable_numbers", "check_reports_dir", "staged_reports",
           "keep_identical_figures", "OWN_ENTRIES"]

#: Significant digits of the numbers in ``results.json``. The same run on an Intel AVX-512
#: and an AMD EPYC machine (different BLAS kernels, summation orders) gave numbers that
#: differ by up to 4.5e-13 relative (54 numbers of 8 results); 12 significant digits keep
#: a quantum (1e-12 to 1e-11 relative) above that spread for nearly every number, and are
#: 9 digits more than any report table shows (3), so nothing a reader or a verdict uses is
#: lost. Numbers that are zero up to round-off (a correlation of 4.8e-18 on one CPU, 0 on
#: another) are not made equal by rounding: tests compare them with an absolute tolerance.
RESULT_DIGITS = 12

#: Entries of a reports folder that lie_stats writes; every other entry is carried over.
OWN_ENTRIES = ("results.json", "report.md", "report.html", "figures")


def stable_numbers(value: Any, digits: int = RESULT_DIGITS) -> Any:
    """``value`` with every float rounded to ``digits`` significant digits (recursively in
    dicts, lists and tuples); ints, bools, strings and ``None`` unchanged.

    Examples
    --------
    >>> stable_numbers({"p": 0.1 + 0.2, "n": 12, "ci": [1 / 3, None], "ok": True})
    {'p': 0.3, 'n': 12, 'ci': [0.333333333333, None], 'ok': True}
    >>> stable_numbers(4.763982287261096e-18)
    4.76398228726e-18
    """
    if isinstance(value, float):
        return float(f"{value:.{digits}g}") if math.isfinite(value) else value
    if isinstance(value, dict):
        return {k: stable_numbers(v, digits) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(stable_numbers(v, digits) for v in value)
    return value


def _probe_writable(folder: Path, what: str) -> None:
    try:
        with tempfile.TemporaryFile(dir=folder, prefix=".lie_stats-probe-"):
            pass
    except OSError as e:
        raise LieStatsError(f"{folder}: {what} is not writable ({e.strerror or e}); expected a "
                            f"folder lie_stats can write the reports into. Give another one "
                            f"with --reports DIR (or --lie-reports DIR under pytest).") from e


def check_reports_dir(path: str | os.PathLike) -> Path:
    """Check, before any work, that ``path`` can receive the reports; returns it absolute.

    The folder itself and the folder above it (where the new report is staged and swapped
    in) must be writable; a missing folder needs a writable existing ancestor.

    Raises
    ------
    LieStatsError
        ``path`` (or an ancestor) is a file, or a folder that is read-only.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "notes.txt"
    >>> _ = f.write_text("x")
    >>> check_reports_dir(f)
    Traceback (most recent call last):
    ...
    lie_stats.errors.LieStatsError: .../notes.txt: the reports path is a file, not a folder; expected a folder (created when absent). Give another one with --reports DIR.
    >>> check_reports_dir(f.parent / "reports").name
    'reports'
    """
    path = Path(os.path.abspath(path))
    if path.exists() and not path.is_dir():
        raise LieStatsError(f"{path}: the reports path is a file, not a folder; expected a folder "
                            f"(created when absent). Give another one with --reports DIR.")
    if path.is_dir():
        _probe_writable(path, "the reports folder")
    ancestor = path.parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise LieStatsError(f"{ancestor}: is a file, so the reports folder {path} cannot be "
                            f"created under it; expected a folder.")
    _probe_writable(ancestor, f"the folder that receives the reports folder {path.name}")
    return path


_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux ``renameat2``); False where unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd = -100
    rc = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE)
    return rc == 0


def _carry_over(old: Path, stage: Path, *, figures: bool) -> None:
    """Copy into ``stage`` what of ``old`` this write does not replace: every entry that
    lie_stats does not write, files of ``figures/`` that are not per-result figures, and,
    when no figures are drawn, the whole earlier ``figures/``."""
    for entry in old.iterdir():
        target = stage / entry.name
        if entry.name == OWN_ENTRIES[3] and entry.is_dir() and not entry.is_symlink():
            (stage / entry.name).mkdir(exist_ok=True)
            for fig in entry.iterdir():
                mine = fig.suffix == ".png" and "__" in fig.name
                if (not figures or not mine) and not (target / fig.name).exists():
                    _copy(fig, target / fig.name)
            continue
        if entry.name in OWN_ENTRIES or target.exists():
            continue
        _copy(entry, target)


def _copy(src: Path, dst: Path) -> None:
    if src.is_dir() and not src.is_symlink():
        shutil.copytree(src, dst, symlinks=True)
    else:
        shutil.copy2(src, dst, follow_symlinks=False)


@contextlib.contextmanager
def staged_reports(reports_dir: str | os.PathLike, *, figures: bool = True) -> Iterator[Path]:
    """A staging folder to write a whole report into; swapped in for ``reports_dir`` when
    the block ends without an exception, removed (the earlier report untouched) otherwise.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> (root / "reports").mkdir(); _ = (root / "reports" / "notes.txt").write_text("mine")
    >>> _ = (root / "reports" / "results.json").write_text("old")
    >>> with staged_reports(root / "reports") as stage:
    ...     _ = (stage / "results.json").write_text("new")
    >>> sorted(p.name for p in (root / "reports").iterdir()), (root / "reports" / "results.json").read_text()
    (['notes.txt', 'results.json'], 'new')
    >>> sorted(p.name for p in root.iterdir())  # nothing staged is left; the lock file stays
    ['.reports.lock', 'reports']
    """
    from .._io import SHARED_MODE, file_lock

    reports_dir = check_reports_dir(reports_dir)
    reports_dir.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(reports_dir):
        stage = Path(tempfile.mkdtemp(prefix=f".{reports_dir.name}.new-", dir=reports_dir.parent))
        old = None
        try:
            os.chmod(stage, SHARED_MODE | 0o111)
            yield stage
            if reports_dir.is_dir():
                _carry_over(reports_dir, stage, figures=figures)
                if _exchange(stage, reports_dir):
                    old = stage  # the earlier report, now at the staging path
                else:  # no atomic exchange here: two renames, the earlier kept until the second
                    old = Path(tempfile.mkdtemp(prefix=f".{reports_dir.name}.old-", dir=reports_dir.parent))
                    os.replace(reports_dir, old / "r")
                    os.replace(stage, reports_dir)
            else:
                os.replace(stage, reports_dir)
        finally:
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
            if stage.exists():
                shutil.rmtree(stage, ignore_errors=True)


def keep_identical_figures(stage: Path, earlier: Path, names: Iterable[str]) -> int:
    """For each figure ``names`` (paths relative to the folders) drawn in ``stage`` whose
    earlier version in ``earlier`` has the same size and pixels, put the earlier bytes back
    (PNG encoders of different zlib builds compress the same image differently). Returns
    how many were kept."""
    from .._io import inside

    kept = 0
    for rel in names:
        new, old = inside(stage, rel, what="figure"), inside(earlier, rel, what="figure")
        if not (new.is_file() and old.is_file()):
            continue
        if new.read_bytes() == old.read_bytes():
            continue
        try:
            from PIL import Image

            with Image.open(new) as a, Image.open(old) as b:
                same = a.size == b.size and a.mode == b.mode and a.tobytes() == b.tobytes()
        except (OSError, ValueError, ImportError):
            continue
        if same:
            shutil.copy2(old, new)
            kept += 1
    return kept

"""Text of the reports: numbers rounded for humans, file names and paths, result fields.

The one place that rounds numbers for humans; ``results.json`` keeps
12 significant digits (:mod:`lie_stats.report.writing`). Strings from files are escaped
by :mod:`lie_stats._text`, one function per medium (:func:`md_text` for Markdown, re-exported
here for the report sections of the claims' modules).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .._text import md_text

__all__ = ["fmt", "interval_text", "estimate_text", "reference_text", "figure_name", "result_field",
           "relative_path", "md_text", "MAX_NAME"]


def fmt(value: Any, digits: int = 3) -> str:
    """A number rounded to ``digits`` significant digits for humans; ``-`` for missing.

    Examples
    --------
    >>> fmt(-0.27412), fmt(0.0000123), fmt(float("nan")), fmt(96.0)
    ('-0.274', '1.23e-05', '-', '96')
    """
    if value is None:
        return "-"
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value)).lower()
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(v):
        return "-"
    if v == int(v) and abs(v) < 1e6:
        return str(int(v))
    return f"{v:.{digits}g}"


def interval_text(lo: Any, hi: Any) -> str:
    """An interval rounded for humans; ``-`` when both ends are missing.

    >>> interval_text(0.0213, 0.2), interval_text(None, float("nan"))
    ('[0.0213, 0.2]', '-')
    """
    return "-" if fmt(lo) == "-" and fmt(hi) == "-" else f"[{fmt(lo)}, {fmt(hi)}]"


def estimate_text(e: Any, lo: Any, hi: Any) -> str:
    """An estimate with its interval, rounded for humans.

    >>> estimate_text(-0.3, -0.5, -0.1), estimate_text(2.0, None, None)
    ('-0.3 [-0.5, -0.1]', '2')
    """
    ci = interval_text(lo, hi)
    return fmt(e) if ci == "-" else f"{fmt(e)} {ci}"


def reference_text(ref: Mapping[str, Any]) -> str:
    """The original figures of a claim, rounded: ``rho = -0.274, n = 96``; ``-`` for none.

    >>> reference_text({"rho": -0.27412, "n": 96, "note": "Spearman"}), reference_text({})
    ('rho = -0.274, n = 96, note = Spearman', '-')
    """
    return ", ".join(f"{k} = {fmt(v) if isinstance(v, (int, float)) else v}" for k, v in ref.items()) or "-"


#: Longest figure (and export) file name: far under the 255 bytes of common file systems, with
#: room for the staging prefixes and suffixes the writers add.
MAX_NAME = 120


def figure_name(result_id: str, dataset: str) -> str:
    """Deterministic figure file name of one result: ``<id>__<dataset>.png``.

    Characters outside ``A-Za-z0-9._-`` become ``_``; when that changed the name, or the
    name would be longer than :data:`MAX_NAME`, a hash of the exact id and dataset is
    appended (the parts cut to fit), so two results never share a file and no name is
    too long for the file system.

    >>> figure_name("X1", "pico_pythia")
    'X1__pico_pythia.png'
    >>> figure_name("X1", "pico pythia")
    'X1__pico_pythia-964d0b26.png'
    >>> len(figure_name("X" * 300, "toy"))
    120
    """
    import hashlib

    safe = lambda s: re.sub(r"[^A-Za-z0-9._-]+", "_", s).strip("_") or "x"  # noqa: E731
    a, b = safe(str(result_id)), safe(str(dataset))
    name = f"{a}__{b}.png"
    if (a, b) == (str(result_id), str(dataset)) and len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(f"{result_id}\0{dataset}".encode("utf-8", "surrogatepass")).hexdigest()[:8]
    room = MAX_NAME - len("__") - len(digest) - len("-.png")
    b = b[: max(room // 3, room - len(a))]
    a = a[: room - len(b)]
    return f"{a}__{b}-{digest}.png"


def result_field(result: Any, name: str, default: Any = None) -> Any:
    """One field of a result, whether a :class:`~lie_stats.spec.Result` or its results.json
    record (a mapping).

    Examples
    --------
    >>> result_field({"id": "X1"}, "id"), result_field({"id": "X1"}, "verdict", "-")
    ('X1', '-')
    """
    if isinstance(result, Mapping):
        return result.get(name, default)
    return getattr(result, name, default)


def relative_path(path: str | os.PathLike, base: Path) -> str:
    """``path`` relative to ``base`` (POSIX form) when inside it, else its file name: what
    the reports record of a file, so that they do not depend on the machine.

    Examples
    --------
    >>> from pathlib import Path
    >>> base = Path("/srv/project").resolve()
    >>> relative_path(base / "hypotheses" / "X1.py", base), relative_path("/elsewhere/X1.py", base)
    ('hypotheses/X1.py', 'X1.py')
    """
    try:
        return Path(path).resolve().relative_to(base).as_posix()
    except (ValueError, OSError):
        return Path(path).name

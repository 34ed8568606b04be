"""Input validation shared by the statistics modules (internal).

Every public function of :mod:`lie_stats.stats` validates its arguments here so that bad
input fails with :class:`~lie_stats.errors.StatsInputError` naming the argument and what
was expected, never with an error from deep inside numpy or scipy.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from lie_stats.errors import StatsInputError, did_you_mean

if TYPE_CHECKING:  # pragma: no cover - annotations only
    import pandas as pd

ALTERNATIVES = ("two-sided", "greater", "less")
CORRELATION_METHODS = ("spearman", "pearson", "kendall")

#: Chunk size (elements of one [chunk, n] or [chunk, n, n] block) for resampling loops.
CHUNK_ELEMENTS = 1 << 21


def choice(value: str, choices: Iterable[str], *, name: str, where: str) -> str:
    """Check that ``value`` is one of ``choices``; suggest the closest on a typo."""
    choices = tuple(choices)
    if not isinstance(value, str) or value not in choices:
        raise StatsInputError(
            f"{where}: {name}={value!r} is not one of {', '.join(map(repr, choices))}."
            f"{did_you_mean(str(value), choices)}"
        )
    return value


def positive_int(value: Any, *, name: str, where: str, minimum: int = 1) -> int:
    """Check an integer count (``n_perm``, ``n_boot``, ``n``) against a minimum."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise StatsInputError(
            f"{where}: {name} must be an integer >= {minimum}, got {value!r}."
        )
    return int(value)


def seed_value(seed: Any, *, where: str) -> int:
    """Check a seed (a non-negative integer; randomness only from explicit seeds)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise StatsInputError(f"{where}: seed must be a non-negative integer, got {seed!r}.")
    return int(seed)


def level(value: Any, *, name: str, where: str) -> float:
    """Check a probability level in the open interval (0, 1) (``ci``, ``alpha``)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = float("nan")
    if not 0.0 < v < 1.0:
        raise StatsInputError(f"{where}: {name} must lie in (0, 1), got {value!r}.")
    return v


def positive_finite(value: Any, *, name: str, where: str, what: str = "a positive finite number") -> float:
    """Check a positive finite number (an equivalence bound); ``what`` names it in the message."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = float("nan")
    if not (v > 0 and np.isfinite(v)):
        raise StatsInputError(f"{where}: {name} must be {what}, got {v!r}.")
    return v


def vector(x: ArrayLike, *, name: str, where: str) -> np.ndarray:
    """Convert to a 1-D float64 array (NaN allowed; +-inf refused)."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise StatsInputError(f"{where}: {name} must be numeric, got {type(x).__name__}: {e}") from e
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise StatsInputError(f"{where}: {name} must be 1-D, got shape {arr.shape}.")
    if np.isinf(arr).any():
        raise StatsInputError(f"{where}: {name} holds infinite values; expected finite numbers or NaN.")
    return arr


def labels(x: ArrayLike, *, n: int, name: str, where: str) -> np.ndarray:
    """Encode group/stratum labels as integer codes 0..K-1 (in sorted label order)."""
    arr = np.asarray(x)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise StatsInputError(
            f"{where}: {name} must be 1-D with one label per observation ({n}), got shape {arr.shape}."
        )
    if arr.dtype.kind == "f" and np.isnan(arr).any():
        raise StatsInputError(f"{where}: {name} holds NaN labels; every observation needs a label.")
    if arr.dtype.kind == "O" and any(v is None for v in arr):
        raise StatsInputError(f"{where}: {name} holds None labels; every observation needs a label.")
    try:
        _, codes = np.unique(arr, return_inverse=True)
    except TypeError as e:
        raise StatsInputError(f"{where}: {name} labels cannot be sorted ({e}).") from e
    return codes.reshape(-1).astype(np.intp)


def same_length(*arrays: tuple[str, np.ndarray], where: str) -> int:
    """Check that named arrays share their first dimension; return it."""
    lengths = {name: a.shape[0] for name, a in arrays}
    if len(set(lengths.values())) > 1:
        desc = ", ".join(f"{k} has {v}" for k, v in lengths.items())
        raise StatsInputError(f"{where}: inputs must have the same length; {desc}.")
    return next(iter(lengths.values()))


def not_constant(a: np.ndarray, *, name: str, where: str) -> None:
    """Refuse a constant vector (no correlation or standardized effect is defined on it)."""
    if a.size == 0 or np.ptp(a) == 0:
        raise StatsInputError(
            f"{where}: {name} is constant (all {a.size} values equal {a[0] if a.size else 'n/a'}); "
            f"this statistic is undefined on a constant vector."
        )


def min_n(n: int, minimum: int, *, where: str, what: str = "complete observations") -> None:
    """Refuse fewer observations than a test needs."""
    if n < minimum:
        raise StatsInputError(f"{where}: needs at least {minimum} {what}, got {n}.")


def chunks(total: int, per_item: int) -> Iterable[tuple[int, int]]:
    """Yield ``(start, stop)`` blocks of ``range(total)`` so that a block holds about
    :data:`CHUNK_ELEMENTS` elements when one item costs ``per_item`` elements."""
    step = max(1, CHUNK_ELEMENTS // max(1, per_item))
    for start in range(0, total, step):
        yield start, min(total, start + step)


def frame(columns: tuple[str, ...], values: dict[str, Any], index: Any = None) -> "pd.DataFrame":
    """One-row result DataFrame with exactly ``columns`` (all numeric), in that order."""
    import pandas as pd

    missing = set(columns) ^ set(values)
    if missing:  # pragma: no cover - programming error, guarded by the column tests
        raise RuntimeError(f"result columns mismatch: {sorted(missing)}")
    row = []
    for c in columns:
        val = values[c]
        if isinstance(val, (bool, np.bool_, int, np.integer)):
            row.append(int(val))
        else:
            row.append(float(val))
    return pd.DataFrame([row], columns=list(columns), index=index)


def rank(a: np.ndarray) -> np.ndarray:
    """Average ranks (1-based, ties averaged) of a 1-D array; ``scipy.stats.rankdata`` without
    its per-call overhead."""
    sorter = np.argsort(a, kind="mergesort")
    inv = np.empty(sorter.size, dtype=np.intp)
    inv[sorter] = np.arange(sorter.size)
    s = a[sorter]
    obs = np.concatenate([[True], s[1:] != s[:-1]])
    dense = np.cumsum(obs)[inv]
    count = np.concatenate([np.flatnonzero(obs), [obs.size]])
    return 0.5 * (count[dense] + count[dense - 1] + 1)


def percentile_ci(boot: np.ndarray, ci: float) -> tuple[float, float]:
    """Percentile interval of bootstrap replicates, ignoring undefined (NaN) replicates."""
    boot = np.asarray(boot, dtype=np.float64)
    boot = boot[np.isfinite(boot)]
    if boot.size == 0:
        return float("nan"), float("nan")
    lo, hi = np.quantile(boot, [(1.0 - ci) / 2.0, (1.0 + ci) / 2.0])
    return float(lo), float(hi)

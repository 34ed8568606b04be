"""Sudoku grids and puzzles for the pico_sudoku suite, deterministic from a seed.

- :func:`random_grid`: a complete valid grid by randomized backtracking (cells filled in
  order of fewest candidates, candidate digits tried in an order shuffled by the grid's own
  ``random.Random``), one independent search per grid: many base solutions, not transforms
  of one grid.
- :func:`count_solutions`: a backtracking solver (bitmasks, fewest-candidates-first) that
  counts solutions up to ``limit`` (2 is enough to tell "unique" from "not").
- :func:`dig_puzzle`: blanks cells of a grid one at a time in a random order, keeping a blank
  only when the puzzle still has exactly one solution, until the puzzle's target number of
  blanks (drawn uniformly from 40..55) is reached.
- :func:`make_split`: ``n_train`` + ``n_val`` grids, one puzzle each, split by grid (grid
  ``i`` is held out when ``i % every == every - 1``); every grid is a pure function of
  ``(seed, i)``, so the split is fixed. :func:`canonical` (digits relabelled in order of first
  appearance) lets a test show that no held-out grid is a training grid, even up to a
  relabelling of the digits (the training's augmentation).

Cells are integers 0..9 in row-major order, 0 for a blank.
"""

from __future__ import annotations

import random

import numpy as np

N = 81
ALL = 0x3FE  # bits 1..9
ROW = [i // 9 for i in range(N)]
COL = [i % 9 for i in range(N)]
BOX = [(i // 27) * 3 + (i % 9) // 3 for i in range(N)]
BLANKS_MIN, BLANKS_MAX = 40, 55
_POP = [bin(m).count("1") for m in range(1 << 10)]
_BITS = [[d for d in range(1, 10) if m >> d & 1] for m in range(1 << 10)]


def _rng(seed: int, index: int, salt: int) -> random.Random:
    """A ``random.Random`` seeded from ``numpy.random.default_rng([seed, salt, index])``."""
    return random.Random(int(np.random.default_rng([seed, salt, index]).integers(0, 2**63 - 1)))


def _masks(cells):
    rows, cols, boxes = [0] * 9, [0] * 9, [0] * 9
    for i, v in enumerate(cells):
        if v:
            b = 1 << v
            if rows[ROW[i]] & b or cols[COL[i]] & b or boxes[BOX[i]] & b:
                return None
            rows[ROW[i]] |= b
            cols[COL[i]] |= b
            boxes[BOX[i]] |= b
    return rows, cols, boxes


def _search(cells, rows, cols, boxes, empties, limit, order_rng=None, found=None):
    """Depth-first search, fewest candidates first; returns the number of solutions (<= limit).

    With ``order_rng`` the candidate digits are tried in a shuffled order and the first
    solution is written into ``found`` (a list) and the search stops.
    """
    best, best_mask, best_n = -1, 0, 10
    for i in empties:
        if cells[i] == 0:
            m = ALL & ~(rows[ROW[i]] | cols[COL[i]] | boxes[BOX[i]])
            n = _POP[m]
            if n < best_n:
                best, best_mask, best_n = i, m, n
                if n <= 1:
                    break
    if best < 0:
        if found is not None:
            found.extend(cells)
        return 1
    if best_n == 0:
        return 0
    digits = list(_BITS[best_mask])
    if order_rng is not None:
        order_rng.shuffle(digits)
    r, c, bx = ROW[best], COL[best], BOX[best]
    total = 0
    for d in digits:
        b = 1 << d
        cells[best] = d
        rows[r] |= b
        cols[c] |= b
        boxes[bx] |= b
        total += _search(cells, rows, cols, boxes, empties, limit - total, order_rng, found)
        rows[r] &= ~b
        cols[c] &= ~b
        boxes[bx] &= ~b
        cells[best] = 0
        if total >= limit:
            break
    return total


def count_solutions(cells, limit: int = 2) -> int:
    """Number of completions of ``cells`` (81 ints, 0 = blank) that are valid grids, up to ``limit``.

    >>> g = random_grid(0, 0)
    >>> count_solutions(g), count_solutions([0] * 81)
    (1, 2)
    """
    cells = [int(v) for v in cells]
    m = _masks(cells)
    if m is None:
        return 0
    empties = [i for i, v in enumerate(cells) if v == 0]
    return _search(cells, *m, empties, limit)


def is_valid_grid(cells) -> bool:
    """A complete grid with every row, column and box a permutation of 1..9."""
    a = np.asarray(cells).reshape(9, 9)
    want = set(range(1, 10))
    if a.min() < 1:
        return False
    boxes = [a[r:r + 3, c:c + 3].ravel() for r in (0, 3, 6) for c in (0, 3, 6)]
    return all(set(x.tolist()) == want for x in [*a, *a.T, *boxes])


def random_grid(seed: int, index: int) -> list[int]:
    """A complete valid grid by randomized backtracking, a pure function of ``(seed, index)``."""
    rng = _rng(seed, index, 0)
    cells = [0] * N
    found: list[int] = []
    _search(cells, [0] * 9, [0] * 9, [0] * 9, list(range(N)), 1, order_rng=rng, found=found)
    return found


def dig_puzzle(grid, seed: int, index: int, attempts: int = 8) -> list[int]:
    """Blank cells of ``grid`` one at a time (random order) while the solution stays unique.

    The target number of blanks is drawn uniformly from 40..55; a blank is kept only when
    :func:`count_solutions` still finds exactly one solution. If an order runs out before the
    target is reached, a new order is drawn (up to ``attempts``), else ``ValueError``.
    """
    rng = _rng(seed, index, 1)
    target = rng.randint(BLANKS_MIN, BLANKS_MAX)
    for _ in range(attempts):
        cells = list(grid)
        order = list(range(N))
        rng.shuffle(order)
        blanks = 0
        for i in order:
            v = cells[i]
            cells[i] = 0
            if count_solutions(cells, 2) == 1:
                blanks += 1
                if blanks == target:
                    return cells
            else:
                cells[i] = v
    raise ValueError(f"grid {index}: could not blank {target} cells with a unique solution")


def canonical(grid) -> tuple[int, ...]:
    """The grid with its digits relabelled 1, 2, ... in order of first appearance (row-major)."""
    g = np.asarray(grid).ravel()
    perm = np.zeros(10, dtype=np.int64)
    k = 0
    for v in g:
        if v and perm[v] == 0:
            k += 1
            perm[v] = k
    return tuple(int(x) for x in perm[g])


def make_split(seed: int, n_train: int, n_val: int, every: int = 20, log=None):
    """Grids and puzzles, split by grid: ``dict`` of uint8 arrays ``[n, 81]``.

    Grid ``i`` (for ``i`` in ``0 .. n_train + n_val - 1``, in order) goes to the held-out set
    when ``i % every == every - 1`` and the held-out set is not yet full, else to training
    while it is not yet full; each grid gives one puzzle (:func:`dig_puzzle` with the same
    ``(seed, i)``). Keys: ``train_grid``, ``train_puzzle``, ``val_grid``, ``val_puzzle``,
    ``train_index``, ``val_index`` (the grid indices).
    """
    out = {"train": ([], [], []), "val": ([], [], [])}
    i = 0
    while len(out["train"][0]) < n_train or len(out["val"][0]) < n_val:
        part = "val" if (i % every == every - 1 and len(out["val"][0]) < n_val) else "train"
        if len(out[part][0]) >= (n_val if part == "val" else n_train):
            part = "val" if part == "train" else "train"
        g = random_grid(seed, i)
        p = dig_puzzle(g, seed, i)
        out[part][0].append(g)
        out[part][1].append(p)
        out[part][2].append(i)
        i += 1
        if log is not None and i % 2000 == 0:
            log(f"[data] {i} grids")
    res = {}
    for part, (gs, ps, idx) in out.items():
        res[f"{part}_grid"] = np.asarray(gs, dtype=np.uint8).reshape(-1, N)
        res[f"{part}_puzzle"] = np.asarray(ps, dtype=np.uint8).reshape(-1, N)
        res[f"{part}_index"] = np.asarray(idx, dtype=np.int64)
    return res

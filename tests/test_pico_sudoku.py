"""Tests of the pico_sudoku suite: the puzzle generator and the training build's smoke mode."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from ._builds import load_build

ROOT = Path(__file__).resolve().parents[1]
DS = ROOT / "datasets" / "pico_sudoku"


build = load_build("pico_sudoku_build", DS / "build.py")
sudoku = sys.modules["sudoku"]


@pytest.fixture(scope="module")
def split():
    return sudoku.make_split(7, 60, 12, every=6)


# ---------------------------------------------------------------------------------------------- generator
def test_grids_are_valid_and_distinct(split):
    grids = np.concatenate([split["train_grid"], split["val_grid"]])
    assert all(sudoku.is_valid_grid(g) for g in grids)
    # many base solutions: no two grids equal, not even up to a relabelling of the digits
    assert len({sudoku.canonical(g) for g in grids}) == len(grids)


def test_puzzles_have_40_to_55_blanks_a_unique_solution_and_agree_with_their_grid(split):
    for part in ("train", "val"):
        for p, g in zip(split[f"{part}_puzzle"], split[f"{part}_grid"]):
            blanks = int((p == 0).sum())
            assert sudoku.BLANKS_MIN <= blanks <= sudoku.BLANKS_MAX
            assert np.array_equal(p[p > 0], g[p > 0])
            assert sudoku.count_solutions(p, 2) == 1


def test_solver_counts_and_rejects():
    g = sudoku.random_grid(3, 0)
    assert sudoku.count_solutions(g) == 1
    bad = list(g)
    bad[1] = bad[0]  # two equal digits in row 0
    assert sudoku.count_solutions(bad) == 0 and not sudoku.is_valid_grid(bad)
    assert sudoku.count_solutions([0] * 81, 2) == 2
    # the deadly rectangle: blank the corners of a rectangle over two boxes holding the digits
    # x, y / y, x -> swapping them gives a second solution
    found = False
    for seed in range(30):
        a = np.array(sudoku.random_grid(seed, 0)).reshape(9, 9)
        for r1 in range(9):
            for r2 in range(r1 + 1, 9):
                for c1 in range(9):
                    for c2 in range(c1 + 1, 9):
                        same_box_rows, same_box_cols = r1 // 3 == r2 // 3, c1 // 3 == c2 // 3
                        if (same_box_rows != same_box_cols and a[r1, c1] == a[r2, c2]
                                and a[r1, c2] == a[r2, c1]):
                            p = a.copy()
                            p[[r1, r1, r2, r2], [c1, c2, c1, c2]] = 0
                            assert sudoku.count_solutions(p.ravel(), 2) == 2
                            found = True
        if found:
            break
    assert found


def test_generation_is_deterministic():
    assert sudoku.random_grid(5, 11) == sudoku.random_grid(5, 11)
    assert sudoku.random_grid(5, 11) != sudoku.random_grid(5, 12)
    g = sudoku.random_grid(5, 11)
    assert sudoku.dig_puzzle(g, 5, 11) == sudoku.dig_puzzle(g, 5, 11)
    a, b = sudoku.make_split(9, 10, 3, every=4), sudoku.make_split(9, 10, 3, every=4)
    assert all(np.array_equal(a[k], b[k]) for k in a)


def test_split_by_grid_shares_no_grid(split):
    assert len(split["train_grid"]) == 60 and len(split["val_grid"]) == 12
    assert not set(split["train_index"]) & set(split["val_index"])
    assert all(i % 6 == 5 for i in split["val_index"])
    train = {sudoku.canonical(g) for g in split["train_grid"]}
    assert not any(sudoku.canonical(g) in train for g in split["val_grid"])


def test_tokens_labels_and_augmentation(split):
    run = build.RunConfig(batch_size=4)
    data = {k: split[k] for k in ("train_puzzle", "train_grid")}
    x, y = build.batch_at(data, 3, run, {})
    x2, y2 = build.batch_at(data, 3, run, {})
    assert np.array_equal(x, x2) and np.array_equal(y, y2)  # a pure function of the step
    assert x.shape == (4, 82) and (x[:, 0] == build.BOS).all() and (y[:, 0] == -100).all()
    blank = x[:, 1:] == build.BLANK
    assert ((y[:, 1:] >= 1) & (y[:, 1:] <= 9) == blank).all()  # loss only on blanked cells
    for row_x, row_y in zip(x, y):  # a relabelled puzzle is still a valid puzzle of its solution
        sol = np.where(row_y[1:] > 0, row_y[1:], row_x[1:])
        assert sudoku.is_valid_grid(sol)
        assert sudoku.count_solutions(np.where(row_x[1:] == build.BLANK, 0, row_x[1:]), 2) == 1


def test_checkpoint_grid():
    steps = build.checkpoint_steps(1500)
    assert steps[:11] == [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    assert steps[-1] == 1500 and len(steps) >= 12
    gaps = np.diff(steps[10:])
    assert gaps.max() - gaps.min() <= 1


# ---------------------------------------------------------------------------------------------- build (smoke)
class _Res:
    def __init__(self, returncode: int):
        self.returncode, self.stdout, self.stderr = returncode, "", ""


def _run(out: Path, *extra: str):
    """The build's CLI in this process (one torch import for the three builds)."""
    import torch

    threads = torch.get_num_threads()
    try:
        return _Res(build.main(["--smoke", "--out", str(out), "--models", "s0", "--threads", "1", *extra]))
    finally:
        torch.set_num_threads(threads)


def test_smoke_resume_is_bit_identical_and_extractable(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert _run(a).returncode == 0
    r = _run(b, "--stop-after", "5")
    assert r.returncode == 3, r.stdout[-2000:] + r.stderr[-2000:]
    assert not (b / "s0" / "DONE.json").exists()
    assert _run(b).returncode == 0
    fa = {p.relative_to(a): p.read_bytes() for p in sorted((a / "s0").rglob("*.safetensors"))}
    fb = {p.relative_to(b): p.read_bytes() for p in sorted((b / "s0").rglob("*.safetensors"))}
    assert len(fa) == len(build.checkpoint_steps(12, 3)) and fa == fb
    ca, cb = (a / "curves" / "s0.csv").read_text(), (b / "curves" / "s0.csv").read_text()
    drop = lambda t: [line.rsplit(",", 1)[0] for line in t.splitlines()]  # noqa: E731 (elapsed_s differs)
    assert drop(ca) == drop(cb)
    done = json.loads((a / "s0" / "DONE.json").read_text())
    assert done["steps"] == 12 and 0 <= done["final_val_cell_acc"] <= 1
    # lie_stats reads the checkpoints (the BERT adapter) and the probe ([BOS] at position 0)
    from lie_stats.extraction.architectures import adapter_for  # noqa: F401
    from lie_stats.extraction.probe import load_probe

    probe = load_probe(a / "probe.npz")
    assert probe.first_token == "bos" and (probe.tokens[:, 0] == build.BOS).all() and probe.seq_len == 82
    from lie_stats.extraction.pipeline import ExtractOptions, extract

    cube, failed = extract([str(a / "s0" / "step_12")], tmp_path / "c.nc", options=ExtractOptions(
        families=("QK",), null_draws=64, probe=str(a / "probe.npz")), progress=False)
    assert not failed and cube.sizes["layer"] == 2 and cube.sizes["head"] == 2
    assert np.isfinite(cube["sink_score"].values).all()

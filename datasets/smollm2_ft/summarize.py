"""The card's tables for smollm2_ft, from the cube and the trainer's curves.

    python datasets/smollm2_ft/summarize.py            # Markdown to stdout

Per run: steps, tokens, training CPU seconds, held-out loss at the first / step 8 / last
checkpoint, anchors (``head_label`` and ``head_label_written``) at the first and last checkpoint;
the dequantization-repair comparison declared in ``benchmarks/anchors_ft.md``: median
``change_from_init`` over heads at steps 8 and 300, and the Spearman correlation over heads of
the fine-tune runs' change with the continuation run's at those steps.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from lie_stats.cube import open_cube  # noqa: E402
from lie_stats.schema import LABEL_CODES  # noqa: E402

RUNS = ("ft_shakespeare_s0", "ft_shakespeare_s1", "ft_shakespeare_s2")
FLOOR = "ft_python_s0"
FLOOR_CUBE = HERE.parent / "smollm2_ft_cont" / "smollm2_ft_cont.nc"


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import spearmanr

    ok = np.isfinite(a) & np.isfinite(b)
    return float(spearmanr(a[ok], b[ok]).statistic)


def main() -> int:
    ft_ds = open_cube(HERE / "smollm2_ft.nc")
    floor_ds = open_cube(FLOOR_CUBE) if FLOOR_CUBE.is_file() else None
    runs = RUNS + ((FLOOR,) if floor_ds is not None else ())
    anchor = LABEL_CODES["anchor"]
    out = ["| run | steps | tokens | training CPU-s | held-out loss 0 / 8 / last | anchors first -> last (head_label) "
           "| anchors first -> last (head_label_written) | median change_from_init at 8 / last |",
           "|---|---|---|---|---|---|---|---|"]
    for m in runs:
        ds = floor_ds if m == FLOOR else ft_ds
        cur = json.loads((HERE / "curves" / f"{m}.json").read_text())
        rows = {int(r["step"]): r for r in _csv(HERE / "curves" / f"{m}.csv")}
        first, last = min(rows), max(rows)
        at = ds.sel(model=m)
        lab = at["head_label"]
        labw = at["head_label_written"] if "head_label_written" in ds else None
        chg = at["change_from_init"]
        aw = (f"{int((labw.sel(step=first) == anchor).sum())} -> {int((labw.sel(step=last) == anchor).sum())}"
              if labw is not None else "not measured")
        out.append(
            f"| {m} | {last} | {last * cur['config']['batch_size'] * cur['config']['seq_len']:,} | "
            f"{float(rows[last]['cpu_s']):.0f} | {float(rows[first]['val_loss']):.3f} / {float(rows[8]['val_loss']):.3f} / "
            f"{float(rows[last]['val_loss']):.3f} | {int((lab.sel(step=first) == anchor).sum())} -> "
            f"{int((lab.sel(step=last) == anchor).sum())} | {aw} | "
            f"{float(np.nanmedian(chg.sel(step=8))):.2e} / {float(np.nanmedian(chg.sel(step=last))):.2e} |")
    if floor_ds is None:
        print("\n".join(out + ["", "(the continuation's cube does not exist yet: no comparison with it)"]))
        return 0
    out += ["", "| fine-tune run | Spearman of change_from_init with the continuation's, step 8 | step 100 |",
            "|---|---|---|"]
    floor = floor_ds["change_from_init"].sel(model=FLOOR)
    for m in RUNS:
        c = ft_ds["change_from_init"].sel(model=m)
        out.append(f"| {m} | {spearman(c.sel(step=8).values.ravel(), floor.sel(step=8).values.ravel()):.3f} | "
                   f"{spearman(c.sel(step=100).values.ravel(), floor.sel(step=100).values.ravel()):.3f} |")
    print("\n".join(out))
    return 0


def _csv(path: Path) -> list[dict]:
    import csv

    with open(path, newline="") as f:
        return list(csv.DictReader(f))


if __name__ == "__main__":
    sys.exit(main())

"""Quantization noise floor of each weight metric (issue 5, item 1).

    python datasets/panel/noise_floor.py [datasets/panel/panel.nc]

SmolLM2 and Gemma-3 ship as 4-bit GGUF files; their metrics carry the error that 4-bit
quantization puts on the weights. The panel holds the fp32 all-MiniLM-L6-v2 and two copies
whose attention matrices went through the same schemes (``minilm_l6_q4_1``: Q4_1 as in
SmolLM2's file; ``minilm_l6_q4_k``: llama.cpp's Q4_K_M rule, which falls back to Q5_0/Q8_0
on MiniLM's 384-wide rows, as it does on Gemma's q/k/v). For each layer summary
(METRICS.md §4) and family, exact operators, trained step: the median and maximum over
layers of ``|m(quantized) - m(fp32)| / |m(fp32)|``. Prints a Markdown table.
"""

from __future__ import annotations

import sys

import numpy as np

from lie_stats.cube import open_cube

SUMMARIES = ("commutator_var", "commutator_raw_var", "abelian_fraction", "abelian_fraction_tau",
             "killing_eig_spread", "killing_cv", "head_heterogeneity", "commutator_z_mean")
COPIES = ("minilm_l6_q4_1", "minilm_l6_q4_k")


def table(path: str = "datasets/panel/panel.nc") -> str:
    ds = open_cube(path)
    lines = ["| metric | family | " + " | ".join(f"{c} median | {c} max" for c in COPIES) + " |",
             "|---|---|" + "---|---|" * len(COPIES)]
    for name in SUMMARIES:
        for fam in ds["family"].values.tolist():
            ref = ds[name].sel(model="minilm_l6", step=1, family=fam, projection="none").values
            cells = []
            for copy in COPIES:
                q = ds[name].sel(model=copy, step=1, family=fam, projection="none").values
                with np.errstate(divide="ignore", invalid="ignore"):
                    rel = np.abs(q - ref) / np.abs(ref)
                rel = rel[np.isfinite(rel)]
                cells += [f"{np.median(rel):.2%}", f"{np.max(rel):.2%}"] if rel.size else ["-", "-"]
            lines.append(f"| {name} | {fam} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(*sys.argv[1:]))

"""Benchmark: Spearman permutation tests, lie_stats against scipy, pingouin and plain numpy.

Two cases (issue 3, item 6):

* ``free``: n = 96 heads, free permutation, 10,000 permutations;
* ``within``: 144 heads in 12 layers, permutation within layers, 10,000 permutations.

Contenders, all computing the same two-sided permutation p-value of Spearman's rho:

* ``lie_stats``: ``lie_stats.stats.correlation(x, y, strata=..., n_perm=10_000, n_boot=0)``
  (``n_boot=0``: the p-value only, as the others; a second line adds the 2,000-sample cluster
  bootstrap interval, which the others do not compute);
* ``scipy``: ``scipy.stats.permutation_test((x,), statistic, permutation_type="pairings",
  vectorized=False)`` with ``statistic = spearmanr(a, y).statistic``. scipy has no strata,
  so for ``within`` the non-vectorized reference is a Python loop over permutations that
  shuffles within layers with numpy and calls ``scipy.stats.spearmanr``;
* ``pingouin``: a Python loop calling ``pingouin.corr(x, y_perm, method="spearman")`` per
  permutation (pingouin has no permutation test for correlations);
* ``numpy``: a hand-written loop-free numpy version (ranks once, ``Generator.permuted`` on a
  ``[B, layers, heads]`` table of standardized ranks, one product and a sum).

Slow contenders run once (``--slow-perms`` permutations, default 10,000; their time scales
linearly with B, and a smaller value is scaled up and marked); fast ones report the median of
``--repeats`` runs, interleaved so that load from other processes affects them alike. Run: ``python benchmarks/stats.py`` (``--markdown FILE`` also writes the
results table).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import scipy
import scipy.stats as sps

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lie_stats.stats import correlation  # noqa: E402

B = 10_000


def make_case(name: str, seed: int = 0):
    rng = np.random.default_rng(seed)
    if name == "free":
        n, strata = 96, None
        x = rng.normal(size=n)
        y = -0.274 * x + rng.normal(size=n)
        return x, y, strata
    layers, heads = 12, 12
    strata = np.repeat(np.arange(layers), heads)
    x = rng.normal(size=layers)[strata] + rng.normal(size=layers * heads)
    y = rng.normal(size=layers)[strata] - 0.2 * x + rng.normal(size=layers * heads)
    return x, y, strata


def two_sided(t, null, center=0.0):
    return (1 + np.count_nonzero(np.abs(null - center) >= abs(t - center) - 1e-12)) / (1 + null.size)


def run_lie_stats(x, y, strata, n_boot=0):
    return float(correlation(x, y, strata=strata, n_perm=B, n_boot=n_boot, seed=1)["p_value"].iloc[0])


def run_numpy(x, y, strata, seed=2):
    """Hand-vectorized, loop-free: the fastest straightforward numpy version."""
    rng = np.random.default_rng(seed)
    rx, ry = sps.rankdata(x), sps.rankdata(y)
    zx = (rx - rx.mean()) / np.linalg.norm(rx - rx.mean())
    zy = (ry - ry.mean()) / np.linalg.norm(ry - ry.mean())
    t = zx @ zy
    if strata is None:
        null = rng.permuted(np.broadcast_to(zy, (B, zy.size)), axis=1) @ zx
        return two_sided(t, null)
    order = np.argsort(strata, kind="stable")
    k = int(strata.max()) + 1
    tx, ty = zx[order].reshape(k, -1), zy[order].reshape(k, -1)
    center = float((tx.mean(1) * ty.mean(1)).sum() * tx.shape[1])
    null = rng.permuted(np.broadcast_to(ty, (B, *ty.shape)), axis=2).reshape(B, -1) @ tx.ravel()
    return two_sided(t, null, center)


def _within_perm(rng, y, strata):
    out = y.copy()
    for s in np.unique(strata):
        idx = np.flatnonzero(strata == s)
        out[idx] = y[rng.permutation(idx)]
    return out


def run_scipy(x, y, strata, n_perm, seed=3):
    if strata is None:
        res = sps.permutation_test((x,), lambda a: sps.spearmanr(a, y).statistic,
                                   permutation_type="pairings", vectorized=False,
                                   n_resamples=n_perm, alternative="two-sided", rng=seed)
        return float(res.pvalue)
    rng = np.random.default_rng(seed)
    t = sps.spearmanr(x, y).statistic
    null = np.array([sps.spearmanr(x, _within_perm(rng, y, strata)).statistic for _ in range(n_perm)])
    center = _center(x, y, strata)
    return two_sided(t, null, center)


def _center(x, y, strata):
    rx, ry = sps.rankdata(x), sps.rankdata(y)
    zx = (rx - rx.mean()) / np.linalg.norm(rx - rx.mean())
    zy = (ry - ry.mean()) / np.linalg.norm(ry - ry.mean())
    return float(sum(zx[strata == s].sum() * zy[strata == s].mean() for s in np.unique(strata)))


def run_pingouin(x, y, strata, n_perm, seed=4):
    import pingouin

    rng = np.random.default_rng(seed)
    t = float(pingouin.corr(x, y, method="spearman")["r"].iloc[0])
    null = np.empty(n_perm)
    for b in range(n_perm):
        yp = rng.permutation(y) if strata is None else _within_perm(rng, y, strata)
        null[b] = pingouin.corr(x, yp, method="spearman")["r"].iloc[0]
    return two_sided(t, null, 0.0 if strata is None else _center(x, y, strata))


def timed(fn, repeats):
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=21, help="runs of the fast contenders. Default: %(default)r")
    ap.add_argument("--slow-perms", type=int, default=B,
                    help="permutations for the scipy and pingouin loops (time scaled to 10,000). Default: %(default)r")
    ap.add_argument("--markdown", type=Path, default=None, help="also write the table here")
    args = ap.parse_args(argv)
    scale = B / args.slow_perms
    lines = [
        f"machine: {platform.machine()} {platform.processor() or ''} {os.cpu_count()} CPUs; "
        f"python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}",
        f"command: python benchmarks/stats.py --repeats {args.repeats} --slow-perms {args.slow_perms}",
        "",
        "| case | contender | median time (s) | p-value | time / lie_stats time |",
        "|---|---|---|---|---|",
    ]
    import pingouin

    for case in ("free", "within"):
        x, y, strata = make_case(case)
        run_lie_stats(x, y, strata)  # warm-up (imports, caches)
        # fast contenders interleaved, so that load from other processes hits them alike
        fast = {"ours": lambda: run_lie_stats(x, y, strata), "numpy": lambda: run_numpy(x, y, strata),
                "boot": lambda: run_lie_stats(x, y, strata, n_boot=2000)}
        times = {k: [] for k in fast}
        outs = {}
        for _ in range(args.repeats):
            for k, fn in fast.items():
                t_k, outs[k] = timed(fn, 1)
                times[k].append(t_k)
        (t_ours, t_np, t_boot) = (statistics.median(times[k]) for k in ("ours", "numpy", "boot"))
        p_ours, p_np = outs["ours"], outs["numpy"]
        t_sc, p_sc = timed(lambda: run_scipy(x, y, strata, args.slow_perms), 1)
        t_pg, p_pg = timed(lambda: run_pingouin(x, y, strata, args.slow_perms), 1)
        t_sc, t_pg = t_sc * scale, t_pg * scale
        note = "" if scale == 1 else f" (x{scale:g} from {args.slow_perms} perms)"
        n = x.size
        label = f"{case} (n={n}{', 12 layers' if strata is not None else ''})"
        rows = [
            ("lie_stats correlation(n_boot=0)", t_ours, p_ours),
            ("lie_stats correlation(n_boot=2000), with CI", t_boot, p_ours),
            ("numpy hand-vectorized", t_np, p_np),
            ("scipy permutation_test(vectorized=False)" if strata is None
             else "scipy spearmanr loop (within layers)", t_sc, p_sc),
            ("pingouin.corr loop", t_pg, p_pg),
        ]
        for name, t, p in rows:
            lines.append(f"| {label} | {name}{note if 'loop' in name or 'vectorized=False' in name else ''} "
                         f"| {t:.4f} | {p:.4f} | {t / t_ours:.2f} |")
        print("\n".join(lines[-len(rows):]), flush=True)
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What the training benchmarks share (``emergence.py``: a GPT-NeoX from scratch; ``anchors_ft.py``:
SmolLM2-135M fine-tuned): the pico suite's build module, training windows that start with the
model's ``bos``, a log-then-linear grid of measured steps, one optimizer step, the held-out loss,
resuming from a saved state, and the curves files.

The batches, held-out windows and loss are the pico build's (``datasets/pico_pythia/build.py``:
``batch_at``, ``eval_windows``; the data order a pure function of (seed, step)), each window one
token shorter so that ``bos`` fits in front.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
PICO = REPO / "datasets" / "pico_pythia"
sys.path.insert(0, str(REPO / "datasets"))
from _build_loader import load_pico_build  # noqa: E402,F401  (the pico build, one module object for all)


def log_linear_grid(n_steps: int, last_power: int, every: int) -> list[int]:
    """0, the powers of two up to ``last_power`` (and ``n_steps``), then the multiples of
    ``every`` above the last of them, and ``n_steps``.

    >>> log_linear_grid(300, 64, 50)
    [0, 1, 2, 4, 8, 16, 32, 64, 100, 150, 200, 250, 300]
    >>> log_linear_grid(7, 3, 3)
    [0, 1, 2, 3, 6, 7]
    """
    steps, p = [0], 1
    while p <= min(last_power, n_steps):
        steps.append(p)
        p *= 2
    k = steps[-1] // every + 1
    while k * every < n_steps:
        steps.append(k * every)
        k += 1
    steps.append(n_steps)
    return sorted(set(steps))


def with_bos(arr, bos: int):
    """Prefix every row of ``[n, seq_len - 1]`` token windows with ``bos`` (an int64 tensor)."""
    import torch

    t = torch.as_tensor(arr, dtype=torch.int64)
    return torch.cat([torch.full((t.shape[0], 1), bos, dtype=torch.int64), t], dim=1)


def bos_windows(run):
    """The pico build's run settings with windows of ``run.seq_len - 1`` text tokens: ``bos`` + a
    window is a row of ``run.seq_len`` tokens."""
    return dataclasses.replace(run, seq_len=run.seq_len - 1)


def batch_with_bos(stream: np.ndarray, step: int, run, bos: int, cache: dict):
    """The ``step``-th batch (0-based) of the pico build's data order (``run``: its settings with the
    window length of :func:`bos_windows`), each row ``bos`` + a window."""
    return with_bos(load_pico_build().batch_at(stream, step, run, cache), bos)


def held_out_with_bos(stream: np.ndarray, run, bos: int) -> np.ndarray:
    """The pico build's fixed held-out windows (``run.eval_windows`` of them, evenly spaced), each
    ``bos`` + a window, as an int64 array."""
    return with_bos(load_pico_build().eval_windows(stream, run), bos).numpy()


def train_step(model, opt, x, grad_clip: float):
    """One update on the batch ``x`` (next-token loss, gradients clipped to ``grad_clip``); the loss."""
    import torch

    loss = model(input_ids=x, labels=x).loss
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    opt.step()
    return loss


def evaluate(model, arr: np.ndarray, batch: int, device: str = "cpu") -> float:
    """Mean held-out cross-entropy over windows ``arr`` (the pico build's ``evaluate``, on ``device``)."""
    import torch

    model.eval()
    tot, n = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(arr), batch):
            x = torch.from_numpy(arr[i:i + batch]).to(device)
            tot += float(model(input_ids=x, labels=x).loss) * len(x)
            n += len(x)
    model.train()
    return tot / n


def resume(state_path: Path, config: dict, model, opt, name: str, log) -> dict | None:
    """The state saved at ``state_path`` with the weights, optimizer and RNG put back into ``model``,
    ``opt`` and torch (and left out of the dict); None when there is none. A state of another
    ``config`` is refused, naming the fields that differ."""
    import torch

    if not state_path.exists():
        return None
    st = torch.load(state_path, weights_only=True, map_location="cpu")
    if st["config"] != config:
        diff = {k: (st["config"].get(k), v) for k, v in config.items() if st["config"].get(k) != v}
        raise SystemExit(f"{state_path}: holds a run with another config (field: (stored, asked)) {diff}; "
                         f"ask for the stored one, or move the folder away to start afresh")
    model.load_state_dict(st.pop("model"))
    opt.load_state_dict(st.pop("optimizer"))
    torch.set_rng_state(st.pop("rng"))
    log(f"[{name}] resumed at step {st['step']} ({len(st['rows'])} measurements)")
    return st


def write_curves(out: Path, name: str, rows: list[dict], columns: tuple[str, ...], record: dict,
                 plot: Callable[[Path], None]) -> None:
    """``<name>.csv`` (``columns`` of ``rows``), ``<name>.json`` (``record``) and, once there is a
    row, ``<name>.png`` (``plot(path)``), each written atomically."""
    out.mkdir(parents=True, exist_ok=True)
    build = load_pico_build()
    build._write_csv(rows, out / f"{name}.csv", columns)
    build._atomic_write(out / f"{name}.json", json.dumps(record, indent=1) + "\n")
    if rows:
        plot(out / f"{name}.png")


def pyplot():
    """matplotlib's pyplot on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def step_axis(ax) -> None:
    """The x axis of a curve against the training step: symlog from 0 (the log-then-linear grid
    spread evenly)."""
    ax.set_xscale("symlog", linthresh=1, linscale=0.3)
    ax.set_xlim(left=0)
    ax.set_xlabel("step (symlog)")


def save_figure(fig, path: Path) -> None:
    """``fig`` laid out and written to ``path`` (100 dpi) through a temporary file renamed over it;
    the figure is closed."""
    import os

    import matplotlib.pyplot as plt

    fig.tight_layout()
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.png")
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    os.replace(tmp, path)

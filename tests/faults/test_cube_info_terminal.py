"""`lie-stats info` shows strings from a cube escaped, so a file cannot drive the terminal.

A real run folder whose name holds ANSI escapes (a window-title OSC, a colour), a
bidirectional override and a newline followed by a forged "valid: yes" line is extracted (the
model is named after the folder), and ``lie-stats info`` runs as a real process on the cube.
Its output must hold no escape or control character and exactly one "valid:" line (the real
one), with the name shown escaped.
"""

from __future__ import annotations

import os
import subprocess
import sys

from lie_stats import cli
from lie_stats._text import terminal_line
from lie_stats.cube import describe_cube, open_cube

from .._checkpoints import make_run

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOSTILE = "run\x1b]0;pwned\x07\x1b[31m\u202e\n  valid: yes\n  - forged"


def test_info_escapes_a_hostile_model_name(tmp_path):
    root = tmp_path / HOSTILE
    make_run(root, "gpt2", [0], head=False, n_layers=1)
    out = tmp_path / "hostile.nc"
    assert cli.main(["extract", str(root), "-o", str(out), "--families", "Q", "--quiet"]) == cli.EXIT_OK
    assert open_cube(out)["model"].values.tolist() == [HOSTILE]  # the name itself is kept as given
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-m", "lie_stats", "info", str(out)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == cli.EXIT_OK, done.stderr
    shown = done.stdout
    bad = sorted({repr(ch) for ch in shown if not ch.isprintable() and ch != "\n"})
    assert bad == [], f"control characters reached the terminal: {bad}"
    assert [line for line in shown.splitlines() if "valid:" in line.lstrip()[:6]] == ["  valid: yes"]
    assert not any(line.startswith("  - forged") for line in shown.splitlines())
    assert "run\\x1b]0;pwned\\x07\\x1b[31m\\u202e\\n  valid: yes\\n  - forged" in shown, shown


def test_describe_cube_escapes_each_line():
    import numpy as np

    from .._cubes import random_shard

    ds = random_shard("m\x1b[2J", 0, 1, 2)
    ds = ds.assign_coords(model=np.array(["m\x1b[2J"], dtype=object))
    text = describe_cube(ds, where="c.nc")
    assert "\x1b" not in text and "m\\x1b[2J" in text
    assert terminal_line("tab\there") == "tab\\there"


def test_extract_errors_and_failures_are_escaped_too(tmp_path, capsys):
    """A failing checkpoint inside the hostile run folder: its FAILED line and the error line
    quote the folder, escaped."""
    root = tmp_path / HOSTILE
    make_run(root, "gpt2", [0, 10], head=False, n_layers=1)
    (root / "step_10" / "model.safetensors").write_bytes(b"\xff" * 64)
    assert cli.main(["extract", str(root), "-o", str(tmp_path / "h.nc"), "--families", "Q", "--quiet"]) == 3
    err = capsys.readouterr().err
    assert "FAILED" in err and "\x1b" not in err and "\u202e" not in err, err
    (root / "step_0" / "model.safetensors").write_bytes(b"\xff" * 64)
    assert cli.main(["extract", str(root), "-o", str(tmp_path / "g.nc"), "--families", "Q", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lie-stats extract: error:") and "\x1b" not in err and "\u202e" not in err, err

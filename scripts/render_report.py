"""Render the HTML report in headless Chromium: a screenshot of its first screen, and a
check that the first screen shows the summary.

    python scripts/render_report.py [reports/report.html] [-o first_screen.png] [--check]

The screenshot is 1400x900 (``--size``). ``--check`` loads the page, reads where the
counts (``#counts``) and the summary table (``#summary``) lie once the page has loaded, and
how many cells of the summary cut their text (the page writes both into ``<body
data-first-screen>``: a small script of the report's template), and fails (exit 1) unless
the counts lie entirely inside the first screen (the requested size), the summary starts
inside it and fits its width (its statements wrap, so a long report's summary may continue
below the first screen), and no summary cell cuts its text; it also fails when the
screenshot is blank (one colour). Chromium is the Debian package
``chromium`` (``apt-get install chromium``); exit 2 when it is absent.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
#: Elements of the first screen, by id, that must lie inside the first viewport.
FIRST_SCREEN = ("counts", "summary")


def find_chromium() -> str | None:
    """The path of a Chromium (or Chrome) executable, or None."""
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def _chromium(args: list[str], *, size: tuple[int, int], timeout: float = 90) -> subprocess.CompletedProcess:
    browser = find_chromium()
    if browser is None:
        raise FileNotFoundError("no Chromium found (tried: " + ", ".join(BROWSERS) + "); install the "
                                "Debian package chromium")
    with tempfile.TemporaryDirectory(prefix="lie_stats-chromium-") as profile:
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--hide-scrollbars", "--no-first-run", "--disable-extensions", f"--user-data-dir={profile}",
               f"--window-size={size[0]},{size[1]}", "--virtual-time-budget=5000", *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def screenshot(html: Path, png: Path, *, size: tuple[int, int] = (1400, 900)) -> Path:
    """Write the first screen of ``html`` as rendered by headless Chromium to ``png``."""
    png = png.resolve()
    png.parent.mkdir(parents=True, exist_ok=True)
    if png.exists():
        png.unlink()
    proc = _chromium([f"--screenshot={png}", html.resolve().as_uri()], size=size)
    if not png.is_file():
        raise RuntimeError(f"chromium wrote no screenshot of {html} (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    return png


_BOX = re.compile(r"(\w+):(-?\d+)-(-?\d+):(-?\d+)-(-?\d+)")


def first_screen(html: Path, *, size: tuple[int, int] = (1400, 900)) -> dict[str, tuple[int, ...]]:
    """Where the first-screen elements lie once ``html`` has loaded in headless Chromium:
    ``{"counts": (top, bottom, left, right), "summary": (...), "viewport": (width, height)}``
    in CSS pixels (from the page's ``data-first-screen`` attribute)."""
    proc = _chromium(["--dump-dom", html.resolve().as_uri()], size=size)
    found = re.search(r'data-first-screen="([^"]*)"', proc.stdout)
    if not found:
        raise RuntimeError(f"{html}: the rendered page has no data-first-screen attribute (exit "
                           f"{proc.returncode}); is it a lie_stats report?\n{proc.stderr[-2000:]}")
    text = found.group(1)
    boxes: dict[str, tuple[int, ...]] = {name: tuple(int(v) for v in box) for name, *box in _BOX.findall(text)}
    w, h = re.search(r"viewport:(\d+)x(\d+)", text).groups()
    boxes["viewport"] = (int(w), int(h))
    clipped = re.search(r"clipped:(\d+)", text)
    if clipped:
        boxes["clipped"] = (int(clipped.group(1)),)
    return boxes


def colours(png: Path) -> int:
    """How many distinct colours the screenshot has (1: blank)."""
    from PIL import Image

    with Image.open(png) as im:
        return len(im.convert("RGB").getcolors(maxcolors=1 << 20) or [])


def check(html: Path, png: Path, *, size: tuple[int, int] = (1400, 900)) -> list[str]:
    """Problems of the first screen (empty when the counts show, the summary starts on it and
    fits its width, and no summary cell cuts its text)."""
    problems = []
    boxes = first_screen(html, size=size)
    # Against the requested size, which the screenshot has: headless Chromium's --dump-dom
    # reports a smaller innerHeight (its window's frame taken off), but positions in the page
    # do not depend on the height, and the width it reports is the requested one.
    width, height = size
    for name in FIRST_SCREEN:
        if name not in boxes:
            problems.append(f"#{name} not found")
            continue
        top, bottom, left, right = boxes[name]
        # the counts whole; the summary from its top (its rows may continue below)
        end = bottom if name == "counts" else top + 1
        if not (0 <= top < end <= height and top < bottom and 0 <= left < right <= width):
            problems.append(f"#{name} spans x {left}-{right}, y {top}-{bottom} px: not "
                            f"{'inside' if name == 'counts' else 'starting inside'} the first "
                            f"screen ({width}x{height} px)")
    if "clipped" not in boxes:
        problems.append("the page does not say whether its summary cuts text (not a current report?)")
    elif boxes["clipped"][0]:
        problems.append(f"{boxes['clipped'][0]} cell(s) of #summary cut their text instead of wrapping it")
    if colours(screenshot(html, png, size=size)) < 3:
        problems.append(f"{png}: the screenshot is blank")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("html", nargs="?", default=str(ROOT / "reports" / "report.html"))
    ap.add_argument("-o", "--output", default=None, help="PNG to write. Default: first_screen.png beside the report")
    ap.add_argument("--size", default="1400x900", help="viewport WIDTHxHEIGHT. Default: 1400x900")
    ap.add_argument("--check", action="store_true", help="fail unless the first screen shows the summary")
    args = ap.parse_args(argv)
    html = Path(args.html)
    if not html.is_file():
        print(f"{html}: no such report; write one with `lie-stats run`", file=sys.stderr)
        return 2
    if find_chromium() is None:
        print("no Chromium found; install the Debian package chromium", file=sys.stderr)
        return 2
    size = tuple(int(x) for x in args.size.lower().split("x"))
    png = Path(args.output) if args.output else html.with_name("first_screen.png")
    if args.check:
        problems = check(html, png, size=size)
        for p in problems:
            print(f"FAIL {p}", file=sys.stderr)
        print(f"wrote {png}; first screen {'shows the summary' if not problems else 'does not show the summary'}")
        return 1 if problems else 0
    print(f"wrote {screenshot(html, png, size=size)}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("LANG", "C.UTF-8")
    raise SystemExit(main())

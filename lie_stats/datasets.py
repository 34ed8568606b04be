"""Dataset cards: what each dataset is, whether its cubes are here, and how to build them.

A dataset lives in ``datasets/<name>/`` beside a human ``README.md`` and a machine card
``dataset.toml`` (DESIGN.md, layout)::

    name = "pico_pythia"
    title = "Six tiny GPT-NeoX runs trained here, 12 checkpoints each"
    cubes = ["cube.nc"]                 # relative to the card's folder
    build = "python -m datasets.pico_pythia.build"   # the exact command that builds the cubes
    needs = ""                          # "" when buildable here; else what is missing

A card's *state* is ``"present"`` (every cube file exists), ``"buildable"`` (a cube is
missing and ``needs`` is empty) or ``"needs data"`` (a cube is missing and something this
machine lacks is needed, e.g. ``"hub access"``).

A dataset may also be named by its cube file: a name ending in ``.nc`` (``"runs/my_sweep.nc"``,
relative to the current folder, or absolute) is that cube, with a card made for it
(:func:`cube_card`); it needs no folder and no ``dataset.toml``.

Where no datasets folder is given, :func:`default_datasets_dir` is ``./datasets`` when the
current folder has one, else the ``datasets/`` of the checkout lie_stats runs from, so the
bundled datasets are found from any working folder.
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._io import inside
from .errors import LieStatsError, did_you_mean

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr

__all__ = [
    "CHECKOUT",
    "bundled",
    "default_datasets_dir",
    "is_cube_path",
    "cube_card",
    "CARD_FILE",
    "STATES",
    "DatasetError",
    "DatasetCard",
    "read_card",
    "list_datasets",
    "find_dataset",
    "load_dataset",
    "CubeCache",
    "card_cubes",
    "cube_contents",
    "describe_contents",
]

#: File name of a dataset card inside ``datasets/<name>/``.
CARD_FILE = "dataset.toml"
#: Possible states of a card, in the order ``lie-stats datasets`` prints them.
STATES = ("present", "buildable", "needs data")

_REQUIRED = {"name": str, "title": str, "cubes": list, "build": str}
#: The checkout lie_stats runs from: its bundled ``datasets/`` and ``hypotheses/`` lie there.
CHECKOUT = Path(__file__).resolve().parents[1]
#: The file suffix that makes a dataset name a cube file (see the module docstring).
CUBE_SUFFIX = ".nc"


def bundled(name: str) -> str:
    """Where a bundled folder (``datasets``, ``hypotheses``) is looked for when no path is
    given: ``./name`` when the current folder has one, else ``name/`` beside the ``lie_stats``
    package (the repository checkout), else ``name`` (so that the error names it).

    Examples
    --------
    >>> import os, tempfile
    >>> here = os.getcwd(); os.chdir(tempfile.mkdtemp())
    >>> bundled("datasets") == str(CHECKOUT / "datasets") or not (CHECKOUT / "datasets").is_dir()
    True
    >>> os.mkdir("datasets"); bundled("datasets")
    'datasets'
    >>> os.chdir(here)
    """
    if Path(name).exists():
        return name
    candidate = CHECKOUT / name
    return str(candidate) if candidate.is_dir() else name


def default_datasets_dir() -> Path:
    """The datasets folder used when none is given (:func:`bundled`)."""
    return Path(bundled("datasets"))


def is_cube_path(name: str) -> bool:
    """Whether a dataset name is a cube file rather than a card's name.

    >>> is_cube_path("runs/my_sweep.nc"), is_cube_path("pico_pythia")
    (True, False)
    """
    return str(name).endswith(CUBE_SUFFIX)
_OPTIONAL = {"needs": str, "controls": list}


class DatasetError(LieStatsError):
    """A dataset card is malformed, unknown, or its cubes are absent."""


@dataclass(frozen=True)
class DatasetCard:
    """One dataset card (``datasets/<name>/dataset.toml``).

    Attributes
    ----------
    name, title : str
        The dataset's name (equal to its folder's name) and a one-line title.
    cubes : tuple of Path
        Absolute paths of the cube files the dataset consists of.
    build : str
        The exact command that builds the cubes.
    needs : str
        ``""`` when the build runs on this machine, else what it lacks.
    folder : Path
        The card's folder (holds ``README.md``).
    controls : tuple of str
        Models of the cube that are controls, not samples (e.g. quantized copies kept for a
        noise floor): selections that name no models leave them out
        (:func:`lie_stats.spec.evaluate`).
    """

    name: str
    title: str
    cubes: tuple[Path, ...]
    build: str
    needs: str
    folder: Path
    controls: tuple[str, ...] = ()

    @property
    def state(self) -> str:
        """``"present"``, ``"buildable"`` or ``"needs data"`` (see module docstring)."""
        if self.cubes and all(p.is_file() for p in self.cubes):
            return STATES[0]
        return STATES[1] if not self.needs else STATES[2]

    @property
    def missing(self) -> tuple[Path, ...]:
        """The cube files that are not on disk."""
        return tuple(p for p in self.cubes if not p.is_file())

    @property
    def readme(self) -> Path:
        """Path of the human README beside the card."""
        return self.folder / "README.md"


def read_card(path: str | Path) -> DatasetCard:
    """Read and validate one ``dataset.toml``.

    Parameters
    ----------
    path : str or Path
        The card file, or the dataset folder holding it.

    Returns
    -------
    DatasetCard

    Raises
    ------
    DatasetError
        The file is missing or not TOML, a required key is missing or of the wrong type, an
        unknown key is present, ``name`` differs from the folder's name, or a cube path
        leaves the dataset folder.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()) / "toy"; d.mkdir()
    >>> _ = (d / "dataset.toml").write_text(
    ...     'name = "toy"\\ntitle = "A toy"\\ncubes = ["toy.nc"]\\nbuild = "make toy"\\n')
    >>> card = read_card(d)
    >>> card.name, card.state
    ('toy', 'buildable')
    """
    path = Path(path)
    if path.is_dir():
        path = path / CARD_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise DatasetError(f"Cannot read dataset card {str(path)!r}: {e}") from e
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise DatasetError(f"Dataset card {str(path)!r} is not valid TOML: {e}") from e
    for key, typ in _REQUIRED.items():
        if key not in data:
            raise DatasetError(
                f"Dataset card {str(path)!r} lacks the key {key!r} (required keys: "
                f"{', '.join(_REQUIRED)}; optional: {', '.join(_OPTIONAL)})."
            )
    known = {**_REQUIRED, **_OPTIONAL}
    for key, value in data.items():
        if key not in known:
            raise DatasetError(
                f"Dataset card {str(path)!r} has an unknown key {key!r}.{did_you_mean(key, known)} "
                f"Known keys: {', '.join(known)}."
            )
        if not isinstance(value, known[key]):
            raise DatasetError(
                f"Dataset card {str(path)!r}: {key!r} must be a {known[key].__name__}, "
                f"got {type(value).__name__}."
            )
    folder = path.parent.resolve()
    if data["name"] != folder.name:
        raise DatasetError(
            f"Dataset card {str(path)!r} names the dataset {data['name']!r} but lives in the "
            f"folder {folder.name!r}; the two must be equal."
        )
    if not data["cubes"] or not all(isinstance(c, str) and c for c in data["cubes"]):
        raise DatasetError(
            f"Dataset card {str(path)!r}: 'cubes' must be a non-empty list of relative paths."
        )
    cubes = []
    for rel in data["cubes"]:
        try:
            p = inside(folder, rel, what="cube").resolve()
        except LieStatsError:
            p = folder
        if p == folder:
            raise DatasetError(
                f"Dataset card {str(path)!r}: cube path {rel!r} must be relative to and inside "
                f"{str(folder)!r}."
            )
        cubes.append(p)
    return DatasetCard(
        name=data["name"],
        title=data["title"],
        cubes=tuple(cubes),
        build=data["build"],
        needs=data.get("needs", ""),
        folder=folder,
        controls=tuple(_controls(data.get("controls", []), path)),
    )


def _controls(value: list, path: Path) -> list[str]:
    if not all(isinstance(m, str) and m for m in value):
        raise DatasetError(f"Dataset card {str(path)!r}: 'controls' must be a list of model names, got {value!r}.")
    return list(value)


def list_datasets(root: str | Path = "datasets") -> list[DatasetCard]:
    """Every dataset card under ``root``, sorted by name.

    Folders without a ``dataset.toml`` are ignored (they are not datasets); a malformed card
    raises rather than being skipped silently.

    Parameters
    ----------
    root : str or Path
        The datasets folder (``datasets/`` in the repository). A missing folder has no
        datasets.

    Returns
    -------
    list of DatasetCard

    Examples
    --------
    >>> import tempfile
    >>> list_datasets(tempfile.mkdtemp())
    []
    """
    root = Path(root)
    if not root.is_dir():
        return []
    cards = [read_card(p) for p in sorted(root.glob(f"*/{CARD_FILE}"))]
    return sorted(cards, key=lambda c: c.name)


def cube_card(name: str) -> DatasetCard:
    """The card of a dataset named by its cube file (``"runs/my_sweep.nc"``): the file,
    relative to the current folder or absolute, is its one cube; there is no build command.

    Raises
    ------
    DatasetError
        The file does not exist, or is not a file (the message names both spellings).

    Examples
    --------
    >>> try:
    ...     cube_card("no/such/run.nc")
    ... except DatasetError as e:
    ...     print(str(e).split(":")[0])
    Dataset 'no/such/run.nc'
    """
    path = Path(name).expanduser()
    resolved = path if path.is_absolute() else Path.cwd() / path
    if not resolved.is_file():
        what = "is a folder, not a cube file" if resolved.is_dir() else "does not exist"
        raise DatasetError(f"Dataset {name!r}: the cube file {str(resolved)!r} {what}; a dataset "
                           f"named by a path ending in {CUBE_SUFFIX!r} is that cube file (relative "
                           f"to the current folder), else name a dataset card.")
    return DatasetCard(name=str(name), title=f"the cube {path.name}", cubes=(resolved.resolve(),),
                       build="", needs="", folder=resolved.resolve().parent)


def find_dataset(name: str, root: str | Path | None = "datasets") -> DatasetCard:
    """The card of dataset ``name``, with a suggestion on a typo; a name ending in
    ``.nc`` is that cube file (:func:`cube_card`). ``root`` None is
    :func:`default_datasets_dir`.

    Raises
    ------
    DatasetError
        No card named ``name`` under ``root``; the message lists the known names.

    Examples
    --------
    >>> import tempfile
    >>> try:
    ...     find_dataset("toy", tempfile.mkdtemp())
    ... except DatasetError as e:
    ...     print(str(e).split(".")[0])
    No dataset named 'toy' in ...
    """
    if is_cube_path(name):
        return cube_card(name)
    if root is None:
        root = default_datasets_dir()
    cards = {c.name: c for c in list_datasets(root)}
    if name not in cards:
        known = ", ".join(cards) or "none"
        raise DatasetError(
            f"No dataset named {name!r} in {str(Path(root))!r}.{did_you_mean(name, cards)} "
            f"Known datasets: {known}."
        )
    return cards[name]


def load_dataset(name: str, root: str | Path | None = None, *, chunks: Any = None) -> "xr.Dataset":
    """Open the cube(s) of dataset ``name`` (validated, loaded into memory): a card's name
    under ``root`` (by default :func:`default_datasets_dir`, so the bundled datasets are
    found from any working folder) or a cube file (``"runs/my_sweep.nc"``).

    A dataset of several cube files is merged (:func:`lie_stats.cube.merge_shards`): models
    side by side, steps joined with NaN padding, provenance records concatenated; its
    ``created`` attribute is the latest of the files' (when the last was built), not the time
    it was opened. ``chunks`` opens the cubes lazily, as Dask arrays
    (:func:`lie_stats.cube.open_cube`).

    Raises
    ------
    DatasetError
        Unknown name, or a cube file is absent (the message gives the build command).
    lie_stats.errors.CubeError
        A cube file breaks the cube contract.

    Examples
    --------
    >>> import tempfile
    >>> try:
    ...     load_dataset("toy", tempfile.mkdtemp())
    ... except DatasetError as e:
    ...     print(type(e).__name__)
    DatasetError
    """
    card = find_dataset(name, root)
    if card.missing:
        raise DatasetError(
            f"Dataset {name!r} is {card.state}: missing {', '.join(map(str, card.missing))}. "
            f"Build it with: {card.build}"
            + (f" (needs {card.needs})" if card.needs else "")
        )
    return _open_cubes(card.cubes, chunks=chunks)


class CubeCache:
    """The cubes of dataset cards, each opened once and reused: an explicit object, held by
    whoever runs several evaluations on the same data (one :class:`lie_stats.engine.Engine`
    holds one for its run, so its evaluation and its export read the very same cube).

    A card's cubes are keyed by each file's path, mtime and size, so a rebuilt file is
    reopened; at most ``size`` cubes are held (the oldest opened is dropped first).

    >>> cache = CubeCache(size=2)
    >>> len(cache)
    0
    """

    def __init__(self, size: int = 9) -> None:
        if not isinstance(size, int) or size < 1:
            raise ValueError(f"CubeCache size: expected a positive int, got {size!r}")
        self.size = size
        self._cubes: dict[tuple, "xr.Dataset"] = {}

    def __len__(self) -> int:
        return len(self._cubes)

    def cube(self, card: DatasetCard) -> "xr.Dataset":
        """The cube of the present card ``card``, opened now or reused."""
        key = tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in card.cubes)
        if key not in self._cubes:
            while len(self._cubes) >= self.size:
                del self._cubes[next(iter(self._cubes))]
            self._cubes[key] = _open_cubes(card.cubes)
        return self._cubes[key]


def card_cubes(card: DatasetCard, cache: CubeCache | None = None) -> "xr.Dataset":
    """The cube of a present dataset card: from ``cache`` (:class:`CubeCache`) when given,
    else opened now. :func:`lie_stats.spec.evaluate` and :mod:`lie_stats.export` take the
    same cache from the engine, so an export holds exactly the values its result was
    computed from.
    """
    return _open_cubes(card.cubes) if cache is None else cache.cube(card)


def _open_cubes(paths: Sequence[Path], *, chunks: Any = None) -> "xr.Dataset":
    from . import cube

    cubes = [cube.open_cube(p, chunks=chunks) for p in paths]
    if len(cubes) == 1:
        return cubes[0]
    # provenance lists concatenated, NaN padding; built when the last cube was, not now
    combined = cube.merge_shards(cubes, created=cube.built_at(cubes))
    return cube.validate_cube(combined, where=" + ".join(map(str, paths)))


#: Coordinates :func:`cube_contents` reads: what a hypothesis can select.
CONTENT_COORDS = ("model", "family", "projection", "step")


def cube_contents(path: str | Path) -> dict[str, list]:
    """What one cube file holds, read from its header and coordinate variables only (no data
    variable is read): its models, families, projections and steps, and its data variables.

    Raises
    ------
    DatasetError
        The file is not a NetCDF file that can be opened.

    Examples
    --------
    >>> import tempfile, pathlib, numpy as np, xarray as xr
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "c.nc"
    >>> xr.Dataset({"v": (("model", "step"), np.zeros((1, 2)))},
    ...            {"model": ["m"], "step": [0, 9]}).to_netcdf(p)
    >>> cube_contents(p)
    {'model': ['m'], 'family': [], 'projection': [], 'step': [0, 9], 'variables': ['v']}
    """
    import netCDF4
    import numpy as np

    try:
        with netCDF4.Dataset(path) as nc:
            out: dict[str, list] = {}
            for name in CONTENT_COORDS:
                var = nc.variables.get(name)
                if var is None or var.ndim != 1 or var.size > 100_000:
                    out[name] = []
                    continue
                values = np.ma.getdata(var[:])
                out[name] = [v if isinstance(v, (str, int, float)) else str(v)
                             for v in np.asarray(values).tolist()]
            coords = set(nc.dimensions) | {n for n, v in nc.variables.items() if v.ndim <= 1}
            out["variables"] = sorted(n for n in nc.variables if n not in coords)
    except OSError as e:
        raise DatasetError(f"{path}: cannot read the cube's header ({e}); expected a NetCDF cube "
                           f"written by lie-stats extract.") from e
    return out


def describe_contents(card: DatasetCard) -> list[str]:
    """One line per cube file of a present card: its models, families, projections and steps.

    A cube that cannot be read gives a line saying so, not an exception.
    """
    lines = []
    for path in card.cubes:
        try:
            c = cube_contents(path)
        except DatasetError as e:
            lines.append(f"{path.name}: unreadable ({e})")
            continue
        steps = c["step"]
        span = (f"{len(steps)} steps {steps[0]}..{steps[-1]}" if len(steps) > 3
                else "steps " + ", ".join(map(str, steps)) if steps else "no steps")
        lines.append(f"{path.name}: {len(c['model'])} models ({', '.join(map(str, c['model']))}); "
                     f"families {', '.join(map(str, c['family'])) or '-'}; projections "
                     f"{', '.join(map(str, c['projection'])) or '-'}; {span}")
    return lines

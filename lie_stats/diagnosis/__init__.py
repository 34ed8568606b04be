"""Design diagnosis: how a spec's verdict rule behaves on data simulated from its own cube.

Modelled on DeclareDesign's ``diagnose_design``: for each spec on each of its datasets, the
data the spec selects from the real cube (same models, layers, heads, checkpoints) are
simulated many times

- under the null: the tested role is permuted over heads within each (model, layer)
  (correlations, label comparisons), the first and last checkpoints of whole layers are
  swapped (enrichment), or the paired differences are moved to the equivalence bound with
  their residuals sign-flipped by layer (TOST kinds), so the layer structure stays and only
  the effect the spec tests is changed;
- with the spec's reference effect planted into that null structure (the reference rho
  within layers, the reference ratio last / first, or no difference for equivalence), where
  the reference gives it and the kind's design knows how to plant it,

and each simulated selection goes through the kind's binding and decision rule, exactly as
:func:`lie_stats.spec.evaluate_cube` runs the main analysis after selection. The figures, one
:data:`DIAGNOSIS_FIELDS` record per result:

- ``fpr``: share of null simulations whose verdict is ``supported``;
- ``power``: share of planted simulations whose verdict is ``supported``;
- ``coverage``: share of planted simulations whose interval ``[ci_low, ci_high]`` holds the
  planted effect (those with a finite interval);
- ``type_s``: among planted simulations with ``p_value < alpha``, the share whose estimate
  lies on the wrong side of the null value (the sign error of Gelman & Carlin 2014);
- ``n_sims``, ``seed``; ``reason``: why a figure is null (or ``""``).

Extra fields: ``refuted_null`` and ``refuted_planted`` (share ``refuted``), ``n_perm`` and
``n_boot`` (the reduced resampling the simulations used).

Designs are keyed by kind name (:data:`DESIGNS`); a kind may bring its own through
:func:`lie_stats.spec.register_test`'s ``design=``. A kind without one gets null figures with
the reason ``no simulator for kind K``.

The diagnoses are cached in ``diagnosis.json`` beside the hypothesis modules, keyed by
``<id>::<dataset>`` and valid for one spec hash, one set of cube-file hashes and one set of
settings, so that ``lie-stats run`` only reads them (:func:`cached_diagnosis`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._io import file_sha256, text_sha256, write_text_atomic
from ..errors import LieStatsError, SpecError
from .. import columns as C
from ..spec.simulate import (Arrays, Design, NotPlantable, flip_differences, permute_heads,
                             plant_correlation, swap_layers)
from ..spec.kinds import DESIGNS, design_for

__all__ = [
    "DIAGNOSIS_FILE",
    "DIAGNOSIS_FIELDS",
    "Design",
    "DESIGNS",
    "NotPlantable",
    "Settings",
    "design_for",
    "diagnose_arrays",
    "diagnose_spec",
    "empty_diagnosis",
    "cached_diagnosis",
    "read_cache",
    "write_cache",
    "cube_hashes",
    "flip_differences",
    "permute_heads",
    "plant_correlation",
    "swap_layers",
]

#: Name of the cache file beside the hypothesis modules.
DIAGNOSIS_FILE = "diagnosis.json"
#: Fields of a result row's ``diagnosis`` (the shared contract; extra fields may follow).
DIAGNOSIS_FIELDS = ("fpr", "power", "coverage", "type_s", "n_sims", "seed", "reason")
#: Version of the cache file's layout.
CACHE_FORMAT = 1
#: Version of the built-in designs, part of every cache key: raise it when a design changes
#: what it simulates, so that cached diagnoses of the old designs are recomputed.
DESIGN_VERSION = 1
#: What ``lie-stats run`` attaches to a result the cache does not hold.
NOT_DIAGNOSED = "not diagnosed: run lie-stats diagnose"



@dataclass(frozen=True)
class Settings:
    """How many simulations, their seed and the reduced resampling of each evaluation.

    The resampling parameters of the spec are capped at ``n_perm`` and ``n_boot``: a
    simulation needs the verdict's rate over many datasets, not a precise p for one.
    """

    n_sims: int = 200
    seed: int = 0
    n_perm: int = 199
    n_boot: int = 199
    n_robust: int | None = None

    def __post_init__(self) -> None:
        for name in ("n_sims", "n_perm", "n_boot"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise LieStatsError(f"diagnosis setting {name} must be a positive integer, got {value!r}.")
        if self.n_robust is not None and (not isinstance(self.n_robust, int) or self.n_robust < 0):
            raise LieStatsError(f"diagnosis setting n_robust must be a whole number >= 0 or None, "
                                f"got {self.n_robust!r}.")

    @property
    def robust_sims(self) -> int:
        """Simulations per alternative null: ``n_robust``, or half of ``n_sims`` when unset
        (0: no alternative nulls)."""
        return self.n_sims // 2 if self.n_robust is None else self.n_robust

    @property
    def per_result(self) -> int:
        """Simulations run for one result: the design's own, then each alternative null's."""
        from .robust import ALTERNATIVES

        return self.n_sims + len(ALTERNATIVES) * self.robust_sims

    def record(self) -> dict[str, int]:
        """The settings as the cache keys them (with :data:`DESIGN_VERSION`)."""
        return {"n_sims": self.n_sims, "seed": self.seed, "n_perm": self.n_perm,
                "n_boot": self.n_boot, "n_robust": self.robust_sims, "design_version": DESIGN_VERSION}



# ----------------------------------------------------------------------------- diagnosis


def empty_diagnosis(reason: str, settings: Settings | None = None) -> dict[str, Any]:
    """A diagnosis with every figure null and ``reason`` saying why."""
    return {"fpr": None, "power": None, "coverage": None, "type_s": None, "fpr_robust": None,
            "n_sims": settings.n_sims if settings else None,
            "seed": settings.seed if settings else None, "reason": reason}


def _evaluate(spec: Any, arrays: Arrays, params: dict[str, Any],
              dataset: str = "") -> tuple[str, dict[str, float]]:
    """Verdict and result row of the spec on ``arrays`` as the main analysis decides it: the
    kind's rule on the direction, then the declared magnitude on ``dataset``
    (:func:`lie_stats.spec.magnitude.combine`: a supported direction whose interval lies
    outside the band is refuted)."""
    from ..spec.verdict import decide_arrays

    decided = decide_arrays(spec, arrays, params, dataset=dataset)
    return decided.verdict, decided.row


def _share(flags: list[bool]) -> float | None:
    return float(np.mean(flags)) if flags else None


def _reduced(params: Mapping[str, Any], settings: Settings) -> dict[str, Any]:
    """``params`` with ``n_perm`` and ``n_boot`` capped by ``settings``, also inside a nested
    mapping of parameters (another kind's, e.g. ``target_params``).

    >>> _reduced({"n_perm": 9999, "target_params": {"n_boot": 2000, "ci": 0.95}}, Settings())
    {'n_perm': 199, 'target_params': {'n_boot': 199, 'ci': 0.95}}
    """
    out = dict(params)
    for key, value in out.items():
        if isinstance(value, Mapping) and ({"n_perm", "n_boot"} & set(value)):
            out[key] = _reduced(value, settings)
    for key, cap in (("n_perm", settings.n_perm), ("n_boot", settings.n_boot)):
        if isinstance(out.get(key), int) and out[key] > cap:
            out[key] = cap
    return out


def diagnose_arrays(spec: Any, arrays: Arrays, settings: Settings = Settings(), *,
                    progress: Callable[[int], None] | None = None,
                    dataset: str = "") -> dict[str, Any]:
    """Diagnose ``spec`` on its selected ``arrays`` (one array per role) of ``dataset`` (the
    name the declared magnitude's exclusions, ``not_on``, are read for).

    A simulation's verdict is the main analysis's: the kind's rule, then the declared
    magnitude band, so that a supported direction whose estimate lies outside the band
    counts as refuted, under the null and with the effect planted alike.

    Simulation ``i`` draws its data with ``numpy.random.default_rng([seed, i])`` and runs
    the test with resampling seed ``seed + i`` (so the simulations' Monte Carlo errors are
    independent) and the resampling capped by ``settings``.

    Returns
    -------
    dict
        :data:`DIAGNOSIS_FIELDS` plus ``refuted_null``, ``refuted_planted``, ``n_perm``,
        ``n_boot``.
    """
    design = design_for(spec.kind)
    if design is None:
        return empty_diagnosis(f"no simulator for kind {spec.test}", settings)
    alpha = float(spec.resolved_params()["alpha"])
    base = _reduced(spec.resolved_params(), settings)
    null_verdicts, plant_verdicts, covered, sign_errors = [], [], [], []
    plant_reason = "" if design.plant is not None else (
        f"no way to plant an effect is defined for kind {spec.test}")
    for i in range(settings.n_sims):
        rng = np.random.default_rng([settings.seed, i])
        params = {**base, "seed": settings.seed + i}
        try:
            null_arrays = design.null(arrays, spec, rng)
        except NotPlantable as e:
            return empty_diagnosis(f"no null simulation for these data: {e}", settings)
        verdict, _ = _evaluate(spec, null_arrays, params, dataset)
        null_verdicts.append(verdict)
        if not plant_reason:
            try:
                planted_arrays, planted = design.plant(null_arrays, spec, rng)
            except NotPlantable as e:
                # a plant refused in one simulation gives no power at all: the figures of the
                # simulations before it would be those of a selected subset of nulls
                plant_reason = (f"no planted effect: {e}" if not plant_verdicts else
                                f"no planted effect (refused in simulation {i + 1} of "
                                f"{settings.n_sims}): {e}")
                plant_verdicts, covered, sign_errors = [], [], []
            else:
                verdict, row = _evaluate(spec, planted_arrays, params, dataset)
                plant_verdicts.append(verdict)
                lo, hi = row.get(C.CI_LOW, math.nan), row.get(C.CI_HIGH, math.nan)
                if math.isfinite(lo) and math.isfinite(hi):
                    covered.append(lo <= planted <= hi)
                p, est = row.get(C.P_VALUE, math.nan), row.get(C.EFFECT, math.nan)
                if design.sign and math.isfinite(p) and p < alpha and math.isfinite(est):
                    zero = design.null_value(row, spec)
                    sign_errors.append(np.sign(est - zero) != np.sign(planted - design.null_value({}, spec)))
        if progress is not None:
            progress(1)
    out = empty_diagnosis(plant_reason, settings)
    out["fpr"] = _share([v == "supported" for v in null_verdicts])
    out["refuted_null"] = _share([v == "refuted" for v in null_verdicts])
    if plant_verdicts:
        out["power"] = _share([v == "supported" for v in plant_verdicts])
        out["refuted_planted"] = _share([v == "refuted" for v in plant_verdicts])
        out["coverage"] = _share(covered)
        out["type_s"] = _share(sign_errors)
        missing = [name for name, flags in (("coverage", covered), ("type_s", sign_errors))
                   if not flags]
        if missing:
            why = {"coverage": "no planted simulation gave a finite interval",
                   "type_s": (f"no planted simulation had p < alpha ({alpha})" if design.sign else
                              "type S is undefined: this kind's estimate has no sign to get wrong "
                              "(an equivalence, a location, a code range)")}
            out["reason"] = "; ".join(why[m] for m in missing)
    out["n_perm"], out["n_boot"] = settings.n_perm, settings.n_boot
    out["design"] = design.what
    out["robust"] = _robust(spec, arrays, design, base, settings, dataset, progress)
    fprs = [v["fpr"] for v in out["robust"].values() if v["fpr"] is not None]
    out["fpr_robust"] = max(fprs) if fprs else None
    if out["fpr_robust"] is None:
        why = "; ".join(f"{k}: {v['reason']}" for k, v in out["robust"].items() if v["reason"])
        out["reason"] = "; ".join(x for x in (out["reason"], f"no alternative null applies ({why})"
                                              if why else "no alternative nulls simulated") if x)
    return out


def _robust(spec: Any, arrays: Arrays, design: Design, base: Mapping[str, Any],
            settings: Settings, dataset: str,
            progress: Callable[[int], None] | None = None) -> dict[str, dict[str, Any]]:
    """The share ``supported`` under each alternative null (:mod:`.robust`): the design's null
    draw, then the alternative's transformation, ``settings.n_robust`` times each, with
    data drawn by ``default_rng([seed, 1 + k, i])`` for alternative ``k`` (so they are
    independent of the main simulations and of each other)."""
    from .robust import ALTERNATIVES, NotApplicable

    out: dict[str, dict[str, Any]] = {}
    for k, alt in enumerate(ALTERNATIVES):
        verdicts: list[str] = []
        reason = ""
        for i in range(settings.robust_sims):
            rng = np.random.default_rng([settings.seed, 1 + k, i])
            params = {**base, "seed": settings.seed + i}
            try:
                drawn = alt.apply(design.null(arrays, spec, rng), spec, rng)
            except (NotApplicable, NotPlantable) as e:
                reason, verdicts = f"not applicable: {e}", []
                break
            verdicts.append(_evaluate(spec, drawn, params, dataset)[0])
            if progress is not None:
                progress(1)
        out[alt.name] = {"fpr": _share([v == "supported" for v in verdicts]),
                         "refuted": _share([v == "refuted" for v in verdicts]),
                         "n_sims": len(verdicts), "reason": reason, "what": alt.what}
    return out


def diagnose_spec(spec: Any, dataset: str, datasets_dir: str | os.PathLike = "datasets",
                  settings: Settings = Settings(), *,
                  progress: Callable[[int], None] | None = None, cubes: Any = None) -> dict[str, Any]:
    """Diagnose ``spec`` on ``dataset``: select its data from the dataset's cube (read from
    ``cubes``, a :class:`lie_stats.datasets.CubeCache`, when given), then
    :func:`diagnose_arrays`. Absent data or a selection that skips give null figures with
    the reason."""
    from ..datasets import card_cubes, find_dataset
    from ..spec import Skip, select

    card = find_dataset(dataset, datasets_dir)
    if card.missing:
        return empty_diagnosis(f"dataset {dataset!r} is {card.state}: nothing to simulate from",
                               settings)
    if design_for(spec.kind) is None:  # said before the cube is opened
        return empty_diagnosis(f"no simulator for kind {spec.test}", settings)
    cube = card_cubes(card, cubes)
    try:
        arrays = {role: select(sel, cube, where=f"{spec.id} selection[{role!r}]")
                  for role, sel in spec.selection.items()}
    except Skip as e:
        return empty_diagnosis(f"skipped: {e}", settings)
    try:
        return diagnose_arrays(spec, arrays, settings, progress=progress, dataset=dataset)
    except SpecError as e:
        return empty_diagnosis(f"the kind rejects its selection: {e}", settings)


# ----------------------------------------------------------------------------- cache


_HASHES: dict[tuple, str] = {}


def cube_hashes(dataset: str, datasets_dir: str | os.PathLike = "datasets") -> dict[str, str] | None:
    """sha256 of each cube file of ``dataset`` by file name (None when a file is absent);
    computed once per file version (path, mtime, size) in a process."""
    from ..datasets import find_dataset

    card = find_dataset(dataset, datasets_dir)
    if card.missing:
        return None
    out = {}
    for p in card.cubes:
        st = p.stat()
        key = (str(p), st.st_mtime_ns, st.st_size)
        if key not in _HASHES:
            _HASHES[key] = file_sha256(p)
        out[p.name] = _HASHES[key]
    return out


def read_cache(path: str | os.PathLike) -> dict[str, Any]:
    """The entries of a cache file by ``<id>::<dataset>`` (empty when the file is absent).

    Raises
    ------
    LieStatsError
        The file is not JSON, or not the layout :func:`write_cache` writes (the message
        names the file and what was expected).
    """
    from .._io import read_json

    path = Path(path)
    if not path.exists():
        return {}
    # bounded before parsing (size, nesting); a folder or FIFO named as the cache is named so
    data = read_json(path, what="a diagnosis cache (delete it and rerun lie-stats diagnose)")
    if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT or not isinstance(
            data.get("entries"), dict):
        raise LieStatsError(f"{path}: not a diagnosis cache: expected an object with "
                            f"\"format\": {CACHE_FORMAT} and \"entries\" (an object by "
                            f"<id>::<dataset>); delete it and rerun lie-stats diagnose.")
    for key, entry in data["entries"].items():
        need = ("spec_hash", "cubes", "settings", "diagnosis")
        if not isinstance(entry, dict) or any(k not in entry for k in need) or not isinstance(
                entry["diagnosis"], dict) or any(f not in entry["diagnosis"] for f in DIAGNOSIS_FIELDS):
            raise LieStatsError(f"{path}: entry {key!r} is malformed: expected the fields "
                                f"{', '.join(need)} and a diagnosis with {', '.join(DIAGNOSIS_FIELDS)}.")
        types = {"spec_hash": str, "code": str, "settings": dict, "cubes": (dict, type(None))}
        for field_name, expected in types.items():
            if field_name in entry and not isinstance(entry[field_name], expected):
                names = " or ".join(t.__name__ for t in (expected if isinstance(expected, tuple) else (expected,)))
                raise LieStatsError(f"{path}: entry {key!r}, field {field_name!r}: expected {names}, got "
                                    f"{type(entry[field_name]).__name__}; delete the file and rerun "
                                    f"lie-stats diagnose.")
        for figure_name in ("fpr", "power", "coverage", "type_s", "fpr_robust"):
            value = entry["diagnosis"].get(figure_name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise LieStatsError(f"{path}: entry {key!r}, field 'diagnosis.{figure_name}': expected a "
                                    f"number or null, got {type(value).__name__}.")
    return data["entries"]


def write_cache(path: str | os.PathLike, entries: Mapping[str, Any]) -> Path:
    """Write the cache file atomically, keys sorted (the same entries give the same bytes)."""
    text = json.dumps({"format": CACHE_FORMAT, "entries": dict(entries)}, indent=1,
                      sort_keys=True, allow_nan=False)
    return write_text_atomic(path, text + "\n")


#: What of this module simulates (its part of every fingerprint): the loop, not the cache.
SIMULATION = ("DESIGN_VERSION", "Settings", "empty_diagnosis", "_evaluate", "_share", "_reduced",
              "diagnose_arrays", "_robust", "diagnose_spec")


def _behaviour(source: str, only: Sequence[str] | None = None) -> str:
    """A module's behaviour as text: its syntax tree without docstrings (comments and
    layout are not in a tree), so that an edit of the documentation leaves it as it is;
    with ``only``, just the top-level definitions and assignments of those names.

    >>> _behaviour("def f(x):\\n    'Doc.'\\n    return x  # why\\n") == _behaviour("def f(x): return x")
    True
    >>> _behaviour("def f(x): return x") == _behaviour("def f(x): return -x")
    False
    """
    import ast

    tree = ast.parse(source)
    if only is not None:
        def named(node: ast.stmt) -> bool:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                return node.name in only
            targets = node.targets if isinstance(node, ast.Assign) else (
                [node.target] if isinstance(node, ast.AnnAssign) else [])
            return any(isinstance(t, ast.Name) and t.id in only for t in targets)

        tree.body = [node for node in tree.body if named(node)]
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                node.body = node.body[1:] or [ast.Pass()]
    return ast.dump(tree, annotate_fields=False)


def code_fingerprint(test: str, *, magnitude: bool = False) -> str:
    """sha256 of the behaviour (:func:`_behaviour`: the code without its docstrings and
    comments) of what decides a result of kind ``test`` (:func:`fingerprint_modules`). A
    cached diagnosis is valid only for the same behaviour, so a changed rule, statistic or
    design is diagnosed again rather than shown with the old figures, while a documentation
    edit keeps the cache."""
    import importlib
    import inspect
    import sys

    def module(name: str):
        return sys.modules.get(name) or importlib.import_module(name)

    return behaviour_fingerprint({n: inspect.getsource(module(n))
                                  for n in fingerprint_modules(test, magnitude=magnitude)})


def fingerprint_modules(test: str, *, magnitude: bool = False) -> set[str]:
    """The modules whose behaviour decides a result of kind ``test``: the modules of its
    binding and decision rule, :mod:`lie_stats.spec.verdict` (where binding and rule run),
    the ``lie_stats.stats`` modules its kind module uses, this module's simulation loop (:data:`SIMULATION`, not its cache), the design building blocks
    (every module of :mod:`lie_stats.spec.simulate`), the module that declares the kind's
    design (its family folder's ``design``) and the modules of the design's functions, and,
    with ``magnitude`` (a spec that declares the size its claim states) or for a kind that
    runs other kinds, :mod:`lie_stats.spec.magnitude` (how a figure decides)."""
    import importlib
    import inspect
    import sys

    from ..spec import simulate
    from ..spec.registry import get_kind
    from ..spec.kinds import DESIGN_HOMES

    def module(name: str):
        return sys.modules.get(name) or importlib.import_module(name)

    kind = get_kind(test)
    names = {kind.fn.__module__, kind.decide.__module__, __name__, f"{__name__}.robust",
             "lie_stats.spec.verdict", "lie_stats.columns",
             *_package_modules(simulate)}
    if magnitude:
        names.add("lie_stats.spec.magnitude")
    design = design_for(kind)
    if design is not None:
        if design is DESIGNS.get(kind.name):
            names.add(DESIGN_HOMES[kind.name])
        names.update(f.__module__ for f in (design.null, design.plant, design.null_value)
                     if f is not None and f.__module__.startswith("lie_stats"))
        if design.runs_other_kinds:  # any kind's rule, statistics, design or figure may run inside
            names.add("lie_stats.spec.magnitude")
            from .. import stats
            from ..spec import kinds

            for package in (kinds, stats):
                names.update(_package_modules(package))
    for value in vars(module(kind.fn.__module__)).values():
        # a statistic imported by name (its function) or as a module (``stats.intersection as iut``)
        if inspect.ismodule(value):
            name = value.__name__
        elif callable(value):
            name = getattr(value, "__module__", None) or ""
        else:
            continue
        if name.startswith("lie_stats.stats"):
            names.add(name)
    return names


def _package_modules(package: Any) -> list[str]:
    """The modules of ``package``, the package's own ``__init__`` included and those of its
    subpackages (a kind family's folder: its binding and its design) at any depth."""
    import pkgutil

    return [package.__name__, *(m.name for m in pkgutil.walk_packages(package.__path__,
                                                                      f"{package.__name__}."))]


def behaviour_fingerprint(sources: Mapping[str, str]) -> str:
    """sha256 of the behaviour of modules given by name and source (:func:`_behaviour`;
    of this module, :data:`SIMULATION` only)."""
    return text_sha256("\n".join(_behaviour(sources[n], only=SIMULATION if n == __name__ else None)
                                 for n in sorted(sources)))


def _entry_valid(entry: Mapping[str, Any] | None, spec_hash: str, cubes: Mapping[str, str] | None,
                 settings: Settings | None, code: str) -> bool:
    if entry is None or entry.get("spec_hash") != spec_hash or entry.get("cubes") != cubes:
        return False
    if entry.get("code") != code:
        return False
    return settings is None or entry.get("settings") == settings.record()


def cached_diagnosis(spec_id: str, dataset: str, spec_hash: str, cache: str | os.PathLike,
                     datasets_dir: str | os.PathLike = "datasets", *, test: str,
                     magnitude: bool = False) -> dict[str, Any]:
    """The cached diagnosis of a result of kind ``test`` (whose spec declares a magnitude,
    with ``magnitude``), or null figures with the reason :data:`NOT_DIAGNOSED` when the
    cache holds none for this spec hash, these cubes and this code (:func:`code_fingerprint`)."""
    entry = read_cache(cache).get(f"{spec_id}::{dataset}")
    try:
        cubes = cube_hashes(dataset, datasets_dir)
    except LieStatsError:
        cubes = None
    if _entry_valid(entry, spec_hash, cubes, None, code_fingerprint(test, magnitude=magnitude)):
        return dict(entry["diagnosis"])
    return empty_diagnosis(NOT_DIAGNOSED)


@dataclass
class Diagnosed:
    """One diagnosed result: key, the diagnosis, whether it came from the cache, seconds."""

    key: str
    diagnosis: dict[str, Any]
    cached: bool
    seconds: float = 0.0
    test: str = ""


@dataclass
class _Work:
    spec: Any
    dataset: str
    cache: Path
    entries: dict[str, Any] = field(default_factory=dict)


def _diagnose_timed(spec: Any, dataset: str, datasets_dir: str | os.PathLike,
                    settings: Settings) -> tuple[dict[str, Any], float]:
    """:func:`diagnose_spec` and its seconds (the task of a worker process)."""
    import time

    start = time.perf_counter()
    diag = diagnose_spec(spec, dataset, datasets_dir, settings)
    return diag, time.perf_counter() - start


def diagnose_declarations(declarations: Iterable[Any], *, datasets_dir: str | os.PathLike = "datasets",
                          settings: Settings = Settings(), datasets: Sequence[str] | None = None,
                          progress: Any = None, jobs: int = 1) -> list[Diagnosed]:
    """Diagnose collected declarations (:func:`lie_stats.collect.collect`) on their datasets,
    reusing valid cache entries and writing each cache file after every new diagnosis (so
    an interrupted run keeps what it finished).

    ``progress``: an object with ``update(n)`` and ``total`` (a tqdm bar), or None.
    ``jobs``: results diagnosed at once, each in a worker process (forked, so kinds
    registered in this process are known there); the figures do not depend on it, since
    every simulation draws from its own seed. Rows come back in the declarations' order.
    """
    import time

    if not isinstance(jobs, int) or jobs < 1:
        raise LieStatsError(f"diagnose: jobs must be a positive integer, got {jobs!r}.")
    work: list[_Work] = []
    for decl in declarations:
        if decl.out_of_scope:
            continue
        for ds in decl.datasets:
            if datasets is None or ds in datasets:
                work.append(_Work(decl.obj, ds, Path(decl.path).parent / DIAGNOSIS_FILE))
    caches = {w.cache: dict(read_cache(w.cache)) for w in work}
    done: dict[int, Diagnosed] = {}
    todo: list[tuple[int, _Work, dict[str, str] | None, str]] = []
    for i, w in enumerate(work):
        key = f"{w.spec.id}::{w.dataset}"
        entries = caches[w.cache]
        cubes = cube_hashes(w.dataset, datasets_dir)
        code = code_fingerprint(w.spec.test, magnitude=w.spec.prediction.magnitude is not None)
        if _entry_valid(entries.get(key), w.spec.spec_hash(), cubes, settings, code):
            done[i] = Diagnosed(key, dict(entries[key]["diagnosis"]), True, 0.0, w.spec.test)
            if progress is not None:
                progress.update(settings.per_result)
        else:
            todo.append((i, w, cubes, code))

    def record(i: int, w: _Work, cubes: Any, code: str, diag: Mapping[str, Any], seconds: float) -> None:
        key = f"{w.spec.id}::{w.dataset}"
        entries = caches[w.cache]
        entries[key] = {"spec_hash": w.spec.spec_hash(), "cubes": cubes, "code": code,
                        "settings": settings.record(), "diagnosis": _finite(diag)}
        write_cache(w.cache, entries)
        done[i] = Diagnosed(key, entries[key]["diagnosis"], False, seconds, w.spec.test)

    if jobs == 1 or len(todo) <= 1:
        from ..datasets import CubeCache

        opened = CubeCache()  # each dataset's cube opened once for all its results
        for i, w, cubes, code in todo:
            start = time.perf_counter()
            counted = [0]

            def tick(n: int) -> None:
                counted[0] += n
                if progress is not None:
                    progress.update(n)

            diag = diagnose_spec(w.spec, w.dataset, datasets_dir, settings, progress=tick, cubes=opened)
            if progress is not None and counted[0] < settings.per_result:
                progress.update(settings.per_result - counted[0])
            record(i, w, cubes, code, diag, time.perf_counter() - start)
    else:
        from .._stop import fork_pool_map  # signal-safe: one SIGINT/SIGTERM ends the pool

        calls = [(w.spec, w.dataset, datasets_dir, settings) for _, w, _, _ in todo]
        for k, (diag, seconds) in fork_pool_map(_diagnose_timed, calls, jobs=jobs):
            i, w, cubes, code = todo[k]
            record(i, w, cubes, code, diag, seconds)
            if progress is not None:
                progress.update(settings.per_result)
    return [done[i] for i in sorted(done)]


def _finite(diag: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in diag.items()}


def diagnosis_by_kind(rows: Sequence[Diagnosed]) -> str:
    """The diagnoses summarized per kind, as a Markdown table: how many results, how many have
    an FPR and a power, and the range of each (a result without one has a reason instead).

    >>> rows = [Diagnosed("a::d", {"fpr": 0.01, "power": 0.9}, False, test="trend"),
    ...         Diagnosed("b::d", {"fpr": 0.04, "power": None}, True, test="trend")]
    >>> print(diagnosis_by_kind(rows))
    | kind | results | with an FPR | FPR (range) | robust FPR (range) | with a power | power (range) |
    |---|---|---|---|---|---|---|
    | trend | 2 | 2 | 0.010-0.040 | - | 1 | 0.90 |
    """
    def span(values: list[float], digits: int) -> str:
        if not values:
            return "-"
        lo, hi = f"{min(values):.{digits}f}", f"{max(values):.{digits}f}"
        return lo if lo == hi else f"{lo}-{hi}"

    kinds: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        kinds.setdefault(r.test, []).append(r.diagnosis)
    lines = ["| kind | results | with an FPR | FPR (range) | robust FPR (range) | with a power | power (range) |",
             "|---|---|---|---|---|---|---|"]
    for kind in sorted(kinds):
        fpr = [d["fpr"] for d in kinds[kind] if d.get("fpr") is not None]
        robust = [d["fpr_robust"] for d in kinds[kind] if d.get("fpr_robust") is not None]
        power = [d["power"] for d in kinds[kind] if d.get("power") is not None]
        lines.append(f"| {kind} | {len(kinds[kind])} | {len(fpr)} | {span(fpr, 3)} | {span(robust, 3)} | "
                     f"{len(power)} | {span(power, 2)} |")
    return "\n".join(lines)


def diagnosis_table(rows: Sequence[Diagnosed]) -> str:
    """The diagnoses as a plain-text table: key, kind, FPR, robust FPR (the largest under the
    alternative nulls), power, coverage, type-S, seconds, reason."""
    from .._io import terminal_safe

    def fmt(v: Any) -> str:
        return "-" if v is None else f"{v:.3f}"

    head = (f"{'result':44s} {'test':22s} {'fpr':>6s} {'robust':>6s} {'power':>6s} {'cover':>6s} "
            f"{'typeS':>6s} {'sec':>6s}  reason")
    lines = [head, "-" * len(head)]
    for r in rows:
        d = r.diagnosis
        sec = "cache" if r.cached else f"{r.seconds:.1f}"
        lines.append(f"{terminal_safe(r.key, one_line=True)[:44]:44s} {r.test[:22]:22s} "
                     f"{fmt(d.get('fpr')):>6s} {fmt(d.get('fpr_robust')):>6s} {fmt(d.get('power')):>6s} "
                     f"{fmt(d.get('coverage')):>6s} "
                     f"{fmt(d.get('type_s')):>6s} {sec:>6s}  "
                     f"{terminal_safe(d.get('reason') or '', one_line=True)}")
    return "\n".join(lines)


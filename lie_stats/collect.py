"""Finding hypotheses: which files are hypothesis modules, how they are imported, and the
:class:`~lie_stats.spec.HypothesisSpec` and :class:`~lie_stats.spec.OutOfScope` objects
they declare.

The pytest plugin (:mod:`lie_stats.pytest_plugin`) and the export
(:func:`lie_stats.export.export_hypotheses`) both collect through this module, so they see
the same modules, the same declarations in the same order and the same errors:

- a *hypothesis file* is a ``.py`` file whose name does not start with ``_``, is not
  ``conftest.py``, in a folder named in ``dirs`` (the plugin's ini option
  ``lie_hypothesis_dirs``; default :data:`HYPOTHESIS_DIRS`). A file named explicitly is
  collected wherever it is;
- a module is imported as pytest's default ``prepend`` import mode does: as a module of
  the outermost package of folders with ``__init__.py`` (``hypotheses.<name>``), else under
  its bare name, with that package's parent folder put on ``sys.path``;
- a module's declarations are its module-level HypothesisSpec and OutOfScope objects in
  definition order; the same object imported into a second module is collected once; a
  second declaration with an id already collected is an error, as is a spec naming a
  dataset without a card (:func:`lie_stats.spec.check_datasets`). A module is imported
  under :func:`lie_stats.spec.declaration.deferred_declaration_errors`: a declaration
  whose fields fail their checks is an error of that declaration alone (named by its id),
  and the module's other declarations are still collected. A module that cannot be
  imported is an error of that module; the others are still collected.

This module imports neither pytest nor anything heavy at import time: the plugin, loaded in
every pytest run, imports it.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

from ._stop import raise_if_stopped

__all__ = [
    "HYPOTHESIS_DIRS",
    "Declaration",
    "CollectionError",
    "Collection",
    "Declarations",
    "is_hypothesis_file",
    "is_module_file",
    "under",
    "hypothesis_files",
    "import_hypothesis_module",
    "describe_error",
    "collect",
    "dataset_users",
]

#: Names of folders whose ``*.py`` files are hypothesis modules (the plugin's default).
HYPOTHESIS_DIRS = ("hypotheses",)
_SPEC_MODULE = "lie_stats.spec"


@dataclass(frozen=True)
class Declaration:
    """One collected HypothesisSpec or OutOfScope.

    Attributes
    ----------
    obj : HypothesisSpec or OutOfScope
    attr : str
        The module attribute that holds it.
    path : Path
        The module's file.
    where : str
        ``<module>::<attr>``, as an error names the first declaration of an id.
    datasets : tuple of str
        The datasets to evaluate it on: the spec's own, or those a node id selected;
        empty for an OutOfScope record.
    """

    obj: Any
    attr: str
    path: Path
    where: str
    datasets: tuple[str, ...] = ()

    @property
    def out_of_scope(self) -> bool:
        """Whether this is an OutOfScope record (no datasets, always skipped)."""
        return not hasattr(self.obj, "datasets")

    def item_name(self, dataset: str | None = None) -> str:
        """The name of its test item on ``dataset``: ``<id>[<dataset>]``; the id alone for
        an OutOfScope record. pytest prints it as it is, so it is a terminal line
        (:func:`lie_stats._text.terminal_line`: a newline or an escape in an id shows escaped)."""
        from ._text import terminal_line

        return terminal_line(self.obj.id if dataset is None else f"{self.obj.id}[{dataset}]")

    def select(self, names: Iterable[str]) -> Declaration | None:
        """This declaration restricted to the items that pytest node names select (``<id>``
        or ``<id>[<dataset>]``), or ``None`` when they select none of them."""
        names = set(names)
        if self.out_of_scope:
            return self if self.obj.id in names else None
        keep = tuple(ds for ds in self.datasets if {self.item_name(ds), self.obj.id} & names)
        return replace(self, datasets=keep) if keep else None


@dataclass(frozen=True)
class CollectionError:
    """A module, or one declaration of it, that could not be collected.

    Attributes
    ----------
    path : Path
        The module's file.
    name : str
        ``<import>`` for a module that failed to import; ``<attr>[duplicate]`` or
        ``<attr>[datasets]`` for one declaration; the declaration's id (its attribute when
        the id cannot be read) for a declaration whose fields failed their checks.
    text : str
        What went wrong, naming the module and the field (no traceback).
    declaration : bool
        The error is one declaration's (the module's other declarations were collected).
    """

    path: Path
    name: str
    text: str
    declaration: bool = False

    def __str__(self) -> str:
        return f"{self.path}: {self.text}"


@dataclass
class Collection:
    """What :func:`collect` found: declarations in collection order, the errors, the
    modules imported whole (no node id selected part of them) and the report sections each
    imported module declares."""

    declarations: list[Declaration] = field(default_factory=list)
    errors: list[CollectionError] = field(default_factory=list)
    modules: list[Path] = field(default_factory=list)
    #: Each imported module's ``REPORT_SECTIONS``, as it holds it (the engine checks it).
    sections: dict[Path, Any] = field(default_factory=dict)


def is_hypothesis_file(path: str | os.PathLike, dirs: Iterable[str] = HYPOTHESIS_DIRS) -> bool:
    """Whether ``path`` is a hypothesis module by its name and folder.

    Examples
    --------
    >>> is_hypothesis_file("hypotheses/X1_claim.py"), is_hypothesis_file("hypotheses/_common.py")
    (True, False)
    >>> is_hypothesis_file("tests/X1.py"), is_hypothesis_file("claims/X1.py", dirs=["claims"])
    (False, True)
    """
    p = Path(path)
    return (p.suffix == ".py" and not p.name.startswith("_") and p.name != "conftest.py"
            and p.parent.name in set(dirs))


def is_module_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` can be a hypothesis module by its name alone: a ``.py`` file not named
    ``_*.py`` or ``conftest.py`` (any folder).

    >>> is_module_file("claims/X1.py"), is_module_file("claims/_helpers.py"), is_module_file("a/conftest.py")
    (True, False, False)
    """
    p = Path(path)
    return p.suffix == ".py" and not p.name.startswith("_") and p.name != "conftest.py"


#: Names whose module-level use marks a file as declaring hypotheses (:func:`declares_specs`).
DECLARING_NAMES = ("HypothesisSpec", "OutOfScope")
#: Files larger than this are not read to look for declarations (not a hypothesis module).
_SCAN_LIMIT = 2_000_000


def declares_specs(path: str | os.PathLike) -> bool:
    """Whether a ``.py`` file that is not a test module declares hypotheses, read without
    importing it: it imports lie_stats and calls ``HypothesisSpec`` or ``OutOfScope`` (by
    name or as an attribute) in a statement at module level. So ``pytest myhyp/`` collects
    the hypothesis modules of any folder, as ``lie-stats run myhyp/`` does, and leaves other
    files to pytest's own rules.

    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "K1.py").write_text("import lie_stats as ls\\nK1 = ls.HypothesisSpec(id='K1')\\n")
    >>> _ = (d / "util.py").write_text("def HypothesisSpec():\\n    return 1\\n")
    >>> declares_specs(d / "K1.py"), declares_specs(d / "util.py")
    (True, False)
    """
    import ast

    p = Path(path)
    try:
        if not is_module_file(p) or not p.is_file() or p.stat().st_size > _SCAN_LIMIT:
            return False
        text = p.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    if "lie_stats" not in text or not any(n in text for n in DECLARING_NAMES):
        return False
    try:
        tree = ast.parse(text, filename=str(p))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "import lie_stats" in text or "from lie_stats" in text  # collected, and its error shown
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
                if name in DECLARING_NAMES:
                    return True
    return False


def under(path: str | os.PathLike, roots: Iterable[str | os.PathLike]) -> bool:
    """Whether ``path`` is one of ``roots`` or inside one of them (resolved paths).

    >>> under("/srv/claims/X1.py", ["/srv/claims"]), under("/srv/tests/t.py", ["/srv/claims"])
    (True, False)
    """
    p = Path(path).resolve()
    return any(p == Path(r).resolve() or Path(r).resolve() in p.parents for r in roots)


def _split_node(path: str | os.PathLike) -> tuple[Path, str | None]:
    text = str(path)
    file, sep, rest = text.partition("::")
    return Path(file), (rest if sep else None)


def hypothesis_files(paths: Sequence[str | os.PathLike], dirs: Iterable[str] | None = HYPOTHESIS_DIRS
                     ) -> list[tuple[Path, tuple[str, ...] | None]]:
    """The hypothesis files under ``paths``, in collection order, each with its selectors.

    A folder gives its hypothesis files (:func:`is_hypothesis_file`; with ``dirs=None``,
    every :func:`is_module_file` whatever its folder's name), its sub-folders walked
    in name order as pytest does (hidden folders and ``__pycache__`` left out); a file is
    taken as given. ``file.py::NAME`` (a pytest node id) selects the items ``NAME`` or
    ``NAME[<dataset>]`` of that file (:meth:`Declaration.select`); ``None``: every item. A
    file reached twice is listed once, with every selector given (``None`` if any mention
    selected the whole file).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp()) / "hypotheses"
    >>> root.mkdir()
    >>> for name in ("X2.py", "X1.py", "_common.py", "notes.txt"):
    ...     _ = (root / name).write_text("")
    >>> [(p.name, sel) for p, sel in hypothesis_files([f"{root}/X1.py::X1[toy]", root])]
    [('X1.py', None), ('X2.py', None)]
    >>> [(p.name, sel) for p, sel in hypothesis_files([f"{root}/X1.py::X1[toy]", f"{root}/X1.py::X3"])]
    [('X1.py', ('X1[toy]', 'X3'))]
    """
    dirs = None if dirs is None else tuple(dirs)
    out: list[tuple[Path, tuple[str, ...] | None]] = []
    index: dict[Path, int] = {}

    def add(p: Path, selector: str | None) -> None:
        key = p.resolve()
        if key not in index:
            index[key] = len(out)
            out.append((p, None if selector is None else (selector,)))
            return
        i = index[key]
        before = out[i][1]
        out[i] = (out[i][0], None if before is None or selector is None else (*before, selector))

    for given in paths:
        p, selector = _split_node(given)
        if p.is_dir():
            for sub in _walk(p):
                if is_module_file(sub) if dirs is None else is_hypothesis_file(sub, dirs):
                    add(sub, None)
        else:
            add(p, selector)
    return out


def _walk(folder: Path) -> list[Path]:
    files, subdirs = [], []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.is_dir():
            if not entry.name.startswith(".") and entry.name != "__pycache__":
                subdirs.append(entry)
        else:
            files.append(entry)
    return files + [f for d in subdirs for f in _walk(d)]


def _package_root(path: Path) -> tuple[Path, str]:
    """The folder to put on ``sys.path`` and the dotted module name (pytest's prepend mode)."""
    package = None
    for parent in (path, *path.parents):
        if parent.is_dir():
            if not (parent / "__init__.py").is_file() or not parent.name.isidentifier():
                break
            package = parent
    if package is None:
        return path.parent, path.stem
    names = list(path.with_suffix("").relative_to(package.parent).parts)
    if names[-1] == "__init__":
        names.pop()
    return package.parent, ".".join(names)


def import_hypothesis_module(path: str | os.PathLike) -> ModuleType:
    """Import a hypothesis module as pytest's default import mode would.

    Raises
    ------
    ImportError
        A module of that name is already imported from another file.
    Exception
        Whatever importing the module raises (a SyntaxError, a SpecError of a declaration).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp()) / "claims_demo"
    >>> folder.mkdir()
    >>> _ = (folder / "demo_claim.py").write_text("X = 1\\n")
    >>> import_hypothesis_module(folder / "demo_claim.py").X
    1
    """
    path = Path(path).resolve()
    root, name = _package_root(path)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    module = importlib.import_module(name)
    found = getattr(module, "__file__", None)
    if found is None or Path(found).resolve() != path:
        raise ImportError(f"{path}: the module name {name!r} is already taken by {found}; "
                          f"expected a module name of its own (rename the file or its folder).")
    return module


def describe_error(e: BaseException) -> str:
    """One readable message for a module that failed to import or declared a bad spec.

    Examples
    --------
    >>> try:
    ...     compile("def broken(:\\n", "bad.py", "exec")
    ... except SyntaxError as e:
    ...     print(describe_error(e))
    SyntaxError: invalid syntax (bad.py, line 1)
        def broken(:
    >>> describe_error(ValueError("no"))
    'ValueError: no'
    """
    if isinstance(e, SyntaxError):
        line = (e.text or "").rstrip()
        return f"SyntaxError: {e.msg} ({e.filename}, line {e.lineno})" + (f"\n    {line}" if line else "")
    return f"{type(e).__name__}: {e}"


class Declarations:
    """The declarations of one session: each id once, in the order first collected.

    Parameters
    ----------
    datasets_dir : path, optional
        The dataset cards' folder: a spec naming a dataset without a card there is an
        error of that declaration. Not checked when ``None``.

    Examples
    --------
    >>> from lie_stats.spec import OutOfScope
    >>> seen = Declarations()
    >>> rec = OutOfScope(id="G1", claim="c", source="s", reason="r", module="m.py")
    >>> seen.declare(rec, "G1", "m.py", where="m.py::G1").where
    'm.py::G1'
    >>> seen.declare(rec, "AGAIN", "n.py", where="n.py::AGAIN") is None  # the same object, again
    True
    >>> other = OutOfScope(id="G1", claim="d", source="s", reason="r", module="n.py")
    >>> err = seen.declare(other, "G2", "n.py", where="n.py::G2")
    >>> err.name, err.text.split("; ")[0]
    ('G2[duplicate]', "SpecError: n.py: HypothesisSpec 'G1', field 'id': the id is already declared by m.py::G1")
    """

    def __init__(self, datasets_dir: str | os.PathLike | None = None) -> None:
        self.datasets_dir = None if datasets_dir is None else Path(datasets_dir)
        self._first: dict[str, tuple[Any, str]] = {}
        self._bad: list[Any] = []  # declarations that failed their checks, each reported once

    def declare(self, obj: Any, attr: str, path: str | os.PathLike, *, where: str
                ) -> Declaration | CollectionError | None:
        """Collect one module attribute.

        Returns
        -------
        Declaration, CollectionError or None
            ``None`` when ``obj`` is not a declaration (or the spec module was never
            imported, so nothing can be one), or is a declaration already collected.
        """
        # read from sys.modules, not imported: the plugin runs this on every attribute of
        # every test module, and a session that declares nothing must not load the spec
        # layer (its classes exist only once a module that declares has imported it)
        spec_mod = sys.modules.get(_SPEC_MODULE)
        if spec_mod is None or not isinstance(obj, (spec_mod.HypothesisSpec, spec_mod.OutOfScope)):
            return None
        path = Path(path)
        error = spec_mod.declaration.declaration_error(obj)
        if error is not None:  # built under deferred_declaration_errors: fails alone
            if any(o is obj for o in self._bad):
                return None
            self._bad.append(obj)
            return CollectionError(path, _declared_name(obj, attr), describe_error(error), declaration=True)
        first = self._first.get(obj.id)
        if first is not None:
            if first[0] is obj:
                return None
            return CollectionError(
                path, f"{attr}[duplicate]",
                f"SpecError: {obj.module}: HypothesisSpec {obj.id!r}, field 'id': the id is "
                f"already declared by {first[1]}; ids must be unique in a registry.")
        self._first[obj.id] = (obj, where)
        if isinstance(obj, spec_mod.HypothesisSpec) and self.datasets_dir is not None:
            try:
                spec_mod.check_datasets(obj, self.datasets_dir)
            except Exception as e:  # noqa: BLE001 - SpecError or a malformed card, for this spec only
                return CollectionError(path, f"{attr}[datasets]", describe_error(e))
        return Declaration(obj, attr, path, where, tuple(getattr(obj, "datasets", ())))

    def module(self, module: ModuleType, path: str | os.PathLike, *, prefix: str
               ) -> list[Declaration | CollectionError]:
        """Every declaration of ``module``, in definition order (``prefix::<attr>`` names it)."""
        out = []
        for attr, obj in list(vars(module).items()):
            if attr.startswith("__") and attr.endswith("__"):
                continue
            got = self.declare(obj, attr, path, where=f"{prefix}::{attr}")
            if got is not None:
                out.append(got)
        return out


def _declared_name(obj: Any, attr: str) -> str:
    """A bad declaration's name: its id where it reads as one, else its module attribute."""
    ident = vars(obj).get("id")
    return ident.strip() if isinstance(ident, str) and ident.strip() else attr


def _node_prefix(path: Path, base: Path) -> str:
    try:
        return path.resolve().relative_to(base).as_posix()
    except ValueError:
        return str(path)


def collect(paths: Sequence[str | os.PathLike], *, datasets_dir: str | os.PathLike | None = None,
            dirs: Iterable[str] | None = HYPOTHESIS_DIRS, base: str | os.PathLike | None = None
            ) -> Collection:
    """Import the hypothesis files under ``paths`` and collect their declarations.

    Parameters
    ----------
    paths : sequence of path
        Hypothesis modules, folders, or ``file.py::NAME`` node ids
        (:func:`hypothesis_files`).
    datasets_dir : path, optional
        The dataset cards' folder (:class:`Declarations`).
    dirs : iterable of str, or None
        Folder names whose files are hypothesis modules; ``None``: every ``.py`` file under
        the folders given (``lie-stats run`` and ``lie-stats export``).
    base : path, optional
        Folder the modules are named relative to in messages (default: the working folder).

    Returns
    -------
    Collection
        The declarations (selected by the node ids) and the errors, one per module that
        could not be imported and one per bad declaration; their paths are absolute.

    Examples
    --------
    >>> import tempfile, pathlib, textwrap
    >>> folder = pathlib.Path(tempfile.mkdtemp()) / "hypotheses"
    >>> folder.mkdir()
    >>> _ = (folder / "gating_demo.py").write_text(textwrap.dedent('''
    ...     from lie_stats.spec import OutOfScope
    ...     G = OutOfScope(id="G9", claim="c", source="s", reason="r")
    ... '''))
    >>> _ = (folder / "broken_demo.py").write_text("def broken(:\\n")
    >>> found = collect([folder])
    >>> [(d.attr, d.obj.id) for d in found.declarations], [e.name for e in found.errors]
    ([('G', 'G9')], ['<import>'])
    """
    from .spec.declaration import deferred_declaration_errors

    base_dir = Path(base or Path.cwd()).resolve()
    seen = Declarations(datasets_dir)
    found = Collection()
    for path, selector in hypothesis_files(paths, dirs):
        path = path.resolve()
        try:
            with deferred_declaration_errors():  # a bad declaration fails alone
                module = import_hypothesis_module(path)
        except Exception as e:  # noqa: BLE001 - reported as this module's error
            raise_if_stopped()  # an interrupt wrapped in an error of the module's import stops the run
            found.errors.append(CollectionError(path, "<import>", describe_error(e)))
            continue
        if selector is None:
            found.modules.append(path)
        if getattr(module, "REPORT_SECTIONS", None) is not None:
            found.sections[path] = module.REPORT_SECTIONS
        for got in seen.module(module, path, prefix=_node_prefix(path, base_dir)):
            if isinstance(got, CollectionError):
                if selector is None or not got.declaration or got.name in selector or any(
                        s.split("[")[0] == got.name for s in selector):
                    found.errors.append(got)
                continue
            got = got if selector is None else got.select(selector)
            if got is not None:
                found.declarations.append(got)
    return found


def dataset_users(paths: str | os.PathLike | Sequence[str | os.PathLike],
                  datasets_dir: str | os.PathLike | None = None) -> dict[str, list[str]]:
    """The ids of the hypotheses under ``paths`` that use each dataset (``lie-stats
    datasets``): ``{dataset: [id, ...]}``, ids in collection order. Modules that cannot be
    imported are left out (``lie-stats run`` reports them).

    Examples
    --------
    >>> import tempfile, pathlib, textwrap
    >>> folder = pathlib.Path(tempfile.mkdtemp()) / "claims_users_demo"
    >>> folder.mkdir()
    >>> _ = (folder / "users_demo.py").write_text(textwrap.dedent('''
    ...     from lie_stats.spec import HypothesisSpec, Prediction, Select
    ...     U1 = HypothesisSpec(id="U1", claim="c", source="s", datasets=("toy", "other"),
    ...         selection={"x": Select("head_contribution", step="first"),
    ...                    "y": Select("change_from_init")}, test="correlation",
    ...         prediction=Prediction("negative"), gate="report")
    ... '''))
    >>> dataset_users(folder)
    {'toy': ['U1'], 'other': ['U1']}
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = [p for p in paths if Path(p).exists()]
    found = collect(paths, datasets_dir=None, dirs=None)
    out: dict[str, list[str]] = {}
    for decl in found.declarations:
        for ds in decl.datasets:
            out.setdefault(ds, []).append(str(decl.obj.id))
    return out

"""Checkpoint sources: what a user types -> :class:`~lie_stats.extraction.checkpoint.Checkpoint` objects.

A *source* is what a user types (DESIGN.md, CLI): a Hugging Face checkpoint folder
(``config.json`` plus ``model.safetensors``, a sharded ``model.safetensors.index.json``, or
``pytorch_model.bin``), a folder of checkpoint folders (``step_N``, ``stepN``,
``checkpoint-N``), or ``hf:ORG/NAME`` with revisions (e.g. Pythia's ``step1000`` branches).
:func:`open_source` turns it into checkpoints, sorted by step, each named by
:func:`model_name_of` and :func:`parse_step`; :mod:`lie_stats.extraction.checkpoint` reads one
checkpoint's tensors lazily.
"""

from __future__ import annotations

import os
import pathlib
import re
from collections.abc import Sequence

from .._io import path_problem
from .checkpoint import Checkpoint
from .checkpoint_files import bad_link, left_out
from ..errors import CheckpointError, did_you_mean
from .hub import (
    CONFIG_FILE, HF_PREFIX, _Hub, _hub_unreachable, _network_errors, _offline, _unreachable_error,
)

__all__ = ["open_source", "parse_step", "model_name_of", "GENERIC_NAMES", "HF_PREFIX", "CONFIG_FILE"]

_STEP_RE = re.compile(r"^(?:step_?|checkpoint-|global_step)(\d+)$")


def parse_step(name: str) -> int | None:
    """The training step in a checkpoint folder or revision name, else None.

    Recognizes ``step_N``, ``stepN``, ``checkpoint-N`` and ``global_stepN``.

    Examples
    --------
    >>> [parse_step(n) for n in ("step_100", "step1000", "checkpoint-50", "main", "step_x")]
    [100, 1000, 50, None, None]
    """
    m = _STEP_RE.match(name)
    return int(m.group(1)) if m else None


#: Folder names that name no model: a model is named after the nearest folder above them
#: (``runs/pythia-ft/model`` is ``pythia-ft``), as it is above a step folder.
GENERIC_NAMES = frozenset({"model", "models", "checkpoint", "checkpoints", "final", "final_model",
                           "weights", "hf", "snapshots", "output", "outputs"})
_HUB_CACHE_RE = re.compile(r"^models--[^/]+--(?P<name>.+)$")
_COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")


def model_name_of(path: str | os.PathLike) -> tuple[str | None, int | None]:
    """The model name and step a path (or a hub id ``ORG/NAME``) gives.

    The name is the last part that is neither a step folder (``step_N``, ...; its step is
    returned), nor a generic folder name (:data:`GENERIC_NAMES`), nor a hub-cache commit
    folder; a hub-cache folder ``models--ORG--NAME`` gives ``NAME``. None when no part
    qualifies (then a caller asks for an explicit name).

    Examples
    --------
    >>> model_name_of("runs/pythia-ft/model"), model_name_of("EleutherAI/pythia-70m")
    (('pythia-ft', None), ('pythia-70m', None))
    >>> model_name_of("/x/run/step_1000"), model_name_of("model")
    (('run', 1000), (None, None))
    >>> model_name_of("/hf/models--EleutherAI--pythia-160m/snapshots/" + "a" * 40)
    ('pythia-160m', None)
    """
    parts = [p for p in re.split(r"[\\/]+", os.fspath(path)) if p not in ("", ".", "..")]
    step = None
    for part in reversed(parts):
        s = parse_step(part)
        if s is not None:
            step = s if step is None else step
            continue
        if part.lower() in GENERIC_NAMES or _COMMIT_RE.match(part):
            continue
        m = _HUB_CACHE_RE.match(part)
        return (m.group("name") if m else part), step
    return None, step


def _folder_model_name(folder: pathlib.Path, source: str) -> str:
    """The model name of a local checkpoint or run folder (resolved): :func:`model_name_of`,
    or an error asking for ``--name`` when every part of the path is generic."""
    name, _ = model_name_of(folder)
    if name is None:
        raise CheckpointError(
            f"{source}: the folder {str(folder)!r} gives no model name (its parts are generic, "
            f"e.g. 'model'); name the model with --name (name= in Python)."
        )
    return name


# ---------------------------------------------------------------------------- open_source
def _as_list(revisions: str | Sequence[str] | None) -> list[str] | str | None:
    if revisions is None:
        return None
    if isinstance(revisions, str):
        if revisions.strip() == "all":
            return "all"
        return [r.strip() for r in revisions.split(",") if r.strip()]
    return list(revisions)


def _sorted_by_step(names: list[str]) -> list[str]:
    return sorted(names, key=lambda n: (parse_step(n) is None, parse_step(n) or 0, n))


def _hub_revisions(repo_id: str, cache_dir: str | None) -> list[str]:
    """Branches named ``step*`` (with a parsable step), from the hub or, offline, the cache."""
    if _offline():
        from huggingface_hub import constants
        from huggingface_hub.file_download import repo_folder_name

        root = pathlib.Path(cache_dir or constants.HF_HUB_CACHE)
        refs = root / repo_folder_name(repo_id=repo_id, repo_type="model") / "refs"
        if not refs.is_dir():
            from .hub import _held_repos

            raise CheckpointError(
                f"{HF_PREFIX}{repo_id}: HF_HUB_OFFLINE is set and the cache {root} holds no "
                f"revisions of it ({refs} missing; {_held_repos(cache_dir)}); list revisions "
                f"explicitly or go online"
            )
        names = [p.relative_to(refs).as_posix() for p in refs.rglob("*") if p.is_file()]
    else:
        from huggingface_hub import list_repo_refs
        from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError

        try:
            names = [b.name for b in list_repo_refs(repo_id).branches]
        except RepositoryNotFoundError as e:
            raise CheckpointError(f"{HF_PREFIX}{repo_id}: no such repository on the hub") from e
        except (HfHubHTTPError, *_network_errors()) as e:
            raise CheckpointError(f"{HF_PREFIX}{repo_id}: cannot list revisions ({e})") from e
    steps = [n for n in names if n.startswith("step") and parse_step(n) is not None]
    if not steps:
        raise CheckpointError(
            f"{HF_PREFIX}{repo_id}: revisions='all' found no branches named stepN "
            f"(branches: {', '.join(sorted(names)) or 'none'})"
        )
    return _sorted_by_step(steps)


def _open_hub(source: str, revisions, cache_dir) -> list[Checkpoint]:
    repo_id = source[len(HF_PREFIX):].strip().strip("/")
    if repo_id.count("/") != 1 or not all(repo_id.split("/")):
        raise CheckpointError(f"{source!r}: expected hf:ORG/NAME")
    cache = None if cache_dir is None else str(cache_dir)
    if not _offline():  # fail fast, before the hub client's retries, when there is no network
        why = _hub_unreachable()
        if why is not None:
            raise _unreachable_error(repo_id, cache, why)
    revs = _as_list(revisions)
    if revs == "all":
        revs = _hub_revisions(repo_id, cache)
    elif not revs:
        revs = ["main"]
    out = []
    for rev in revs:
        hub = _Hub(repo_id, rev, cache)
        config = hub.fetch(CONFIG_FILE)
        out.append(Checkpoint(repo_id, parse_step(rev), rev, config.parent, source, _hub=hub))
    return _sorted(out)


def _sorted(ckpts: list[Checkpoint]) -> list[Checkpoint]:
    return sorted(ckpts, key=lambda c: (c.step is None, c.step or 0, c.revision or ""))


def _open_local(source: str, revisions) -> list[Checkpoint]:
    root = pathlib.Path(source).expanduser()
    problem = path_problem(root, "a folder")
    if problem is not None and not problem.startswith("a regular file"):
        raise CheckpointError(f"{source}: {problem} (a checkpoint folder with config.json and "
                              f"weights, or a run folder of step_N folders)")
    if not root.exists():
        hint = ""
        if source.count("/") == 1 and not source.startswith((".", "/", "~")):
            hint = f" Did you mean the hub repository 'hf:{source}'?"
        raise CheckpointError(f"{source}: no such folder.{hint}")
    if not root.is_dir():
        raise CheckpointError(f"{source}: expected a checkpoint folder (config.json + weights) or a run folder, got a file")
    entries = [p for p in root.iterdir() if parse_step(p.name) is not None]
    for p in entries:  # a step folder that is a broken link would silently drop out of the run
        if p.is_symlink() and not p.exists():
            raise CheckpointError(f"{p}: {bad_link(p, 'a checkpoint folder')}")
    subdirs = {p.name: p for p in entries if p.is_dir()}
    ignored = left_out(root, parse_step, entries)  # said in a notice and the provenance
    revs = _as_list(revisions)
    if subdirs:
        steps: dict[int, str] = {}
        for name in subdirs:
            step = parse_step(name)
            if step in steps:
                raise CheckpointError(
                    f"{source}: folders {steps[step]!r} and {name!r} both hold step {step}"
                )
            steps[step] = name
        chosen = _sorted_by_step(list(subdirs))
        if revs not in (None, "all"):
            for r in revs:
                if r not in subdirs:
                    raise CheckpointError(
                        f"{source}: no checkpoint folder {r!r}; found {', '.join(chosen)}."
                        f"{did_you_mean(r, subdirs)}"
                    )
            chosen = _sorted_by_step(list(dict.fromkeys(revs)))
        out = []
        run_name = _folder_model_name(root.resolve(), source)
        for name in chosen:
            folder = subdirs[name]
            problem = path_problem(folder / CONFIG_FILE)
            if problem is not None:
                raise CheckpointError(f"{folder / CONFIG_FILE}: {problem}; expected the JSON "
                                      f"configuration of the checkpoint")
            if not (folder / CONFIG_FILE).is_file():
                raise CheckpointError(
                    f"{folder / CONFIG_FILE}: missing; every checkpoint folder of a run needs "
                    f"config.json (an interrupted save?)"
                )
            out.append(Checkpoint(run_name, parse_step(name), name, folder, source, ignored=ignored))
        return out
    if (root / CONFIG_FILE).is_file():
        if revs not in (None, "all"):
            raise CheckpointError(
                f"{source}: a single checkpoint folder has no revisions to choose "
                f"(asked for {', '.join(revs)}); revisions apply to run folders and hf: sources"
            )
        resolved = root.resolve()
        step = parse_step(resolved.name)
        model = _folder_model_name(resolved, source)
        return [Checkpoint(model, step, resolved.name if step is not None else None, root, source)]
    if (root / CONFIG_FILE).is_symlink():
        raise CheckpointError(f"{root / CONFIG_FILE}: {bad_link(root / CONFIG_FILE)}")
    problem = path_problem(root / CONFIG_FILE)
    if problem is not None:
        raise CheckpointError(f"{root / CONFIG_FILE}: {problem}; expected the JSON configuration "
                              f"of the checkpoint")
    listed = f"; left out: {', '.join(ignored)}" if ignored else ""
    raise CheckpointError(
        f"{source}: neither a checkpoint folder ({CONFIG_FILE} missing) nor a run folder "
        f"(no subfolders named step_N, stepN or checkpoint-N){listed}"
    )


def open_source(source: str, *, revisions: str | Sequence[str] | None = None,
                cache_dir: str | os.PathLike | None = None) -> list[Checkpoint]:
    """Open what a user typed as a list of checkpoints, sorted by step (DESIGN.md, CLI).

    Parameters
    ----------
    source : str
        A checkpoint folder (``config.json`` + weights); a run folder of checkpoint folders
        named ``step_N``, ``stepN`` or ``checkpoint-N`` (a run folder wins over a
        ``config.json`` at its top); or ``hf:ORG/NAME``.
    revisions : str or sequence of str, optional
        Hub: revision names (a list, or a comma-separated string), or ``"all"`` for every
        branch named ``stepN`` (listed from the hub; from the cache with ``HF_HUB_OFFLINE=1``);
        default ``main``. Run folder: names of the checkpoint folders to keep (default all).
    cache_dir : path-like, optional
        Hugging Face cache (default: huggingface_hub's).

    Returns
    -------
    list of Checkpoint

    Raises
    ------
    CheckpointError
        Missing folder or file, malformed config, duplicate steps, unknown revision.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> run = pathlib.Path(tempfile.mkdtemp()) / "run"
    >>> for n in ("step_20", "step3", "checkpoint-100"):
    ...     (run / n).mkdir(parents=True); _ = (run / n / "config.json").write_text("{}")
    >>> [(c.model, c.step) for c in open_source(str(run))]
    [('run', 3), ('run', 20), ('run', 100)]
    """
    if not isinstance(source, str) or not source:
        raise CheckpointError(f"source must be a non-empty string, got {source!r}")
    if source.startswith(HF_PREFIX):
        return _open_hub(source, revisions, cache_dir)
    return _open_local(source, revisions)

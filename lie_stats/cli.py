"""The ``lie-stats`` command line (DESIGN.md, CLI): a thin shell over the library.

Verbs: ``extract``, ``info``, ``sinks``, ``run``, ``export``, ``diagnose``, ``datasets``,
``kinds``. Exit status (the table of README.md, "Exit status"): 0 success; 1 a failed
hypothesis (as pytest); 2 usage or input error; 3 some checkpoints failed to extract (the
others are in the cube); ``run`` passes pytest's other codes on (3 internal error, 4 usage,
5 nothing collected, 6 too many warnings); 130 interrupted. Without paths, the bundled ``hypotheses/`` and ``datasets/`` are
found from any folder (:func:`lie_stats.datasets.bundled`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ._version import __version__
from .datasets import CHECKOUT, bundled  # noqa: F401 - CHECKOUT: where the bundled folders are
from .errors import LieStatsError
from ._stop import Terminated, stop_on_signals

__all__ = ["main", "build_parser"]

EXIT_OK, EXIT_USAGE, EXIT_PARTIAL, EXIT_INTERRUPTED = 0, 2, 3, 130

_WHERE = "./{0} when the current folder has one, else {0}/ of the checkout lie_stats runs from"


def _csv(text: str) -> tuple[str, ...]:
    return tuple(t.strip() for t in text.split(",") if t.strip())


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="lie-stats",
        description="Per-head Lie-algebraic metrics of attention weights, and pre-registered "
        "hypotheses about them as tests that can fail.",
    )
    p.add_argument("--version", action="version", version=f"lie_stats {__version__}")
    sub = p.add_subparsers(dest="verb", required=True)

    e = sub.add_parser("extract", help="checkpoints -> metric cube (NetCDF)")
    e.add_argument("sources", nargs="+", metavar="SOURCE",
                   help="a checkpoint folder, a folder of step_N / stepN / checkpoint-N folders, "
                   "or hf:ORG/NAME")
    e.add_argument("-o", "--output", required=True, metavar="OUT.nc", help="cube to write")
    e.add_argument("--delta", action="store_true",
                   help="write the parameter-delta cube (METRICS.md §6.4) instead of the metrics: "
                   "each checkpoint's relative change per parameter category against the first "
                   "source. SOURCE... is BASE TUNED [TUNED...] checkpoint folders, or one run "
                   "folder (every checkpoint against its first). Takes -o, --name (one), "
                   "--force, --threads")
    e.add_argument("--revisions", default=None,
                   help="hub revisions, comma-separated, or 'all' (every step* branch). Default: main")
    e.add_argument("--families", type=_csv, default=("Q", "K", "V", "O", "QK", "OV"),
                   help="operator families (METRICS.md §2). Default: Q,K,V,O,QK,OV")
    e.add_argument("--projection", dest="projections", action="append", default=None,
                   help="none | adaptive | fixed:K; repeat for several. Default: none")
    e.add_argument("--null-draws", type=int, default=64, help="random-orientation null draws per layer. Default: 64")
    e.add_argument("--seed", type=int, default=0, help="seed of the null and projections. Default: 0")
    e.add_argument("--probe", action="append", default=None, metavar="FILE|MODEL=FILE",
                   help="probe token file (.npz): also compute the activation metrics (METRICS.md "
                   "§7-§8). One FILE for every source, or MODEL=FILE repeated, one per model (the "
                   "name a source gets in the cube), for models with different tokenizers")
    e.add_argument("--fold-ln", action="store_true", help="fold the pre-attention norm gain (METRICS.md §1)")
    e.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto", help="Default: auto")
    e.add_argument("--store-dtype", choices=("float64", "float32"), default="float64",
                   help="precision of the written cube's variables. Default: float64")
    e.add_argument("--resume", action="store_true",
                   help="continue the run that wrote OUT.nc (or its shard store): finished shards "
                   "are kept, shards made with other options or damaged are redone (a notice says "
                   "which); an existing cube is replaced only if this run extracts all it holds")
    e.add_argument("--name", dest="names", action="append", default=None, metavar="NAME",
                   help="the model name of a source in the cube, one --name per source in the "
                   "order of the sources. Default: the run or checkpoint folder's name (hub: ORG/NAME)")
    e.add_argument("--force", action="store_true",
                   help="replace an existing OUT.nc: an earlier cube (of any model) or a file that "
                   "is not a cube. Without it extract refuses to replace anything, unless --resume "
                   "continues the run that wrote the cube")
    e.add_argument("--keep-shards", action="store_true",
                   help="keep OUT.nc.shards/ after a successful run (so that a later --resume with "
                   "more checkpoints computes only the new ones). Default: removed once merged")
    ex = e.add_mutually_exclusive_group()
    ex.add_argument("--workers", type=int, default=1, metavar="N",
                    help="run checkpoints in N local worker processes (a Dask LocalCluster, one "
                    "thread each). Default: 1, in-process")
    ex.add_argument("--scheduler", default=None, metavar="ADDRESS",
                    help="run checkpoints on the Dask cluster at ADDRESS (tcp://host:8786); workers "
                    "must read the sources at the same paths; shards are written here")
    e.add_argument("--threads", type=int, default=None, metavar="N",
                   help="torch intra-op threads of the extraction (recorded in the cube's provenance). "
                   "Default: OMP_NUM_THREADS when set, else 1 (faster than more threads on a "
                   "loaded machine and nearly as fast on an idle one: benchmarks/threads_results.md)")
    e.add_argument("--quiet", action="store_true", help="no progress output")

    i = sub.add_parser("info", help="what a cube holds, its provenance, its validity")
    i.add_argument("file", metavar="FILE.nc")

    r = sub.add_parser("run", help="evaluate hypothesis modules and write reports/")
    r.add_argument("paths", nargs="*", default=None, metavar="PATH",
                   help="hypothesis modules or folders of them. Default: " + _WHERE.format("hypotheses"))
    r.add_argument("--datasets", default=None, metavar="DIR", help="Default: " + _WHERE.format("datasets"))
    r.add_argument("--reports", default="reports", metavar="DIR", help="Default: reports")
    r.add_argument("--update-verdicts", action="store_true", help="re-pin the verdicts of pinned gates")
    r.add_argument("--pin-reason", default="", metavar="TEXT",
                   help="with --update-verdicts: why, recorded with each pin whose verdict or declaration "
                        "changes (shown in the report's 'changed' table)")
    r.add_argument("--export", default=None, metavar="DIR",
                   help="also write each result's data and verdict as NetCDF to DIR (as lie-stats export)")

    x = sub.add_parser("export", help="each hypothesis's selected data and result as NetCDF, for "
                       "collaborators")
    x.add_argument("paths", nargs="*", default=None, metavar="PATH",
                   help="hypothesis modules or folders of them. Default: " + _WHERE.format("hypotheses"))
    x.add_argument("--datasets", default=None, metavar="DIR", help="Default: " + _WHERE.format("datasets"))
    x.add_argument("-o", "--output", required=True, metavar="DIR",
                   help="folder of <id>__<dataset>.nc files and index.json (created if absent)")

    d = sub.add_parser("datasets", help="each dataset card with its state, what its cube holds "
                       "and the hypotheses that use it")
    d.add_argument("--datasets", default=None, metavar="DIR", help="Default: " + _WHERE.format("datasets"))
    d.add_argument("--hypotheses", default=None, metavar="DIR",
                   help="folder of the hypothesis modules whose use of each dataset is listed "
                   "('' for none). Default: " + _WHERE.format("hypotheses"))

    g = sub.add_parser("diagnose", help="each hypothesis's false-positive rate, power, coverage and "
                       "type-S rate on data simulated from its own cube (cached beside the modules)")
    g.add_argument("paths", nargs="*", metavar="PATH",
                   help="hypothesis modules or folders. Default: " + _WHERE.format("hypotheses"))
    g.add_argument("--datasets", default=None, metavar="DIR", help="Default: " + _WHERE.format("datasets"))
    g.add_argument("--only", type=_csv, default=None, metavar="NAME[,NAME]",
                   help="diagnose only on these datasets. Default: each spec's own")
    g.add_argument("--n-sims", type=int, default=None, help="simulations per result (each under the "
                   "null and with the effect planted); with --redesign, per size. Default: 200, "
                   "with --redesign 100")
    g.add_argument("--seed", type=int, default=0, help="Default: 0")
    g.add_argument("--jobs", type=int, default=1, help="results diagnosed at once, each in its own "
                   "process (the figures do not depend on it). Default: 1")
    g.add_argument("--redesign", default=None, metavar="AXIS=V1,V2,...",
                   help="power and FPR at other sizes of each result's design, by resampling its "
                   "own runs, heads or checkpoints (runs=2,4,8,16; heads=...; steps=...) or with "
                   "other planted effects at its size (effect=0.1,0.3); a result without a "
                   "declared effect gets its minimum detectable effect at power 0.8 per size. "
                   "Not cached")
    g.add_argument("--plot", default=None, metavar="FILE.png",
                   help="with --redesign: where the power curves go. Default: "
                   "redesign-AXIS.png beside the first module's diagnosis cache")

    s = sub.add_parser("sinks", help="per-layer attention sinks of one checkpoint on a probe cut from a "
                       "text (METRICS.md §7-§8), as a Markdown table")
    s.add_argument("folder", metavar="FOLDER",
                   help="a checkpoint folder: config.json, the weights and tokenizer.json")
    s.add_argument("--text", required=True, metavar="FILE",
                   help="UTF-8 text the probe is cut from; lines starting with '===' are dropped")
    s.add_argument("--first-token", default="bos", choices=("cls", "bos", "first_word"),
                   help="position 0 of each sequence: [CLS] (encoders), <bos> (config.json's "
                   "bos_token_id, else looked up by name) or the first word. Default: bos")
    s.add_argument("--n-seq", type=int, default=64, help="probe sequences. Default: 64")
    s.add_argument("--seq-len", type=int, default=128, help="tokens per sequence. Default: 128")
    s.add_argument("--seed", type=int, default=0, help="chooses the text windows. Default: 0")
    s.add_argument("--batch-size", type=int, default=8, help="sequences per forward pass. Default: 8")
    s.add_argument("--save-probe", default=None, metavar="FILE.npz",
                   help="also write the probe (refused when FILE.npz holds anything else)")

    k = sub.add_parser("kinds", help="the registry of test kinds: roles, parameters, directions, "
                       "decision rule")
    k.add_argument("names", nargs="*", metavar="KIND", help="only these kinds. Default: all")
    return p


def _probe_arg(values: list[str] | None) -> str | dict[str, str] | None:
    """``--probe`` values -> one file, or ``{model: file}`` from ``MODEL=FILE`` (repeatable).

    A value is ``MODEL=FILE`` when it holds ``=`` and is not itself an existing file.
    """
    import os

    if not values:
        return None
    single = [v for v in values if "=" not in v or os.path.isfile(v)]
    if single:
        if len(values) > 1:
            raise LieStatsError(
                f"--probe {' '.join(values)}: give one --probe FILE for every source, or "
                f"--probe MODEL=FILE for each model, not several files or a mix of both."
            )
        return single[0]
    mapping: dict[str, str] = {}
    for v in values:
        model, _, path = v.partition("=")
        if not model or not path:
            raise LieStatsError(f"--probe {v}: expected MODEL=FILE (or one FILE for every source).")
        if model in mapping:
            raise LieStatsError(f"--probe: model {model!r} is given two probes ({mapping[model]}, {path}).")
        mapping[model] = path
    return mapping


#: extract's options that a parameter-delta cube (--delta) does not take: flag -> destination
#: (compared with the parser's own defaults, so a default changed there is followed here).
_NOT_FOR_DELTA = {"--revisions": "revisions", "--families": "families", "--projection": "projections",
                  "--null-draws": "null_draws", "--seed": "seed", "--probe": "probe", "--fold-ln": "fold_ln",
                  "--device": "device", "--store-dtype": "store_dtype", "--resume": "resume",
                  "--keep-shards": "keep_shards", "--workers": "workers", "--scheduler": "scheduler"}


def _cmd_extract_delta(args: argparse.Namespace) -> int:
    """``extract --delta``: the cube of :func:`lie_stats.extraction.delta.delta_cube`, written like any cube."""
    from .cube import provenance_of, write_cube
    from .extraction.delta import delta_cube
    from .extraction.store import check_output, check_replace

    defaults = vars(build_parser().parse_args(["extract", "SOURCE", "-o", "OUT.nc"]))
    given = [flag for flag, dest in _NOT_FOR_DELTA.items() if getattr(args, dest) != defaults[dest]]
    if given:
        raise LieStatsError(f"{' '.join(given)}: not options of extract --delta, which writes the "
                            f"parameter-delta cube (METRICS.md §6.4) from the weights alone; it "
                            f"takes -o, --name, --force and --threads.")
    if args.names is not None and len(args.names) != 1:
        raise LieStatsError(f"--name given {len(args.names)} times: extract --delta writes one model "
                            f"(the base and its tuned checkpoints); give one --name or none.")
    out = check_output(args.output, force=args.force)  # the folder, the name, a file not a cube
    check_replace(out, [], {}, resume=False, force=args.force, resumable=False)  # extract's refusal
    run = args.sources[0] if len(args.sources) == 1 else list(args.sources)
    cube = delta_cube(run, model=args.names[0] if args.names else None)
    write_cube(cube, out)
    from ._text import terminal_line

    records = provenance_of(cube)
    print(terminal_line(f"wrote {out}: parameter deltas of model {cube['model'].values[0]} at "
                        f"{len(records)} checkpoints (steps {', '.join(str(r['step']) for r in records)}), "
                        f"each against {records[0]['base']['path']}"))
    return EXIT_OK


def _cmd_extract(args: argparse.Namespace) -> int:
    from .cube import provenance_of
    from .extraction.pipeline import ExtractOptions, extract, set_threads

    set_threads(args.threads)
    if args.delta:
        return _cmd_extract_delta(args)
    revisions = args.revisions
    if revisions and revisions != "all":
        revisions = list(_csv(revisions))
    options = ExtractOptions(
        families=tuple(args.families),
        projections=tuple(args.projections or ("none",)),
        null_draws=args.null_draws, seed=args.seed, fold_ln=args.fold_ln, device=args.device,
        probe=_probe_arg(args.probe),
    )
    cube, failed = extract(args.sources, args.output, options=options, revisions=revisions,
                           resume=args.resume, progress=not args.quiet,
                           store_dtype=args.store_dtype, workers=args.workers,
                           scheduler=args.scheduler, names=args.names, force=args.force,
                           keep_shards=args.keep_shards)
    n = len(provenance_of(cube))
    print(f"wrote {args.output}: {n} checkpoints, {cube.sizes['model']} model(s)")
    if failed:
        from ._text import terminal_line
        from .extraction.pipeline import shard_dir

        for f in failed:
            print(terminal_line(f"FAILED {f['source']}: {f['error']}"), file=sys.stderr)
            if f.get("first_of_run"):
                print(terminal_line(
                    f"NOTE: {f['source']} is the first checkpoint of model {f['model']!r}, from which "
                    f"change_from_init (METRICS.md §5.5) is measured: that variable is NaN for the "
                    f"model's other checkpoints; every other metric of them is in the cube."),
                    file=sys.stderr)
        print(f"the shard store {shard_dir(Path(args.output))} is kept: repair the failed "
              f"checkpoint(s) and rerun the same command with --resume to extract only them "
              f"(a repaired first checkpoint redoes its whole run).", file=sys.stderr)
        return EXIT_PARTIAL
    return EXIT_OK


def _cmd_info(args: argparse.Namespace) -> int:
    from .cube import describe_cube, open_cube

    print(describe_cube(open_cube(args.file), where=args.file))
    return EXIT_OK


def _check_datasets_dir(path: str) -> None:
    import os

    if not os.path.isdir(path):
        what = "is a file, not a folder" if os.path.exists(path) else "does not exist"
        raise LieStatsError(f"--datasets {path}: the datasets folder {what}; expected the folder of "
                            f"dataset cards (datasets/<name>/dataset.toml), e.g. the repository's "
                            f"datasets/.")


def _cmd_run(args: argparse.Namespace) -> int:
    from .pytest_plugin import run
    from .report import check_reports_dir

    from .engine import check_paths

    _check_datasets_dir(args.datasets)
    check_paths(args.paths)  # a missing module or folder: exit 2 with a suggestion, not pytest's 4
    check_reports_dir(args.reports)  # before any evaluation: exit 2, not a traceback at the end
    return _run(args, run)


def _run(args: argparse.Namespace, run: object) -> int:
    if args.export is not None:
        from .export import export_hypotheses
        from .report import verdict_table

        done = export_hypotheses(args.paths, args.export, datasets_dir=args.datasets,
                                 reports_dir=args.reports, update_verdicts=args.update_verdicts,
                                 strict=False)
        from ._text import terminal_line

        print(verdict_table(done.results))
        for failure in done.failures:
            print(f"FAILED {terminal_line(failure)}")
        print(f"exported {sum(1 for e in done.entries if e['file'])} file(s) to {terminal_line(args.export)}")
        return done.status
    # no .pytest_cache in the current folder: lie-stats run writes only the reports, the
    # pins (--update-verdicts) and the lock beside the reports folder
    extra = [f"--lie-pin-reason={args.pin_reason}"] if args.pin_reason else []
    return int(run(args.paths, datasets_dir=args.datasets, reports_dir=args.reports,
                   update_verdicts=args.update_verdicts, pytest_args=["-p", "no:cacheprovider", *extra]))


def _cmd_export(args: argparse.Namespace) -> int:
    from .export import INDEX_FILE, export_hypotheses
    from ._text import terminal_line

    _check_datasets_dir(args.datasets)
    done = export_hypotheses(args.paths, args.output, datasets_dir=args.datasets)
    files = [e for e in done.entries if e["file"]]
    print(f"exported {len(files)} file(s) ({sum(e['bytes'] for e in files)} bytes) to {args.output}; "
          f"{len(done.entries) - len(files)} skipped result(s) listed in {INDEX_FILE}")
    for error in done.errors:  # a result that could not be evaluated (a selection error, ...)
        print(f"ERROR {terminal_line(error)}", file=sys.stderr)
    return EXIT_OK if not done.errors else 1


def _cmd_datasets(args: argparse.Namespace) -> int:
    from .collect import dataset_users
    from .datasets import describe_contents, list_datasets
    from ._text import terminal_line as t

    _check_datasets_dir(args.datasets)
    cards = list_datasets(args.datasets)
    users = dataset_users(args.hypotheses, args.datasets) if args.hypotheses else {}
    pad = " " * 25
    for card in cards:
        print(f"{t(card.name):24s} {card.state:12s} {t(card.title)}")
        if card.state != "present":
            print(f"{pad}build: {t(card.build)}")
        else:
            for line in describe_contents(card):
                print(f"{pad}{t(line)}")
        if args.hypotheses:
            ids = users.get(card.name, [])
            print(f"{pad}used by: {t(', '.join(ids)) if ids else 'no hypothesis under ' + t(args.hypotheses)}")
    if not cards:
        print(f"no dataset cards under {t(args.datasets)}/")
    return EXIT_OK


def _cmd_sinks(args: argparse.Namespace) -> int:
    from ._text import terminal_line
    from .extraction.activations import activation_metrics, sink_report
    from .extraction.probe import ProbeError, folder_tokenizer, load_probe, save_probe, text_probe

    loaded = folder_tokenizer(args.folder)  # read once: the probe is cut with it, the report names from it
    probe = text_probe(args.folder, args.text, first_token=args.first_token, n_seq=args.n_seq,
                       seq_len=args.seq_len, seed=args.seed, loaded=loaded)
    if args.save_probe is not None:  # before the forward passes, and never over another file
        target = Path(args.save_probe)
        if target.exists() or target.is_symlink():
            try:
                same = load_probe(target) == probe
            except ProbeError:
                same = False
            if not same:
                raise LieStatsError(f"--save-probe {target}: the file exists and is not this probe; "
                                    f"sinks does not overwrite it. Expected a new file name.")
        else:
            save_probe(probe, target)
    out = activation_metrics(args.folder, probe, batch_size=args.batch_size, grad=False)
    # the model type and the token at position 0 are read from the folder's files
    for line in sink_report(args.folder, probe, out, loaded=loaded):
        print(terminal_line(line))
    return EXIT_OK


def _cmd_kinds(args: argparse.Namespace) -> int:
    from .spec import test_kinds
    from .spec.registry import describe_kind, get_kind

    from ._text import terminal_lines

    kinds = [get_kind(n) for n in args.names] if args.names else list(test_kinds().values())
    # a kind registered by a hypothesis module describes itself: shown as data, line by line
    print("\n\n".join(terminal_lines(describe_kind(k)) for k in kinds))
    return EXIT_OK


def _cmd_diagnose(args: argparse.Namespace) -> int:
    from .collect import collect
    from .diagnosis import Settings, diagnose_declarations, diagnosis_by_kind, diagnosis_table
    from .engine import check_paths

    _check_datasets_dir(args.datasets)
    check_paths(args.paths)  # a missing module or folder: exit 2 with a suggestion
    if args.redesign is not None:
        return _cmd_redesign(args)
    if args.plot is not None:
        raise LieStatsError("--plot is the figure of --redesign; give --redesign AXIS=V1,V2,... too.")
    settings = Settings(n_sims=args.n_sims or 200, seed=args.seed)
    from ._text import terminal_lines

    found = collect(args.paths, datasets_dir=args.datasets, dirs=None)
    for error in found.errors:  # messages quote names and values read from the modules
        print(f"ERROR {terminal_lines(error)}", file=sys.stderr)
    decls = [d for d in found.declarations if not d.out_of_scope]
    total = settings.per_result * sum(len([ds for ds in d.datasets if args.only is None or ds in args.only])
                                  for d in decls)
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is optional
        tqdm = None
    bar = tqdm(total=total, unit="sim", file=sys.stderr) if tqdm is not None else None
    try:
        done = diagnose_declarations(decls, datasets_dir=args.datasets, settings=settings,
                                     datasets=args.only, progress=bar, jobs=args.jobs)
    finally:
        if bar is not None:
            bar.close()
    print(diagnosis_table(done))
    print()
    print(diagnosis_by_kind(done))
    print(f"{len(done)} result(s): {sum(not d.cached for d in done)} diagnosed, "
          f"{sum(d.cached for d in done)} from the cache; {settings.n_sims} simulations each "
          f"and {settings.robust_sims} under each alternative null, "
          f"n_perm {settings.n_perm}, n_boot {settings.n_boot}, seed {settings.seed}")
    return EXIT_OK if not found.errors else 1


def _cmd_redesign(args: argparse.Namespace) -> int:
    from ._text import terminal_line, terminal_lines
    from .collect import collect
    from .diagnosis import DIAGNOSIS_FILE, Settings
    from .datasets import CubeCache
    from .diagnosis.redesign import parse_redesign, plot_redesign, redesign_spec, redesign_table

    axis, sizes = parse_redesign(args.redesign)
    settings = Settings(n_sims=args.n_sims or 100, seed=args.seed)
    found = collect(args.paths, datasets_dir=args.datasets, dirs=None)
    for error in found.errors:
        print(f"ERROR {terminal_lines(error)}", file=sys.stderr)
    work = [(d, ds) for d in found.declarations if not d.out_of_scope
            for ds in d.datasets if args.only is None or ds in args.only]
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is optional
        tqdm = None
    bar = tqdm(total=settings.n_sims * len(sizes) * len(work), unit="sim",
               file=sys.stderr) if tqdm is not None else None

    def tick(n: int) -> None:  # a minimum detectable effect takes several runs per size
        if bar is not None:
            if bar.n + n > bar.total:
                bar.total = bar.n + n
            bar.update(n)

    cubes = CubeCache()  # each dataset's cube opened once for all its specs
    try:
        done = [redesign_spec(d.obj, ds, axis, sizes, args.datasets, settings, progress=tick, cubes=cubes)
                for d, ds in work]
    finally:
        if bar is not None:
            bar.close()
    print(redesign_table(done))
    plot = (args.plot or (Path(work[0][0].path).parent / DIAGNOSIS_FILE).with_name(
        f"redesign-{axis}.png")) if work else None
    written = plot_redesign(done, plot) if plot is not None else None
    print(f"{len(done)} result(s); {settings.n_sims} simulations per size, n_perm {settings.n_perm}, "
          f"n_boot {settings.n_boot}, seed {settings.seed}; resampled with replacement from the "
          f"observed {axis} (beyond their count, repeats: power is that of new units like these)")
    if written is not None:
        print(f"power curves: {terminal_line(written)}")
    return EXIT_OK if not found.errors else 1


def _interrupted(args: argparse.Namespace, sigterm: bool) -> str:
    """The one line said when a verb is stopped by SIGINT/SIGTERM: what is kept, what to do."""
    what = "interrupted (SIGTERM)" if sigterm else "interrupted"
    if args.verb == "run":
        what = "terminated (SIGTERM)" if sigterm else "interrupted"
        return (f"lie-stats run: {what}; no report was written, the earlier report in "
                f"{args.reports} and the pinned verdicts are kept (rerun to write a new one).")
    if args.verb == "extract" and args.delta:
        return (f"lie-stats extract --delta: {what}; nothing was written (the cube is written "
                f"at the end, atomically): rerun the same command.")
    if args.verb == "extract":
        return (f"lie-stats: {what}; finished checkpoints are kept in the shard store "
                f"(rerun with --resume).")
    if args.verb == "diagnose" and getattr(args, "redesign", None):
        return f"lie-stats diagnose --redesign: {what}; a redesign is not cached (rerun it)."
    if args.verb == "diagnose":
        return (f"lie-stats diagnose: {what}; the results diagnosed so far are cached beside their "
                f"modules (rerun to diagnose the rest).")
    if args.verb == "export":
        return f"lie-stats export: {what}; rerun to export every result to {args.output}."
    return f"lie-stats {args.verb}: {what}."


_COMMANDS = {"extract": _cmd_extract, "info": _cmd_info, "run": _cmd_run, "export": _cmd_export,
             "datasets": _cmd_datasets, "kinds": _cmd_kinds, "diagnose": _cmd_diagnose,
             "sinks": _cmd_sinks}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``lie-stats``; returns the exit status."""
    args = build_parser().parse_args(argv)
    if getattr(args, "datasets", "") is None:
        args.datasets = bundled("datasets")
    if getattr(args, "hypotheses", "") is None:
        args.hypotheses = bundled("hypotheses")
    if args.verb in ("run", "export", "diagnose") and not args.paths:
        args.paths = [bundled("hypotheses")]
    try:
        # SIGINT and SIGTERM stop every verb as Ctrl-C does, and end the process (its worker
        # processes included) within _stop.STOP_BOUND_S whatever it is doing
        with stop_on_signals():
            return _COMMANDS[args.verb](args)
    except KeyboardInterrupt as e:
        from ._text import terminal_line  # the message names the user's paths

        print(terminal_line(_interrupted(args, isinstance(e, Terminated))), file=sys.stderr)
        return EXIT_INTERRUPTED
    except (LieStatsError, ValueError) as e:
        from ._text import terminal_line  # messages quote names read from files and folders

        print(f"lie-stats {args.verb}: error: {terminal_line(e)}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # `lie-stats info x.nc | head`: the reader left, nothing is wrong
        sys.stderr.close()
        return EXIT_OK


if __name__ == "__main__":  # python -m lie_stats.cli, as python -m lie_stats
    sys.exit(main())

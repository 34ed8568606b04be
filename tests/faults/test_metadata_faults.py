"""Metadata of any depth and any type, as real files: a named error, never a traceback.

JSON read by lie_stats (a checkpoint's ``config.json`` and index, a safetensors header, the
registry of pinned verdicts, an export's ``index.json``) is bounded in
size and nesting before any parser sees it (``lie_stats._io.read_json``): Python's parser
recurses once per level, so a file nested thousands of levels deep used to end in a
RecursionError, and with it the whole extraction. Every field of a config, of a cube's global
attributes and of the verdicts registry is type-checked: the error
names the file, the field and the type expected.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import struct

import netCDF4
import numpy as np
import pytest

from lie_stats import cli, schema
from lie_stats._io import JSON_MAX_DEPTH
from lie_stats.cube import checkpoint_shard, open_cube, write_cube
from lie_stats.errors import CheckpointError, CubeError, LieStatsError, SpecError
from lie_stats.export import export_results
from lie_stats.gates import read_registry
from lie_stats.extraction.sources import open_source

from .._checkpoints import make_checkpoint, make_run, reshard

FAST = ["--families", "Q", "--null-draws", "64", "--quiet"]
DEEP = 5000  # far past Python's recursion limit (1000)


def _deep(n: int = DEEP) -> str:
    return "[" * n + "]" * n


# ---------------------------------------------------------------------------- nesting
def test_a_deep_config_fails_its_checkpoint_and_the_good_ones_are_written(tmp_path, capsys):
    run = tmp_path / "run"
    make_run(run, "gpt2", [0, 10, 20], head=False, n_layers=1)
    cfg = (run / "step_10" / "config.json").read_text()
    (run / "step_10" / "config.json").write_text(cfg.rstrip()[:-1] + f', "deep": {_deep()}}}')
    out = tmp_path / "c.nc"
    code = cli.main(["extract", str(run), "-o", str(out), *FAST])
    err = capsys.readouterr().err
    assert code == cli.EXIT_PARTIAL, err
    assert "Traceback" not in err and "RecursionError" not in err
    ds = open_cube(out)
    assert ds[schema.STEP].values.tolist() == [0, 20]
    (failed,) = json.loads(ds.attrs[schema.ATTR_FAILED])
    assert failed["step"] == 10 and failed["error"].startswith("CheckpointError: ")
    assert f"{run / 'step_10' / 'config.json'}: JSON nested {DEEP + 1} levels deep" in failed["error"]
    assert f"expected at most {JSON_MAX_DEPTH} levels" in failed["error"]


def test_a_deep_config_alone_is_exit_2_naming_it(tmp_path, capsys):
    folder = make_checkpoint("gpt2", tmp_path / "m", head=False, n_layers=1)
    (folder / "config.json").write_text(_deep())
    out = tmp_path / "c.nc"
    assert cli.main(["extract", str(folder), "-o", str(out), *FAST]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert f"{folder / 'config.json'}: JSON nested {DEEP} levels deep" in err, err
    assert not out.exists()


def test_a_deep_weight_index_is_named(tmp_path):
    folder = make_checkpoint("gpt2", tmp_path / "m", head=False, n_layers=1)
    reshard(folder, lambda name: "a.safetensors" if name.startswith("h.0.") else "b.safetensors")
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    text = json.dumps(index)[:-1] + f', "metadata": {{"x": {_deep()}}}}}'
    (folder / "model.safetensors.index.json").write_text(text)
    (ck,) = open_source(str(folder))
    with pytest.raises(CheckpointError) as e:
        ck.tensor_names()
    assert str(e.value).startswith(f"{folder / 'model.safetensors.index.json'}: JSON nested"), e.value


def test_a_deep_safetensors_header_is_named_before_it_is_parsed(tmp_path):
    folder = make_checkpoint("gpt2", tmp_path / "m", head=False, n_layers=1)
    path = folder / "model.safetensors"
    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = data[8:8 + n].rstrip(b" ")
    header = header[:-1] + b', "__deep__": ' + _deep(200).encode() + b"}"
    header += b" " * (-len(header) % 8)
    path.write_bytes(struct.pack("<Q", len(header)) + header + data[8 + n:])
    (ck,) = open_source(str(folder))
    with pytest.raises(CheckpointError) as e:
        ck.adapter()
    assert str(e.value).startswith(f"{path}: JSON nested 201 levels deep"), e.value
    assert "safetensors header" in str(e.value)


def test_deep_verdicts_and_export_index_are_named(tmp_path):
    verdicts = tmp_path / "verdicts.json"
    verdicts.write_text(_deep())
    with pytest.raises(SpecError, match=f"{verdicts}: the registry of pinned verdicts is not JSON "
                                        f"\\(JSON nested {DEEP} levels deep"):
        read_registry(verdicts)
    out = tmp_path / "export"
    out.mkdir()
    (out / "index.json").write_text(_deep())
    with pytest.raises(LieStatsError, match="index.json was not written by lie-stats export \\(.*JSON nested"):
        export_results([], out)
    assert sorted(p.name for p in out.iterdir()) == ["index.json"]


# ---------------------------------------------------------------------------- config types
#: Values no config field of these types may hold; each must give a LieStatsError or work.
WRONG = [None, "x", -1, 0, 1.5, True, [1], {"a": 1}, 10**30, float("nan")]


def _fields(cfg: dict) -> list[tuple[tuple, object]]:
    """(path, value) of every field, nested ones included."""
    out = []
    for key, value in cfg.items():
        out.append(((key,), value))
        if isinstance(value, dict):
            out += [((key, k), v) for k, v in value.items()]
        elif isinstance(value, list):
            out += [((key, i), v) for i, v in enumerate(value)]
    return out


@pytest.mark.parametrize("arch", ["gpt2", "gemma3_text", "bert"])
def test_every_config_field_of_a_wrong_type_is_a_named_error(tmp_path, arch):
    src = make_checkpoint(arch, tmp_path / "src", n_layers=1)
    cfg = json.loads((src / "config.json").read_text())
    work = shutil.copytree(src, tmp_path / "work")
    crashes = []
    for path, _ in _fields(cfg):
        for value in WRONG:
            edited = json.loads(json.dumps(cfg))
            target = edited
            for part in path[:-1]:
                target = target[part]
            target[path[-1]] = value
            (work / "config.json").write_text(json.dumps(edited))
            try:
                (ck,) = open_source(str(work))
                ck.adapter()
                for _ in ck.iter_layers(fold_ln=True):
                    pass
                ck.provenance()
            except LieStatsError as e:
                assert str(work) in str(e), e  # names the file (or its folder)
            except Exception as e:  # noqa: BLE001 - the point: anything else is a crash
                crashes.append(f"{'.'.join(map(str, path))}={value!r}: {type(e).__name__}: {e}")
    assert not crashes, "\n".join(crashes[:20])


# ---------------------------------------------------------------------------- cube attributes
@pytest.fixture(scope="module")
def cube_file(tmp_path_factory) -> pathlib.Path:
    shape = dict(n_layers=1, n_heads=2, n_kv_heads=2, d_head=4, d_model=8, architecture="gpt_neox",
                 rotary_fraction=0.25, attention_extras="rotary", init_step=0)
    ds = checkpoint_shard({"ov_norm": np.ones((1, 2))}, model="m", step=0, shape=shape,
                          families=["Q"], projections=["none"], provenance={"model": "m", "step": 0})
    ds.attrs["store_dtype"] = "float64"
    return write_cube(ds, tmp_path_factory.mktemp("attrs") / "good.nc")


ATTR_VALUES = {"array": np.array([1, 2]), "integer": np.int64(3), "number": 1.5,
               "strings": ["a", "b"], "text": "x", "json_object": '{"a": 1}', "json_ints": "[1, 2]",
               "deep_json": _deep()}
#: (attribute, kind) pairs that are valid (an integer metrics_version; any text where text is)
VALID = {("metrics_version", "integer")} | {(a, "text") for a in ("Conventions", "lie_stats_version", "created")} \
    | {(a, k) for a in ("Conventions", "lie_stats_version", "created")
       for k in ("json_object", "json_ints", "deep_json")}


@pytest.mark.parametrize("attr", ["Conventions", "metrics_version", "lie_stats_version", "created",
                                  "provenance", "failed_checkpoints", "store_dtype"])
def test_every_global_attribute_of_a_wrong_type_is_a_named_error(cube_file, tmp_path, capsys, attr):
    for kind, value in ATTR_VALUES.items():
        path = shutil.copy(cube_file, tmp_path / f"{attr}_{kind}.nc")
        with netCDF4.Dataset(path, "a") as nc:
            nc.delncattr(attr)
            nc.setncattr(attr, value)
        if (attr, kind) in VALID:
            if attr == "metrics_version":
                with pytest.raises(CubeError, match="newer than this lie_stats knows"):
                    open_cube(path)
            else:
                open_cube(path)
            continue
        code = cli.main(["info", str(path)])
        err = capsys.readouterr().err
        assert code == cli.EXIT_USAGE, (kind, err)
        assert err.startswith(f"lie-stats info: error: {path}"), (kind, err)
        assert repr(attr) in err and "expected" in err and "Traceback" not in err, (kind, err)


# ---------------------------------------------------------------------------- registries
def _entry_fields(entry: dict) -> list[tuple]:
    return [(k,) for k in entry] + [(k, j) for k, v in entry.items() if isinstance(v, dict) for j in v]


def test_every_field_of_the_verdicts_registry_is_type_checked(tmp_path):
    entry = {"verdict": "refuted", "spec_hash": "ab", "gate": "pinned",
             "previous": {"verdict": "supported", "spec_hash": "aa"}}
    path = tmp_path / "verdicts.json"
    for field in _entry_fields(entry):
        for wrong in ([1], {"a": 1}, 3):
            edited = json.loads(json.dumps(entry))
            target = edited
            for part in field[:-1]:
                target = target[part]
            target[field[-1]] = wrong
            path.write_text(json.dumps({"X1::toy": edited}))
            with pytest.raises(SpecError) as e:
                read_registry(path)
            assert str(e.value).startswith(f"{path}: entry 'X1::toy'") and "expected" in str(e.value)
            assert f"field {field[0]!r}" in str(e.value), e.value

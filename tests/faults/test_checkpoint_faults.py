"""Broken checkpoints, as real files on disk, through the library and through the CLI.

Each fault is built by damaging a copy of a tiny seeded GPT-2 checkpoint. For each one the
test asserts the exact error class, that the message names the file at fault and what was
expected, and that ``lie-stats extract`` exits 2 with the message on stderr and writes no
cube when nothing could be extracted (or exits 3 and lists it among good ones).
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import struct
from collections.abc import Callable

import pytest
import torch
from safetensors.torch import load_file, save_file

from lie_stats import cli, schema
from lie_stats.extraction.architectures import SUPPORTED_ARCHITECTURES
from lie_stats.cube import open_cube
from lie_stats.errors import ArchitectureError, CheckpointError, LieStatsError
from lie_stats.extraction.sources import open_source

from .._checkpoints import make_checkpoint, reshard, to_pytorch_bin

FAST = ["--families", "Q", "--null-draws", "64", "--quiet"]
ST = "model.safetensors"


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> pathlib.Path:
    """A tiny base-model GPT-2 checkpoint (tensor names without prefix)."""
    return make_checkpoint("gpt2", tmp_path_factory.mktemp("good") / "ckpt", seed=3, head=False)


# ---------------------------------------------------------------------------- fault builders
def truncated(folder: pathlib.Path) -> str:
    data = (folder / ST).read_bytes()
    (folder / ST).write_bytes(data[: len(data) // 2])
    return ST


def header_overclaims(folder: pathlib.Path) -> str:
    """The last tensor's data_offsets end past the end of the file."""
    data = (folder / ST).read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    last = max((k for k in header if k != "__metadata__"), key=lambda k: header[k]["data_offsets"][1])
    start, end = header[last]["data_offsets"]
    header[last]["data_offsets"] = [start, end + 4096]
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    (folder / ST).write_bytes(struct.pack("<Q", len(raw)) + raw + data[8 + n:])
    return ST


def header_length_overclaims(folder: pathlib.Path) -> str:
    """The 8-byte header length says the header alone is larger than the file."""
    data = (folder / ST).read_bytes()
    (folder / ST).write_bytes(struct.pack("<Q", 10 * len(data)) + data[8:])
    return ST


def _edit_state(folder: pathlib.Path, edit: Callable[[dict], None]) -> None:
    state = load_file(folder / ST)
    edit(state)
    save_file(state, folder / ST, metadata={"format": "pt"})


def wrong_shape(folder: pathlib.Path) -> str:
    _edit_state(folder, lambda s: s.__setitem__("h.1.attn.c_attn.weight", torch.zeros(32, 95)))
    return ST


def missing_attention(folder: pathlib.Path) -> str:
    _edit_state(folder, lambda s: s.pop("h.0.attn.c_attn.weight"))
    return "config.json"  # the message names the config it read the layout from, and the tensor


def config_missing(folder: pathlib.Path) -> str:
    (folder / "config.json").unlink()
    return ""  # the folder is named: it is neither a checkpoint nor a run


def config_malformed(folder: pathlib.Path) -> str:
    (folder / "config.json").write_text('{"model_type": "gpt2", "n_embd": 32,')
    return "config.json"


def config_unsupported(folder: pathlib.Path) -> str:
    cfg = json.loads((folder / "config.json").read_text())
    cfg["model_type"] = "t5"
    cfg["architectures"] = ["T5ForConditionalGeneration"]
    (folder / "config.json").write_text(json.dumps(cfg))
    return "config.json"


def weights_symlink_loop(folder: pathlib.Path) -> str:
    """model.safetensors -> loop.safetensors -> model.safetensors."""
    (folder / ST).unlink()
    os.symlink("loop.safetensors", folder / ST)
    os.symlink(ST, folder / "loop.safetensors")
    return ST


def config_symlink_loop(folder: pathlib.Path) -> str:
    (folder / "config.json").unlink()
    os.symlink("config.json", folder / "config.json")
    return "config.json"


def truncated_bin(folder: pathlib.Path) -> str:
    """A ``pytorch_model.bin`` (zip) cut in half."""
    to_pytorch_bin(folder)
    data = (folder / "pytorch_model.bin").read_bytes()
    (folder / "pytorch_model.bin").write_bytes(data[: len(data) // 2])
    return "pytorch_model.bin"


def index_missing_shard(folder: pathlib.Path) -> str:
    """Sharded safetensors (layer 1 in its own shard) whose layer-1 shard was never downloaded."""
    reshard(folder, lambda name: "layer1.safetensors" if name.startswith("h.1.") else "rest.safetensors")
    (folder / "layer1.safetensors").unlink()
    return "layer1.safetensors"


def emptied(folder: pathlib.Path) -> str:
    for p in folder.iterdir():
        p.unlink()
    return ""


# fault -> (builder, error class, texts the message must hold besides the file, stage)
# stage: "open" fails in open_source, "adapter" in Checkpoint.adapter(), "layers" in iter_layers.
FAULTS = {
    "truncated": (truncated, CheckpointError, ["not a readable safetensors file"], "adapter"),
    "header_overclaims": (header_overclaims, CheckpointError, ["not a readable safetensors file"], "adapter"),
    "header_length_overclaims": (header_length_overclaims, CheckpointError,
                                 ["not a readable safetensors file"], "adapter"),
    "wrong_shape": (wrong_shape, ArchitectureError, ["'h.1.attn.c_attn.weight'", "(32, 95)", "expected (32, 96)", "n_heads=4"], "layers"),
    "missing_attention": (missing_attention, ArchitectureError, ["'*h.0.attn.c_attn.weight'", "'gpt2'",
                                                                    "Did you mean 'h.1.attn.c_attn.weight'"], "adapter"),
    "config_missing": (config_missing, CheckpointError, ["config.json missing", "run folder"], "open"),
    "config_malformed": (config_malformed, CheckpointError, ["not valid JSON"], "adapter"),
    "config_unsupported": (config_unsupported, ArchitectureError,
                           ["'t5'", "is not supported", *SUPPORTED_ARCHITECTURES], "adapter"),
    "weights_symlink_loop": (weights_symlink_loop, CheckpointError,
                             ["symbolic link loop", "expected a regular file"], "adapter"),
    "config_symlink_loop": (config_symlink_loop, CheckpointError,
                            ["symbolic link loop", "expected a regular file"], "open"),
    "truncated_bin": (truncated_bin, CheckpointError, ["not a readable PyTorch checkpoint"], "adapter"),
    "index_missing_shard": (index_missing_shard, CheckpointError, ["file not found"], "layers"),
    "empty_folder": (emptied, CheckpointError, ["neither a checkpoint folder", "config.json missing"], "open"),
}


def _broken(good: pathlib.Path, tmp_path: pathlib.Path, fault: str) -> tuple[pathlib.Path, str]:
    folder = shutil.copytree(good, tmp_path / f"ckpt_{fault}")
    culprit = FAULTS[fault][0](folder)
    return folder, culprit


def _check_message(msg: str, folder: pathlib.Path, culprit: str, texts: list[str]) -> None:
    where = str(folder / culprit) if culprit else str(folder)
    assert where in msg, f"message does not name {where}: {msg}"
    for t in texts:
        assert t in msg, f"message lacks {t!r}: {msg}"


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_library_raises_the_exact_error_naming_the_file(good, tmp_path, fault):
    folder, culprit = _broken(good, tmp_path, fault)
    _, cls, texts, stage = FAULTS[fault]
    with pytest.raises(LieStatsError) as e:
        ckpts = open_source(str(folder))
        assert stage != "open", "open_source accepted a folder it should refuse"
        (ck,) = ckpts
        ck.adapter()
        assert stage != "adapter", "adapter() accepted a checkpoint it should refuse"
        for _ in ck.iter_layers():
            pass
    assert type(e.value) is cls, f"{type(e.value).__name__}: {e.value}"
    _check_message(str(e.value), folder, culprit, texts)


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_cli_exits_2_with_the_message_and_writes_no_cube(good, tmp_path, capsys, fault):
    folder, culprit = _broken(good, tmp_path, fault)
    _, cls, texts, _ = FAULTS[fault]
    out = tmp_path / "out.nc"
    code = cli.main(["extract", str(folder), "-o", str(out), *FAST])
    captured = capsys.readouterr()
    assert code == cli.EXIT_USAGE, captured.err
    assert "Traceback" not in captured.err
    assert captured.err.startswith("lie-stats extract: error:")
    _check_message(captured.err, folder, culprit, texts)
    assert not out.exists()
    assert not [p for p in tmp_path.glob("*.tmp")] and not [p for p in tmp_path.glob(".out.nc.*")]


@pytest.mark.parametrize("fault", ["truncated", "header_overclaims", "wrong_shape", "missing_attention",
                                   "index_missing_shard", "truncated_bin",
                                   "config_malformed", "config_unsupported", "weights_symlink_loop"])
def test_cli_one_broken_among_good_exits_3_and_lists_it(good, tmp_path, capsys, fault):
    """A run folder of two good checkpoints and one broken one: the good ones are in the
    cube, the broken one in ``failed_checkpoints`` with its error class and file."""
    run = tmp_path / "run"
    make_checkpoint("gpt2", run / "step_0", seed=1, head=False)
    make_checkpoint("gpt2", run / "step_20", seed=2, head=False)
    shutil.copytree(good, run / "step_10")
    culprit = FAULTS[fault][0](run / "step_10")
    cls = FAULTS[fault][1]
    out = tmp_path / "out.nc"
    code = cli.main(["extract", str(run), "-o", str(out), *FAST])
    err = capsys.readouterr().err
    assert code == cli.EXIT_PARTIAL, err
    assert f"FAILED {run / 'step_10'}:" in err and cls.__name__ in err
    ds = open_cube(out)
    assert ds[schema.STEP].values.tolist() == [0, 20]
    (failed,) = json.loads(ds.attrs[schema.ATTR_FAILED])
    assert failed["step"] == 10
    assert failed["error"].startswith(cls.__name__ + ":")
    assert str(run / "step_10" / culprit) in failed["error"]


# ---------------------------------------------------------------------------- run folders
@pytest.mark.parametrize("link", ["self_loop", "dangling"])
def test_run_with_a_broken_step_link_is_refused_not_silently_shortened(good, tmp_path, capsys, link):
    """``run/step_10`` a symlink loop or dangling link: it must not silently drop out of the run."""
    run = tmp_path / "run"
    run.mkdir()
    shutil.copytree(good, run / "step_0")
    target = "step_10" if link == "self_loop" else "gone"
    os.symlink(target, run / "step_10")
    with pytest.raises(CheckpointError) as e:
        open_source(str(run))
    msg = str(e.value)
    assert msg.startswith(f"{run / 'step_10'}: ") and "expected a checkpoint folder" in msg, msg
    assert ("symbolic link loop" if link == "self_loop" else "dangling symbolic link to 'gone'") in msg
    out = tmp_path / "out.nc"
    assert cli.main(["extract", str(run), "-o", str(out), *FAST]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert str(run / "step_10") in err and "Traceback" not in err and not out.exists()


@pytest.mark.parametrize("content", [b"", b"\x89HDF\r\n\x1a\n" + b"\0" * 64, b"not a cube\n"])
def test_cli_info_on_a_broken_cube_file_exits_2_naming_it(tmp_path, capsys, content):
    path = tmp_path / "mailed.nc"
    path.write_bytes(content)
    assert cli.main(["info", str(path)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"lie-stats info: error: {path}: not a readable NetCDF4 cube"), err
    assert "Traceback" not in err


class _Payload:
    """Unpickling this runs ``exec``: the payload of a malicious ``pytorch_model.bin``."""

    def __init__(self, marker: pathlib.Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({str(self.marker)!r}, 'w').write('pwned')",))


def test_cli_refuses_a_code_executing_pickle_and_the_payload_never_runs(good, tmp_path, capsys):
    """Through ``lie-stats extract`` (the library path is in tests/test_sources.py)."""
    folder = tmp_path / "evil"
    folder.mkdir()
    shutil.copy(good / "config.json", folder / "config.json")
    marker = tmp_path / "PWNED"
    state = dict(load_file(good / ST))
    state["h.0.attn.c_attn.weight"] = _Payload(marker)
    torch.save(state, folder / "pytorch_model.bin")
    out = tmp_path / "out.nc"
    assert cli.main(["extract", str(folder), "-o", str(out), *FAST]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert f"{folder / 'pytorch_model.bin'}: refused to load" in err and "weights_only=True" in err
    assert not marker.exists() and not out.exists()
    torch.load(folder / "pytorch_model.bin", weights_only=False)  # the payload is real
    assert marker.read_text() == "pwned"

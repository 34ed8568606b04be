"""End to end: checkpoints -> `lie-stats extract` -> cube -> `lie-stats info`."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from lie_stats import cli, schema
from lie_stats.cube import open_cube, provenance_of
from lie_stats.errors import LieStatsError
from lie_stats.extraction.pipeline import ExtractOptions, extract, shard_dir
from lie_stats.extraction.metrics import change_from_init, compute_layer
from lie_stats.extraction.sources import open_source
from lie_stats.extraction.probe import load_probe

from ._checkpoints import make_run

FAST = ["--families", "Q,OV", "--null-draws", "64", "--quiet"]


@pytest.fixture(scope="module")
def neox_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("neox") / "run"
    make_run(root, "gpt_neox", [0, 4, 32], n_layers=2)
    return root


def test_cli_extract_writes_a_cube_info_describes(neox_run, tmp_path, capsys):
    out = tmp_path / "run.nc"
    assert cli.main(["extract", str(neox_run), "-o", str(out), *FAST,
                     "--projection", "none", "--projection", "fixed:16"]) == 0
    ds = open_cube(out)
    assert ds[schema.STEP].values.tolist() == [0, 4, 32]
    assert ds[schema.FAMILY].values.tolist() == ["Q", "OV"]
    assert ds[schema.PROJECTION].values.tolist() == ["none", "fixed:16"]
    assert ds["n_heads"].values.tolist() == [4] and ds["architecture"].values.tolist() == ["gpt_neox"]
    prov = provenance_of(ds)
    assert [p["step"] for p in prov] == [0, 4, 32]
    assert all(p["options"]["null_draws"] == 64 and p["options"]["seed"] == 0 for p in prov)
    capsys.readouterr()
    assert cli.main(["info", str(out)]) == 0
    text = capsys.readouterr().out
    assert "gpt_neox, 2 layers x 4 heads" in text and "valid: yes" in text


def test_cube_values_sit_at_the_right_indices(neox_run, tmp_path):
    """Every (step, layer, head) number in the cube is the engine's number for those weights."""
    options = ExtractOptions(families=("Q", "OV"), projections=("none",))
    ds, failed = extract([str(neox_run)], tmp_path / "c.nc", options=options, progress=False)
    assert failed == []
    ckpts = open_source(str(neox_run))
    init_layers = list(ckpts[0].iter_layers())
    for ck in ckpts:
        for w, w0 in zip(ck.iter_layers(), init_layers):
            ref = compute_layer(w, families=("Q", "OV"), projections=("none",), null_draws=64, seed=0)
            got = ds.sel(model=ck.model, step=ck.step, layer=w.layer)
            np.testing.assert_array_equal(got["commutator"].values, ref["commutator"])
            np.testing.assert_array_equal(got["killing_eig_spread"].values, ref["killing_eig_spread"])
            np.testing.assert_array_equal(got["weight_norm"].values, ref["weight_norm"])
            np.testing.assert_array_equal(got["change_from_init"].values, change_from_init(w, w0))
    change = ds["change_from_init"].sel(model="run")
    assert np.all(change.sel(step=0).values == 0)
    assert np.all(change.sel(step=32).values > 0)


def test_resume_redoes_no_finished_checkpoint(neox_run, tmp_path, capsys):
    out = tmp_path / "r.nc"
    options = ExtractOptions(families=("Q",), projections=("none",))
    first, _ = extract([str(neox_run)], out, options=options, progress=False, keep_shards=True)
    store = shard_dir(out)
    shards = sorted(store.glob("*.nc"))
    assert len(shards) == 3
    victim = shards[1]
    victim.unlink()  # as if the run had been killed before this checkpoint finished
    mtimes = {p: p.stat().st_mtime_ns for p in shards if p != victim}
    second, _ = extract([str(neox_run)], out, options=options, resume=True, progress=False,
                        keep_shards=True)
    assert {p: p.stat().st_mtime_ns for p in mtimes} == mtimes  # untouched
    assert victim.exists()
    np.testing.assert_array_equal(first["commutator"].values, second["commutator"].values)
    # without --resume an existing store is refused
    with pytest.raises(LieStatsError, match="--resume"):
        extract([str(neox_run)], out, options=options, progress=False)
    # --resume with other options: every shard made with the old ones is redone, and said
    capsys.readouterr()
    third, _ = extract([str(neox_run)], out, options=ExtractOptions(families=("O",)), resume=True,
                       progress=False, keep_shards=True)
    err = capsys.readouterr().err
    assert "3 shard(s) of" in err and "made with other options (families Q -> O)" in err, err
    assert third["family"].values.tolist() == ["O"]
    assert all(p["options"]["families"] == ["O"] for p in provenance_of(third))
    assert all(p.stat().st_mtime_ns != mtimes.get(p, 0) for p in sorted(store.glob("*.nc")))


def test_one_bad_checkpoint_among_good_ones(neox_run, tmp_path, capsys):
    import shutil

    root = tmp_path / "run"
    shutil.copytree(neox_run, root)
    bad = root / "step_4" / "model.safetensors"
    tensors = load_file(bad)
    name = next(k for k in tensors if "query_key_value.weight" in k and ".1." in k)
    tensors[name][5, 3] = float("nan")
    save_file(tensors, bad, metadata={"format": "pt"})
    out = tmp_path / "bad.nc"
    code = cli.main(["extract", str(root), "-o", str(out), *FAST])
    assert code == cli.EXIT_PARTIAL
    err = capsys.readouterr().err
    assert "step_4" in err and "non-finite" in err and "layer 1" in err
    ds = open_cube(out)
    assert ds[schema.STEP].values.tolist() == [0, 32]
    failed = json.loads(ds.attrs[schema.ATTR_FAILED])
    assert len(failed) == 1 and failed[0]["step"] == 4 and "NaN" in failed[0]["error"]


def test_bad_options_are_clear_errors(neox_run, tmp_path, capsys):
    assert cli.main(["extract", str(neox_run), "-o", str(tmp_path / "x.nc"), "--families", "Q,QKV"]) == 2
    assert "Unknown operator family 'QKV'" in capsys.readouterr().err
    assert cli.main(["extract", str(neox_run), "-o", str(tmp_path / "x.nc"), "--projection", "fixed:x"]) == 2
    assert "Unknown projection 'fixed:x'" in capsys.readouterr().err
    assert cli.main(["extract", str(neox_run), "-o", str(tmp_path / "x.nc"), "--null-draws", "10"]) == 2
    assert "at least 64" in capsys.readouterr().err
    assert not (tmp_path / "x.nc").exists()


def test_same_seed_same_cube(neox_run, tmp_path):
    opts = ExtractOptions(families=("QK",), projections=("fixed:16",), seed=7)
    a, _ = extract([str(neox_run)], tmp_path / "a.nc", options=opts, progress=False)
    b, _ = extract([str(neox_run)], tmp_path / "b.nc", options=opts, progress=False)
    np.testing.assert_array_equal(a["commutator_z"].values, b["commutator_z"].values)
    c, _ = extract([str(neox_run)], tmp_path / "c.nc", options=ExtractOptions(
        families=("QK",), projections=("fixed:16",), seed=8), progress=False)
    assert not np.array_equal(a["commutator"].values, c["commutator"].values)


def test_real_minilm_reproduces_the_metrics_md_reference_figures(minilm_path):
    """METRICS.md §4.2 (measured on all-MiniLM-L6-v2, exact K family, by layer):
    abelian_fraction_tau 0.23-0.68 trained in layers 0-4 and 0 in layer 5; the
    null-calibrated abelian_fraction (alpha 0.05 in that measurement) 0.94-1.0 in layers 0-2.
    §3.2: c = 0.652 for exact Gram families at random init (checked on the Q family of a
    seeded random-init twin built from the same config)."""
    [ck] = open_source(str(minilm_path))
    tau, af = [], []
    for w in ck.iter_layers():
        out = compute_layer(w, families=("K",), projections=("none",), null_draws=64, seed=0, alpha=0.05)
        tau.append(float(out["abelian_fraction_tau"][0, 0]))
        af.append(float(out["abelian_fraction"][0, 0]))
    rounded = np.round(tau, 2)
    assert rounded[5] == 0.0
    assert rounded[:5].min() == 0.23 and rounded[:5].max() == 0.68
    assert min(af[:3]) >= 0.94 - 1 / 66  # one pair of 66 below the reported range at most
    from transformers import AutoConfig, AutoModel

    torch.manual_seed(0)
    twin = AutoModel.from_config(AutoConfig.from_pretrained(minilm_path))
    from lie_stats.extraction.architectures import adapter_for

    sd = twin.state_dict()
    ad = adapter_for(twin.config.to_dict(), list(sd), source="random twin")
    c = [compute_layer(ad.layer_weights(layer, sd.__getitem__), families=("Q",), projections=("none",),
                       null_draws=64, seed=0)["commutator"] for layer in range(2)]
    assert abs(np.nanmean(c) - 0.652) < 0.005


def test_extract_with_probe_adds_activation_metrics_at_every_checkpoint(neox_run, tmp_path):
    from lie_stats.extraction.activations import activation_metrics, functional_killing
    from lie_stats.extraction.probe import ProbeSet, probe_hash, save_probe

    tokens = np.random.default_rng(0).integers(1, 96, size=(4, 12)).astype(np.int64)
    probe = ProbeSet(tokens=tokens, tokenizer="random ids < 96", text_source="test",
                     sha256=probe_hash(tokens), first_token="bos")
    path = save_probe(probe, tmp_path / "probe.npz")
    out = tmp_path / "act.nc"
    assert cli.main(["extract", str(neox_run), "-o", str(out), *FAST, "--probe", str(path)]) == 0
    ds = open_cube(out)
    for name in ("sink_score", "sink_argmax_fraction", "value_norm", "sink_value_ratio",
                 "grad_alignment", "head_label", "killing_functional", "written_norm",
                 "head_label_written"):
        assert name in ds, name
        assert np.isfinite(ds[name].sel(model="run").values).all(), name
    ck = open_source(str(neox_run))[2]
    direct = activation_metrics(ck.path, probe)
    np.testing.assert_allclose(ds["sink_score"].sel(model="run", step=ck.step).values,
                               direct["sink_score"], rtol=1e-12)
    np.testing.assert_allclose(ds["written_norm"].sel(model="run", step=ck.step).values,
                               direct["written_norm"], rtol=1e-12)
    attrs = ds["head_label_written"].attrs  # CF flags, as head_label's
    assert dict(zip(attrs["flag_meanings"].split(), attrs["flag_values"])) == schema.LABEL_CODES
    np.testing.assert_allclose(
        ds["killing_functional"].sel(model="run", step=ck.step).values,
        functional_killing(ds["killing"].sel(model="run", step=ck.step).values, direct["value_norm"]),
        rtol=1e-12)
    prov = provenance_of(ds)
    assert all(p["options"]["probe"] == probe.sha256 for p in prov)
    assert all(p["activations"]["probe"]["sha256"] == probe.sha256 for p in prov)


def test_float32_storage_halves_precision_only(neox_run, tmp_path):
    opts = ExtractOptions(families=("Q",), projections=("none",))
    full, _ = extract([str(neox_run)], tmp_path / "f.nc", options=opts, progress=False)
    # the same shard store, merged again in single precision: nothing is recomputed
    single, _ = extract([str(neox_run)], tmp_path / "f.nc", options=opts, progress=False,
                        resume=True, store_dtype="float32")
    back = open_cube(tmp_path / "f.nc")
    assert back["commutator"].dtype == np.float32 and back.attrs["store_dtype"] == "float32"
    np.testing.assert_array_equal(back["commutator"].values, full["commutator"].values.astype(np.float32))
    assert back["killing"].attrs["definition"] == "METRICS.md §3.4"


# ------------------------------------------------------------------ per-model probes
@pytest.fixture(scope="module")
def twin_runs(tmp_path_factory):
    """Two runs, ``alpha`` and ``beta``, with the same weights: only their probes tell them apart."""
    root = tmp_path_factory.mktemp("twins")
    for name in ("alpha", "beta"):
        make_run(root / name, "gpt_neox", [0, 4], n_layers=2)
    return root


def _probe_file(path, seed):
    from lie_stats.extraction.probe import ProbeSet, probe_hash, save_probe

    tokens = np.random.default_rng(seed).integers(1, 96, size=(3, 10)).astype(np.int64)
    probe = ProbeSet(tokens=tokens, tokenizer=f"random ids < 96, seed {seed}", text_source="test",
                     sha256=probe_hash(tokens), first_token="bos")
    return save_probe(probe, path), probe


def test_per_model_probes_each_model_gets_its_own(twin_runs, tmp_path):
    """``--probe MODEL=FILE``: each model's activation metrics come from its own probe. The two
    runs have identical weights, so a single probe for both would give equal numbers."""
    from lie_stats.extraction.activations import activation_metrics

    fa, pa = _probe_file(tmp_path / "a.npz", 1)
    fb, pb = _probe_file(tmp_path / "b.npz", 2)
    out = tmp_path / "two.nc"
    srcs = [str(twin_runs / "alpha"), str(twin_runs / "beta")]
    assert cli.main(["extract", *srcs, "-o", str(out), "--families", "Q", "--quiet",
                     "--probe", f"beta={fb}", "--probe", f"alpha={fa}"]) == 0
    ds = open_cube(out)
    for model, probe in (("alpha", pa), ("beta", pb)):
        for step in (0, 4):
            direct = activation_metrics(twin_runs / model / f"step_{step}", probe)
            for name in ("sink_score", "value_norm", "grad_alignment"):
                np.testing.assert_allclose(ds[name].sel(model=model, step=step).values, direct[name],
                                           rtol=1e-12, err_msg=f"{model}@{step} {name}")
    # same weights, different probes: different activation numbers, identical weight metrics
    assert not np.allclose(ds["sink_score"].sel(model="alpha").values, ds["sink_score"].sel(model="beta").values)
    np.testing.assert_array_equal(ds["commutator"].sel(model="alpha").values,
                                  ds["commutator"].sel(model="beta").values)
    prov = provenance_of(ds)
    assert [(p["model"], p["activations"]["probe"]["sha256"]) for p in prov] == [
        ("alpha", pa.sha256), ("alpha", pa.sha256), ("beta", pb.sha256), ("beta", pb.sha256)]
    assert all(p["options"]["probe"] == {"alpha": pa.sha256, "beta": pb.sha256} for p in prov)


def test_per_model_probes_resume_redoes_a_changed_mapping(twin_runs, tmp_path, capsys):
    fa, _ = _probe_file(tmp_path / "a.npz", 1)
    fb, _ = _probe_file(tmp_path / "b.npz", 2)
    srcs = [str(twin_runs / "alpha"), str(twin_runs / "beta")]
    out = tmp_path / "r.nc"
    opts = ExtractOptions(families=("Q",), probe={"alpha": str(fa), "beta": str(fb)})
    extract(srcs, out, options=opts, progress=False, keep_shards=True)
    # the same mapping given as pairs in another order is the same options
    same = ExtractOptions(families=("Q",), probe=[("beta", str(fb)), ("alpha", str(fa))])
    store = shard_dir(out)
    mtimes = {p: p.stat().st_mtime_ns for p in store.glob("*.nc")}
    extract(srcs, out, options=same, progress=False, resume=True, keep_shards=True)
    assert {p: p.stat().st_mtime_ns for p in store.glob("*.nc")} == mtimes  # all kept
    # a changed mapping (or one probe for all) is other options: the shards are redone
    swapped = ExtractOptions(families=("Q",), probe={"alpha": str(fb), "beta": str(fa)})
    capsys.readouterr()
    ds, _ = extract(srcs, out, options=swapped, progress=False, resume=True, keep_shards=True)
    assert "4 shard(s) of" in capsys.readouterr().err
    assert all(p["options"]["probe"] == {"alpha": load_probe(fb).sha256, "beta": load_probe(fa).sha256}
               for p in provenance_of(ds))
    ds, _ = extract(srcs, out, options=ExtractOptions(families=("Q",), probe=str(fa)), progress=False,
                    resume=True)
    assert "made with other options (probe" in capsys.readouterr().err
    assert all(p["options"]["probe"] == load_probe(fa).sha256 for p in provenance_of(ds))


def test_per_model_probes_clear_errors(twin_runs, tmp_path, capsys):
    fa, _ = _probe_file(tmp_path / "a.npz", 1)
    fb, _ = _probe_file(tmp_path / "b.npz", 2)
    srcs = [str(twin_runs / "alpha"), str(twin_runs / "beta")]
    out = tmp_path / "x.nc"
    base = ["extract", *srcs, "-o", str(out), "--families", "Q", "--quiet"]
    assert cli.main([*base, "--probe", f"alpha={fa}", "--probe", f"betta={fb}"]) == 2
    err = capsys.readouterr().err
    assert "no source gives a model named 'betta'" in err and "Did you mean 'beta'?" in err
    assert cli.main([*base, "--probe", f"alpha={fa}"]) == 2
    assert "model 'beta' has no probe" in capsys.readouterr().err
    assert cli.main([*base, "--probe", str(fa), "--probe", f"beta={fb}"]) == 2
    assert "not several files or a mix" in capsys.readouterr().err
    assert cli.main([*base, "--probe", f"alpha={fa}", "--probe", f"alpha={fb}"]) == 2
    assert "two probes" in capsys.readouterr().err
    assert not out.exists() and not shard_dir(out).exists()  # refused before any work
    with pytest.raises(LieStatsError, match="No probe for model 'gamma'"):
        ExtractOptions(probe={"alpha": str(fa)}).probe_for("gamma")


def test_cli_extract_records_the_threads_it_ran_with(neox_run, tmp_path, monkeypatch, capsys):
    """One thread by default (benchmarks/threads_results.md), --threads or OMP_NUM_THREADS
    otherwise; each checkpoint's provenance says which setting made the cube."""
    import torch

    from lie_stats.extraction.pipeline import DEFAULT_THREADS

    before = torch.get_num_threads()
    try:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
        assert cli.main(["extract", str(neox_run), "-o", str(tmp_path / "a.nc"), *FAST, "--quiet"]) == 0
        prov = provenance_of(open_cube(tmp_path / "a.nc"))
        assert DEFAULT_THREADS == 1
        assert [p["threads"]["torch_threads"] for p in prov] == [1, 1, 1]
        assert all(p["threads"]["OMP_NUM_THREADS"] is None for p in prov)
        assert cli.main(["extract", str(neox_run), "-o", str(tmp_path / "b.nc"), *FAST, "--quiet",
                         "--threads", "2"]) == 0
        assert {p["threads"]["torch_threads"] for p in provenance_of(open_cube(tmp_path / "b.nc"))} == {2}
        monkeypatch.setenv("OMP_NUM_THREADS", "3")
        assert cli.main(["extract", str(neox_run), "-o", str(tmp_path / "c.nc"), *FAST, "--quiet"]) == 0
        threads = provenance_of(open_cube(tmp_path / "c.nc"))[0]["threads"]
        assert threads["torch_threads"] == 3 and threads["OMP_NUM_THREADS"] == "3"
        monkeypatch.setenv("OMP_NUM_THREADS", "many")
        assert cli.main(["extract", str(neox_run), "-o", str(tmp_path / "d.nc"), *FAST]) == 2
        assert "OMP_NUM_THREADS='many': expected a positive integer" in capsys.readouterr().err
        assert not (tmp_path / "d.nc").exists()
    finally:
        torch.set_num_threads(before)

"""Dataset cards: parsing, validation, states, suggestions, loading cubes."""

from __future__ import annotations

import numpy as np
import pytest

from lie_stats import cube, schema
from lie_stats.datasets import (
    DatasetError,
    find_dataset,
    list_datasets,
    load_dataset,
    read_card,
)
from tests._spec_cubes import pair_cube, synth_cube


def write_card(root, name, body):
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dataset.toml").write_text(body, encoding="utf-8")
    return folder


CARD = 'name = "{name}"\ntitle = "T"\ncubes = ["a.nc"]\nbuild = "make {name}"\n'


def test_states_present_buildable_needs_data(tmp_path):
    write_card(tmp_path, "b", CARD.format(name="b"))
    write_card(tmp_path, "n", CARD.format(name="n") + 'needs = "hub access"\n')
    p = write_card(tmp_path, "p", CARD.format(name="p"))
    (p / "a.nc").write_bytes(b"x")
    (tmp_path / "not_a_dataset").mkdir()  # no card: ignored
    cards = list_datasets(tmp_path)
    assert [c.name for c in cards] == ["b", "n", "p"]
    assert [c.state for c in cards] == ["buildable", "needs data", "present"]
    assert cards[0].build == "make b" and cards[1].needs == "hub access"
    assert cards[2].cubes == ((p / "a.nc").resolve(),) and cards[2].missing == ()
    assert cards[0].readme == (tmp_path / "b" / "README.md").resolve()


@pytest.mark.parametrize("body, text", [
    ('name = "x"\ntitle = "T"\nbuild = "b"\n', "lacks the key 'cubes'"),
    (CARD.format(name="x") + 'need = ""\n', "unknown key 'need'. Did you mean 'needs'?"),
    (CARD.format(name="y"), "names the dataset 'y' but lives in the folder 'x'"),
    ('name = "x"\ntitle = "T"\ncubes = "a.nc"\nbuild = "b"\n', "'cubes' must be a list"),
    ('name = "x"\ntitle = "T"\ncubes = []\nbuild = "b"\n', "non-empty list"),
    ('name = "x"\ntitle = "T"\ncubes = ["../escape.nc"]\nbuild = "b"\n', "must be relative to and inside"),
    ('name = "x"\ntitle = T\n', "is not valid TOML"),
])
def test_malformed_cards_name_the_file(tmp_path, body, text):
    folder = write_card(tmp_path, "x", body)
    with pytest.raises(DatasetError) as info:
        read_card(folder)
    assert str(folder / "dataset.toml") in str(info.value)
    assert text in str(info.value)


def test_find_dataset_suggests(tmp_path):
    write_card(tmp_path, "pico_pythia", CARD.format(name="pico_pythia"))
    with pytest.raises(DatasetError, match=r"No dataset named 'pico_pytia'.*Did you mean 'pico_pythia'\?"):
        find_dataset("pico_pytia", tmp_path)
    assert list_datasets(tmp_path / "missing") == []


def test_load_dataset_opens_the_cube_and_reports_missing_ones(tmp_path):
    folder = write_card(tmp_path, "s", CARD.format(name="s"))
    with pytest.raises(DatasetError, match=r"is buildable: missing .*a\.nc\. Build it with: make s"):
        load_dataset("s", tmp_path)
    written = synth_cube()
    cube.write_cube(written, folder / "a.nc")
    loaded = load_dataset("s", tmp_path)
    np.testing.assert_array_equal(loaded["change_from_init"].values, written["change_from_init"].values)
    assert loaded[schema.MODEL].values.tolist() == ["m0"]


def test_load_dataset_combines_several_cubes_along_model(tmp_path):
    folder = write_card(tmp_path, "c", 'name = "c"\ntitle = "T"\ncubes = ["s.nc", "p.nc"]\nbuild = "b"\n')
    cube.write_cube(synth_cube(), folder / "s.nc")
    cube.write_cube(pair_cube(), folder / "p.nc")
    both = load_dataset("c", tmp_path)
    assert both[schema.MODEL].values.tolist() == ["m0", "base", "tuned"]
    # the pair has one checkpoint (1000) that the run has too; others are NaN-padded for it
    ks = both["killing_self"].sel(model="tuned", family="Q", projection="none")
    assert np.isfinite(ks.sel(step=1000).values).all() and not np.isfinite(ks.sel(step=0).values).any()
    assert len(cube.provenance_of(both)) == 6 + 2  # every checkpoint's record is kept


def test_the_cli_finds_the_bundled_folders_wherever_it_runs(tmp_path, monkeypatch, capsys):
    """Without --datasets / --hypotheses: ./datasets and ./hypotheses when the current folder
    has them, else those of the checkout lie_stats runs from; --help says so."""
    from lie_stats import cli

    monkeypatch.chdir(tmp_path)  # a folder with neither
    assert cli.bundled("datasets") == str(cli.CHECKOUT / "datasets")
    assert cli.main(["datasets"]) == 0
    out = capsys.readouterr().out
    assert "pico_pythia" in out and "used by: A" in out
    (tmp_path / "datasets").mkdir()  # a folder of its own wins
    assert cli.main(["datasets", "--hypotheses", ""]) == 0
    assert capsys.readouterr().out == "no dataset cards under datasets/\n"
    help_text = cli.build_parser()._subparsers._group_actions[0].choices["run"].format_help()
    assert "checkout lie_stats runs from" in " ".join(help_text.split())

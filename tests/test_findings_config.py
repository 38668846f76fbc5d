"""`lengthgen findings` judges only tables made with the config it is given: tables whose provenance
records another config stop it with one line naming the table, the field and the configfile to pass;
tables of its own config, or without records, are judged as before; a folder without any of the
tables stops it with one line saying so."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline_src.cli import main
from pipeline_src.planning import paths
from pipeline_src.planning.load_config import load_config
from tests.conftest import REPO, default_config
from tests.helpers import F2_TASK, recorded_runs

SMOKE = "config/smoke.yaml"


def findings(results, *configfiles: str):
    return CliRunner().invoke(main, ["findings", str(results), *(f"--configfile={f}" for f in configfiles)])


@pytest.fixture
def in_repo(monkeypatch):
    monkeypatch.chdir(REPO)  # config/config.yaml and the shipped configs


def test_a_smaller_configs_results_judged_without_it_stop_with_one_line_naming_it(tmp_path, in_repo):
    recorded_runs(tmp_path, load_config([SMOKE]))
    done = findings(tmp_path)
    assert done.exit_code == 1, done.output
    line = done.output.strip()
    assert "\n" not in line and "pandera" not in line.lower() and "Schema" not in line, line
    assert line.startswith(f"Error: {tmp_path}/eval/{F2_TASK}/"), line
    assert "made with train model.d_mlp=64, the config says 256" in line, line
    assert line.endswith(f"these results look like {SMOKE}'s: pass --configfile {SMOKE}"), line


def test_a_two_file_layerings_hint_is_a_command_that_judges_them(tmp_path, in_repo):
    """Results of two shipped files layered: the hint names one --configfile per file (lengthgen takes
    one file per option), and those options, as written, judge the results."""
    recorded_runs(tmp_path, load_config([SMOKE, "config/attention_scale.yaml"]))
    done = findings(tmp_path, SMOKE)
    assert done.exit_code == 1, done.output
    line = done.output.strip()
    assert 'made with train model.attention_scale="log_length", the config says unset' in line, line
    options = line.rpartition(": pass ")[2].split()
    assert options[0::2] == ["--configfile", "--configfile"], line
    assert sorted(options[1::2]) == sorted(["config/attention_scale.yaml", SMOKE]), line
    judged = CliRunner().invoke(main, ["findings", str(tmp_path), *options])
    assert judged.exit_code == 0, judged.output


def test_with_the_configfile_they_were_made_with_they_are_judged(tmp_path, in_repo):
    recorded_runs(tmp_path, load_config([SMOKE]))
    done = findings(tmp_path, SMOKE)
    assert done.exit_code == 0, done.output
    assert ("F2: undecided: no results" not in done.output
            and "F4: undecided: no results" not in done.output), done.output


def test_results_of_the_default_config_are_judged_as_before(tmp_path, in_repo):
    recorded_runs(tmp_path, default_config())
    done = findings(tmp_path)
    assert done.exit_code == 0, done.output
    assert "F2: undecided: no results" not in done.output and "F1: undecided: no results" in done.output, done.output


def test_results_of_no_shipped_config_name_the_field_and_ask_for_their_configfile(tmp_path, in_repo):
    own = tmp_path / "own.yaml"
    own.write_text(f"{F2_TASK}:\n  eval:\n    n_per_cell: 8\n")
    recorded_runs(tmp_path / "results", load_config([own]))
    done = findings(tmp_path / "results")
    assert done.exit_code == 1, done.output
    line = done.output.strip()
    assert "\n" not in line, line
    assert "made with eval_data params.n_per_cell=8, the config says 100" in line, line
    assert line.endswith("pass the --configfile(s) these results were made with"), line
    assert findings(tmp_path / "results", str(own)).exit_code == 0


def test_a_results_folder_elsewhere_is_compared_with_its_own_upstream_files(tmp_path, in_repo, monkeypatch):
    """Records name their inputs under results/, relative to the run's folder: a run judged from
    another folder is compared with its own upstream records, not with those of the working
    directory's results/ (here made with another config)."""
    configs = {"elsewhere": load_config([SMOKE]), "here": default_config()}
    for name, config in configs.items():
        (tmp_path / name).mkdir()
        monkeypatch.chdir(tmp_path / name)
        recorded_runs(Path(paths.RESULTS), config)
    shutil.copytree(REPO / "config", tmp_path / "here" / "config")
    done = findings(tmp_path / "elsewhere" / "results", SMOKE)
    assert done.exit_code == 0, done.output
    assert "F2: undecided: no results" not in done.output, done.output


def test_a_folder_without_results_stops_with_one_line_saying_so(tmp_path, in_repo):
    empty = tmp_path / "results"
    empty.mkdir()
    export = tmp_path / "summary.csv"
    done = CliRunner().invoke(main, ["findings", str(empty), "--export", str(export)])
    line = done.output.strip()
    assert done.exit_code == 1 and "\n" not in line, done.output
    assert line.startswith(f"Error: no results found under {empty}: none of the "), line
    assert not export.exists() and not any(empty.iterdir())

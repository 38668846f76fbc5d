"""`lengthgen check` (a run's config checked without Snakemake, YAML errors with file and line) and
`lengthgen spec` (the exact spec of the job that made an artifact, ready for --spec)."""

from __future__ import annotations

import json

import polars as pl
import pytest
from click.testing import CliRunner

from pipeline_src.cli import main
from pipeline_src.storage.canonical import canonical_json
from tests.conftest import REPO, write_dataset


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def test_check_accepts_the_shipped_configs(monkeypatch):
    monkeypatch.chdir(REPO)
    for name in ("smoke", "mid", "paper"):
        done = run("check", "--configfile", f"config/{name}.yaml")
        assert done.exit_code == 0 and done.output.startswith("config OK: tasks "), done.output


def test_check_takes_config_files_as_snakemake_does_repeated_or_listed(monkeypatch):
    monkeypatch.chdir(REPO)
    repeated = run("check", "--configfile", "config/mid.yaml", "--configfile", "config/mid_names.yaml")
    listed = run("check", "--configfile", "config/mid.yaml", "config/mid_names.yaml")
    alone = run("check", "--configfile", "config/mid.yaml")
    assert repeated.exit_code == listed.exit_code == 0 and repeated.output == listed.output
    assert listed.output != alone.output  # mid_names.yaml counted (it trains fewer runs)
    missing = run("check", "--configfile", "config/mid.yaml", "config/no_such.yaml")
    assert missing.exit_code != 0 and "config/no_such.yaml" in missing.output


def test_check_names_the_file_line_and_column_of_invalid_yaml(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    bad = tmp_path / "bad.yaml"
    bad.write_text("sparse_parity:\n  schemes: [rope\n  seeds: [0]\n")
    done = run("check", "--configfile", str(bad))
    assert done.exit_code == 1 and f"{bad}:3:8: not valid YAML" in done.output
    assert "Traceback" not in done.output and len(done.output.strip().splitlines()) == 1


@pytest.mark.parametrize("name, text, said", [
    ("missing.yaml", None, "config file not found"),
    ("tab.yaml", "sparse_parity:\n\tseeds: [0]\n", ":2:1: not valid YAML"),
    ("list.yaml", "- 1\n- 2\n", "a config file holds a mapping of keys, not list"),
    ("empty.yaml", "", "a config file holds a mapping of keys, not NoneType"),
])
def test_the_config_files_snakemake_answers_itself_get_one_line_naming_the_file(tmp_path, monkeypatch, name, text,
                                                                                 said):
    """Snakemake reads a --configfile before the Snakefile runs and answers these with its own message
    (no file, or a traceback); the README points to `lengthgen check`, which names the file (and line)."""
    monkeypatch.chdir(REPO)
    bad = tmp_path / name
    if text is not None:
        bad.write_text(text)
    done = run("check", "--configfile", str(bad))
    assert done.exit_code != 0 and f"{bad}" in done.output and said in done.output, done.output
    assert "Traceback" not in done.output and len(done.output.strip().splitlines()) == 1


def check_override(tmp_path, text: str):
    """`lengthgen check` of the default config with an override file holding ``text``."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    return run("check", "--configfile", str(bad))


def test_check_names_an_unknown_key_and_its_section_in_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    done = check_override(tmp_path, "sparse_parity:\n  trian: {steps: 3}\n")
    assert done.exit_code == 1 and "config field sparse_parity: unknown key ('trian' was unexpected)" in done.output
    assert "(did you mean 'train'?)" in done.output and len(done.output.strip().splitlines()) == 1


def test_an_unknown_key_far_from_every_known_one_gets_no_guess(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    done = check_override(tmp_path, "sparse_parity:\n  zzz: 3\n")
    assert done.exit_code == 1 and "unknown key ('zzz' was unexpected)" in done.output
    assert "did you mean" not in done.output


def test_a_number_yaml_reads_as_a_string_gets_its_float_spelling(tmp_path, monkeypatch):
    """PyYAML (YAML 1.1, as Snakemake reads config files) takes 1e-3 for a string: the error says how
    to write the float, and the spelling it gives does load as that number."""
    import yaml

    monkeypatch.chdir(REPO)
    for written, spelled in (("1e-3", "1.0e-3"), ("5e3", "5.0e+3")):
        done = check_override(tmp_path, f"addition:\n  train: {{lr: {written}}}\n")
        assert done.exit_code == 1 and "config field addition.train.lr" in done.output
        assert f"write {spelled}" in done.output and len(done.output.strip().splitlines()) == 1
        assert yaml.safe_load(spelled) == float(written)


def test_spec_prints_the_job_spec_to_pass_back(tmp_path):
    params = {"k_train": 2, "l_min": 3, "l_max": 6, "n_samples": 20}
    made = write_dataset(tmp_path / "train.parquet", "train", params, seed=4)
    done = run("spec", str(made))
    assert done.exit_code == 0
    spec = {"task": "sparse_parity", "split": "train", "seed": 4, "params": params}
    assert done.output.strip() == canonical_json(spec)
    again = run("generate", "--spec", done.output.strip(), "--out", str(tmp_path / "again.parquet"))
    assert again.exit_code == 0, again.output
    assert pl.read_parquet(tmp_path / "again.parquet").equals(pl.read_parquet(made))
    assert json.loads(done.output)["params"] == params


def test_spec_of_a_file_without_a_record_is_one_line(tmp_path):
    plain = tmp_path / "plain.parquet"
    pl.DataFrame({"a": [1]}).write_parquet(plain)
    done = run("spec", str(plain))
    assert done.exit_code == 1 and "no provenance record" in done.output and "Traceback" not in done.output


def test_a_spec_missing_a_key_is_one_line(tmp_path):
    spec = json.dumps({"task": "sparse_parity", "split": "train", "seed": 1})
    done = run("generate", "--spec", spec, "--out", str(tmp_path / "x.parquet"))
    assert done.exit_code == 1 and done.output == "Error: spec: 'params' is a required property\n"
    assert not (tmp_path / "x.parquet").exists()


def test_a_failure_inside_a_step_is_one_line_and_debug_shows_the_traceback(tmp_path):
    spec = json.dumps({"task": "sparse_parity", "split": "train", "seed": 1,
                       "params": {"k_train": 2, "l_min": 5, "l_max": 3, "n_samples": 4}})
    done = run("generate", "--spec", spec, "--out", str(tmp_path / "x.parquet"))
    assert done.exit_code == 1 and "l_min=5 exceeds l_max=3" in done.output  # the generator's own check
    assert len(done.output.strip().splitlines()) == 1
    debug = run("--debug", "generate", "--spec", spec, "--out", str(tmp_path / "x.parquet"))
    assert isinstance(debug.exception, ValueError)  # raised, with its traceback


def test_evaluating_a_table_with_a_renamed_column_names_the_column(tmp_path):
    from pipeline_src.training.train import train
    from tests.conftest import tiny_train_spec

    data = write_dataset(tmp_path / "train.parquet", "train", {"k_train": 2, "l_min": 3, "l_max": 6, "n_samples": 40})
    train(tiny_train_spec(steps=2), data, tmp_path / "model", progress=lambda line: None)
    grid = write_dataset(tmp_path / "eval.parquet", "eval", {"k_test": [1], "lengths": [6], "n_per_cell": 4})
    pl.read_parquet(grid).rename({"prompt_pos": "prompt_ids"}).write_parquet(tmp_path / "renamed.parquet")
    spec = json.dumps({"batch_size": 4, "seed": 2})
    done = run("evaluate", "--spec", spec, "--model-dir", str(tmp_path / "model"),
               "--eval-data", str(tmp_path / "renamed.parquet"), "--out", str(tmp_path / "acc.parquet"))
    assert done.exit_code == 1 and len(done.output.strip().splitlines()) == 1
    assert "unknown column(s) 'prompt_ids'; missing column(s) 'prompt_pos'" in done.output

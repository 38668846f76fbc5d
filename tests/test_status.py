"""`lengthgen status`: every cell of a config as done, missing or stale, with its headline accuracy."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
import yaml
from click.testing import CliRunner

from pipeline_src.cli import main
from pipeline_src.config.layers import ConfigError
from pipeline_src.planning import cell_jobs as cell_jobs_module
from pipeline_src.planning.cell_jobs import cell_jobs
from pipeline_src.planning.load_config import load_config
from pipeline_src.storage.canonical import canonical_json
from tests.conftest import TINY_MODEL, TINY_TRAIN, private_copy

REPO = Path(__file__).resolve().parents[1]
TINY = {  # one sparse parity variant and scheme, two seeds; trained and evaluated in seconds
    "tasks": ["sparse_parity"],
    "language": {"enabled": False},
    "sparse_parity": {
        "schemes": ["rope_pose"], "k_train": [2], "seeds": [0, 1],
        "data": {"n_train": 300},
        "eval": {"k_test": [1, 2], "lengths": [20, 50, 60], "n_per_cell": 6, "batch_size": 8},
        # 12 steps on the paper's law: the default's curriculum over k turned off
        "model": TINY_MODEL, "train": {**TINY_TRAIN, "lr": 1.0e-3, "betas": [0.9, 0.999], "curriculum": None},
    },
}


def run_job(*args: str) -> None:
    done = CliRunner().invoke(main, list(args))
    assert done.exit_code == 0, done.output


def make_cell(config: dict, cell: dict) -> None:
    """Run the four jobs of ``cell`` with the CLI commands and specs the workflow uses."""
    train_data, eval_data, training, evaluation = cell_jobs(config, cell)
    for job in (train_data, eval_data):
        run_job("generate", "--rule", "test", "--spec", canonical_json(job.spec), "--out", job.artifact)
    model_dir = str(Path(training.artifact).parent)
    run_job("train", "--spec", canonical_json(training.spec), "--train-data", train_data.artifact,
            "--out-dir", model_dir)
    run_job("evaluate", "--spec", canonical_json(evaluation.spec), "--model-dir", model_dir,
            "--eval-data", eval_data.artifact, "--out", evaluation.artifact,
            "--mechanism-dir", str(Path(evaluation.outputs[1]).parent))


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A working directory with the default config, config/tiny.yaml, and seed 0 of its one cell
    pair run (seed 1 not)."""
    folder = tmp_path_factory.mktemp("pipeline")
    (folder / "config").mkdir()
    shutil.copy(REPO / "config" / "config.yaml", folder / "config" / "config.yaml")
    (folder / "config" / "tiny.yaml").write_text(yaml.safe_dump(TINY))
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        config = load_config([Path("config/tiny.yaml")])
        make_cell(config, {"task": "sparse_parity", "variant": "k2", "scheme": "rope_pose", "seed": 0})
    return folder


@pytest.fixture
def workdir(built, tmp_path, monkeypatch) -> Path:
    return private_copy(built, tmp_path, monkeypatch, "pipeline")


def override(name: str, body: dict) -> str:
    Path("config", name).write_text(yaml.safe_dump(body))
    return f"config/{name}"


def status_rows(*configfiles: str) -> dict[int, dict[str, str]]:
    """Seed -> the row of the status table (column name -> value), and checks the last line."""
    args = ["status", "--wide"] + [arg for f in configfiles for arg in ("--configfile", f)]
    shown = CliRunner().invoke(main, args)
    assert shown.exit_code == 0, shown.output
    lines = shown.output.rstrip("\n").splitlines()
    header = lines[0].split()
    starts = [lines[0].index(name) for name in header]
    rows = {}
    for line in lines[1:-1]:
        cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=False)]
        row = dict(zip(header, cells, strict=False))
        rows[int(row["seed"])] = row
    assert lines[-1].startswith(f"{len(rows)} cells:")
    return rows


def test_done_and_missing_cells(workdir):
    rows = status_rows("config/tiny.yaml")
    assert rows[0]["state"] == "done"
    # 12 steps learn nothing: the fit gate names each k <= K_train below 0.9 at 2l = 50, with its accuracy
    table = pl.read_parquet(next(Path("results/eval").rglob("accuracy.parquet"))).filter(
        (pl.col("metric") == "answer") & (pl.col("length") == 50) & (pl.col("accuracy") < 0.9)).sort("k")
    assert len(table), "the tiny model was expected to miss some k"
    ks = ", ".join(f"{k} ({accuracy:.2f})" for k, accuracy in table.select("k", "accuracy").iter_rows())
    assert rows[0]["note"] == f"not learned: below 0.9 at length 50 for k = {ks}"
    assert rows[0]["metric"] == "answer"
    # longest training length 2 * l_max = 50 (an evaluated length); longest evaluated 60
    assert rows[0]["acc@train_max"].endswith("@50") and rows[0]["acc@longest"].endswith("@60")
    assert 0.0 <= float(rows[0]["acc@longest"].split("@")[0]) <= 1.0
    assert rows[1]["state"] == "missing" and rows[1]["acc@longest"] == "-"
    assert rows[1]["note"] == "has train data and eval data"  # the datasets are shared by the seeds


def test_changed_training_value_makes_the_cell_stale(workdir):
    more = override("more.yaml", {"sparse_parity": {"train": {"steps": 13}}})
    rows = status_rows("config/tiny.yaml", more)  # merged in order over config/config.yaml
    assert rows[0]["state"] == "stale"
    assert rows[0]["note"] == "train config changed (train.steps: 12 -> 13)"
    assert rows[0]["acc@longest"] != "-"  # the old result is still shown
    assert rows[1]["state"] == "missing"


def test_changed_evaluation_or_data_value_names_that_job(workdir):
    more = override("eval.yaml", {"sparse_parity": {"eval": {"batch_size": 4}}})
    assert status_rows("config/tiny.yaml", more)[0]["note"] == "evaluate config changed (batch_size: 8 -> 4)"
    more = override("data.yaml", {"sparse_parity": {"data": {"n_train": 400}}})
    assert status_rows("config/tiny.yaml", more)[0]["note"] == (
        "train data config changed (params.n_samples: 300 -> 400)")


def test_changed_code_makes_the_cell_stale(workdir, monkeypatch):
    real = cell_jobs_module.stage_digest
    monkeypatch.setattr(cell_jobs_module, "stage_digest",
                        lambda stage, task=None, scheme=None: "edited" if stage == "evaluate"
                        else real(stage, task, scheme))
    row = status_rows("config/tiny.yaml")[0]
    assert row["state"] == "stale" and row["note"] == "evaluate code changed (evaluate sources)"


def test_remade_model_or_missing_output_makes_the_cell_stale(workdir):
    model_dir = Path("results/train/sparse_parity/rope_pose/k2/seed0")
    side = model_dir / "model.safetensors.prov.json"
    record = json.loads(side.read_text())
    record["artifact"]["sha256"] = "0" * 64  # as if retrained after the evaluation
    side.write_text(json.dumps(record))
    assert status_rows("config/tiny.yaml")[0]["note"] == "model remade after evaluate"
    (model_dir / "summary.json").unlink()
    note = status_rows("config/tiny.yaml")[0]["note"]
    assert note.split("; ") == [f"train: {model_dir / 'summary.json'} missing", "model remade after evaluate"]


def test_a_lost_mechanism_table_makes_the_cell_stale(workdir):
    """The evaluation job writes the accuracy table and the mechanism tables: Snakemake reruns it when
    either is lost, and the status says so."""
    from pipeline_src.planning import paths

    cell = {"task": "sparse_parity", "scheme": "rope_pose", "variant": "k2", "seed": 0}
    table = Path(paths.mechanism_tables(**cell)["attention"])
    table.unlink()
    assert status_rows("config/tiny.yaml")[0]["note"] == f"evaluate: {table} missing"


def test_a_diverged_cell_and_a_failed_training_are_named_with_its_last_logged_step(workdir):
    """Seed 1 with a huge learning rate diverges: recorded, evaluated without accuracy, shown as
    diverged with its step. A job that left only its log (failed) points to that log."""
    huge = override("huge.yaml", {"sparse_parity": {"train": {"lr": 1.0e3, "checkpoint_every": 2}}})
    config = load_config([Path("config/tiny.yaml"), Path(huge)])
    make_cell(config, {"task": "sparse_parity", "variant": "k2", "scheme": "rope_pose", "seed": 1})
    row = status_rows("config/tiny.yaml", huge)[1]
    assert row["state"] == "diverged" and row["acc@longest"] == "-"
    assert row["note"].startswith("training diverged at step ")
    shutil.rmtree("results/eval/sparse_parity/rope_pose/k2/seed1")
    log = Path("results/logs/eval/sparse_parity/rope_pose/k2/seed1.log")
    log.parent.mkdir(parents=True)
    log.write_text("Traceback ...\n")
    note = status_rows("config/tiny.yaml", huge)[1]["note"]
    assert (note.startswith("training diverged at step ")
            and note.endswith(f"; evaluation failed or still running: see {log}"))
    log = Path("results/logs/train/sparse_parity/rope_pose/k2/seed1.log")
    shutil.rmtree("results/train/sparse_parity/rope_pose/k2/seed1")
    log.parent.mkdir(parents=True)
    log.write_text("Traceback ...\n")
    assert status_rows("config/tiny.yaml")[1]["note"] == f"training failed or still running: see {log}"
    log.write_text("\n".join(["steps: 12000", *progress_lines(12000, (7800, 7900), seconds_per_window=8.0), ""]))
    assert status_rows("config/tiny.yaml")[1]["note"] == (
        f"training failed or still running (last logged step 7900 of 12000, eta 328 s): see {log}")


def progress_lines(total: int, steps: tuple[int, ...], seconds_per_window: float) -> list[str]:
    """The lines the training loop prints (its own ``_report``) at ``steps``, 100 steps a window."""
    from pipeline_src.training.run_state import LOG_SCHEMA
    from pipeline_src.training.train import _report

    said: list[str] = []
    log = [[step, 0.04, 0.99, float("nan"), 3.6e-4, 1.0, seconds_per_window * step / 100]
           for step in range(1, max(steps) + 1)]
    assert len(log[0]) == len(LOG_SCHEMA)
    for step in steps:
        _report(said.append, log[:step], 100, total)
    return said


def test_unfinished_cells_lists_diverged_cells_and_jobs_that_left_only_a_log(tmp_path):
    from pipeline_src.runs.cell_status import unfinished_cells, unfinished_warning

    assert unfinished_cells(tmp_path) == {"cells whose training diverged": "none",
                                          "jobs that failed (their log, no output)": "none"}
    assert unfinished_warning(tmp_path) == ""
    cell = "sparse_parity/rope/k2/seed0"
    for path, text in {f"train/{cell}/summary.json": '{"diverged": {"step": 7, "reason": "the loss is nan"}}',
                       f"train/{cell}/model.safetensors": "", f"logs/train/{cell}.log": "",  # trained
                       f"logs/eval/{cell}.log": "",  # evaluation failed: no accuracy.parquet
                       "logs/train/sparse_parity/rope/k2/seed1.log": ""}.items():  # training failed
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    found = unfinished_cells(tmp_path)
    assert found["cells whose training diverged"] == [f"{cell}: training diverged at step 7 (the loss is nan)"]
    assert found["jobs that failed (their log, no output)"] == [
        str(tmp_path / "logs/train/sparse_parity/rope/k2/seed1.log"), str(tmp_path / f"logs/eval/{cell}.log")]
    assert unfinished_warning(tmp_path).startswith("WARNING: cells whose training diverged:\n  sparse_parity/")


def test_load_config_merges_like_snakemake(workdir):
    more = override("more.yaml", {"sparse_parity": {"seeds": [5], "eval": {"batch_size": 4}}})
    config = load_config([Path("config/tiny.yaml"), Path(more)])
    section = config["sparse_parity"]
    assert section["seeds"] == [5]  # lists are replaced
    assert section["eval"]["batch_size"] == 4 and section["eval"]["n_per_cell"] == 6  # dicts merged
    assert section["data"]["l_max"] == 25  # from config/config.yaml


def test_bad_configs_name_the_file(workdir):
    bad = override("bad.yaml", {"sparse_parity": {"no_such_field": 1}})
    with pytest.raises(ConfigError, match="config/bad.yaml"):
        load_config([Path(bad)])
    with pytest.raises(ConfigError, match="config/absent.yaml: config file not found"):
        load_config([Path("config/absent.yaml")])
    shown = CliRunner().invoke(main, ["status", "--configfile", bad])
    assert shown.exit_code != 0 and "config/bad.yaml" in shown.output


def test_task_filter(workdir):
    shown = CliRunner().invoke(main, ["status", "--configfile", "config/tiny.yaml", "--task", "sparse_parity",
                                      "--wide"])
    assert shown.exit_code == 0 and shown.output.rstrip().endswith("2 cells: 1 done, 0 diverged, 0 stale, 1 missing")
    shown = CliRunner().invoke(main, ["status", "--configfile", "config/tiny.yaml", "--task", "parity_scratchpad"])
    assert shown.exit_code != 0 and "not synthetic tasks of this config: parity_scratchpad" in shown.output


def test_notes_are_cut_to_the_terminal_width_unless_wide(workdir):
    more = override("steps.yaml", {"sparse_parity": {"train": {"steps": 9}}})  # a long "config changed" note
    args = ["status", "--configfile", "config/tiny.yaml", "--configfile", more]
    narrow = CliRunner().invoke(main, args, env={"COLUMNS": "70"})
    assert narrow.exit_code == 0 and "--wide shows them whole" in narrow.output
    table = narrow.output.splitlines()[:-2]
    assert all(len(line) <= 70 for line in table) and any(line.endswith("...") for line in table)
    wide = CliRunner().invoke(main, [*args, "--wide"], env={"COLUMNS": "70"})
    assert "train.steps: 12 -> 9" in wide.output and "--wide" not in wide.output


@pytest.mark.e2e
def test_cell_jobs_are_the_jobs_the_rules_plan(tmp_path):
    """The job chain is written twice: as rules (workflow/rules) and as status.cell_jobs, which
    `lengthgen status`, provenance checks and each figure's inputs follow. Every job of the smoke
    config's dry run is one of cell_jobs with the same rule, spec and outputs, and the other way round."""
    import re
    import subprocess
    import sys

    from pipeline_src.planning import jobs
    from tests.helpers import copy_workflow, planned_blocks

    workdir = copy_workflow(tmp_path)
    done = subprocess.run([sys.executable, "-m", "snakemake", "-n", "-p", "--cores", "1", "all", "--configfile",
                           "config/smoke.yaml", "--config", "device=cpu"],
                          cwd=workdir, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    planned = set()
    for rule, block in planned_blocks(done.stdout):
        spec = re.search(r"--spec '([^']*)'", block)
        if spec and rule in {"train_data", "eval_data", "train", "evaluate"}:
            outputs = re.search(r"^\s*output: (.*)$", block, re.M)[1].split(", ")
            planned.add((rule, canonical_json(json.loads(spec[1])), tuple(sorted(outputs))))
    config = load_config([workdir / "config" / "smoke.yaml"], base=workdir / "config" / "config.yaml")
    config["device"] = "cpu"
    described = {(job.rule, canonical_json(job.spec), tuple(sorted(job.outputs)))
                 for task in jobs.tasks(config) for cell in jobs.cells(config, task)
                 for job in cell_jobs(config, cell)}
    assert planned and planned == described

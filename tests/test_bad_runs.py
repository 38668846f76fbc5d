"""The bad-input suite's cases on a finished smoke run (issue 64; the others, through the `lengthgen`
command, are in tests/test_bad_inputs.py): `--config device=cuda` on a machine without CUDA, a
truncated dataset, a bit-flipped model, an accuracy table with a column of the wrong type, a step run by
hand into results/ (a model trained with other steps, a table evaluated in another precision), a file
adopted as it is, and Ctrl-C during a run. Each run stops with one line naming the field or the file,
and every finished model, table and figure is byte-identical afterwards; the command the line names
(or a plain rerun) makes the run whole again, with nothing deleted by hand."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from tests.helpers import changed_files, copy_workflow, finished_files, planned_jobs, snakemake

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

SMOKE = ("all", "--configfile", "config/smoke.yaml")
DATA = "results/data/sparse_parity/train_k2.parquet"
MODEL = "results/train/sparse_parity/rope_pose/k2/seed0/model.safetensors"
TABLE = "results/eval/sparse_parity/abs_shift/k2/seed1/accuracy.parquet"
CAUSE = "; nothing was run or removed"


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A copy of the workflow that has run the smoke config."""
    workdir = copy_workflow(tmp_path_factory.mktemp("finished"))
    snakemake(workdir, *SMOKE)
    return workdir


@pytest.fixture
def run(finished, tmp_path) -> Path:
    """A copy of the finished run (times kept, Snakemake's records too) for one case to break."""
    return Path(shutil.copytree(finished, tmp_path / "run", symlinks=True))


def stopped(workdir: Path, *extra: str) -> str:
    """Run the smoke config (with ``extra``), which must stop before any job, with one line saying
    why; that line."""
    before = finished_files(workdir)
    done = snakemake(workdir, *SMOKE, *extra, check=False)
    said = [line for line in (done.stdout + done.stderr).splitlines() if CAUSE in line]
    assert done.returncode != 0 and len(said) == 1, done.stdout + done.stderr
    assert "Finished job" not in done.stderr and "Removing output files" not in done.stderr
    assert changed_files(before, workdir) == [] and finished_files(workdir) == before  # byte-identical, all
    return said[0]


def remade(workdir: Path, line: str, before: dict) -> None:
    """Run the command ``line`` names; the run is then whole: every file as it was, nothing to do."""
    command = shlex.split(line.split("Make it again: ")[1].split("   (or use it")[0])
    assert command[0] == "snakemake"
    snakemake(workdir, *command[1:])
    assert changed_files(before, workdir) == []
    assert planned_jobs(snakemake(workdir, "-n", *SMOKE)) == {}


def test_a_gpu_asked_for_on_a_machine_without_one_stops_before_any_model_is_removed(run):
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    line = stopped(run, "--config", "device=cuda")
    assert line.startswith("device: 'cuda' asks for a GPU, but CUDA is not available on this machine"), line
    assert planned_jobs(snakemake(run, "-n", *SMOKE)) == {}  # the plain rerun: nothing lost, nothing to do


@pytest.mark.parametrize("path, damage", [
    (DATA, lambda p: os.truncate(p, p.stat().st_size // 2)),
    (MODEL, lambda p: p.write_bytes(_flipped(p.read_bytes()))),
    (TABLE, lambda p: pl.read_parquet(p).with_columns(pl.col("accuracy").cast(pl.String)).write_parquet(p)),
], ids=["truncated dataset", "bit-flipped model", "wrong-typed accuracy table"])
def test_a_damaged_file_stops_the_run_naming_it_and_its_command_makes_it_again(run, path, damage):
    before = finished_files(run)
    damage(run / path)
    line = stopped(run)
    assert line.startswith(f"{path}: changed since it was written (sha256 "), line
    assert f"--forcerun {path}" in line and f"lengthgen adopt {path}" in line and "delete" not in line
    remade(run, line, before)


def _by_hand(step: str, path: str, spec: dict, inputs: dict) -> list[str]:
    """The ``lengthgen`` command line that makes ``path`` again by hand, with ``spec``, from its record's inputs."""
    if step == "train":
        return ["train", "--spec", json.dumps(spec), "--train-data", inputs["train_data"]["path"],
                "--out-dir", str(Path(path).parent)]
    return ["evaluate", "--spec", json.dumps(spec), "--model-dir", str(Path(inputs["model"]["path"]).parent),
            "--eval-data", inputs["eval_data"]["path"], "--out", path]


@pytest.mark.parametrize("step, path, field, value", [("train", MODEL, "train.steps", 5),
                                                      ("evaluate", TABLE, "precision", "bf16")],
                         ids=["a model trained with 5 steps", "a table evaluated in bf16"])
def test_a_step_run_by_hand_into_results_stops_the_run_naming_the_field(run, step, path, field, value):
    """``lengthgen train`` by hand over a finished model with 5 steps, or ``lengthgen evaluate`` over a finished
    accuracy table with another precision: the run that would build on it stops, naming the step run by hand
    and the field; ``provenance --verify`` names it too; the command the line names makes it as its job did."""
    from pipeline_src.provenance.sidecars import read_record, workflow_rule

    before = finished_files(run)
    record = read_record(run / path)
    section, _, key = field.rpartition(".")
    spec = json.loads(json.dumps(record["config"]))
    (spec[section] if section else spec)[key] = value
    was = (record["config"][section] if section else record["config"])[key]
    lengthgen = Path(sys.executable).with_name("lengthgen")
    by_hand = subprocess.run([lengthgen, *_by_hand(step, path, spec, record["inputs"])], cwd=run,
                             capture_output=True, text=True)
    assert by_hand.returncode == 0, by_hand.stderr
    rule = workflow_rule(record["rule"])
    line = stopped(run)
    assert line.startswith(f"{path}: made by hand by rule 'manual {rule}', not by rule {rule}: {field} "
                           f"{json.dumps(value)}, this run's {json.dumps(was)}"), line
    assert f"lengthgen adopt {path}" in line
    verified = subprocess.run([lengthgen, "provenance", "--verify", path], cwd=run, capture_output=True, text=True)
    assert verified.returncode == 1 and f"BY HAND  {path}" in verified.stdout, verified.stdout + verified.stderr
    remade(run, line, before)


def test_an_adopted_file_is_named_in_everything_made_from_it_until_it_is_made_again(run):
    before = finished_files(run)
    (run / MODEL).write_bytes(_flipped((run / MODEL).read_bytes()))
    line = stopped(run)
    adopted = subprocess.run([Path(sys.executable).with_name("lengthgen"), "adopt", MODEL, "--reason", "a test"],
                             cwd=run, capture_output=True, text=True)
    assert adopted.returncode == 0, adopted.stderr
    snakemake(run, *SMOKE)
    from pipeline_src.provenance.sidecars import read_record

    for made in ("results/eval/sparse_parity/rope_pose/k2/seed0/accuracy.parquet", "results/figures/figure1.png"):
        assert [item["path"] for item in read_record(run / made)["rests_on_adopted"]] == [MODEL], made
    assert f"Rests on 1 adopted file(s), used as they are, not as their jobs made them: {MODEL}" in \
        (run / "results/figures/figure1.caption.rst").read_text()
    status = subprocess.run([Path(sys.executable).with_name("lengthgen"), "status", "--configfile", "config/smoke.yaml",
                             "--task", "sparse_parity", "--wide"], cwd=run, capture_output=True, text=True)
    assert f"rests on adopted {MODEL}" in status.stdout, status.stdout + status.stderr
    snakemake(run, "--report", "report.html", "--configfile", "config/smoke.yaml")
    page = (run / "report.html").read_text()
    assert "Results resting on files adopted as they are" in page and MODEL in page

    remade(run, line, before)  # the command the first stop named: the model as its job made it
    assert "rests_on_adopted" not in (run / "results/figures/figure1.png.prov.json").read_text()


def test_ctrl_c_during_a_run_stops_it_and_a_plain_rerun_makes_it_whole(run):
    before = finished_files(run)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    job = subprocess.Popen([sys.executable, "-m", "snakemake", "--cores", "2", *SMOKE, "--forcerun", DATA],
                           cwd=run, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)
    deadline = time.monotonic() + 300
    trained = sorted(run.glob("results/train/sparse_parity/*/k2/*/model.safetensors"))
    while job.poll() is None and all(p.exists() for p in trained) and time.monotonic() < deadline:
        time.sleep(0.02)  # until a training starts (Snakemake has removed its model)
    os.killpg(job.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the whole group
    assert job.wait(timeout=300) != 0
    snakemake(run, *SMOKE)
    assert changed_files(before, run) == []
    assert planned_jobs(snakemake(run, "-n", *SMOKE)) == {}


def _flipped(data: bytes) -> bytes:
    flipped = bytearray(data)
    flipped[len(flipped) // 2] ^= 0x10
    return bytes(flipped)

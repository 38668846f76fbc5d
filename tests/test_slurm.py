"""profiles/slurm on a real one-node Slurm (tests/slurm_cluster.py), with the documented settings
only. One chain of the smoke config (data jobs; two cells' trainings and evaluations in one group job;
the figure, a local rule), device: cpu, then device: cuda on this CPU-only machine, where the model jobs
ask for a GPU and fail; Slurm's own records say where each job ran and what it asked for. The whole
smoke config through Slurm is the slow test (pytest -m slow). Skipped where slurm-wlm and munge are
not installed (.ci/run installs them)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import slurm_cluster
from tests.helpers import copy_workflow, write_override

pytest.importorskip("snakemake_executor_plugin_slurm")
pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(slurm_cluster.missing() is not None, reason=str(slurm_cluster.missing()))]

# The node has this machine's CPUs; a submission of models sharing a GPU takes 2 of them, two models
# to a GPU, each model job 1 CPU and 2000 MB (docs/cluster.md, "Run on a cluster").
SETTINGS = {"LENGTHGEN_SLURM_PARTITION": "cpu", "LENGTHGEN_SLURM_GPU_PARTITION": "gpu",
            "LENGTHGEN_SLURM_MODEL_CPUS": "2", "LENGTHGEN_SLURM_MODEL_MEM_MB": "4000",
            "LENGTHGEN_SLURM_MODELS_PER_GPU": "2"}
# Without Slurm accounting (sacct fails) the plugin must poll squeue; small jobs: poll early.
FLAGS = ("--slurm-status-command", "squeue", "--slurm-init-seconds-before-status-checks", "1")
GROUP = "models_evaluate_train"  # the group job of the cells' trainings and evaluations
LAUNCHER = Path(__file__).with_name("slurm_snakemake.py")
TWO_CELLS = {"sparse_parity": {"schemes": ["rope_pose"], "seeds": [0, 1]}}


def run(workdir: Path, env: dict, target: str, *configfiles: str, device: str,
        timeout: int = 1800) -> tuple[subprocess.CompletedProcess, float]:
    """``snakemake <target>`` through profiles/slurm as docs/cluster.md shows it (its status checks at
    most 2 s apart: tests/slurm_snakemake.py); the result and its seconds (a run still going after
    ``timeout`` seconds fails the test)."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(LAUNCHER), target, "--workflow-profile", "profiles/slurm",
         "--configfile", "config/smoke.yaml", *configfiles, "--config", f"device={device}", *FLAGS],
        cwd=workdir, env={**env, **SETTINGS, "PATH": path}, capture_output=True, text=True, timeout=timeout)
    return done, time.monotonic() - start


def slurm_jobs(env: dict) -> dict[str, dict[str, str]]:
    """Job id -> slurmctld's record of it (scontrol keeps finished jobs for MinJobAge, 300 s)."""
    done = subprocess.run(["scontrol", "show", "job", "-o"], env=env, capture_output=True, text=True, check=True)
    records = [dict(re.findall(r"(\w+)=(\S*)", line)) for line in done.stdout.splitlines() if "JobId=" in line]
    return {record["JobId"]: record for record in records}


def rule_of(record: dict[str, str]) -> str:
    """The rule of a job, from the comment the plugin gives each submission (rule_<rule>_wildcards_...;
    a group job's rule is its group and rules: models_evaluate_train)."""
    return record["Comment"].removeprefix("rule_").split("_wildcards_")[0]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("cluster")
    with slurm_cluster.one_node_slurm(root, cpus=os.cpu_count() or 1) as env:
        yield env


def test_one_chain_runs_where_the_settings_say_and_a_failed_job_stops_the_run(cluster, tmp_path):
    workdir = copy_workflow(tmp_path)
    two_cells = write_override(workdir, "two_cells.yaml", TWO_CELLS)
    done, chain_seconds = run(workdir, cluster, "figure1", two_cells, device="cpu")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (workdir / "results" / "figures" / "figure1.png").exists()
    jobs = slurm_jobs(cluster)
    by_rule = {rule_of(record): record for record in jobs.values()}
    assert set(by_rule) == {"train_data", "eval_data", GROUP}, jobs
    assert all(record["JobState"] == "COMPLETED" for record in jobs.values()), jobs
    for rule in ("train_data", "eval_data"):
        assert by_rule[rule]["Partition"] == "cpu" and "TresPerNode" not in by_rule[rule], by_rule[rule]
    models = by_rule[GROUP]  # both cells' trainings and evaluations, in one submission of 2 shares
    assert models["Partition"] == "gpu" and "TresPerNode" not in models, models
    assert models["NumCPUs"] == "2" and models["MinMemoryNode"] == "4000M", models
    assert len(list(workdir.glob("results/train/sparse_parity/rope_pose/k2/seed*/summary.json"))) == 2

    # device: cuda reruns the model jobs, which now ask for a GPU (here a pretend one): the
    # training fails on this CPU-only torch, and the run reports it and stops: one submission, failed,
    # none retried. No bound on its seconds (a busy machine doubles them); a run that does not stop is
    # caught by the timeout.
    cuda, seconds = run(workdir, cluster, "figure1", two_cells, device="cuda", timeout=600)
    print(f"one chain through Slurm: {chain_seconds:.0f} s; the failing run: {seconds:.0f} s")
    failed = {job_id: record for job_id, record in slurm_jobs(cluster).items() if job_id not in jobs}
    assert cuda.returncode != 0, cuda.stdout + cuda.stderr
    assert [(rule_of(r), r["Partition"], r.get("TresPerNode"), r["JobState"]) for r in failed.values()] == \
        [(GROUP, "gpu", "gres:gpu:1", "FAILED")], failed
    assert "Error in group models" in cuda.stderr and "CUDA is not available" in cuda.stderr, cuda.stderr


@pytest.mark.slow
def test_the_whole_smoke_config_runs_through_slurm(cluster, tmp_path):
    workdir = copy_workflow(tmp_path)
    done, seconds = run(workdir, cluster, "all", device="cpu")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Nothing to be done" in subprocess.run(
        [sys.executable, "-m", "snakemake", "all", "-n", "--configfile", "config/smoke.yaml", "--config", "device=cpu"],
        cwd=workdir, capture_output=True, text=True).stdout
    print(f"whole smoke config through Slurm: {seconds:.0f} s")


def steps_for(workdir: Path, seconds: float) -> int:
    """Training steps of the smoke config's first cell that take about ``seconds`` on this machine (1
    thread), from the per-step wall-clock of a short local training in ``workdir``: CPUs differ by
    several times, so a fixed step count is killed by a 1-minute limit on one machine and not on another."""
    import polars as pl

    probe, model = 2000, "results/train/sparse_parity/rope_pose/k2/seed0/model.safetensors"
    override = write_override(workdir, "probe.yaml", {"sparse_parity": {
        "schemes": ["rope_pose"], "seeds": [0], "train": {"steps": probe}}})
    subprocess.run([sys.executable, "-m", "snakemake", model, "--cores", "1", "--configfile", "config/smoke.yaml",
                    override, "--config", "device=cpu"], cwd=workdir, check=True, capture_output=True)
    clock = pl.read_parquet(workdir / Path(model).parent / "train_log.parquet")["seconds"]
    per_step = (clock[-1] - clock[0]) / (probe - 1)
    return 100 * -(-int(seconds / per_step) // 100)


def trainings_running(workdir: Path) -> list[int]:
    """The PIDs of training processes still running in ``workdir`` (none should outlive its submission)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            command = (proc / "cmdline").read_bytes().split(b"\0")
            if b"train" in command and os.readlink(proc / "cwd") == str(workdir):
                found.append(int(proc.name))
        except (OSError, ValueError):
            continue
    return found


def submission_story(log: Path, done: subprocess.CompletedProcess, workdir: Path) -> tuple[int | None, str]:
    """Where one submission of the training stopped with its state saved (None: it did not), and what it
    did, in one line for a failing assertion: the training log's (rewritten by each submission) own lines,
    its last step line, any training left running, and the tail of Snakemake's output."""
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    said = [line for line in lines if not line.startswith("step ")]
    stopped = [int(m[1]) for line in said if (m := re.match(r"Stopped: SIGTERM at step (\d+) of", line))]
    last = [line for line in lines if line.startswith("step ")][-1:]
    tail = " | ".join((done.stdout + done.stderr).strip().splitlines()[-3:])
    return (stopped[-1] if stopped else None,
            f"exit {done.returncode}; {said[:4]} last {last}; running after it: {trainings_running(workdir)}; "
            f"snakemake: {tail}")


@pytest.mark.slow
def test_a_training_past_its_time_limit_is_resubmitted_until_done_and_equals_the_uninterrupted_one(cluster, tmp_path):
    """A training that needs more than its 1-minute limit (``LENGTHGEN_SLURM_TRAIN_RUNTIME=1``, about 150 s
    of training on this machine, no checkpoint due before its end): Slurm sends SIGTERM at the limit, the
    training saves its state there and the run fails; the same command again resumes it, until it is done.
    Its weights and log equal those of the same spec trained on this machine without a break."""
    import json

    from pipeline_src.provenance.sidecars import read_record

    (tmp_path / "slurm").mkdir()
    (tmp_path / "probe").mkdir()
    steps = steps_for(copy_workflow(tmp_path / "probe"), seconds=150)
    workdir = copy_workflow(tmp_path / "slurm")
    model = "results/train/sparse_parity/rope_pose/k2/seed0/model.safetensors"
    long = write_override(workdir, "long.yaml", {"sparse_parity": {
        "schemes": ["rope_pose"], "seeds": [0], "train": {"steps": steps, "checkpoint_every": 10 * steps}}})
    limited = {**cluster, "LENGTHGEN_SLURM_TRAIN_RUNTIME": "1"}
    log = workdir / "results/logs/train/sparse_parity/rope_pose/k2/seed0.log"
    # Each submission ends done, or killed at its limit with its state saved at a later step than the
    # last one's: a submission that neither finishes nor saves (or leaves a training running) fails at once.
    attempts, story, saved = [], [], [0]
    try:
        while not (workdir / model).exists() and len(attempts) < 12:
            done, seconds = run(workdir, limited, model, long, device="cpu", timeout=900)
            attempts.append((done.returncode, round(seconds)))
            stopped, said = submission_story(log, done, workdir)
            story.append(f"submission {len(story) + 1}: {said}")
            if (workdir / model).exists() or stopped is None or stopped <= saved[-1] or trainings_running(workdir):
                break
            saved.append(stopped)
    finally:
        for pid in trainings_running(workdir):
            os.kill(pid, signal.SIGKILL)
    told = "\n".join(story)
    print(f"{steps} steps: submissions until done (exit status, seconds): {attempts}; saved at steps {saved[1:]}")
    assert (workdir / model).exists() and len(attempts) >= 2, f"{attempts}\n{told}"  # killed at least once, then done
    assert attempts[-1][0] == 0 and all(code != 0 for code, _ in attempts[:-1]), f"{attempts}\n{told}"
    assert f"resuming {Path(model).parent} from step {saved[-1]}" in log.read_text(), told

    record = read_record(workdir / model)
    reference = tmp_path / "reference"
    subprocess.run([sys.executable, "-m", "pipeline_src.cli", "train", "--spec", json.dumps(record["config"]),
                    "--threads", "1", "--train-data", str(workdir / record["inputs"]["train_data"]["path"]),
                    "--out-dir", str(reference)], check=True, capture_output=True)
    from safetensors.torch import load_file

    resumed, straight = load_file(workdir / model), load_file(reference / "model.safetensors")
    assert resumed.keys() == straight.keys() and all((resumed[name] == straight[name]).all() for name in straight)

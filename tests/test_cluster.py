"""The SLURM profile: a dry run with snakemake-executor-plugin-slurm and the resources each rule
would request (GPU for training and evaluation only, runtime, memory, CPUs, account and partition
from the environment, training and evaluation packed several models to one GPU)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_workflow import copy_workflow

pytest.importorskip("snakemake_executor_plugin_slurm")

GPU_RULES = {"train", "evaluate", "language_train", "language_eval", "language_influence"}


def slurm_dry_run(workdir: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", "all", "-n", "--workflow-profile", "profiles/slurm",
         "--configfile", "config/smoke.yaml"],
        cwd=workdir, env={**os.environ, **env}, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def requested(text: str) -> dict[str, list[dict[str, str]]]:
    """Rule -> the resources of each of its jobs, from the dry run's job listing."""
    jobs: dict[str, list[dict[str, str]]] = {}
    for block in re.split(r"^\s*rule ", text, flags=re.M)[1:]:
        name = block.split(":", 1)[0]
        found = re.search(r"^\s*resources: (.*)$", block, re.M)
        pairs = [item.split("=", 1) for item in found[1].split(", ")] if found else []
        jobs.setdefault(name, []).append({key: value for key, value in pairs})
    return jobs


@pytest.fixture(scope="module")
def listing(tmp_path_factory) -> str:
    workdir = copy_workflow(tmp_path_factory.mktemp("slurm"))
    env = {"LENGTHGEN_SLURM_ACCOUNT": "acct42", "LENGTHGEN_SLURM_PARTITION": "cpuq",
           "LENGTHGEN_SLURM_GPU_PARTITION": "gpuq"}
    return slurm_dry_run(workdir, env)


@pytest.fixture(scope="module")
def dry_run(listing) -> dict[str, list[dict[str, str]]]:
    return requested(listing)


def test_every_rule_of_the_smoke_config_is_planned(dry_run):
    assert GPU_RULES | {"train_data", "eval_data", "language_corpus"} <= set(dry_run)


def test_training_and_evaluation_request_a_gpu_and_nothing_else_does(dry_run):
    for rule, jobs in dry_run.items():
        for resources in jobs:
            if rule in GPU_RULES:  # as a string, requested once per group job (see below)
                assert resources.get("gres") == "gpu:1" and resources.get("gpu") == "0", (rule, resources)
                assert resources["slurm_partition"] == "gpuq", (rule, resources)
            else:
                assert "gpu" not in resources and "gres" not in resources, (rule, resources)


def test_account_and_partition_come_from_the_environment(dry_run):
    for rule in ("train_data", "eval_data", "language_corpus"):
        for resources in dry_run[rule]:
            assert resources["slurm_account"] == "acct42" and resources["slurm_partition"] == "cpuq"
    assert all(r["slurm_account"] == "acct42" for jobs in dry_run.values() for r in jobs if r)


def test_runtime_memory_and_cpus_per_rule(dry_run):
    expected = {"train": ("720", "8000", "2"), "evaluate": ("60", "8000", "2"),
                "train_data": ("60", "16000", "1"), "language_influence": ("240", "16000", "4")}
    for rule, (runtime, mem_mb, cpus) in expected.items():
        for resources in dry_run[rule]:
            assert (resources["runtime"], resources["mem_mb"], resources["cpus_per_task"]) == (runtime, mem_mb, cpus)


def test_four_cells_share_one_gpu_per_submission(listing, dry_run):
    """The smoke config's trainings and evaluations go out four cells to a group job; Snakemake's
    own arithmetic for a group job (the integer resources of side-by-side jobs summed, a string one
    requested once) gives each submission one GPU and the CPUs and memory of four jobs."""
    from snakemake.resources import GroupResources

    from tests.test_workflow import MODELS

    assert len(dry_run["train"]) == len(dry_run["evaluate"]) == MODELS
    assert listing.count("Group job models") == -(-MODELS // 4)

    kept = {"gres": str, "gpu": int, "cpus_per_task": int, "mem_mb": int, "runtime": int}

    class Job:
        pipe_group = None

        def __init__(self, resources: dict[str, str]):
            self.resources = {key: kept[key](value) for key, value in resources.items() if key in kept}

    class Unlimited:
        def get(self, name):
            return type("Limit", (), {"value": None})()

    trainings = [Job(r) for r in dry_run["train"][:4]]
    evaluations = [Job(r) for r in dry_run["evaluate"][:4]]
    group = GroupResources.basic_layered([trainings, evaluations], Unlimited(), run_local=False)
    assert group["gres"] == "gpu:1" and group["gpu"] == 0
    assert (group["cpus_per_task"], group["mem_mb"], group["runtime"]) == (8, 32000, 720 + 60)


def test_unset_environment_leaves_account_and_partition_to_slurm(tmp_path):
    workdir = copy_workflow(tmp_path)
    env = {key: "" for key in ("LENGTHGEN_SLURM_ACCOUNT", "LENGTHGEN_SLURM_PARTITION",
                               "LENGTHGEN_SLURM_GPU_PARTITION")}
    jobs = requested(slurm_dry_run(workdir, env))
    assert all(r.get("slurm_account") == "" and r.get("slurm_partition") == "" for js in jobs.values() for r in js if r)

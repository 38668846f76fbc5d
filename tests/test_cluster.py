"""The SLURM profile: dry runs with snakemake-executor-plugin-slurm and the resources each rule
would request (a GPU for model jobs only when the config's device uses CUDA, runtime, memory and
CPUs, every setting from the environment, training and evaluation packed several models to one GPU
within one submission's CPUs and memory). tests/test_slurm.py runs the profile on a real Slurm."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import MODELS, REPO, copy_workflow

pytest.importorskip("snakemake_executor_plugin_slurm")

GPU_RULES = {"train", "evaluate", "language_train", "language_eval", "language_influence"}


def slurm_dry_run(workdir: Path, env: dict[str, str], *args: str, device: str = "cuda", check: bool = True) -> str:
    """The dry run of the smoke config through profiles/slurm with ``env``'s settings only (the
    caller's LENGTHGEN_SLURM_* cleared) and the config's ``device``."""
    clean = {key: value for key, value in os.environ.items() if not key.startswith("LENGTHGEN_SLURM_")}
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", "all", "-n", "--workflow-profile", "profiles/slurm",
         "--configfile", "config/smoke.yaml", "--config", f"device={device}", *args],
        cwd=workdir, env={**clean, **env}, capture_output=True, text=True, timeout=600)
    assert (done.returncode == 0) == check, done.stdout + done.stderr
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


def group_request(jobs: dict[str, list[dict[str, str]]], size: int) -> dict:
    """What Snakemake submits for a group job of ``size`` cells (their trainings, then their
    evaluations): its own group arithmetic (GroupResources.basic_layered) over the jobs' resources."""
    from snakemake.resources import GroupResources

    kept = {"gres": str, "gpu": int, "cpus_per_task": int, "mem_mb": int, "runtime": int}

    class Job:
        pipe_group = None

        def __init__(self, resources: dict[str, str]):
            self.resources = {key: kept[key](value) for key, value in resources.items() if key in kept}

    class Unlimited:
        def get(self, name):
            return type("Limit", (), {"value": None})()

    layers = [[Job(r) for r in jobs["train"][:size]], [Job(r) for r in jobs["evaluate"][:size]]]
    return GroupResources.basic_layered(layers, Unlimited(), run_local=False)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return copy_workflow(tmp_path_factory.mktemp("slurm"))


ENV = {"LENGTHGEN_SLURM_ACCOUNT": "acct42", "LENGTHGEN_SLURM_PARTITION": "cpuq",
       "LENGTHGEN_SLURM_GPU_PARTITION": "gpuq"}


@pytest.fixture(scope="module")
def listing(workdir) -> str:
    return slurm_dry_run(workdir, ENV)


@pytest.fixture(scope="module")
def dry_run(listing) -> dict[str, list[dict[str, str]]]:
    return requested(listing)


@pytest.mark.e2e
def test_every_rule_of_the_smoke_config_is_planned(dry_run):
    assert GPU_RULES | {"train_data", "eval_data", "language_corpus"} <= set(dry_run)


@pytest.mark.e2e
def test_with_cuda_model_jobs_request_a_gpu_and_nothing_else_does(dry_run):
    for rule, jobs in dry_run.items():
        for resources in jobs:
            if rule in GPU_RULES:  # as a string, requested once per group job (see below)
                assert resources.get("gres") == "gpu:1" and resources.get("gpu") == "0", (rule, resources)
                assert resources["slurm_partition"] == "gpuq", (rule, resources)
            else:
                assert "gpu" not in resources and "gres" not in resources, (rule, resources)


@pytest.fixture(scope="module")
def cpu_listing(workdir) -> str:
    """device: cpu, and models packed 8 to a submission as docs/cluster.md says."""
    return slurm_dry_run(workdir, {**ENV, "LENGTHGEN_SLURM_MODELS_PER_GPU": "8"}, device="cpu")


@pytest.mark.e2e
def test_with_device_cpu_no_job_requests_a_gpu(cpu_listing):
    for rule, jobs in requested(cpu_listing).items():
        for resources in jobs:
            assert resources.get("gres", "") == "" and resources.get("gpu", "0") == "0", (rule, resources)


@pytest.mark.e2e
def test_a_group_job_without_gpu_stays_within_one_submission(cpu_listing):
    """Eight CPU models to a group: never 8 x the CPUs and memory of a job of four, but one
    submission's 8 CPUs and 32000 MB shared by the eight."""
    assert "LENGTHGEN_SLURM_MODELS_PER_GPU=" in cluster_page_section()
    assert cpu_listing.count("Group job models") == -(-MODELS // 8)
    group = group_request(requested(cpu_listing), 8)
    assert group.get("gres", "") == "" and group["gpu"] == 0
    assert (group["cpus_per_task"], group["mem_mb"], group["runtime"]) == (8, 32000, 720 + 60)


@pytest.mark.e2e
def test_account_and_partition_come_from_the_environment(dry_run):
    for rule in ("train_data", "eval_data", "language_corpus"):
        for resources in dry_run[rule]:
            assert resources["slurm_account"] == "acct42" and resources["slurm_partition"] == "cpuq"
    assert all(r["slurm_account"] == "acct42" for jobs in dry_run.values() for r in jobs if r)


@pytest.mark.e2e
def test_runtime_memory_and_cpus_per_rule(dry_run):
    expected = {"train": ("720", "8000", "2"), "evaluate": ("60", "8000", "2"),
                "train_data": ("60", "16000", "1"), "language_influence": ("240", "32000", "8")}
    for rule, (runtime, mem_mb, cpus) in expected.items():
        for resources in dry_run[rule]:
            assert (resources["runtime"], resources["mem_mb"], resources["cpus_per_task"]) == (runtime, mem_mb, cpus)


@pytest.mark.e2e
def test_four_cells_share_one_gpu_per_submission(listing, dry_run):
    """The smoke config's trainings and evaluations go out four cells to a group job; Snakemake's
    own arithmetic for a group job (the integer resources of side-by-side jobs summed, a string one
    requested once) gives each submission one GPU and the CPUs and memory of one submission."""
    assert len(dry_run["train"]) == len(dry_run["evaluate"]) == MODELS
    assert listing.count("Group job models") == -(-MODELS // 4)
    group = group_request(dry_run, 4)
    assert group["gres"] == "gpu:1" and group["gpu"] == 0
    assert (group["cpus_per_task"], group["mem_mb"], group["runtime"]) == (8, 32000, 720 + 60)


NODE = {"LENGTHGEN_SLURM_MODEL_CPUS": "2", "LENGTHGEN_SLURM_MODEL_MEM_MB": "6000",
        "LENGTHGEN_SLURM_MODELS_PER_GPU": "2", "LENGTHGEN_SLURM_GRES": "gpu:a100:1"}


@pytest.mark.e2e
def test_node_size_settings_size_every_model_submission(workdir):
    """A smaller GPU node (2 CPUs and 6000 MB per GPU, 2 models to a GPU, a named GPU model): each
    model job and each group asks for no more, so no job waits for a node that does not exist."""
    listing = slurm_dry_run(workdir, NODE, "--printshellcmds")
    jobs = requested(listing)
    assert listing.count("Group job models") == -(-MODELS // 2)
    for rule in ("train", "evaluate"):
        assert {(r["cpus_per_task"], r["mem_mb"]) for r in jobs[rule]} == {("1", "3000")}
    for rule in ("language_train", "language_eval", "language_influence"):
        assert {(r["cpus_per_task"], r["mem_mb"]) for r in jobs[rule]} == {("2", "6000")}
    group = group_request(jobs, 2)
    assert (group["cpus_per_task"], group["mem_mb"], group["gres"]) == (2, 6000, "gpu:a100:1")
    assert "lengthgen train" in listing and not re.search(r"lengthgen (train|evaluate) .*--threads [^1]", listing)


def cluster_page_section() -> str:
    text = (REPO / "docs" / "cluster.md").read_text()
    return text.split("## Run on a cluster", 1)[1].split("\n## ", 1)[0]


@pytest.mark.e2e
def test_the_documented_runtime_override_keeps_the_rest_of_the_profile(workdir, dry_run):
    """docs/cluster.md's way to give training more time changes that and nothing else: a --set-resources
    on the command line would replace the profile's whole set-resources."""
    override = {"LENGTHGEN_SLURM_TRAIN_RUNTIME": "1440"}
    assert ("LENGTHGEN_SLURM_TRAIN_RUNTIME=1440 snakemake all --workflow-profile profiles/slurm"
            in cluster_page_section())
    changed = requested(slurm_dry_run(workdir, {**ENV, **override}))
    assert {r["runtime"] for r in changed["train"]} == {"1440"}
    assert [{**r, "runtime": "720"} for r in changed["train"]] == dry_run["train"]
    assert {rule: jobs for rule, jobs in changed.items() if rule != "train"} == \
        {rule: jobs for rule, jobs in dry_run.items() if rule != "train"}


def test_the_cluster_page_says_what_an_unset_account_does():
    """snakemake-executor-plugin-slurm's guess of an account fails (its sacct call is a pipe run
    without a shell), so an unset LENGTHGEN_SLURM_ACCOUNT means sbatch without -A."""
    section = cluster_page_section()
    account = next(line for line in section.splitlines() if "LENGTHGEN_SLURM_ACCOUNT=" in line)
    assert "guess" not in section and "no `-A`" in account, account


@pytest.mark.e2e
def test_a_malformed_setting_fails_in_one_line_naming_the_variable(workdir):
    text = slurm_dry_run(workdir, {"LENGTHGEN_SLURM_MODEL_CPUS": "eight"}, check=False)
    assert text.strip().splitlines()[-1].endswith("LENGTHGEN_SLURM_MODEL_CPUS='eight': expected a whole number above 0")


@pytest.mark.e2e
def test_unset_environment_leaves_account_and_partition_to_slurm(workdir):
    jobs = requested(slurm_dry_run(workdir, {}))
    assert all(r.get("slurm_account") == "" and r.get("slurm_partition") == "" for js in jobs.values() for r in js if r)

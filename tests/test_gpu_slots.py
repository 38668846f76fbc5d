"""Several models per GPU: each local model job claims a slot of one GPU, no GPU holds more than
models_per_gpu jobs, and the workflow runs GPUs x models_per_gpu of them at once. Tested on the CPU
with pretend GPUs (LENGTHGEN_GPUS), CUDA hidden: the jobs run on the CPU and record the slot they held,
on a machine with fewer real GPUs too."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline_src.devices.setting import GPUS_ENV, SLOTS_ENV
from tests.helpers import copy_workflow, planned_jobs, snakemake, write_override

pytestmark = pytest.mark.e2e  # GPU slots claimed by subprocesses, and Snakemake runs

CLAIM = ("import sys, time\nfrom pipeline_src.devices.placement import claim_gpu_slot\n"
         "print(claim_gpu_slot(wait_seconds=0.1), flush=True)\ntime.sleep(float(sys.argv[1]))")


def claimer(folder: Path, hold: float) -> subprocess.Popen:
    env = {**os.environ, SLOTS_ENV: f"2,2,{folder}"}
    return subprocess.Popen([sys.executable, "-c", CLAIM, str(hold)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_slots_spread_over_the_gpus_and_a_fifth_job_waits_for_a_free_one(tmp_path):
    holders = [claimer(tmp_path, 300) for _ in range(4)]  # held until killed below
    claimed = [eval(p.stdout.readline()) for p in holders]  # noqa: S307 (our own dict literal)
    assert sorted((c["gpu"], c["slot"]) for c in claimed) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    fifth = claimer(tmp_path, 0)
    assert "waiting for a free GPU slot" in fifth.stderr.readline()  # all four slots are held
    holders[2].kill()
    holders[2].wait()  # a killed job's slot is free again (the system drops its lock)
    again = eval(fifth.stdout.readline())  # noqa: S307
    assert (again["gpu"], again["slot"]) == (claimed[2]["gpu"], claimed[2]["slot"])
    fifth.wait(timeout=30)
    for p in holders:
        p.kill()
        p.wait()


def most_at_once(intervals: list[tuple[float, float]]) -> int:
    """The most of ``intervals`` (start, end) that overlap at one moment."""
    events = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    running = most = 0
    for _, change in events:  # at equal times an end (-1) sorts before a start
        running += change
        most = max(most, running)
    return most


def most_started(log: str) -> int:
    """The most training jobs Snakemake had running at once, from its log (jobs in the order they
    started and finished)."""
    running: set[str] = set()
    most, training = 0, False
    for line in log.splitlines():
        if re.match(r"(local)?rule (\w+):", line):
            training = line.strip().endswith("rule train:")
        elif (match := re.match(r"\s+jobid: (\d+)", line)) and training:
            running.add(match[1])
            most = max(most, len(running))
        elif match := re.match(r"Finished jobid: (\d+)", line):
            running.discard(match[1])
    return most


def test_two_pretend_gpus_two_models_each_run_four_training_jobs_at_once(tmp_path):
    workdir = copy_workflow(tmp_path, device="auto")  # auto model jobs claim the pretend GPUs' slots
    env = {GPUS_ENV: "2", "CUDA_VISIBLE_DEVICES": ""}  # pretend GPUs, jobs on the CPU even where a GPU exists
    # the smoke config's two tasks of 4 cells each: 8 trainings, twice the slots
    two_tasks = write_override(workdir, "two_tasks.yaml", {"tasks": ["sparse_parity", "parity_scratchpad"]})
    args = ("all", "--until", "train", "--configfile", "config/smoke.yaml", two_tasks, "--config", "models_per_gpu=2")
    done = snakemake(workdir, *args, "--cores", "6", env=env)  # cores for 6: the GPU slots cap it at 4
    assert most_started(done.stdout + done.stderr) == 4
    held = {0: [], 1: []}  # GPU -> (claimed, finished) of each job on it
    for summary in workdir.glob("results/train/*/*/*/*/summary.json"):
        slot = json.loads(summary.read_text())["gpu_slot"]  # the slot each job recorded
        assert slot["gpus"] == 2 and slot["models_per_gpu"] == 2 and slot["slot"] in (0, 1)
        held[slot["gpu"]].append((slot["since"], summary.stat().st_mtime))  # (the summary is its last write)
    assert len(held[0]) + len(held[1]) == 8 and held[0] and held[1]
    assert max(most_at_once(held[0]), most_at_once(held[1])) <= 2
    # The packing enters no job's spec: another models_per_gpu reruns nothing.
    again = snakemake(workdir, "-n", *args[:-1], "models_per_gpu=3", env=env)
    assert planned_jobs(again) == {}

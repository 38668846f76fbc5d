"""The ``device`` setting and the GPUs a run sees, free of torch: the config check and the Snakefile
read them at parse time, :mod:`pipeline_src.devices.placement` resolves them when a job starts."""

from __future__ import annotations

import os
from pathlib import Path

FIELD = "device"
DEVICES = ("auto", "cpu", "cuda")
DEFAULT = "auto"

# A number of GPUs the workflow assumes instead of the ones it finds: pretend GPUs on a machine
# without CUDA (tests and dry runs of GPU scheduling; the jobs then run on the CPU), or fewer GPUs.
GPUS_ENV = "LENGTHGEN_GPUS"
# "1": a training run may resume a checkpoint of another device type
RESUME_ANYWHERE_ENV = "LENGTHGEN_RESUME_ON_ANOTHER_DEVICE"
SLOTS_ENV = "LENGTHGEN_GPU_SLOTS"  # "GPUS,MODELS_PER_GPU,FOLDER": set by the workflow, read by .placement


def device_setting(config: dict) -> str:
    """The top-level ``device`` (auto, cpu or cuda; ``auto`` where absent). It enters every model
    job's spec (training, evaluation, the language jobs), so changing it reruns those jobs: float
    results differ between devices. It is resolved when the job starts (pipeline_src.devices.placement)."""
    return config.get(FIELD, DEFAULT)


def visible_gpus() -> int:
    """How many GPUs local model jobs are spread over: ``LENGTHGEN_GPUS`` where set, else the entries
    of ``CUDA_VISIBLE_DEVICES`` where set ("" or "-1": none), else the GPUs the NVIDIA driver lists."""
    if (pretend := os.environ.get(GPUS_ENV)) is not None:
        if not pretend.isdigit():
            raise ValueError(f"{GPUS_ENV}={pretend!r}: expected a number of GPUs (0, 1, 2, ...)")
        return int(pretend)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return 0 if visible.strip() in ("", "-1") else len([d for d in visible.split(",") if d.strip()])
    return len(list(Path("/proc/driver/nvidia/gpus").glob("*")))


def gpus_per_model_job(config: dict) -> int:
    """The ``gpu`` resource a model job (training, evaluation, language models) requests: 1 when the
    device setting will use CUDA, else 0. ``auto`` counts as CUDA when :func:`visible_gpus` finds one."""
    device = device_setting(config)
    return int(device == "cuda" or (device == "auto" and visible_gpus() > 0))

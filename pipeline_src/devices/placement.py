"""The compute device of every model job (config field ``device``) and bf16 autocast.

``device`` is ``auto`` (the default: CUDA when ``torch.cuda.is_available()``, else the CPU),
``cpu`` or ``cuda``. ``cuda`` where CUDA is not available is a :class:`DeviceError` naming the
field, raised when the job starts (the Snakefile may be parsed on a machine without a GPU, such as a
cluster's login node).

Which GPU: Snakemake assigns no device IDs. For a local run the workflow sets ``LENGTHGEN_GPU_SLOTS``
(GPUs, models per GPU, a folder) and caps the model jobs running at once at their product; each job
then claims a free slot (a lock file per GPU and slot, held while the process lives, released by the
system however it ends) and runs on that slot's GPU, so no GPU ever holds more than its share and
jobs spread over all GPUs. Without that variable (a job run by hand, or on a cluster, where the
scheduler gives each job its GPUs) a job uses the current CUDA device.

Only the model and the batch tensors move to the device. Every random draw (batches, PoSE skips,
offsets, analysed targets) stays on the CPU ``torch.Generator``, so the same config gives the same
datasets and the same batches on every device: only float arithmetic differs. Results are written
from CPU tensors.

Autocast (``train.precision``): with ``bf16`` training autocasts to bfloat16 on its device (on the
CPU as it always has); evaluation autocasts on CUDA only, so CPU evaluation stays fp32 and its
metrics are exactly what they were before this setting existed.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import time
from pathlib import Path

import torch

from .setting import DEFAULT, DEVICES, FIELD, GPUS_ENV, SLOTS_ENV

_held: list = []  # the open lock file of this process's slot: the claim lasts while it is open


class DeviceError(ValueError):
    """A device setting this machine cannot honour (the message names the config field)."""


def resolve_device(value: str | torch.device | None = None) -> torch.device:
    """The torch device ``value`` means here: ``auto`` (or None), ``cpu``, ``cuda``, or a
    ``torch.device`` used as it is. A CUDA device without CUDA is a :class:`DeviceError`."""
    if isinstance(value, torch.device):
        if value.type == "cuda":
            _require_cuda(str(value))
        return value
    value = DEFAULT if value is None else value
    if value not in DEVICES:
        raise DeviceError(f"{FIELD}: {value!r} is not one of {list(DEVICES)}")
    if value == "cpu":
        return torch.device("cpu")
    slot = claim_gpu_slot()
    if value == "auto" and not torch.cuda.is_available():
        return torch.device("cpu")  # (a slot of a pretend GPU, see device_setting.GPUS_ENV, stays held)
    _require_cuda(value)
    if slot:
        if slot["gpu"] >= (count := torch.cuda.device_count()):
            raise DeviceError(f"{SLOTS_ENV}: GPU slot {slot['gpu']} of {slot['gpus']} GPUs, but this machine shows "
                              f"{count}; set {GPUS_ENV} (or the workflow's GPU count) to at most {count}")
        torch.cuda.set_device(slot["gpu"])  # kernels that name no device run there too
    return torch.device("cuda", torch.cuda.current_device())


def held_gpu_slot() -> dict | None:
    """The GPU slot this process claimed (see :func:`claim_gpu_slot`), or None."""
    return _held[0][1] if _held else None


def claim_gpu_slot(wait_seconds: float = 1.0) -> dict | None:
    """This process's GPU slot, ``{"gpu": g, "slot": s, "gpus": G, "models_per_gpu": M, "since": the
    claim's unix time}``, claimed on the first call where ``LENGTHGEN_GPU_SLOTS`` is set (None where
    it is not). Slots are tried slot by slot across the GPUs, so jobs spread over the GPUs before any
    GPU takes a second one; when all are held (more jobs than the workflow lets run at once), it
    waits for one."""
    if _held:
        return _held[0][1]
    setting = os.environ.get(SLOTS_ENV)
    if not setting:
        return None
    try:
        gpus, per_gpu, folder = setting.split(",", 2)
        gpus, per_gpu = int(gpus), int(per_gpu)
    except ValueError:
        raise DeviceError(f"{SLOTS_ENV}={setting!r}: expected GPUS,MODELS_PER_GPU,FOLDER") from None
    Path(folder).mkdir(parents=True, exist_ok=True)
    said = False
    while True:
        for slot in range(per_gpu):
            for gpu in range(gpus):
                handle = open(Path(folder) / f"gpu{gpu}.slot{slot}.lock", "a")
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    handle.close()
                    continue
                claimed = {"gpu": gpu, "slot": slot, "gpus": gpus, "models_per_gpu": per_gpu, "since": time.time()}
                _held.append((handle, claimed))
                return claimed
        if not said:
            print(f"waiting for a free GPU slot ({gpus} GPUs x {per_gpu} models, {folder})", file=sys.stderr)
            said = True
        time.sleep(wait_seconds)


def _require_cuda(value: str) -> None:
    if not torch.cuda.is_available():
        raise DeviceError(f"{FIELD}: {value!r} asks for a GPU, but CUDA is not available on this machine "
                          f"(torch {torch.__version__}, CUDA build {torch.version.cuda}); "
                          f"set {FIELD}: auto or cpu, or run the job on a GPU machine")


def to_device(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``tensor`` (on the CPU) on ``device``: to a GPU from pinned memory without waiting for the
    copy (the host goes on building the next batch), elsewhere ``tensor.to(device)``."""
    if device.type == "cuda" and tensor.device.type == "cpu":
        return tensor.pin_memory().to(device, non_blocking=True)
    return tensor.to(device)


def describe_device(device: torch.device) -> str:
    """The device for provenance records and summaries: ``cpu`` or, e.g., ``cuda:0 NVIDIA H100``."""
    if device.type != "cuda":
        return str(device)
    index = device.index if device.index is not None else torch.cuda.current_device()
    return f"cuda:{index} {torch.cuda.get_device_name(index)}"


def autocast(device: torch.device, precision: str):
    """Training's autocast context: bfloat16 on ``device``'s type when ``precision`` is ``bf16``
    (a GPU without bfloat16 support is a :class:`DeviceError`); fp32 needs none."""
    if precision != "bf16":
        return contextlib.nullcontext()
    if device.type == "cuda" and not torch.cuda.is_bf16_supported():
        raise DeviceError(f"train.precision: bf16, but {describe_device(device)} does not support bfloat16; "
                          "use precision fp32")
    return torch.autocast(device.type, dtype=torch.bfloat16)


def inference_autocast(device: torch.device, precision: str):
    """Evaluation's autocast context: as :func:`autocast` on CUDA; none on the CPU, where evaluation
    has always run in fp32 (CPU metrics stay bit-identical)."""
    if device.type != "cuda":
        return contextlib.nullcontext()
    return autocast(device, precision)

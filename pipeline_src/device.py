"""The compute device of every model job (config field ``device``) and bf16 autocast.

``device`` is ``auto`` (the default: CUDA when ``torch.cuda.is_available()``, else the CPU),
``cpu`` or ``cuda`` (the current CUDA device; Snakemake never assigns device IDs, so select a GPU
with ``CUDA_VISIBLE_DEVICES``). ``cuda`` where CUDA is not available is a :class:`DeviceError`
naming the field, raised when the job starts (the Snakefile may be parsed on a machine without a
GPU, such as a cluster's login node).

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

import torch

FIELD = "device"
DEVICES = ("auto", "cpu", "cuda")
DEFAULT = "auto"


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
    if value == "cpu" or (value == "auto" and not torch.cuda.is_available()):
        return torch.device("cpu")
    _require_cuda(value)
    return torch.device("cuda", torch.cuda.current_device())


def _require_cuda(value: str) -> None:
    if not torch.cuda.is_available():
        raise DeviceError(f"{FIELD}: {value!r} asks for a GPU, but CUDA is not available on this machine "
                          f"(torch {torch.__version__}, CUDA build {torch.version.cuda}); "
                          f"set {FIELD}: auto or cpu, or run the job on a GPU machine")


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

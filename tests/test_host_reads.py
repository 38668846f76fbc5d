"""The training loop reads nothing back from the model's device inside a step: on a GPU every such
read (``.item()``, ``bool()``, a boolean mask, a copy to the host) stops the host until the device
drains. Counted on the CPU with a :class:`~torch.overrides.TorchFunctionMode` over a whole run,
except where the loop prepares a batch on the CPU (drawing samples and position IDs, checking the
IDs), which never touches the device's tensors."""

from __future__ import annotations

import math

import pytest
import torch

from pipeline_src.model import Decoder
from pipeline_src.runs.benchmarks.host_reads import AtenOps, HostReads, step_profile
from pipeline_src.schemes import get_scheme
from pipeline_src.training import train as training
from tests.conftest import tiny_train_spec


def on_the_cpu_side(monkeypatch, reads: HostReads, owner, name: str) -> None:
    """Run ``owner.name`` with counting paused: it works on the CPU before the batch moves."""
    original = getattr(owner, name)

    def wrapped(*args, **kwargs):
        with reads.paused():
            return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, wrapped)


@pytest.mark.parametrize("scheme", ["rope_pose", "ppc"])
def test_a_training_run_reads_the_device_once_per_log_and_checkpoint(tmp_path, train_data, monkeypatch, scheme):
    steps, log_every, checkpoint_every = 30, 10, 20
    spec = tiny_train_spec(scheme, steps=steps, log_every=log_every, checkpoint_every=checkpoint_every)
    spec["device"] = "cpu"
    reads = HostReads()
    on_the_cpu_side(monkeypatch, reads, training.TaskSource, "next_batch")
    on_the_cpu_side(monkeypatch, reads, type(get_scheme(scheme)), "train_ids")
    on_the_cpu_side(monkeypatch, reads, Decoder, "check_positions")
    on_the_cpu_side(monkeypatch, reads, training, "_finish")  # writing the results, once, after the loop
    with reads:
        summary = training.train(spec, train_data, tmp_path / "run")
    assert summary["steps"] == steps
    # one read of the logged numbers per log_every steps, one finiteness check per checkpoint and at the end
    budget = math.ceil(steps / log_every) + (steps - 1) // checkpoint_every + 1
    assert reads.total() <= budget, f"{reads.counts} in {steps} steps: more than {budget} host reads"


def test_the_counter_sees_every_kind_of_host_read():
    x = torch.arange(6.0)
    reads = HostReads()
    with reads:
        x.sum().item(), x.tolist(), bool(x[0] > 0), int(x.argmax()), float(x[1]), x[x > 2], x.nonzero()
        with reads.paused():
            x.sum().item()
    assert reads.counts == {"item": 1, "tolist": 1, "__bool__": 1, "__int__": 1, "__float__": 1,
                            "boolean index": 1, "nonzero": 1}


def test_a_step_profile_counts_aten_operations_and_host_reads():
    x = torch.arange(6.0)
    profile = step_profile(lambda: ((x * 2 + 1).sum().item(), x[x > 2]))
    assert profile["host_reads"] == 2 and profile["host_reads_by_kind"] == {"item": 1, "boolean index": 1}
    with AtenOps() as ops:
        x * 2 + 1
    assert ops.count == 2

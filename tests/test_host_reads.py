"""The training loop reads nothing back from the model's device inside a step: on a GPU every such
read (``.item()``, ``bool()``, a boolean mask, a copy to the host) stops the host until the device
drains. Counted on the CPU with a :class:`~torch.overrides.TorchFunctionMode` over a whole run,
except where the loop prepares a batch on the CPU (drawing samples and position IDs, checking the
IDs), which never touches the device's tensors."""

from __future__ import annotations

import contextlib
import math

import pytest
import torch
from torch.overrides import TorchFunctionMode

from pipeline_src.model import Decoder
from pipeline_src.schemes import get_scheme
from pipeline_src.training import train as training
from tests.conftest import tiny_train_spec

READS = {"item", "tolist", "__bool__", "__int__", "__float__", "__index__", "nonzero", "numpy", "cpu"}


class HostReads(TorchFunctionMode):
    """Counts the calls that read a tensor's values on the host, by name, outside :meth:`paused`."""

    def __init__(self):
        super().__init__()
        self.counts, self._paused = {}, 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        boolean_index = name == "__getitem__" and any(
            isinstance(i, torch.Tensor) and i.dtype == torch.bool
            for i in (args[1] if isinstance(args[1], tuple) else (args[1],)))
        if not self._paused and (name in READS or boolean_index):
            key = "boolean index" if boolean_index else name
            self.counts[key] = self.counts.get(key, 0) + 1
        return func(*args, **(kwargs or {}))

    @contextlib.contextmanager
    def paused(self):
        self._paused += 1
        try:
            yield
        finally:
            self._paused -= 1

    def total(self) -> int:
        return sum(self.counts.values())


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

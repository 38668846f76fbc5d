"""Counting what a piece of torch code asks of the host: calls that read a tensor's values back
(each one, on a GPU, stops the host until the device has drained its queue) and aten operations
(each one a kernel launch on a GPU). Used by ``lengthgen benchmark`` and by the tests that hold the
training step to its budget of host reads."""

from __future__ import annotations

import contextlib

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

# Tensor methods that hand a tensor's values to Python or to the CPU
READS = frozenset({"item", "tolist", "__bool__", "__int__", "__float__", "__index__", "nonzero", "numpy", "cpu"})


class HostReads(TorchFunctionMode):
    """Counts, by name, the calls that read tensor values on the host (:data:`READS`, and indexing
    with a boolean mask, which must count the mask's True values first), outside :meth:`paused`."""

    def __init__(self):
        super().__init__()
        self.counts: dict[str, int] = {}
        self._paused = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if not self._paused:
            if name in READS:
                self.counts[name] = self.counts.get(name, 0) + 1
            elif name == "__getitem__" and _has_boolean_index(args[1]):
                self.counts["boolean index"] = self.counts.get("boolean index", 0) + 1
        return func(*args, **(kwargs or {}))

    @contextlib.contextmanager
    def paused(self):
        """Not counting inside: for work known to run on the CPU's own tensors."""
        self._paused += 1
        try:
            yield
        finally:
            self._paused -= 1

    def total(self) -> int:
        return sum(self.counts.values())


def _has_boolean_index(index) -> bool:
    return any(isinstance(i, torch.Tensor) and i.dtype == torch.bool
               for i in (index if isinstance(index, tuple) else (index,)))


class AtenOps(TorchDispatchMode):
    """Counts the aten operations dispatched (each a kernel launch on a GPU)."""

    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


def step_profile(step) -> dict:
    """Run ``step()`` once; its aten operations and host reads (by kind)."""
    reads, ops = HostReads(), AtenOps()
    with reads, ops:
        step()
    return {"aten_ops": ops.count, "host_reads": reads.total(), "host_reads_by_kind": dict(reads.counts)}

"""The state of a training run in progress (:class:`RunState`): what it trains, how far it has got
and what it has logged; how that state is saved to its resume checkpoint and restored from it; and
the error that stops a run whose numbers are no longer finite (:class:`TrainingDiverged`). The
loop that drives it is :func:`pipeline_src.training.train.run`."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import polars as pl
import torch

from ..devices.setting import RESUME_ANYWHERE_ENV
from ..model import Decoder
from ..schemes import Scheme
from .checkpoints import CheckpointError, load_state, save_state
from .optimizer import AdamW
from .task_source import TaskSource

LOG_SCHEMA = {"step": pl.Int64, "loss": pl.Float64, "accuracy": pl.Float64,
              "position_accuracy": pl.Float64, "lr": pl.Float64, "grad_norm": pl.Float64,
              "seconds": pl.Float64}
# the columns a log adds where the batches carry each row's k: per step, the response tokens
# predicted right and those scored, per k = 1..K_train (list index k - 1)
K_LOG_SCHEMA = {"k_correct": pl.List(pl.Int64), "k_scored": pl.List(pl.Int64)}
SECONDS = list(LOG_SCHEMA).index("seconds")
HELDOUT_SCHEMA = {"step": pl.Int64, "heldout_loss": pl.Float64, "heldout_tokens": pl.Int64}


class TrainingDiverged(RuntimeError):
    """The loss, the gradient norm or the weights of a run became NaN or infinite at ``step``."""

    def __init__(self, message: str, step: int, reason: str):
        super().__init__(message)
        self.step, self.reason = step, reason


@dataclass
class RunState:
    """One training run in progress: what it trains and where, and how far it has got. Its resume
    checkpoint holds what changes from step to step (the step, weights, optimizer, random
    generator, logs, pending batches and the curriculum's state)."""

    spec: dict
    out_dir: Path
    device: torch.device
    scheme: Scheme  # draws each batch's position IDs
    source: TaskSource  # or any batch source (see TaskSource)
    model: Decoder
    optimizer: AdamW
    generator: torch.Generator  # on the CPU: batches and position IDs are the same on every device
    identity: str  # the config's hash, which names the resume checkpoint
    say: Callable[[str], None]  # prints a line of progress
    step: int = 0  # steps done
    log: list = field(default_factory=list)  # rows of LOG_SCHEMA
    heldout_log: list = field(default_factory=list)  # rows of HELDOUT_SCHEMA
    # per row of ``log`` where the batches carry each row's k: (tokens right per k, tokens scored per k)
    k_log: list = field(default_factory=list)
    # steps not yet read back: (step, lr, seconds, [loss, accuracy, position accuracy, gradient norm] on the device)
    unread: list = field(default_factory=list)
    saved_step: int | None = None  # the step of the last good checkpoint
    started: float = 0.0  # time.perf_counter() at step 0: seconds accumulate across resumes
    forward: Callable | None = None  # the model compiled (see train.compiled), or None: eager
    compiled_steps: int = 0  # steps through ``forward``: a compile that fails before the first trains eager

    @property
    def opt(self) -> dict:
        """The spec's ``train`` section."""
        return self.spec["train"]

    @property
    def total(self) -> int:
        """The steps the run takes in all."""
        return self.opt["steps"]

    @property
    def resume_path(self) -> Path:
        """This config's resume checkpoint (named by its hash: another config's is never read)."""
        return self.out_dir / f"resume-{self.identity[:16]}.pt"

    def save_checkpoint(self) -> None:
        """Save the resumable state (atomically: a kill mid-write keeps the previous checkpoint)."""
        state = {"config_hash": self.identity, "step": self.step, "device_type": self.device.type,
                 "model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                 "generator": self.generator.get_state(), "log": self.log, "pending": self.source.pending}
        if self.source.heldout_every:
            state["heldout_log"] = self.heldout_log
        if self.k_log:
            state["k_log"] = self.k_log
        if self.source.curriculum is not None:
            state["curriculum"] = self.source.curriculum.state()
        save_state(self.resume_path, state)
        self.saved_step = self.step

    def resume(self) -> None:
        """Restore the state saved in the resume checkpoint. A file that does not fit this run is a
        :class:`CheckpointError` naming it, and so is one written on another kind of device (a run
        begun on the CPU would end on a GPU: its results are neither's) unless
        ``LENGTHGEN_RESUME_ON_ANOTHER_DEVICE=1`` says that is meant."""
        path, device = self.resume_path, self.device
        state = load_state(path, self.identity)
        written = state.get("device_type", device.type)  # checkpoints before this field: not checked
        if written != device.type and os.environ.get(RESUME_ANYWHERE_ENV) != "1":
            raise CheckpointError(f"{path}: resume checkpoint written on {written}, but this run is on {device.type}; "
                                  f"set {RESUME_ANYWHERE_ENV}=1 to resume there anyway, or delete it to start over")
        try:
            self.model.load_state_dict(state["model"])
            self.optimizer.load_state_dict(state["optimizer"])
            self.generator.set_state(state["generator"])
        except (RuntimeError, ValueError, KeyError, TypeError) as err:
            raise CheckpointError(f"{path}: resume checkpoint does not fit this model ({err}); "
                                  "delete it to start over") from None
        if not finite(self.model):
            raise CheckpointError(f"{path}: resume checkpoint holds non-finite weights; delete it to start over")
        self.source.pending = state["pending"]
        if self.source.curriculum is not None:
            self.source.curriculum.restore(state["curriculum"])
        self.step, self.log, self.heldout_log = state["step"], state["log"], state.get("heldout_log", [])
        self.k_log = state.get("k_log", [])
        self.saved_step = self.step

    def diverged(self, step: int, what: str) -> TrainingDiverged:
        """The error of a run whose numbers became NaN or infinite at ``step``: the cell, its folder,
        the step, and the last good checkpoint (kept: nothing non-finite is ever checkpointed)."""
        spec = self.spec
        cell = f"{spec['task']}/{spec['scheme']}/{spec['variant']}/seed{spec['seed']}"
        kept = (f"the last good checkpoint {self.resume_path} (step {self.saved_step}) is kept"
                if self.saved_step is not None else "no checkpoint had been written yet")
        return TrainingDiverged(f"training {cell} ({self.out_dir}) diverged at step {step}: {what}; {kept}. "
                                "Lower train.lr (or raise warmup_steps) and rerun.", step, what)


def finite(model: Decoder) -> bool:
    """Whether every weight of ``model`` is finite (one host read)."""
    return bool(torch.stack([torch.isfinite(p).all() for p in model.parameters()]).all())

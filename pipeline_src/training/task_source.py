"""The batch source of a synthetic task: uniformly drawn samples of its training set, grouped by
length so that each batch needs little padding. :class:`TaskSource` also says what the training
loop (:func:`pipeline_src.training.train.run`) reads of any batch source."""

from __future__ import annotations

from pathlib import Path

import torch

from .. import datasets
from ..schemes import get_scheme
from ..tasks import get_task
from .batches import SequenceTable, TrainingBatch, training_batch
from .curriculum import KCurriculum


class TaskSource:
    """Batches of a synthetic task's training set: uniformly drawn samples, grouped by length.

    What the loop reads of a batch source: ``stage`` and ``code_task`` (the provenance record's code
    digest), ``inputs`` (record role -> file), ``description`` (into ``model.json``), ``summary`` (one
    line of progress), ``vocab_size``, ``pending`` (state carried across a resume), ``records_divergence``
    (a divergence is the run's result, else it is raised), ``heldout_every`` (steps between held-out
    losses, logged to ``heldout_log.parquet``; None: none) with ``heldout_loss(model, device)`` ->
    (mean loss, tokens scored), ``k_train`` (the largest k of a task whose samples have one, whose batches
    carry each row's k so that the log counts accuracy per k; None: no k), ``curriculum`` (a
    :class:`~.curriculum.KCurriculum`, or None) and :meth:`next_batch`.
    """

    stage = "train"
    records_divergence = True
    heldout_every = None  # no held-out loss during training

    def __init__(self, spec: dict, train_data: Path):
        task, scheme = get_task(spec["task"]), get_scheme(spec["scheme"])
        frame = datasets.read(train_data, lambda: task.schema, checked_when_written=True)
        self.table = SequenceTable.from_frame(frame, coupled=scheme.coupled)
        self.opt, self.pending = spec["train"], []
        # each sample's k where the task trains on k ~ Unif{1..K_train} (sparse parity and its scratchpad variant)
        self.k_train = spec.get("k_train")
        k = None if self.k_train is None else frame["k"].to_numpy().astype("int64")
        if k is not None and k.max() > self.k_train:
            raise ValueError(f"{train_data}: samples of k up to {k.max()}, but the spec's k_train is "
                             f"{self.k_train} (a training set of another K_train?)")
        self.k = None if k is None else torch.from_numpy(k)
        options = self.opt.get("curriculum")
        self.curriculum = KCurriculum.of(options, self.k_train) if options and self.k_train else None
        self.vocab_size = len(task.vocab)
        self.inputs = {"train_data": train_data}
        self.description = {"k_train": spec.get("k_train"), "vocab": list(task.vocab.tokens)}
        self.summary = f"{len(self.table):,} samples"
        self.code_task = spec["task"]

    def next_batch(self, generator: torch.Generator) -> TrainingBatch:
        """The next batch of the pending ones, drawing ``length_grouping`` new ones when none is left."""
        if not self.pending:
            allowed = None if self.curriculum is None or self.curriculum.done else self.curriculum.allowed(self.k)
            self.pending = grouped_batches(self.table.lengths, self.opt["batch_size"], self.opt["length_grouping"],
                                           generator, allowed)
        index = self.pending.pop()
        return training_batch(self.table, index, self.opt["pad_multiple"],
                              groups=None if self.k is None else self.k[index])


def grouped_batches(lengths: torch.Tensor, batch_size: int, groups: int,
                    generator: torch.Generator, allowed: torch.Tensor | None = None) -> list[torch.Tensor]:
    """Draw ``groups`` batches of uniformly random samples at once and group them by length.

    The samples are exactly as random as ``groups`` independent draws; only which batch each lands
    in depends on its length, so each batch needs less padding. Returned in random order. ``allowed``
    (indices) limits the draw to those samples (a curriculum's); None: every sample."""
    if allowed is None:
        index = torch.randint(len(lengths), (batch_size * groups,), generator=generator)
    else:
        index = allowed[torch.randint(len(allowed), (batch_size * groups,), generator=generator)]
    index = index[lengths[index].argsort(stable=True)]
    order = torch.randperm(groups, generator=generator)
    return list(index.view(groups, batch_size)[order])

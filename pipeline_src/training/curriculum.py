"""A curriculum over k, the number of bits a sample's answer depends on (``train.curriculum``).

Sparse parity's training set is drawn under the paper's law, k ~ Unif{1..K_train}. From a random
start, a model trained on that law directly learned nothing from K_train 6 on, not even k = 1
(docs/reconstruction.md, "Figure 1's training recipe"). The curriculum draws each batch from the
samples of the same training set whose k is at most ``k_max``: k ~ Unif{1..k_max}, the paper's law
at K_train = k_max. It starts at ``k_max = start`` and checks every ``every`` steps the accuracy on
the samples of k = k_max over those steps; at ``threshold`` or above, k_max rises by one. From
k_max = K_train on, the batches are the paper's law itself, so training ends on it. (A degree
curriculum after Abbe, Bengio, Lotfi and Rizk, 2023.)

The curriculum changes which samples a batch draws, nothing else: the training set, the model and
its optimizer are the same. Its state (``k_max`` and the steps at which it rose) is part of the
resume checkpoint; a run is a pure function of its config and seed, as without it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

# The fields of ``train.curriculum`` (their rules: pipeline_src/config/config.schema.yaml)
FIELDS = ("start", "every", "threshold")


@dataclass
class KCurriculum:
    """The curriculum of one run: ``k_max`` rises from ``start`` to ``k_train``."""

    k_train: int
    start: int
    every: int  # steps between checks
    threshold: float  # accuracy at k = k_max over the last ``every`` steps that raises k_max
    k_max: int = 0
    raised_at: list[int] = field(default_factory=list)  # the step of each rise, in order

    def __post_init__(self) -> None:
        if not self.k_max:
            self.k_max = min(self.start, self.k_train)

    @classmethod
    def of(cls, options: dict, k_train: int) -> "KCurriculum":
        """The curriculum that ``train.curriculum`` (``options``) sets for a model of ``k_train``."""
        return cls(k_train=k_train, **{name: options[name] for name in FIELDS})

    @property
    def done(self) -> bool:
        """Whether the batches are the paper's law (k_max = K_train)."""
        return self.k_max >= self.k_train

    def allowed(self, k: torch.Tensor) -> torch.Tensor:
        """The indices of the samples (of k values ``k``) a batch may draw now."""
        return torch.nonzero(k <= self.k_max).squeeze(1)

    def due(self, step: int) -> bool:
        """Whether ``step`` (steps done) is a check."""
        return not self.done and step % self.every == 0

    def check(self, step: int, correct: list[int], scored: list[int]) -> bool:
        """At a check, ``correct`` and ``scored`` count the response tokens per k (index k - 1) over
        the last ``every`` steps; raise k_max when its accuracy reaches the threshold. Returns
        whether it rose."""
        at = self.k_max - 1
        if scored[at] == 0 or correct[at] / scored[at] < self.threshold:
            return False
        self.k_max += 1
        self.raised_at.append(step)
        return True

    def state(self) -> dict:
        """What a resume checkpoint keeps."""
        return {"k_max": self.k_max, "raised_at": list(self.raised_at)}

    def restore(self, state: dict) -> None:
        self.k_max, self.raised_at = state["k_max"], list(state["raised_at"])

    def summary(self) -> dict:
        """For ``summary.json``: where k_max ended and the step of each rise (k_max = start + i + 1
        from ``raised_at[i]`` on)."""
        return {"start": min(self.start, self.k_train), "k_max": self.k_max, "raised_at": list(self.raised_at),
                "reached_k_train": self.done}

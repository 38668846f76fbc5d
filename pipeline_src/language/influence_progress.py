"""The progress reports of the influential-token analysis (:func:`.influence.influential_tokens`):
when it reports, and the default report, a line on stderr."""

import sys
import time
from typing import Callable

import torch

from .logits import LogitsFn

ProgressFn = Callable[[int, int, str], None]
"""Called with (targets done, targets in all, detail): detail is "" when a group of targets has just
ended, else what the group under way has done so far (a long group reports within itself)."""


def print_progress(done: int, total: int, detail: str = "") -> None:
    """The default progress report: one line on stderr."""
    print(f"influential tokens: {done}/{total} targets" + (f"; {detail}" if detail else ""), file=sys.stderr,
          flush=True)


class Reports:
    """When :func:`.influence.influential_tokens` reports: after every ``report_every`` targets, after a group
    that ends ``report_seconds`` or more after the last report, at the end, and within a group (or the
    screening) every ``report_seconds`` (the sequences scored so far: a group of a pretrained model's
    targets can take half an hour on a CPU). A screened analysis reports once when the screening ends
    (how many targets it screened out); the targets counted are then those analysed."""

    def __init__(self, progress: ProgressFn | None, total: int, report_every: int, report_seconds: float):
        self.progress, self.total, self.every, self.seconds = progress, total, report_every, report_seconds
        self.last = time.monotonic()
        self.start = self.stop = self.scored = 0
        self.doing = ""

    def _say(self, done: int, detail: str) -> None:
        self.progress(done, self.total, detail)
        self.last = time.monotonic()

    def counting(self, fn: LogitsFn) -> LogitsFn:
        """``fn``, counting the sequences each forward scores and reporting when it is time."""
        def counted(tokens: torch.Tensor, position_ids: torch.Tensor) -> torch.Tensor:
            logits = fn(tokens, position_ids)
            self.scored += len(tokens)
            if self.progress is not None and time.monotonic() - self.last >= self.seconds:
                self._say(self.start, f"{self.doing}: {self.scored:,} sequences scored")
            return logits
        return counted

    def screening(self) -> None:
        self.doing, self.scored = f"screening {self.total} drawn targets", 0

    def screened(self, analysed: int, summary: str) -> None:
        """The screening has ended, leaving ``analysed`` targets, counted from now on (``summary``: what it did)."""
        self.total = analysed
        if self.progress is not None:
            self._say(0, summary)

    def group(self, start: int, stop: int) -> None:
        self.start, self.stop, self.scored = start, stop, 0
        self.doing = f"targets {start + 1} to {stop}"

    def group_done(self) -> None:
        crossed = self.stop // self.every > self.start // self.every or self.stop == self.total
        if self.progress is not None and (crossed or time.monotonic() - self.last >= self.seconds):
            self._say(self.stop, "")

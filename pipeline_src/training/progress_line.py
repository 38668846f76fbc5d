"""The training log's progress line, read back: the loop prints one per log window
(``step 7900/12000  loss ...  12.2 steps/s  eta 336s``, :func:`pipeline_src.training.train._report`),
and ``lengthgen status`` reads the last one of a training whose model is not there yet, to say how far
it got. Torch-free; not imported by training, so no job's code digest holds it."""

from __future__ import annotations

import re
from pathlib import Path

PATTERN = re.compile(r"^step (\d+)/(\d+)  .*  eta (\d+)s$")  # the line _report prints
TAIL_BYTES = 4096  # a log's last lines: a progress line is under 200 bytes


def last_progress(log: Path) -> str:
    """``last logged step 7900 of 12000, eta 336 s`` from the last progress line of the training log
    ``log``; "" when it has none (a run that failed before its first window, or no log)."""
    try:
        with open(log, "rb") as handle:
            handle.seek(max(0, handle.seek(0, 2) - TAIL_BYTES))
            lines = handle.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return ""
    for text in reversed(lines):
        if found := PATTERN.match(text.strip()):
            step, total, eta = found.groups()
            return f"last logged step {step} of {total}, eta {eta} s"
    return ""

"""Atomic file writes: every artifact is written under a temporary name and renamed into place.

A job killed mid-write (``kill -9``, out of memory, a full disk) therefore never leaves a
plausible-looking partial file at an artifact's path: either the complete new file is there, or
none (or the complete old one). A write that fails with an exception removes its temporary file; a
killed one leaves it under the hidden name ``.<name>.partial``, which no rule reads and the next
write of that artifact replaces.

This module imports nothing heavy (the Snakefile imports :mod:`.provenance`, which uses it).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator

PARTIAL_SUFFIX = ".partial"


def _file_mode() -> int:
    """The mode a new file gets under this process's umask (0644 under the usual 022)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


FILE_MODE = _file_mode()  # every artifact's: some writers (safetensors) create files 0600


def partial_path(path: str | Path) -> Path:
    """The temporary name ``path`` is written under before it is renamed into place."""
    path = Path(path)
    return path.with_name(f".{path.name}{PARTIAL_SUFFIX}")


@contextlib.contextmanager
def replacing(path: str | Path) -> Iterator[Path]:
    """Yield the temporary path to write ``path`` to; rename it into place when the block
    completes, remove it when the block raises (the old ``path``, if any, is left as it was)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = partial_path(path)
    try:
        yield tmp
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text(path: str | Path, text: str) -> None:
    """Atomically write ``text`` (UTF-8) to ``path``."""
    with replacing(path) as tmp:
        tmp.write_text(text, encoding="utf-8")

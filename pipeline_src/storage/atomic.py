"""Atomic file writes: every artifact is written under a temporary name and renamed into place.

A job killed mid-write (``kill -9``, out of memory, a full disk) therefore never leaves a
plausible-looking partial file at an artifact's path: either the complete new file is there, or
none (or the complete old one). A write that fails with an exception removes its temporary file; a
killed one leaves it under the hidden name ``.<name>.partial``, which no rule reads and the next
write of that artifact replaces.

This module imports nothing heavy (the Snakefile imports :mod:`pipeline_src.provenance.sidecars`, which uses it).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import traceback
from pathlib import Path
from typing import Iterator

from .errors import os_error

PARTIAL_SUFFIX = ".partial"
FULL_BELOW = 1 << 20  # a disk with less free space than this (bytes) counts as full


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


class WriteError(OSError):
    """An artifact that could not be written: the message names the file and the cause."""


@contextlib.contextmanager
def replacing(path: str | Path) -> Iterator[Path]:
    """Yield the temporary path to write ``path`` to; rename it into place when the block
    completes, remove it when the block raises (the old ``path``, if any, is left as it was). A
    write that fails for want of space or permission is a :class:`WriteError` naming ``path`` and
    the cause, whatever the writing library made of it."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise WriteError(f"{path}: cannot write ({os_error(err)})") from None
    tmp = partial_path(path)
    try:
        yield tmp
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException as err:
        cause = write_failure(err, path.parent)
        release_frames(err)
        tmp.unlink(missing_ok=True)
        if cause and not isinstance(err, WriteError):
            raise WriteError(f"{path}: cannot write ({cause})") from err
        raise


def release_frames(err: BaseException) -> None:
    """Drop the local variables of the finished calls that ``err`` (and the errors chained to it)
    passed through. A writer that failed may still be held there with its file open (torch's zip
    writer is, on Python 3.12): the file then closes now, and the space of the temporary file, once
    removed, is free again (a full disk stays full until the process ends otherwise). Frames still
    running are left as they are."""
    errors, seen = [err], set()
    while errors:
        err = errors.pop()
        if err is not None and id(err) not in seen:
            seen.add(id(err))
            traceback.clear_frames(err.__traceback__)
            errors += [err.__cause__, err.__context__]


def write_failure(err: BaseException, folder: Path) -> str | None:
    """Why writing into ``folder`` failed, in words, when it was the file system: the error's own
    errno, or a full disk behind a library's message that does not say so (torch's "unexpected
    pos", for one); None when the failure lies elsewhere."""
    if isinstance(err, OSError) and err.errno is not None:
        return os_error(err)
    if isinstance(err, Exception):
        try:
            full = shutil.disk_usage(folder).free < FULL_BELOW
        except OSError:
            return None
        return f"{os.strerror(errno.ENOSPC)} (ENOSPC)" if full else None
    return None


def check_writable(path: str | Path, need: int = 0) -> None:
    """Before long work: a :class:`WriteError` naming ``path`` unless its folder can be made, a
    file can be created in it, and it has ``need`` bytes free (and some to spare)."""
    path = Path(path)
    probe = partial_path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        probe.touch()
        probe.unlink()
        free = shutil.disk_usage(path.parent).free
    except OSError as err:
        raise WriteError(f"{path}: cannot write ({os_error(err)})") from None
    if free < need + FULL_BELOW:
        raise WriteError(f"{path}: cannot write ({os.strerror(errno.ENOSPC)} (ENOSPC): "
                         f"{free:,} bytes free, {need + FULL_BELOW:,} needed)")


def write_text(path: str | Path, text: str) -> None:
    """Atomically write ``text`` (UTF-8) to ``path``."""
    with replacing(path) as tmp:
        tmp.write_text(text, encoding="utf-8")

"""Failures of the operating system and of the libraries behind the readers, in words an error
message that names the file can carry; any error in one line."""

from __future__ import annotations

import errno


def os_error(err: OSError) -> str:
    """An operating-system error with its symbolic name, e.g. "No space left on device (ENOSPC)"."""
    name = errno.errorcode.get(err.errno or 0)
    return f"{err.strerror} ({name})" if name and err.strerror else str(err)


def library_failure(err: BaseException) -> bool:
    """Whether ``err``, raised while a library read a file, is that library failing on the file's
    bytes: any ``Exception``, and a panic of a library's Rust code (pyo3's ``PanicException``, a
    ``BaseException``, so ``except Exception`` misses it); not ``KeyboardInterrupt`` or ``SystemExit``."""
    return isinstance(err, Exception) or type(err).__name__ == "PanicException"


def one_line(err: BaseException) -> str:
    """``err`` as one line: its type where the message alone is unclear, its message's first line."""
    message = str(err).strip().splitlines()[0] if str(err).strip() else ""
    if isinstance(err, KeyError) and err.args:  # a lookup's own message, or a bare missing key
        key = err.args[0]
        return key if isinstance(key, str) and " " in key else f"missing key {key!r}"
    return f"{type(err).__name__}: {message}" if message else type(err).__name__

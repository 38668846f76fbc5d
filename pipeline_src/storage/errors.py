"""Failures of the operating system and of the libraries behind the readers, in words an error
message that names the file can carry."""

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

"""Canonical JSON and hashes: the identity of a config subset and of a file."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any


def _plain(value: Any) -> Any:
    """Turn numpy scalars, tuples and paths into plain JSON types."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        return value.item()  # numpy / torch scalar
    return value


def canonical_json(value: Any) -> str:
    """Key-sorted, whitespace-free JSON: equal configs give equal strings whatever the YAML order."""
    return json.dumps(_plain(value), sort_keys=True, separators=(",", ":"), allow_nan=False)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def config_hash(value: Any) -> str:
    """SHA-256 of the canonical JSON of a config subset."""
    return sha256_text(canonical_json(value))


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()

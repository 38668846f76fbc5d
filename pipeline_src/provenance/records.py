"""The provenance record of an artifact: what produced it, from what, with which code.

A record holds the rule, the exact config subset (canonical JSON and hash), the seeds, the SHA-256
of every input file, the code version (git commit, dirty flag, package version, digest of the code
the job ran: :mod:`.code_digest`) and library versions. :mod:`pipeline_src.provenance.sidecars`
writes it with the artifact and reads it back.

This module imports nothing heavy: the Snakefile imports it (through :mod:`.landing`) at parse time.
"""

from __future__ import annotations

import functools
import json
import platform
import subprocess
from importlib import metadata
from pathlib import Path

from ..storage.canonical import canonical_json, config_hash, sha256_file
from .code_digest import PACKAGE_DIR, stage_digest
from .sidecars import RESTS_ON_ADOPTED, adopted_upstream

IN_CODE_DIGEST = False  # it records or dispatches, never changes a result (provenance/code_digest.py)

LIBRARIES = ("torch", "numpy", "polars", "pyarrow", "pandera", "matplotlib", "safetensors", "snakemake",
             "tokenizers", "gensim")


@functools.cache
def code_version() -> dict:
    """Git commit and dirty flag of the checkout holding this package, and the package version."""
    from .. import __version__

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], cwd=PACKAGE_DIR, capture_output=True, text=True,
                                  timeout=20, check=True)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip()

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"git_commit": commit or "unknown", "git_dirty": bool(status) if commit else None,
            "package_version": __version__}


@functools.cache
def library_versions() -> dict:
    versions = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def build_record(rule: str, stage: str, config: dict, inputs: dict[str, str | Path] | None = None,
                 seeds: dict | None = None, task: str | None = None, scheme: str | None = None) -> dict:
    """The provenance record of an artifact about to be written; its code digest is the job's, as the
    workflow's code param computes it (``stage_digest(stage, task, scheme)``)."""
    files = {role: {"path": str(path), "sha256": sha256_file(path)} for role, path in (inputs or {}).items()}
    adopted = adopted_upstream(inputs or {})
    return {
        "format": "lengthgen.provenance/1",
        "rule": rule,
        "config": json.loads(canonical_json(config)),
        "config_hash": config_hash(config),
        "seeds": seeds or {},
        "inputs": files,
        "code": {**code_version(), "stage": stage, "stage_digest": stage_digest(stage, task, scheme)},
        "libraries": library_versions(),
        **({RESTS_ON_ADOPTED: adopted} if adopted else {}),  # made from files used as they are (lengthgen adopt)
    }

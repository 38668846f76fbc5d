"""Provenance of every artifact (SPEC 8): what produced it, from what, with which code.

Each artifact carries a *record*: the rule, the exact config subset (canonical JSON and hash), the
seeds, the SHA-256 of every input file, the code version (git commit, dirty flag, package version,
digest of the stage's source files) and library versions. The record goes into the artifact's own
metadata where the format has some (Parquet key-value metadata, safetensors header) and always
into a JSON sidecar ``<artifact>.prov.json`` that also holds the artifact's own hash.

This module imports nothing heavy: the Snakefile uses :func:`stage_digest` at parse time.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Callable

from ..storage.atomic import replacing, write_text
from ..storage.canonical import canonical_json, config_hash, sha256_file, sha256_text

PARQUET_KEY = "lengthgen.provenance"
SIDECAR_SUFFIX = ".prov.json"
PACKAGE_DIR = Path(__file__).resolve().parents[1]  # pipeline_src/

# Source files whose content defines each stage's results. Editing one reruns that stage's jobs
# (the digest is a Snakemake param); provenance and CLI plumbing are deliberately not listed.
STAGE_SOURCES = {
    "data": ["storage/canonical.py", "storage/datasets.py", "tasks"],
    "train": ["model.py", "model_config.py", "schemes", "training/batches.py", "checkpoints.py", "device.py",
              "training/train.py", "tasks"],
    "evaluate": ["model.py", "model_config.py", "schemes", "training/batches.py", "checkpoints.py", "device.py",
                 "evaluation/decoding.py", "evaluation/evaluate.py", "evaluation/accuracy_schema.py",
                 "evaluation/stats.py", "tasks"],
    "figures": ["figures", "evaluation/accuracy_schema.py", "evaluation/stats.py"],
    # the natural-language analysis (SPEC 6): corpus -> tokenizer -> token stream; language models
    # (the same trainer, fed by lm.py); loss by position and influential tokens; their figures
    "language_data": ["storage/canonical.py", "storage/datasets.py", "language/corpus.py", "language/tokenizer.py",
                      "language/analysis.py"],
    "language_train": ["model.py", "model_config.py", "schemes", "training/batches.py", "checkpoints.py", "device.py",
                       "training/train.py", "language/lm.py", "language/tokenizer.py", "storage/datasets.py"],
    "language_eval": ["model.py", "model_config.py", "schemes", "checkpoints.py", "device.py", "language/lm.py",
                      "language/tokenizer.py", "storage/datasets.py", "language/influence.py", "language/analysis.py",
                      "language/schemas.py"],
    "language_figures": ["figures", "language/influence.py", "language/schemas.py"],
}
# The task modules each task's results depend on (besides the modules in ``tasks/`` that no task
# owns, which every task shares: the registry, vocabulary, layout and schemas). So editing one task's
# generator reruns that task's jobs only. A module listed for no task counts as shared.
TASK_MODULES = {
    "sparse_parity": ["sparse_parity.py"],
    "sparse_parity_scratchpad": ["sparse_parity.py", "sparse_parity_scratchpad.py"],
    "parity_scratchpad": ["parity_scratchpad.py"],
    "variable_assignment": ["variable_assignment.py"],
    "addition": ["addition.py"],
}
LIBRARIES = ("torch", "numpy", "polars", "pyarrow", "pandera", "matplotlib", "safetensors", "snakemake",
             "tokenizers", "gensim")


def _stage_files(stage: str, task: str | None = None) -> list[Path]:
    """The source files of ``stage``; with ``task``, of the task modules only that task's."""
    if stage not in STAGE_SOURCES:
        raise KeyError(f"unknown stage {stage!r}; known: {sorted(STAGE_SOURCES)}")
    if task is not None and task not in TASK_MODULES:
        raise KeyError(f"unknown task {task!r}; known: {sorted(TASK_MODULES)}")
    owned = {name for modules in TASK_MODULES.values() for name in modules}
    files: list[Path] = []
    for name in STAGE_SOURCES[stage]:
        path = PACKAGE_DIR / name
        if not path.is_dir():
            files.append(path)
            continue
        for file in sorted(path.rglob("*.py")):
            if name != "tasks" or task is None or file.name not in owned or file.name in TASK_MODULES[task]:
                files.append(file)
    return files


@functools.cache
def stage_digest(stage: str, task: str | None = None) -> str:
    """SHA-256 over the relative names and contents of the source files of one stage (for one
    ``task``: without the other tasks' own modules)."""
    parts = [f"{p.relative_to(PACKAGE_DIR).as_posix()}\n{p.read_text()}" for p in _stage_files(stage, task)]
    return sha256_text("\0".join(parts))


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


def report_metadata() -> dict[str, str]:
    """The landing page of ``snakemake --report`` (workflow/report/metadata.yaml): the git commit
    and dirty flag of this checkout, the package version and every library version."""
    code = code_version()
    dirty = {True: "yes (uncommitted changes)", False: "no", None: "unknown"}[code["git_dirty"]]
    meta = {"git commit": code["git_commit"], "uncommitted changes": dirty, "lengthgen": code["package_version"]}
    meta.update({name: version or "not installed" for name, version in library_versions().items()})
    return meta


def build_record(rule: str, stage: str, config: dict, inputs: dict[str, str | Path] | None = None,
                 seeds: dict | None = None, task: str | None = None) -> dict:
    """The provenance record of an artifact about to be written; ``task`` narrows the code digest to
    that task's sources (as the workflow's code param does)."""
    files = {role: {"path": str(path), "sha256": sha256_file(path)} for role, path in (inputs or {}).items()}
    return {
        "format": "lengthgen.provenance/1",
        "rule": rule,
        "config": json.loads(canonical_json(config)),
        "config_hash": config_hash(config),
        "seeds": seeds or {},
        "inputs": files,
        "code": {**code_version(), "stage": stage, "stage_digest": stage_digest(stage, task)},
        "libraries": library_versions(),
    }


def sidecar_path(path: str | Path) -> Path:
    path = Path(path)
    return path.with_name(path.name + SIDECAR_SUFFIX)


def attach(path: str | Path, record: dict, writer: Callable[[Path, dict[str, str]], None]) -> None:
    """Write an artifact atomically with its record, then its sidecar.

    ``writer(tmp_path, metadata)`` writes the artifact to ``tmp_path``, embedding ``metadata`` (a
    str -> str dict) where the format allows; the file is renamed into place only when complete.
    """
    path = Path(path)
    sidecar_path(path).unlink(missing_ok=True)  # never pair the new artifact with an old record
    with replacing(path) as tmp:
        writer(tmp, {PARQUET_KEY: canonical_json(record)})
    write_sidecar(path, record)


def write_sidecar(path: str | Path, record: dict) -> None:
    path = Path(path)
    side = sidecar_path(path)
    body = {**record, "artifact": {"path": str(path), "sha256": sha256_file(path)}}
    write_text(side, json.dumps(body, indent=2, sort_keys=True) + "\n")


def read_record(path: str | Path) -> dict:
    """The record of an artifact: from its sidecar, else from its embedded metadata."""
    path = Path(path)
    side = sidecar_path(path)
    if side.exists():
        return json.loads(side.read_text())
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        meta = pq.read_metadata(path).metadata or {}
        if PARQUET_KEY.encode() in meta:
            return json.loads(meta[PARQUET_KEY.encode()])
    if path.suffix == ".safetensors":
        from safetensors import safe_open

        with safe_open(path, "pt") as handle:
            meta = handle.metadata() or {}
        if PARQUET_KEY in meta:
            return json.loads(meta[PARQUET_KEY])
    raise FileNotFoundError(f"{path}: no provenance record (no sidecar {side.name}, no embedded metadata)")


def trace(path: str | Path, _seen: dict | None = None) -> dict:
    """The provenance chain of ``path``: its record with each input's chain nested under ``upstream``."""
    seen = {} if _seen is None else _seen
    key = str(path)
    if key in seen:
        return seen[key]
    try:
        record = read_record(path)
    except FileNotFoundError as err:
        node = {"path": key, "missing": str(err)}
    else:
        node = {"path": key, "record": record, "upstream": {}}
        for role, item in record.get("inputs", {}).items():
            node["upstream"][role] = trace(item["path"], seen)
    seen[key] = node
    return node


def format_trace(node: dict, with_config: bool = False) -> str:
    """Human-readable tree of :func:`trace` output."""
    lines: list[str] = []

    def walk(item: dict, role: str, indent: str, seen: set[str]) -> None:
        head = f"{indent}{role + ': ' if role else ''}{item['path']}"
        if "missing" in item:
            lines.append(f"{head}  [no provenance: {item['missing']}]")
            return
        if item["path"] in seen:
            lines.append(f"{head}  [see above]")
            return
        seen.add(item["path"])
        rec = item["record"]
        code = rec["code"]
        dirty = " dirty" if code.get("git_dirty") else ""
        lines.append(head)
        pad = indent + "    "
        lines.append(f"{pad}rule {rec['rule']}; config {rec['config_hash'][:12]}; seeds {canonical_json(rec['seeds'])}")
        lines.append(f"{pad}code {code['git_commit'][:12]}{dirty} v{code['package_version']}; "
                     f"stage {code['stage']} {code['stage_digest'][:12]}")
        if "artifact" in rec:
            lines.append(f"{pad}sha256 {rec['artifact']['sha256']}")
        if "corpus" in rec:  # the natural-language corpus: source and every file read
            corpus = rec["corpus"]
            lines.append(f"{pad}corpus {corpus['source']}: {corpus['n_documents']:,} documents from "
                         f"{len(corpus['files'])} files")
            lines.extend(f"{pad}    {f['path']} (sha256 {f['sha256'][:12]})" for f in corpus["files"])
        if with_config:
            lines.append(f"{pad}config {canonical_json(rec['config'])}")
        for sub_role, sub in item["upstream"].items():
            expected = rec["inputs"][sub_role]["sha256"]
            walk(sub, f"{sub_role} (sha256 {expected[:12]})", pad, seen)

    walk(node, "", "", set())
    return "\n".join(lines)

"""Verify an artifact's provenance chain (``lengthgen provenance --verify``): re-hash the artifact and
every upstream file its records name, and report each one that changed or went missing since the
artifact was produced.

A file is *changed* when its current SHA-256 differs from a hash recorded for it: by a downstream
artifact that read it (``inputs`` of that artifact's record), by its own sidecar (``artifact``), or
by the corpus list of a tokenizer / token stream record. It is *missing* when it no longer exists.
The walk follows each input's own record (sidecar, else embedded metadata) recursively; files
without a record (a Hugging Face model's config.json, corpus files) are leaves. A file whose sidecar
cannot be read is *unreadable*, and one under ``results/`` that a step run by hand wrote (its record's
rule "manual ...") and nobody adopted (``lengthgen adopt``) is *by hand*: the workflow refuses to build on
either, and so does the verification. Paths are recorded relative to the pipeline's working directory: run from there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..storage.canonical import sha256_file
from .sidecars import ADOPTED, HAND_RUN, RESULTS, read_record, sidecar_path, sidecar_record

IN_CODE_DIGEST = False  # it records or dispatches, never changes a result (provenance/code_digest.py)

KINDS = ("changed", "missing", "unreadable", "by hand")


@dataclass
class Problem:
    """One changed or missing file and why: the hashes that disagree, or who expected it."""

    path: str
    kind: str  # one of KINDS
    reasons: list[str] = field(default_factory=list)


@dataclass
class Verification:
    """The outcome of :func:`verify`: every file checked, in walk order, and the problems found."""

    artifact: str
    checked: list[str] = field(default_factory=list)
    problems: dict[str, Problem] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems

    def flag(self, path: str, kind: str, reason: str) -> None:
        problem = self.problems.setdefault(path, Problem(path, kind))
        if reason not in problem.reasons:
            problem.reasons.append(reason)


def verify(artifact: str | Path) -> Verification:
    """Re-hash ``artifact`` and its whole upstream chain; raises FileNotFoundError naming the file
    when ``artifact`` itself has no provenance record."""
    artifact = str(artifact)
    try:
        read_record(artifact)  # a clear error up front when there is nothing to verify
    except FileNotFoundError:
        raise
    except Exception as err:  # noqa: BLE001 - e.g. a damaged Parquet file without sidecar
        raise FileNotFoundError(f"{artifact}: no readable provenance record ({err})") from None
    result = Verification(artifact)
    _Walker(result).visit(artifact)
    return result


class _Walker:
    """Depth-first walk over the chain, hashing each file once."""

    def __init__(self, result: Verification):
        self.result = result
        self.hashes: dict[str, str | None] = {}  # path -> current SHA-256, None when missing
        self.visited: set[str] = set()  # paths whose own record was followed

    def current_hash(self, path: str) -> str | None:
        if path not in self.hashes:
            self.hashes[path] = sha256_file(path) if Path(path).is_file() else None
            self.result.checked.append(path)
        return self.hashes[path]

    def expect(self, path: str, recorded: str, by: str) -> None:
        """Check ``path`` against the hash ``recorded`` for it by ``by`` (a description)."""
        now = self.current_hash(path)
        if now is None:
            self.result.flag(path, "missing", f"{by} expects sha256 {recorded[:12]}")
        elif now != recorded:
            self.result.flag(path, "changed", f"sha256 is {now[:12]}, {by} recorded {recorded[:12]}")

    def visit(self, path: str) -> None:
        """Check ``path`` against its own record, then every input the record names."""
        if path in self.visited:
            return  # shared upstream (a dataset read by several models): walked once
        self.visited.add(path)
        self.current_hash(path)
        try:
            sidecar_record(path)
        except ValueError as err:
            self.result.flag(path, "unreadable", str(err))
            return
        record = _record_or_none(path)
        if record is None:
            return  # a leaf: checked against what its consumers recorded
        if (record.get("rule", "").startswith(f"{HAND_RUN} ") and ADOPTED not in record
                and Path(path).parts[:1] == (RESULTS,)):
            self.result.flag(path, "by hand", f"made by a step run by hand (rule {record['rule']!r}), not by the "
                             "workflow, and not adopted: make it again, or `lengthgen adopt` it")
        if "artifact" in record:
            self.expect(path, record["artifact"]["sha256"], f"its sidecar {sidecar_path(path).name}")
        for role, item in record.get("inputs", {}).items():
            self.expect(item["path"], item["sha256"], f"{path} (input {role})")
            self.visit(item["path"])
        for item in record.get("corpus", {}).get("files", []):
            self.expect(item["path"], item["sha256"], f"{path} (corpus file)")


def _record_or_none(path: str) -> dict | None:
    """The record of ``path``, or None when it has none (or its embedded metadata is unreadable)."""
    try:
        return read_record(path)
    except Exception:  # noqa: BLE001 - no record, or a damaged file without sidecar: nothing to follow
        return None


def format_verification(result: Verification) -> str:
    """One block per changed or missing file, then a count; or the one line "all N artifacts verified"."""
    n = len(result.checked)
    if result.ok:
        return f"all {n} artifacts verified (unchanged since {result.artifact} was produced)"
    lines = []
    for problem in result.problems.values():
        lines.append(f"{problem.kind.upper():8} {problem.path}")
        lines.extend(f"         {reason}" for reason in problem.reasons)
    counts = {kind: sum(p.kind == kind for p in result.problems.values()) for kind in KINDS}
    found = [f"{counts[kind]} {kind}" for kind in KINDS[2:] if counts[kind]]
    lines.append(", ".join([f"{counts['changed']} changed", *found]) + f" and {counts['missing']} missing of {n} "
                 f"artifacts in the chain of {result.artifact}")
    return "\n".join(lines)

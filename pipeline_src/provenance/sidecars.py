"""Provenance records as files: each artifact's record of what produced it, from what,
with which code, written with the artifact, read back, checked against it and traced upstream.

A record (made by :func:`pipeline_src.provenance.records.build_record`) goes into the artifact's own
metadata where the format has some (Parquet key-value metadata, safetensors header) and always into
a JSON sidecar ``<artifact>.prov.json`` that also holds the artifact's own hash. A reader checks an
input's bytes against that hash (:func:`read_checked`), and a record's inputs chain back to what
they were made from (:func:`trace`).

This module imports nothing heavy: the Snakefile imports it (through
:mod:`pipeline_src.runs.cell_status`) at parse time.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Callable

from ..storage.atomic import replacing, write_text
from ..storage.canonical import canonical_json, sha256_file

IN_CODE_DIGEST = False  # it records or dispatches, never changes a result (provenance/code_digest.py)

PARQUET_KEY = "lengthgen.provenance"
SIDECAR_SUFFIX = ".prov.json"
ADOPTED = "adopted"  # a sidecar's record of a file adopted as it is: by whom, when, its new SHA-256
RESTS_ON_ADOPTED = "rests_on_adopted"  # a record's adopted files upstream (adopted_upstream)


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


def sidecar_record(path: str | Path) -> dict | None:
    """The record in the sidecar of ``path`` (None without one), holding the artifact's SHA-256. An
    unreadable sidecar is a ValueError naming it."""
    side = sidecar_path(path)
    try:
        record = json.loads(side.read_text())
        record["artifact"]["sha256"]  # noqa: B018 - every sidecar records its artifact's digest
        return record
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{side}: not a readable provenance record ({type(err).__name__}: {err})") from None


def recorded_sha256(path: str | Path) -> str | None:
    """The SHA-256 that the sidecar of ``path`` recorded for it when it was written (or adopted);
    None without a sidecar. An unreadable sidecar is a ValueError naming it."""
    record = sidecar_record(path)
    return None if record is None else record["artifact"]["sha256"]


def read_checked(path: str | Path, error: type[Exception] = ValueError) -> tuple[bytes, bool]:
    """The bytes of ``path``, and whether they are the bytes its writer made and checked: the
    SHA-256 its sidecar recorded when it was written (False: no sidecar, a file made by hand, or a
    file adopted as it is, ``lengthgen adopt``: its bytes are the sidecar's, not its writer's).
    Bytes that changed raise ``error`` naming the file and both digests: no job uses a changed
    input. The caller parses the bytes checked here, so a file replaced after the check is never used."""
    data = Path(path).read_bytes()
    record = sidecar_record(path)
    if record is None:
        return data, False
    if (actual := hashlib.sha256(data).hexdigest()) != (recorded := record["artifact"]["sha256"]):
        raise error(f"{path}: changed since it was written (sha256 {actual}, its record says {recorded}); "
                    f"make it again (a workflow run that needs it names the command), or use it as it is: "
                    f"lengthgen adopt {path}")
    return data, ADOPTED not in record


def adopted_upstream(inputs: dict[str, str | Path]) -> list[dict]:
    """The adopted files (``lengthgen adopt``) that ``inputs`` rest on: each input adopted itself,
    and every one its record says it rests on (``rests_on_adopted``), once each, as ``{"path",
    "sha256", "by", "at"}``. An input without a readable sidecar adds nothing."""
    found: dict[tuple, dict] = {}
    for path in inputs.values():
        try:
            record = sidecar_record(path) or {}
        except ValueError:
            continue
        own = [{"path": str(path), **{key: record[ADOPTED][key] for key in ("sha256", "by", "at")}}] \
            if ADOPTED in record else []
        for item in [*own, *record.get(RESTS_ON_ADOPTED, [])]:
            found.setdefault((item["path"], item["sha256"]), item)
    return sorted(found.values(), key=lambda item: (item["path"], item["sha256"]))


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


def trace(path: str | Path, _seen: dict | None = None, locate: Callable[[str], str] | None = None,
          stand_ins: Callable[[str], list[str]] | None = None) -> dict:
    """The provenance chain of ``path``: its record with each input's chain nested under ``upstream``.
    Inputs are read where their records name them (relative to the pipeline's working directory),
    or where ``locate`` puts each recorded path (a results folder moved elsewhere). A file without a
    record here (weights not brought back from a GPU machine, say) takes the record of the first of
    ``stand_ins(path)`` that has one, less its artifact: files one job writes carry the same record
    but for the artifact, so it says what made the file (``stood_in`` names the file read)."""
    seen = {} if _seen is None else _seen
    key = str(path)
    if key in seen:
        return seen[key]
    node = _recorded(key)
    for other in (stand_ins(key) if stand_ins and "missing" in node else []):
        found = _recorded(other)
        if "record" in found:
            record = {name: value for name, value in found["record"].items() if name != "artifact"}
            node = {"path": key, "record": record, "upstream": {}, "stood_in": other}
            break
    for role, item in node.get("record", {}).get("inputs", {}).items():
        node["upstream"][role] = trace(locate(item["path"]) if locate else item["path"], seen, locate, stand_ins)
    seen[key] = node
    return node


def _recorded(path: str) -> dict:
    """A chain node of ``path`` with its record and no upstream yet, or with why it has none."""
    try:
        return {"path": path, "record": read_record(path), "upstream": {}}
    except FileNotFoundError as err:
        return {"path": path, "missing": str(err)}


def flat_fields(value: dict, prefix: str = "") -> dict:
    """A nested config as ``{"a.b": value}`` (an empty dict is a value)."""
    flat = {}
    for key, item in value.items():
        name = f"{prefix}{key}"
        flat.update(flat_fields(item, name + ".") if isinstance(item, dict) and item else {name: item})
    return flat


def add_values(fields: dict[str, list], config: dict) -> None:
    """Add each field of ``config`` to ``fields`` (flattened name -> distinct values seen)."""
    for key, value in flat_fields(config).items():
        values = fields.setdefault(key, [])
        if value not in values:
            values.append(value)


HAND_RUN = "manual"  # the rule a step run by hand records, before the workflow rule it stands for: "manual train"
RESULTS = "results"  # the workflow's folder (planning/paths.py): a file there made by hand is used once adopted


def workflow_rule(rule: str) -> str:
    """The workflow rule a record's ``rule`` stands for: itself, or for a step run by hand ("manual train")
    the rule it was run in place of, so that what it was made with is read beside the workflow's own runs."""
    return rule.removeprefix(f"{HAND_RUN} ") or rule


def upstream_values(inputs: list[str | Path], locate: Callable[[str], str] | None = None,
                    stand_ins: Callable[[str], list[str]] | None = None) -> dict[str, dict[str, list]]:
    """What ``inputs`` were made from, as a figure records it (``made_with``): per rule of their
    provenance chains (theirs included), each config field's distinct values over the rule's
    artifacts (``"model.d_model": [64]``), and the git commits and dirty flags of the code that made
    them (``"code.git_commit"``, ``"code.git_dirty"``). A step run by hand counts under the rule it
    stands for (:func:`workflow_rule`), so a value it changed shows as differing. Artifacts without a
    record add nothing; ``locate`` and ``stand_ins`` as for :func:`trace`."""
    found: dict[str, dict[str, list]] = {}
    visited: set[str] = set()

    def walk(node: dict) -> None:
        if node["path"] in visited or "record" not in node:
            return
        visited.add(node["path"])
        record = node["record"]
        code = {key: record.get("code", {}).get(key) for key in ("git_commit", "git_dirty")}
        rule = workflow_rule(record.get("rule", "unknown"))
        add_values(found.setdefault(rule, {}), {**record.get("config", {}), "code": code})
        for sub in node["upstream"].values():
            walk(sub)

    chains: dict = {}
    for path in inputs:
        walk(trace(path, chains, locate, stand_ins))
    return {rule: {key: sorted(values, key=_order) for key, values in sorted(fields.items())}
            for rule, fields in sorted(found.items())}


def _order(value) -> tuple:
    """Numbers by value before anything else, the rest by canonical JSON."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return (0, value, "") if number else (1, 0, canonical_json(value))


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
        stood_in = f"  [not here; its job's record, read from {item['stood_in']}]" if "stood_in" in item else ""
        lines.append(head + stood_in)
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

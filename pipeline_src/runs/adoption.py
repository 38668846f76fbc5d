"""Files used as they are (``lengthgen adopt FILE``) and what says which results rest on one.

A results file whose bytes no longer match its provenance sidecar (or that has none) is never used
silently: the workflow stops before its first job, and every step stops on it. Adopting it records,
in its sidecar, that it is used as it is now: by whom, when, its new SHA-256 and the one recorded
before (``adopted``). The sidecar then holds the new digest, so the checks pass, and every artifact
made from the file (and from those, on down to the figures) records it under ``rests_on_adopted``
(:func:`pipeline_src.provenance.sidecars.adopted_upstream`). A step reading an adopted dataset
checks it against its schema, as it does a file made by hand. The figure captions, the report's
landing page and ``lengthgen status`` name the adopted files a result rests on (:func:`note`).
Making the file again (the workflow's ``--forcerun`` of it) writes a fresh sidecar without the mark.
"""

from __future__ import annotations

import getpass
import socket
from datetime import datetime, timezone
from pathlib import Path

from ..provenance.sidecars import ADOPTED, RESTS_ON_ADOPTED, read_record, sidecar_record, write_sidecar
from ..storage.canonical import sha256_file

# What a file without any record (no sidecar, nothing embedded) is recorded as having been made by.
UNKNOWN_ORIGIN = {"format": "lengthgen.provenance/1", "rule": "unknown", "config": {}, "config_hash": "unknown",
                  "seeds": {}, "inputs": {},
                  "code": {"git_commit": "unknown", "git_dirty": None, "package_version": "unknown",
                           "stage": "unknown", "stage_digest": "unknown"}}


def adopt(path: str | Path, reason: str = "") -> dict:
    """Record in the sidecar of ``path`` that it is used as it is now; the adoption recorded. Its
    record of what made it is kept (the sidecar's, else the one embedded in the file, else
    :data:`UNKNOWN_ORIGIN`)."""
    path = Path(path)
    try:
        previous = sidecar_record(path)
    except ValueError:
        previous = None  # an unreadable sidecar records nothing to keep
    try:
        origin = previous or read_record(path)
    except (FileNotFoundError, ValueError, OSError):
        origin = UNKNOWN_ORIGIN
    record = {key: value for key, value in origin.items() if key not in ("artifact", ADOPTED)}
    adopted = {"by": f"{getpass.getuser()}@{socket.gethostname()}",
               "at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "sha256": sha256_file(path),
               "recorded_sha256": (previous or {}).get("artifact", {}).get("sha256"), "reason": reason}
    write_sidecar(path, {**record, ADOPTED: adopted})
    return adopted


def rests_on(record: dict) -> list[dict]:
    """The adopted files a record's artifact rests on: itself where it was adopted, and those upstream."""
    own = [{"path": record["artifact"]["path"], **record[ADOPTED]}] if ADOPTED in record else []
    return [*own, *record.get(RESTS_ON_ADOPTED, [])]


def note(record: dict) -> str:
    """One sentence naming the adopted files ``record``'s artifact rests on ("" for none)."""
    files = rests_on(record)
    if not files:
        return ""
    named = "; ".join(f"{item['path']} (sha256 {item['sha256'][:12]}, adopted by {item['by']} at {item['at']})"
                      for item in files)
    return f"Rests on {len(files)} adopted file(s), used as they are, not as their jobs made them: {named}."


def file_note(path: str | Path) -> str:
    """:func:`note` of the artifact ``path`` from its sidecar ("" without a readable one)."""
    try:
        return note(sidecar_record(path) or {})
    except ValueError:
        return ""

"""Was a claim written before the results it judges? From git and the results' provenance: the claim
file's history (each committed version and its commit time) against, per table judged, the code commit
its record names and the time it was written (the file's modification time; records hold no time, so
that a rerun's tables stay byte-identical).

The claim as judged is the file's current content. It predates a table when the commit that made that
content is an ancestor of the table's code commit (the code that made the table held the claim) or was
committed before the table was written. A claim that does not predate every table it judges is "post
hoc" (shown, not a verdict), with a one-line reason; so is one with changes not committed. Seeds whose
tables were written after an earlier version of the claim but before the version judged were "already
judged by an earlier version": the claim was edited after they were seen. A run summary records no
tables: its results are dated by the summary's first commit.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path


@dataclass(frozen=True)
class Version:
    """One committed version of a claim file."""

    commit: str
    time: int
    text: str


@dataclass(frozen=True)
class Made:
    """One table judged: its seed (None: a table of no seed), when it was written and by which code commit."""

    seed: int | None
    time: float
    commit: str | None


@dataclass(frozen=True)
class Written:
    """Whether a claim predates its results (None: cannot tell), in one line."""

    predates: bool | None
    line: str


def git(folder: Path, *args: str) -> str | None:
    done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True)
    return done.stdout if done.returncode == 0 else None


@functools.lru_cache(maxsize=256)
def versions(path: Path) -> tuple[Version, ...] | None:
    """The committed versions of the file ``path``, oldest first (None: not in a git repository)."""
    path = path.resolve()
    root = git(path.parent, "rev-parse", "--show-toplevel")
    if root is None:
        return None
    root = Path(root.strip()).resolve()
    name = path.relative_to(root).as_posix()
    log = git(root, "log", "--format=%H %ct", "--", name) or ""
    found = []
    for line in reversed(log.split("\n")):
        if line:
            commit, time = line.split()
            found.append(Version(commit, int(time), git(root, "show", f"{commit}:{name}") or ""))
    return tuple(found)


@functools.lru_cache(maxsize=1024)
def is_ancestor(folder: Path, commit: str, of: str) -> bool:
    return subprocess.run(["git", "-C", str(folder), "merge-base", "--is-ancestor", commit, of],
                          capture_output=True).returncode == 0


def before(folder: Path, version: Version, made: Made) -> bool:
    """Whether ``version`` of a claim was committed before the table ``made`` was made."""
    return bool(made.commit and is_ancestor(folder, version.commit, made.commit)) or version.time < made.time


def tables_made(tables: list[Path]) -> list[Made]:
    """Each table's seed (from its path, ``seed<N>``), modification time and code commit (its record)."""
    from ..storage.provenance import read_record

    found = []
    for table in tables:
        if not Path(table).exists():
            continue
        try:
            commit = read_record(table).get("code", {}).get("git_commit")
        except (OSError, ValueError):
            commit = None
        seed = re.search(r"seed(\d+)", Path(table).as_posix())
        found.append(Made(int(seed[1]) if seed else None, os.stat(table).st_mtime, commit))
    return found


def summary_made(summary: Path) -> list[Made]:
    """A run summary's results, dated by its first commit (none where it was never committed)."""
    history = versions(Path(summary))
    return [Made(None, history[0].time, history[0].commit)] if history else []


def day(time: float) -> str:
    return datetime.fromtimestamp(time, timezone.utc).strftime("%Y-%m-%d %H:%M")


def written(claim: Path, made: list[Made]) -> Written:
    """Whether the claim file ``claim`` as it is now was committed before every table of ``made``."""
    if not made:
        return Written(None, "cannot tell: no table or committed summary dates what it judges")
    history = versions(Path(claim))
    if not history:
        return Written(None, f"{claim} is not committed to a git repository: cannot tell when it was written")
    folder, current = Path(claim).resolve().parent, history[-1]
    if current.text != Path(claim).read_text():
        return Written(False, f"post hoc: {claim} has changes not committed")
    as_judged = next(version for version in history if version.text == current.text
                     and all(later.text == current.text for later in history[history.index(version):]))
    after = [m for m in made if not before(folder, as_judged, m)]
    earlier = [version for version in history if history.index(version) < history.index(as_judged)]
    seen = sorted({m.seed for m in made for version in earlier
                   if m.seed is not None and before(folder, version, m) and not before(folder, as_judged, m)})
    judged = f"claim as judged committed {day(as_judged.time)} ({as_judged.commit[:7]})"
    if after:
        first = min(after, key=lambda m: m.time)
        seeds = sorted({m.seed for m in after if m.seed is not None})
        what = f"seeds {', '.join(map(str, seeds))}" if seeds else "its results"
        line = f"post hoc: {judged}, after {what} (made {day(first.time)})"
    else:
        line = f"pre-registered: {judged}, before every result it judges"
    if seen:
        line += f"; seeds {', '.join(map(str, seen))} were already judged by an earlier version ({earlier[0].commit[:7]})"
    return Written(not after, line)

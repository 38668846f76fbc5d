"""Was a claim written before the results it judges? From git and the results' provenance: the claim
file's history (each committed version and its commit time) against, per table judged, the code commit
its record names and the time it was written (the file's modification time; records hold no time, so
that a rerun's tables stay byte-identical).

The claim as judged is the file's fields as they are now (comments, layout and how it is shown aside:
``parts``, each comparison's ``part``). It was registered
by the commit that first made them so, or, where the file names one (``registered``), by the earlier
commit that first stated its criterion (in code or in docs/findings.md): that commit must be an ancestor
of HEAD, and is believed only while the fields have not changed since ``registered`` was written. The
claim predates a table when its registration is an ancestor of the table's code commit (the code that
made the table held the claim) or was committed before the table was written. A claim that does not
predate every table it judges is "post hoc" (shown, not a verdict), with a one-line reason; so is one
with changes not committed. Seeds whose tables were written after an earlier version of the claim but
before its registration were "already judged by an earlier version": the claim was edited after they
were seen. A run summary records no tables: each model's rows there are dated by the first commit of the
summary that held them all.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ..storage import yaml_text


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
    from ..provenance.sidecars import read_record

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


def summary_made(summary: Path, figure: str) -> list[Made]:
    """The results of ``figure`` in the run summary ``summary``: each run's rows of the figure's task (the
    forecast's: each model's forecast rows), per seed (a model: task, variant, scheme, seed), dated by the
    first commit of the summary that held them all (the same numbers: made by then; by the file's time
    where it never did), with its seed (None for
    Figure 4's rows, whose seed column holds a target). The figure spec's rows (``spec.*``) are not
    results. None where the summary was never committed."""
    from ..planning.jobs import FIGURE_TASK
    from .claim_file import FORECAST_FIGURE
    from .figure_rows import FORECAST
    from .run_summary import LANGUAGE

    task = FIGURE_TASK.get(figure, LANGUAGE)

    def judged(values: list[str]) -> bool:  # a row of the figure's results
        if figure == FORECAST_FIGURE:  # each model's forecast rows, whatever its task
            return values[metric].startswith(FORECAST)
        return values[0] == task and not values[metric].startswith(("spec.", FORECAST))

    history = versions(Path(summary))
    if not history:
        return []
    header, *lines = Path(summary).read_text().splitlines()
    columns = header.split(",")
    seed, metric = columns.index("seed"), columns.index("metric")
    runs: dict[tuple, set[str]] = {}
    for line in lines:
        values = line.split(",")
        if judged(values):
            runs.setdefault(tuple(values[:seed + 1]), set()).add(line)
    held = [set(version.text.splitlines()[1:]) if version.text.startswith(header + "\n") else set()
            for version in history]
    made = set()
    for run, rows in runs.items():
        number = int(run[seed]) if run[seed] and (task != LANGUAGE or figure == FORECAST_FIGURE) else None
        first = next((version for version, there in zip(history, held, strict=False) if rows <= there), None)
        made.add(Made(number, first.time, first.commit) if first else Made(number, os.stat(summary).st_mtime, None))
    return sorted(made, key=lambda m: (m.time, m.seed if m.seed is not None else -1))


def fields_of(text: str) -> dict:
    """A claim file's fields ({} where it holds no mapping)."""
    try:
        found = yaml_text.read(text)
    except yaml_text.YAMLError:
        return {}
    return found if isinstance(found, dict) else {}


SHOWN = ("registered", "parts")  # the fields that say where a claim was registered and how it is shown


def fields(text: str) -> object:
    """A claim file's content as judged: its fields but :data:`SHOWN` and each comparison's ``part``
    (how it is shown, not what it decides; comments and layout aside)."""
    judged = {key: value for key, value in fields_of(text).items() if key not in SHOWN}
    if isinstance(judged.get("compare"), list):
        judged["compare"] = [{key: value for key, value in rule.items() if key != "part"} if isinstance(rule, dict)
                             else rule for rule in judged["compare"]]
    return judged or text


def names(text: str) -> tuple[str, str] | None:
    """The registration (commit, text) a claim file's ``text`` names, if any."""
    found = fields_of(text).get("registered")
    return (found.get("commit"), found.get("text")) if isinstance(found, dict) else None


def registered_version(claim: Path, commit: str) -> Version:
    """The commit ``commit`` that a claim file names as its criterion's registration, checked: a commit of
    the claim's repository and an ancestor of HEAD (else a :class:`.claim_file.ClaimError` naming the file
    and the field)."""
    from .claim_file import ClaimError

    folder = Path(claim).resolve().parent
    time = git(folder, "show", "-s", "--format=%ct", f"{commit}^{{commit}}")
    if time is None or not is_ancestor(folder, commit, "HEAD"):
        raise ClaimError(f"{claim}: field registered.commit: {commit} is not a commit of HEAD's history")
    return Version(commit, int(time), "")


def check_registered(claims: list) -> None:
    """Each of ``claims`` (:class:`.claim_file.Claim`) that names its registration, checked
    (:func:`registered_version`) before any table is read."""
    for claim in claims:
        if claim.registered is not None and versions(Path(claim.path)):
            registered_version(claim.path, claim.registered[0])


def day(time: float) -> str:
    return datetime.fromtimestamp(time, timezone.utc).strftime("%Y-%m-%d %H:%M")


def written(claim: Path, made: list[Made], registered: tuple[str, str] | None = None) -> Written:
    """Whether the claim file ``claim`` as it is now (its criterion first committed by ``registered``'s
    commit, where it names one) was committed before every table of ``made``."""
    if not made:
        return Written(None, "cannot tell: no table or committed summary dates what it judges")
    history = versions(Path(claim))
    if not history:
        return Written(None, f"{claim} is not committed to a git repository: cannot tell when it was written")
    folder, current = Path(claim).resolve().parent, history[-1]
    if current.text != Path(claim).read_text():
        return Written(False, f"post hoc: {claim} has changes not committed")
    start = len(history)
    while start > 0 and fields(history[start - 1].text) == fields(current.text):
        start -= 1
    as_judged = history[start]
    judged = f"claim as judged committed {day(as_judged.time)} ({as_judged.commit[:7]})"
    since = len(history)  # the first version naming ``registered`` as it is now
    while registered and since > 0 and names(history[since - 1].text) == registered:
        since -= 1
    if registered and since >= start:  # named with (or after) the fields as judged: it vouches for them
        as_judged = registered_version(claim, registered[0])
        judged = f"criterion committed {day(as_judged.time)} ({as_judged.commit[:7]}, {registered[1]})"
    elif registered:
        judged += f" (its fields changed after registered.commit {registered[0][:7]} was named)"
    after = [m for m in made if not before(folder, as_judged, m)]
    earlier = [version for version in history[:start] if fields(version.text) != fields(current.text)]
    seen = sorted({m.seed for m in made for version in earlier
                   if m.seed is not None and before(folder, version, m) and not before(folder, as_judged, m)})
    if after:
        first = min(after, key=lambda m: m.time)
        seeds = sorted({m.seed for m in after if m.seed is not None})
        what = f"seeds {', '.join(map(str, seeds))}" if seeds else "its results"
        line = f"post hoc: {judged}, after {what} (made {day(first.time)})"
    else:
        line = f"pre-registered: {judged}, before every result it judges"
    if seen:
        line += (f"; seeds {', '.join(map(str, seen))} were already judged by an earlier version "
                 f"({earlier[0].commit[:7]})")
    return Written(not after, line)

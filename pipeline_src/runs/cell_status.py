"""Where every experiment cell of a config stands (``lengthgen status``): done, diverged, stale or
missing.

A cell (task, variant, scheme, seed) is made by four jobs, as in ``workflow/rules``: its training
set and evaluation set, its training and its evaluation (``accuracy.parquet``), their files named
by :mod:`pipeline_src.planning.paths` as the rules name them. Its state:

* ``missing``: no accuracy table yet (the note says how far the chain got);
* ``stale``: the accuracy table exists but Snakemake would remake it: a job of the chain recorded
  another config subset (its ``config_hash``) or another code digest (``stage_digest``) than the
  current config and sources give, an output of the chain is missing, or an input was remade after
  the job that read it (its sidecar's SHA-256 differs from the one the reader recorded);
* ``done``: none of that;
* ``diverged``: done, but the cell's training diverged (its summary says at which step): the
  figures name it and leave it out of the means.

A cell whose accuracy table rests on a file adopted as it is (``lengthgen adopt``: its record's
``rests_on_adopted``) says so first in its note, naming the files.

A missing cell whose training (or evaluation) log exists but whose model (or accuracy table) does
not is noted as failed or running, with the log's path and, for a training, the last step its log
reports (:mod:`pipeline_src.training.progress_line`): after a ``--keep-going`` run, the cells that
failed; during a run, how far each training has got.

The expected config subsets come from the same builders (:mod:`pipeline_src.planning.jobs`) and the code
digests from the same :func:`stage_digest` calls as the workflow's ``params``, so the states follow
Snakemake's rerun triggers (params, code, missing or updated inputs); the config is loaded as
the Snakefile loads it (:func:`pipeline_src.planning.load_config.load_config`). Files are not re-hashed here (that is
``lengthgen provenance --verify``): a file edited by hand keeps its recorded hashes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..planning import jobs, paths
from ..planning.cell_jobs import Job, cell_jobs
from ..provenance.sidecars import flat_fields, read_record
from ..storage.canonical import config_hash
from ..tasks import get_task
from ..training.progress_line import last_progress
from .adoption import rests_on

STATES = ("done", "diverged", "stale", "missing")


# --- checking records ---


@dataclass
class CellStatus:
    """The state of one cell, why, and its headline numbers (None where not evaluated)."""

    cell: dict
    state: str
    note: str = ""
    metric: str | None = None
    at_train: tuple[int, float] | None = None  # (length, mean accuracy) at the longest training length
    at_longest: tuple[int, float] | None = None  # the same at the longest evaluated length


class Checker:
    """Checks jobs against their records; reads each record once (datasets are shared by cells)."""

    def __init__(self):
        self.records: dict[str, dict | str] = {}  # path -> record, or the error reading it

    def record(self, path: str) -> dict | str:
        if path not in self.records:
            try:
                self.records[path] = read_record(path)
            except Exception as err:  # noqa: BLE001 - missing or unreadable record: a reason to remake
                self.records[path] = f"no readable provenance record ({err})"
        return self.records[path]

    def reasons(self, job: Job) -> list[str]:
        """Why Snakemake would rerun ``job`` (empty: it would not)."""
        missing = [path for path in job.outputs if not Path(path).exists()]
        if missing:
            return [f"{job.name}: {missing[0]} missing"]
        record = self.record(job.artifact)
        if isinstance(record, str):
            return [f"{job.name}: {job.artifact}: {record}"]
        found = []
        if record.get("config_hash") != config_hash(job.spec):
            found.append(f"{job.name} config changed ({diff_fields(record.get('config', {}), job.spec)})")
        if record.get("code", {}).get("stage_digest") != job.code:
            found.append(f"{job.name} code changed ({job.stage} sources)")
        for role, path in job.inputs.items():
            upstream = self.record(path)
            recorded = record.get("inputs", {}).get(role, {}).get("sha256")
            now = upstream.get("artifact", {}).get("sha256") if isinstance(upstream, dict) else None
            if now is not None and recorded != now:
                found.append(f"{role} remade after {job.name}")
        return found


def diff_fields(recorded: dict, expected: dict, limit: int = 3) -> str:
    """The first ``limit`` differing fields as ``a.b: old -> new``."""
    old, new = flat_fields(recorded), flat_fields(expected)
    keys = sorted(key for key in old.keys() | new.keys() if old.get(key, "unset") != new.get(key, "unset"))
    shown = [f"{key}: {old.get(key, 'unset')} -> {new.get(key, 'unset')}" for key in keys[:limit]]
    more = f", {len(keys) - limit} more" if len(keys) > limit else ""
    return ", ".join(shown) + more


def cell_status(config: dict, cell: dict, checker: Checker | None = None) -> CellStatus:
    """State, note and headline numbers of one cell."""
    checker = checker or Checker()
    chain = cell_jobs(config, cell)
    evaluation = chain[-1]
    if not Path(evaluation.artifact).exists():
        return CellStatus(cell, "missing", _progress(chain, cell))
    reasons = [reason for job in chain for reason in checker.reasons(job)]
    status = CellStatus(cell, "stale" if reasons else "done", "; ".join(reasons))
    diverged = _divergence(paths.train_outputs(**cell)["summary"])
    if diverged and not reasons:
        status.state, status.note = "diverged", diverged
    try:
        table = headline_table(cell, evaluation.artifact)
        status.metric, status.at_train, status.at_longest = headline(config, cell, table)
        gate = fit_gate(config, cell, table)
    except Exception as err:  # noqa: BLE001 - a damaged table: say so, keep the other cells
        status.state, status.note = "stale", f"{evaluation.artifact}: unreadable ({err})"
        return status
    if gate is not None and status.state == "done":
        status.note = f"not learned: {gate.describe()}"
    record = checker.record(evaluation.artifact)
    if adopted := [item["path"] for item in rests_on(record)] if isinstance(record, dict) else []:
        status.note = "; ".join(part for part in (f"rests on adopted {', '.join(adopted)}", status.note) if part)
    return status


def _progress(chain: list[Job], cell: dict) -> str:
    """How far a cell without an accuracy table got."""
    done = [job.name for job in chain[:-1] if all(Path(p).exists() for p in job.outputs)]
    if "train" in done:
        trained = _divergence(paths.train_outputs(**cell)["summary"]) or "trained"
        log = Path(paths.log(paths.eval_job(**cell)))
        return (f"{trained}; evaluation failed or still running: see {log}" if log.exists()
                else f"{trained}, not evaluated")
    log = Path(paths.log(paths.train_job(**cell)))
    if log.exists():
        where = last_progress(log)
        return f"training failed or still running{f' ({where})' if where else ''}: see {log}"
    return f"has {' and '.join(done)}" if done else "nothing run"


def _divergence(summary: str | Path) -> str:
    """'training diverged at step N (reason)' when the training summary ``summary`` records it, else ''."""
    try:
        diverged = json.loads(Path(summary).read_text()).get("diverged")
    except (OSError, ValueError):
        return ""
    return f"training diverged at step {diverged['step']} ({diverged['reason']})" if diverged else ""


# --- headline numbers ---


def headline_metric(task: str, variant: str) -> str:
    """The metric a cell is summarised by, as in the task's figure (its module declares it)."""
    return get_task(task).headline_metric(variant)


def longest_train_length(config: dict, task: str) -> int:
    """The longest training sample's length, in the units of the accuracy table's ``length``."""
    return get_task(task).train_lengths(config[task]["data"])[1]


def headline_table(cell: dict, path: str):
    """The cell's accuracy table at ``path``, its headline metric's rows: length and accuracy, and k for
    a task trained on K_train (read once for :func:`headline` and :func:`fit_gate`)."""
    import polars as pl

    k_column = ["k"] if get_task(cell["task"]).layout.k_train(cell["variant"]) is not None else []
    metric = headline_metric(cell["task"], cell["variant"])
    return pl.read_parquet(path, columns=[*k_column, "length", "metric", "accuracy"]).filter(pl.col("metric") == metric)


def headline(config: dict, cell: dict, frame) -> tuple[str, tuple[int, float] | None, tuple[int, float] | None]:
    """The cell's metric and its mean accuracy (over the task's cell columns but length, e.g. k_test)
    at the longest evaluated length within the training lengths, and at the longest evaluated length
    (``frame``: :func:`headline_table`)."""
    import polars as pl

    metric = headline_metric(cell["task"], cell["variant"])
    if frame.is_empty():
        return metric, None, None
    means = dict(frame.group_by("length").agg(pl.col("accuracy").mean()).iter_rows())
    lengths = sorted(means)
    within = [length for length in lengths if length <= longest_train_length(config, cell["task"])]
    at_train = (within[-1], means[within[-1]]) if within else None
    return metric, at_train, (lengths[-1], means[lengths[-1]])


def fit_gate(config: dict, cell: dict, frame):
    """The k <= K_train the cell's model did not learn at the longest training length (a
    :class:`~pipeline_src.findings.fit_gate.NotLearned`), or None: learned, or a task without K_train
    (``frame``: :func:`headline_table`)."""
    from ..findings.fit_gate import not_learned

    k_train = get_task(cell["task"]).layout.k_train(cell["variant"])
    return None if k_train is None else not_learned(frame, k_train, longest_train_length(config, cell["task"]))


# --- the whole config ---


def config_status(config: dict, tasks: list[str] | None = None) -> list[CellStatus]:
    """Every cell of the config's synthetic tasks (or of ``tasks``), in config order."""
    checker = Checker()
    chosen = jobs.tasks(config) if tasks is None else [t for t in jobs.tasks(config) if t in tasks]
    return [cell_status(config, cell, checker) for task in chosen for cell in jobs.cells(config, task)]


def format_status(statuses: list[CellStatus], width: int | None = None) -> str:
    """An aligned table, one row per cell, and a count per state. With ``width``, each row's note is
    cut to fit that many columns (ending in "..."), and a last line says so when any was cut."""
    header = ["task", "variant", "scheme", "seed", "state", "metric", "acc@train_max", "acc@longest", "note"]
    rows = [[s.cell["task"], s.cell["variant"], s.cell["scheme"], str(s.cell["seed"]), s.state,
             s.metric or "-", _point(s.at_train), _point(s.at_longest), s.note] for s in statuses]
    counts = ", ".join(f"{sum(s.state == state for s in statuses)} {state}" for state in STATES)
    lines = aligned([header, *rows])
    cut = width is not None and any(len(line) > width for line in lines)
    if cut:
        lines = [line if len(line) <= width else line[:max(0, width - 3)] + "..." for line in lines]
    return "\n".join([*lines, f"{len(statuses)} cells: {counts}",
                      *(["(notes cut to the terminal's width: lengthgen status --wide shows them whole)"]
                        if cut else [])])


def unfinished_cells(results: Path = Path(paths.RESULTS)) -> dict[str, str | list[str]]:
    """What the report's landing page says about the cells on disk that did not finish: those whose
    training diverged (and the step) and those whose training or evaluation job left a log but no
    output (failed, e.g. in a ``--keep-going`` run). Found under the results folder ``results``
    whatever the config; "none" if none."""
    diverged = []
    for summary, cell in paths.find(paths.train_outputs()["summary"], results):
        note = _divergence(summary)
        if note:
            diverged.append(f"{paths.cell(**cell)}: {note}")
    failed = []
    for job, output in ((paths.train_job, lambda cell: paths.train_outputs(**cell)["model"]),
                        (paths.eval_job, lambda cell: paths.accuracy(**cell))):
        failed += [str(log) for log, cell in paths.find(paths.log(job()), results)
                   if not paths.under(results, output(cell)).exists()]
    return {"cells whose training diverged": diverged or "none",
            "jobs that failed (their log, no output)": failed or "none"}


def unfinished_warning(results: Path = Path(paths.RESULTS)) -> str:
    """The lines (newline-terminated) the workflow prints at its end, success or error, when cells
    under ``results`` did not finish (see :func:`unfinished_cells`); empty when every cell did."""
    found = {title: found for title, found in unfinished_cells(results).items() if found != "none"}
    lines = [f"WARNING: {title}:\n" + "\n".join(f"  {item}" for item in items) for title, items in found.items()]
    return "".join(line + "\n" for line in (lines + ["(lengthgen status: every cell's state)"] if lines else []))


def _point(point: tuple[int, float | None] | None) -> str:
    return "-" if point is None or point[1] is None else f"{point[1]:.2f}@{point[0]}"


def aligned(rows: list[list[str]]) -> list[str]:
    """Rows padded to left-aligned columns two spaces apart (the last column unpadded)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return ["  ".join([*(cell.ljust(w) for cell, w in zip(row, widths, strict=False)), row[-1]]).rstrip()
            for row in rows]

"""Where every result, log and benchmark of the pipeline lives: the one place that names them.

Each function returns a path under ``results/`` (relative to the pipeline's working directory).
Called without arguments it returns the Snakemake pattern the rules use, its wildcards in braces
(``train_data()`` is ``results/data/{task}/train_{variant}.parquet``); called with values, one
concrete path (``accuracy(**cell)`` for a cell ``{task, scheme, variant, seed}``); called with
``"*"``, a glob pattern. :func:`find` lists the files of a pattern under a results folder with
their wildcard values.

Every job has a name, a path without suffix (``train/{task}/{scheme}/{variant}/seed{seed}``): its
log is ``results/logs/{name}.log``, its timing ``results/benchmarks/{name}.tsv``.

Nothing heavy imported: the Snakefile reads it at parse time.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

from ..provenance.sidecars import RESULTS, sidecar_path  # RESULTS: the folder every path here lies in

IN_CODE_DIGEST = False  # it records or dispatches, never changes a result (provenance/code_digest.py)

GPU_SLOTS = ".snakemake/lengthgen-gpu-slots"  # the lock files of a local run's GPU slots (devices/placement.py)
FIGURE_FORMATS = ("png", "pdf")
FORECAST_FIGURE = "forecast"  # the figure across every task's models (planning/forecast_study.py)
# The files of a trained model's folder, by their role in the train rule's output.
TRAIN_FILES = {"model": "model.safetensors", "description": "model.json", "log_table": "train_log.parquet",
               "summary": "summary.json"}
LANGUAGE_TRAIN_FILES = {**TRAIN_FILES, "heldout_table": "heldout_log.parquet"}
# The files of a trained model's mechanism analysis (pipeline_src/evaluation/mechanism.py), by table.
MECHANISM_FILES = {name: f"{name}.parquet" for name in ("attention", "flips", "first_errors")}


# --- job names (the log and benchmark of each job) ---


def cell(*, task="{task}", scheme="{scheme}", variant="{variant}", seed="{seed}") -> str:
    """A training cell's folder, the same under ``train/`` and ``eval/``."""
    return f"{task}/{scheme}/{variant}/seed{seed}"


def train_data_job(*, task="{task}", variant="{variant}") -> str:
    return f"data/{task}/train_{variant}"


def eval_data_job(*, task="{task}", evalset="{evalset}") -> str:
    """``evalset``: the evaluation set's stem, ``eval`` or ``eval_{variant}`` (see
    :func:`pipeline_src.planning.jobs.eval_data_name`)."""
    return f"data/{task}/{evalset}"


def train_job(**wildcards) -> str:
    return f"train/{cell(**wildcards)}"


def eval_job(**wildcards) -> str:
    return f"eval/{cell(**wildcards)}"


def figure_job(figure="{figure}") -> str:
    return f"figures/{figure}"


LANGUAGE_CORPUS_JOB = "language/corpus"
LANGUAGE_INFLUENCE_JOB = "language/influence"


def language_train_job(lm="{lm}") -> str:
    return f"language/train/{lm}"


def language_eval_job(lm="{lm}") -> str:
    return f"language/eval/{lm}"


def log(job: str) -> str:
    return f"{RESULTS}/logs/{job}.log"


def benchmark(job: str) -> str:
    return f"{RESULTS}/benchmarks/{job}.tsv"


# --- the synthetic tasks ---


def train_data(**wildcards) -> str:
    return f"{RESULTS}/{train_data_job(**wildcards)}.parquet"


def eval_data(**wildcards) -> str:
    return f"{RESULTS}/{eval_data_job(**wildcards)}.parquet"


def train_outputs(**wildcards) -> dict[str, str]:
    """The files a cell's training writes, by role (``model`` first: its record is the job's)."""
    folder = f"{RESULTS}/{train_job(**wildcards)}"
    return {role: f"{folder}/{name}" for role, name in TRAIN_FILES.items()}


def same_job(path: str) -> list[str]:
    """The other files the job that writes ``path`` writes beside it, each carrying the same record
    but for its artifact: a training's outputs (a model's ``model.json`` and log, kept where its
    weights are not); none for any other file."""
    written = Path(path)
    names = list(TRAIN_FILES.values())
    if written.name not in names or "train" not in written.parts:
        return []
    return [str(written.with_name(name)) for name in names if name != written.name]


def accuracy(**wildcards) -> str:
    return f"{RESULTS}/{eval_job(**wildcards)}/accuracy.parquet"


def mechanism_tables(**wildcards) -> dict[str, str]:
    """A trained model's mechanism tables, by name (see :data:`MECHANISM_FILES`)."""
    return {name: f"{RESULTS}/mechanism/{cell(**wildcards)}/{file}" for name, file in MECHANISM_FILES.items()}


def mechanism_figure(task="{task}") -> str:
    """The name of a task's mechanism figure (``results/figures/<name>.png``)."""
    return f"mechanism_{task}"


def training_figure(figure="{figure}") -> str:
    """The name of the training-curve figure of a task's figure (``results/figures/<name>.png``)."""
    return f"training_{figure}"


def figure(figure="{figure}", fmt="png") -> str:
    return f"{RESULTS}/{figure_job(figure)}.{fmt}"


def figure_files(name="{figure}") -> list[str]:
    """A figure in every format (the targets of ``all``)."""
    return [figure(name, fmt) for fmt in FIGURE_FORMATS]


def figure_caption(name="{figure}") -> str:
    """A figure's caption, written by the figure's job from its provenance record (the report's)."""
    return f"{RESULTS}/{figure_job(name)}.caption.rst"


def sidecar(path: str) -> str:
    """The provenance sidecar of an artifact (``<artifact>.prov.json``)."""
    return str(sidecar_path(path))


# --- the natural-language analysis ---

LANGUAGE = f"{RESULTS}/language"
TOKENIZER = f"{LANGUAGE}/tokenizer.json"
TOKENS = f"{LANGUAGE}/tokens.parquet"
INFLUENCE = f"{LANGUAGE}/influence.parquet"
INFLUENCE_PART = ".part{index}"  # in the name of one part's table, log and benchmark: influence.part3.parquet
INFLUENCE_PARTS = f"{LANGUAGE}/influence{{part}}.parquet"  # the rule's output: {part} is "" or ".part3"
PART_PATTERN = r"(\.part[1-9][0-9]*)?"


def influence_table(part: int | None = None) -> str:
    """The influence analysis's table: the whole draw's (``part`` None), or part ``part``'s (1..parts)."""
    return INFLUENCE_PARTS.format(part="" if part is None else INFLUENCE_PART.format(index=part))


def influence_job(part: str = "{part}") -> str:
    """The influence analysis's job name (log and benchmark): ``part`` as the rule's wildcard holds it."""
    return f"{LANGUAGE_INFLUENCE_JOB}{part}"


def part_of(wildcard: str) -> int | None:
    """The part (1..parts) the rule's ``{part}`` wildcard names, or None: the whole draw."""
    return int(wildcard.removeprefix(".part")) if wildcard else None


def language_train_outputs(lm="{lm}") -> dict[str, str]:
    """The files a language model's training writes, by role (``model`` first)."""
    folder = f"{RESULTS}/{language_train_job(lm)}"
    return {role: f"{folder}/{name}" for role, name in LANGUAGE_TRAIN_FILES.items()}


def language_eval_outputs(lm="{lm}") -> dict[str, str]:
    """A language model's loss by position and its losses on the analysed targets."""
    folder = f"{RESULTS}/{language_eval_job(lm)}"
    return {"positions": f"{folder}/loss_by_position.parquet", "targets": f"{folder}/target_loss.parquet"}


# --- finding results on disk ---


def under(results: str | Path, path: str) -> Path:
    """``path`` (under ``results/``) under another results folder."""
    return Path(results, Path(path).relative_to(RESULTS))


def locate_under(results: Path) -> Callable[[str], str]:
    """Where a recorded input path is in the results folder ``results``: a path under ``results/``
    moved there, any other as recorded."""

    def locate(recorded: str) -> str:
        try:
            return str(under(results, recorded))
        except ValueError:  # not under results/: a Hugging Face model's folder, say
            return recorded
    return locate


def find(pattern: str, results: str | Path = RESULTS) -> list[tuple[Path, dict[str, str]]]:
    """The files matching ``pattern`` (a path of this module with wildcards) under the results
    folder ``results``, sorted, each with its wildcard values."""
    relative = Path(pattern).relative_to(RESULTS).as_posix()
    regex = re.compile(re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(relative)))
    found = []
    for path in sorted(Path(results).glob(re.sub(r"\{\w+\}", "*", relative))):
        match = regex.fullmatch(path.relative_to(results).as_posix())
        if match:
            found.append((path, match.groupdict()))
    return found

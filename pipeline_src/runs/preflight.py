"""A run's checks before anything is removed: what each job would check when it starts, made for
every job Snakemake is about to run, at the workflow's start.

Snakemake deletes a job's old outputs when it starts the job, before the job's own checks run: a
job that then refuses its spec, its device or an input would leave its cell without the results it
had. The Snakefile's ``onstart`` (run once the jobs are planned and before the first one starts;
not in a dry run, nor with ``--no-hooks``) calls :func:`check_workflow`, which checks, for every job
about to run:

- its spec, with the check its ``lengthgen`` step makes first (:mod:`pipeline_src.planning.spec_check`),
  inputs that this run does not make again included;
- its device, on the machine that runs it: a spec asking for ``cuda`` where CUDA is not available
  (local runs only: a cluster node's GPUs are not seen from here, docs/running.md says what that risks);
- every results file it reads that this run does not make again: its bytes against the SHA-256 its
  provenance sidecar recorded (an adopted file's sidecar records its adopted bytes: ``lengthgen
  adopt``), and the sidecar itself (a file without one is refused: nothing says what made it);
- and that each such file was made as this run would make it: by the rule that makes it here and with
  the spec that rule's job would run with (a step run by hand into ``results/``, "manual train", or
  one run with another spec, is refused, naming the field that differs), unless it was adopted.

A failure stops the run with one line naming the field or the file; nothing has been run or removed.
An integrity failure names the command that makes the files again: the run's own command with
``--forcerun`` of those files, which remakes them and reruns whatever was made from them.

Imports nothing heavy: the Snakefile imports it at parse time.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..planning import paths
from ..provenance.sidecars import ADOPTED, flat_fields, recorded_sha256, sidecar_path, sidecar_record, workflow_rule
from ..storage.canonical import canonical_json, config_hash, sha256_file

NOTHING_DONE = "nothing was run or removed"
# Each rule's lengthgen step, whose spec check (pipeline_src/planning/spec_check.py) its jobs get.
STEPS = {"train_data": "generate", "eval_data": "generate", "train": "train", "evaluate": "evaluate",
         "language_corpus": "corpus", "language_train": "lm_train", "language_eval": "lm_eval",
         "language_influence": "influence"}
FIGURE_RULE = "plot_"


class PreflightError(Exception):
    """What a job about to run would refuse; one line naming the field or the file."""


@dataclass(frozen=True)
class Job:
    """A job Snakemake is about to run: its rule, input and output files and params."""

    rule: str
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    params: dict = field(default_factory=dict)

    def name(self) -> str:
        return f"rule {self.rule}" + (f" ({self.outputs[0]})" if self.outputs else "")

    def spec(self) -> dict:
        return json.loads(self.params["spec"]) if "spec" in self.params else {}


def check_workflow(workflow) -> None:
    """:func:`check` of the jobs of Snakemake's ``workflow`` about to run; a failure is logged as its
    one line (no traceback: the line says it all) and ends the run with exit status 1, before the
    first job (Snakemake releases its lock on the way out)."""
    from snakemake.logging import logger

    def job_of(job) -> Job:
        return Job(job.rule.name, tuple(map(str, job.input)), tuple(map(str, job.output)), dict(job.params.items()))
    jobs = [job_of(job) for job in workflow.dag.needrun_jobs()]
    makers = {str(path): job for job in workflow.dag.jobs for path in job.output}

    def maker(path: str) -> Job | None:  # the job of this DAG that makes ``path``
        return job_of(makers[path]) if path in makers else None
    try:
        check(jobs, local=workflow.local_exec and not workflow.remote_exec, command=sys.argv, maker=maker)
    except PreflightError as err:
        logger.error(str(err))
        sys.exit(1)


def check(jobs: list[Job], *, local: bool = True, command: list[str] | None = None,
          maker: Callable[[str], Job | None] | None = None) -> None:
    """Every check a job of ``jobs`` would make when it starts (``local``: the jobs run on this
    machine); ``command``: the argv of the run, for the command that makes a changed file again;
    ``maker``: the job that makes a file in this run's DAG (None: not one of its files), whose rule and
    spec a file read as it is must have been made with."""
    made = {path for job in jobs for path in job.outputs}
    for job in jobs:
        _spec(job, made)
    if local:
        _device(jobs)
    problems = {path: problem for path in _read_files(jobs, made)
                if (problem := integrity(path) or made_otherwise(path, maker(path) if maker else None))}
    if problems:
        first, problem = next(iter(problems.items()))
        more = f" (and {len(problems) - 1} more such file(s))" if len(problems) > 1 else ""
        raise PreflightError(f"{first}: {problem}{more}; {NOTHING_DONE}. Make it again: "
                             f"{remake_command(command, list(problems))}   (or use it as it is: "
                             f"{shlex.join(['lengthgen', 'adopt', *problems])})")


def integrity(path: str | Path) -> str | None:
    """Why ``path`` (a results file a job reads) cannot be used as it is, or None: a missing or
    unreadable sidecar, or bytes that differ from the SHA-256 the sidecar records."""
    try:
        recorded = recorded_sha256(path)
    except ValueError as err:
        return f"unreadable provenance record ({str(err).split(': ', 1)[-1]})"
    if recorded is None:
        return f"no provenance record ({sidecar_path(path).name} is missing): nothing says what made it"
    if (actual := sha256_file(path)) != recorded:
        return f"changed since it was written (sha256 {actual}, its record says {recorded})"
    return None


def made_otherwise(path: str | Path, job: Job | None) -> str | None:
    """How ``path`` (a results file read as it is) was made otherwise than by ``job``, the job that makes it
    in this run (its rule, and its spec field by field), or None: made by it, adopted, or no job's here."""
    if job is None:
        return None
    record = sidecar_record(path) or {}
    if ADOPTED in record:
        return None
    rule, spec = record.get("rule", "unknown"), record.get("config", {})
    if rule != job.rule:
        hand = " by hand" if workflow_rule(rule) == job.rule else ""
        return f"made{hand} by rule {rule!r}, not by rule {job.rule}" + _fields(spec, job.spec())
    if config_hash(spec) != config_hash(job.spec()):
        return f"made by rule {rule} with another spec than this run's" + _fields(spec, job.spec())
    return None


def _fields(recorded: dict, expected: dict, limit: int = 2) -> str:
    """The first fields where ``recorded`` differs from ``expected``: ": train.steps 5, this run's 30"."""
    old, new = flat_fields(recorded), flat_fields(expected)
    keys = sorted(key for key in old.keys() | new.keys() if old.get(key, "unset") != new.get(key, "unset"))
    shown = [f"{key} {canonical_json(old.get(key, 'unset'))}, this run's {canonical_json(new.get(key, 'unset'))}"
             for key in keys[:limit]]
    return (": " + "; ".join(shown) + (f" and {len(keys) - limit} more" if len(keys) > limit else "")) if keys else ""


def remake_command(command: list[str] | None, files: list[str]) -> str:
    """The run's ``command`` (its argv; ``snakemake`` if it is not one) forcing ``files`` to be made
    again: the files follow a ``--forcerun`` already there, else a new one at the end."""
    program = Path(command[0]).as_posix() if command else ""
    args = list(command[1:]) if program.endswith(("snakemake", "snakemake/__main__.py")) else []
    for flag in ("--forcerun", "-R"):
        if flag in args:
            at = args.index(flag) + 1
            return shlex.join(["snakemake", *args[:at], *files, *args[at:]])
    return shlex.join(["snakemake", *args, "--forcerun", *files])


def _spec(job: Job, made: set[str]) -> None:
    """The job's spec and inputs as its step checks them first (inputs this run makes: not yet)."""
    step = STEPS.get(job.rule)
    if step is None and not job.rule.startswith(FIGURE_RULE):
        return
    from ..planning import spec_check

    spec = job.spec()

    def ready(path: str) -> Path | None:
        return Path(path) if path not in made and os.path.exists(path) else None

    try:
        if job.rule.startswith(FIGURE_RULE):
            spec_check.plot(job.params["figure"], spec, captioned=True)
        elif step == "train":
            spec_check.train(spec, ready(job.inputs[0]))
        elif step == "evaluate":
            model = next(path for path in job.inputs if path.endswith(paths.TRAIN_FILES["model"]))
            eval_data = next(path for path in job.inputs if path != model)
            found = ready(model) and ready(str(Path(model).with_name(paths.TRAIN_FILES["description"])))
            spec_check.evaluate(spec, Path(model).parent if found else None, ready(eval_data), mechanism=True)
        else:
            getattr(spec_check, step)(spec)
    except spec_check.SpecError as err:
        raise PreflightError(f"{job.name()}: {err}; {NOTHING_DONE}") from None


def _device(jobs: list[Job]) -> None:
    """A CUDA device asked for where this machine has none (the job's own check, made here)."""
    asking = [job for job in jobs if job.spec().get("device") == "cuda"]
    if not asking:
        return
    import torch

    from ..devices.placement import DeviceError, resolve_device

    try:
        resolve_device(torch.device("cuda"))
    except DeviceError as err:
        raise PreflightError(f"{err} ({len(asking)} job(s) ask for it, first {asking[0].name()}); "
                             f"{NOTHING_DONE}") from None


def _read_files(jobs: list[Job], made: set[str]) -> list[str]:
    """The results files ``jobs`` read that exist and this run does not make: their inputs, and the
    description beside a model's weights (the evaluation reads both). A target's job (``all``, a
    figure's name: no outputs) reads nothing: it only asks for its inputs."""
    found: dict[str, None] = {}
    for job in (job for job in jobs if job.outputs):
        for path in job.inputs:
            read = [path]
            if Path(path).name == paths.TRAIN_FILES["model"]:
                read.append(str(Path(path).with_name(paths.TRAIN_FILES["description"])))
            found.update({item: None for item in read if Path(item).parts[:1] == (paths.RESULTS,)})
    return [path for path in found if path not in made and os.path.isfile(path)]

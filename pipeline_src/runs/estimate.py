"""How long a config's run takes on N cores, replayed from the job times a run measured
(``lengthgen status --estimate``).

*The jobs* are those of the DAG Snakemake builds from the Snakefile for the config: the target
``all`` and each figure's target (``snakemake --cores N figure1``), every job, up to date or not
(``snakemake -n --forceall`` lists them), each with its rule, threads, benchmark file, the jobs
whose outputs it reads, and whether Snakemake would rerun it. That DAG is the one listing of every
job with its dependencies: the job chains in Python (:func:`pipeline_src.planning.cell_jobs.cell_jobs`, the studies'
``made_from``) cover a synthetic cell's four jobs and the files a figure needs, not the figure jobs,
the natural-language jobs nor who reads what; the dependencies are written once, in
``workflow/rules``, and a second listing here could drift from them. Building it parses the
Snakefile as a run does (a few seconds).

*The times* are each job's wall seconds (the column ``s`` of its benchmark file
``results/benchmarks/<job>.tsv``, the mean of its rows), written by Snakemake when the job last
finished, whatever config it ran with: the estimate counts the measured jobs Snakemake would rerun
(another config, code or input than their last run's; a smoke run's times read for the default
config are all of them). A job without a benchmark file takes the mean of the measured jobs of its
rule, and the estimate says how many did; the jobs of a rule without any measured job count as 0 s
and the estimate says it is partial, naming the rule. Times are not invented.

*The replay* is a list scheduler on N slots: a job is ready when every job it reads from has
finished, and starts when its threads (the rule's ``threads``, at most N, as Snakemake caps them at
``--cores``) are free. Among ready jobs the one with the longest chain of time still after its start
(its own time and its longest path of dependents) goes first, ties by name; a ready job that does
not fit lets a smaller one behind it start. The result, the makespan, is the time a good order
takes: Snakemake picks by priority and input size, not time, so a real run may take somewhat
longer, and it adds its own start (parsing the Snakefile, building the DAG) and a second or so per
job. Torch-free.
"""

from __future__ import annotations

import csv
import heapq
import logging
from dataclasses import dataclass, field
from pathlib import Path

from ..planning import paths

UNCAPPED_CORES = 1 << 20  # the DAG is built with this many cores, so that no rule's threads are capped yet
BENCHMARKS = f"{paths.RESULTS}/benchmarks/"


class EstimateError(ValueError):
    """No estimate can be made (no job times, a damaged benchmark file, a DAG Snakemake cannot build);
    the message says why in one line."""


@dataclass(frozen=True)
class PlannedJob:
    """One job of the plan: its name (its benchmark file's path under ``results/benchmarks`` without
    ``.tsv``, e.g. ``train/parity/rope/scratchpad/seed0``), its rule, its threads, the names of the
    jobs it reads outputs of, its benchmark file as the rule names it (None: the rule has none), and
    whether Snakemake would rerun it (``outdated``: an output is missing, or was made with another
    config, code or input)."""

    name: str
    rule: str
    threads: int = 1
    needs: tuple[str, ...] = ()
    benchmark: str | None = None
    outdated: bool = False


# --- the jobs (Snakemake's DAG) ---


def planned_jobs(configfiles: list[Path] | tuple[Path, ...], targets: list[str],
                 snakefile: Path = Path("Snakefile")) -> dict[str, list[PlannedJob]]:
    """Each of ``targets`` (rules without a job of their own, as ``all`` and the figures' targets)
    with every job it runs, sorted by name: the DAG Snakemake builds for the config of
    ``configfiles`` (over config/config.yaml) in the working directory, as for ``snakemake -n``."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, DAGSettings, OutputSettings, Quietness, ResourceSettings

    if not Path(snakefile).is_file():
        raise EstimateError(f"{snakefile}: no Snakefile here (run from the pipeline's working directory)")
    output = OutputSettings(dryrun=True, quiet={Quietness.ALL}, enable_file_logging=False,
                            log_level_override=logging.WARNING)  # no "Building DAG of jobs..."
    try:
        with SnakemakeApi(output) as api:
            workflow_api = api.workflow(ResourceSettings(cores=UNCAPPED_CORES),
                                        ConfigSettings(configfiles=[Path(f) for f in configfiles]),
                                        snakefile=Path(snakefile).absolute())
            dag_api = workflow_api.dag(DAGSettings(targets=frozenset(targets)))
            # What Workflow.printdag (snakemake --dag) does, keeping the DAG instead of printing it:
            # Snakemake has no public call that returns it.
            workflow = dag_api.workflow_api._workflow
            workflow._prepare_dag(forceall=False, ignore_incomplete=True, lock_warn_only=True, nolock=True)
            workflow._build_dag()
            return _targets_of(workflow.dag, targets)
    except EstimateError:
        raise
    except Exception as err:  # noqa: BLE001 - Snakemake's errors have no common base worth naming
        raise EstimateError(f"snakemake could not plan the jobs: {' '.join(str(err).split())}") from None


def _targets_of(dag, targets: list[str]) -> dict[str, list[PlannedJob]]:
    """Each target's jobs from Snakemake's ``dag``; jobs that run nothing (the targets) are passed
    through: a job reading from one needs the jobs it stands for."""
    names = {job: _job_name(job) for job in dag.jobs}

    def needs(job) -> set[str]:
        found = set()
        for upstream in dag.dependencies[job]:
            found |= needs(upstream) if upstream.is_norun else {names[upstream]}
        return found

    planned = {job: PlannedJob(names[job], job.rule.name, int(job.threads), tuple(sorted(needs(job))),
                               str(job.benchmark) if job.benchmark else None, dag.needrun(job))
               for job in dag.jobs if not job.is_norun}
    found = {}
    for target in targets:
        roots = [job for job in dag.jobs if job.rule.name == target]
        if not roots:
            raise EstimateError(f"snakemake planned no job for the target {target!r}")
        upstream, todo = set(), list(roots)
        while todo:
            job = todo.pop()
            if job not in upstream:
                upstream.add(job)
                todo.extend(dag.dependencies[job])
        found[target] = sorted((planned[job] for job in upstream if job in planned), key=lambda job: job.name)
    return found


def _job_name(job) -> str:
    """A Snakemake job's name: its benchmark file's path under results/benchmarks without ``.tsv``,
    else its rule and wildcards."""
    if job.benchmark:
        path = str(job.benchmark)
        return path.removeprefix(BENCHMARKS).removesuffix(".tsv")
    wildcards = ",".join(f"{key}={value}" for key, value in sorted(job.wildcards_dict.items()))
    return f"{job.rule.name}[{wildcards}]" if wildcards else job.rule.name


# --- the times ---


def measured_seconds(path: Path) -> float | None:
    """The wall seconds of a Snakemake benchmark file (a TSV with a column ``s``, one row per repeat:
    their mean); None when there is no such file."""
    try:
        with open(path, newline="") as handle:
            rows = list(csv.DictReader(handle, delimiter="\t"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:
        raise EstimateError(f"{path}: cannot read benchmark file: {err}") from None
    try:
        values = [float(row["s"]) for row in rows]
    except (KeyError, TypeError, ValueError):
        values = []
    if not values:
        raise EstimateError(f"{path}: not a Snakemake benchmark file (no wall seconds in a column 's')")
    return sum(values) / len(values)


@dataclass
class Times:
    """Seconds per job name, and how each was found: ``measured`` names the jobs with a benchmark
    file, ``from_mean`` those given their rule's mean, ``unknown`` those counted as 0 s."""

    seconds: dict[str, float] = field(default_factory=dict)
    measured: set[str] = field(default_factory=set)
    from_mean: set[str] = field(default_factory=set)
    unknown: set[str] = field(default_factory=set)


def job_times(jobs: list[PlannedJob], results: Path = Path(paths.RESULTS)) -> Times:
    """The time of every job of ``jobs`` from its benchmark file under the results folder
    ``results``, or its rule's mean, or 0 s (see the module docstring); an EstimateError naming the
    folder when no job has one."""
    times, by_rule = Times(), {}
    for job in jobs:
        seconds = measured_seconds(paths.under(results, job.benchmark)) if job.benchmark else None
        if seconds is not None:
            times.seconds[job.name] = seconds
            times.measured.add(job.name)
            by_rule.setdefault(job.rule, []).append(seconds)
    if not times.measured:
        raise EstimateError(f"{Path(results, 'benchmarks')}: no job times for this config's {len(jobs)} jobs: "
                            f"run the pipeline first (snakemake --cores N all, with the same --configfile)")
    for job in jobs:
        if job.name in times.measured:
            continue
        known = by_rule.get(job.rule)
        times.seconds[job.name] = sum(known) / len(known) if known else 0.0
        (times.from_mean if known else times.unknown).add(job.name)
    return times


# --- the replay ---


def makespan(jobs: list[PlannedJob], seconds: dict[str, float], slots: int) -> float:
    """The seconds ``jobs`` take on ``slots`` job slots (cores), each job taking ``seconds[name]`` and
    ``min(threads, slots)`` slots once every job of its ``needs`` (among ``jobs``) has finished; the
    list scheduler of the module docstring."""
    if slots < 1:
        raise ValueError(f"slots must be at least 1, not {slots}")
    width = {job.name: min(max(job.threads, 1), slots) for job in jobs}
    waiting = {job.name: set(job.needs) & width.keys() for job in jobs}
    dependents: dict[str, list[str]] = {job.name: [] for job in jobs}
    for job in jobs:
        for need in waiting[job.name]:
            dependents[need].append(job.name)
    rank = _chain_after(seconds, dependents)
    ready = [name for name, needs in waiting.items() if not needs]
    running: list[tuple[float, str]] = []
    free, now = slots, 0.0
    while ready or running:
        ready.sort(key=lambda name: (-rank[name], name))
        for name in list(ready):
            if width[name] <= free:
                free -= width[name]
                ready.remove(name)
                heapq.heappush(running, (now + seconds[name], name))
        now = running[0][0]
        while running and running[0][0] == now:
            _, name = heapq.heappop(running)
            free += width[name]
            for after in dependents[name]:
                waiting[after].discard(name)
                if not waiting[after]:
                    ready.append(after)
    if any(waiting.values()):
        raise ValueError("the jobs' needs form a cycle")
    return now


def _chain_after(seconds: dict[str, float], dependents: dict[str, list[str]]) -> dict[str, float]:
    """Per job, its time plus the longest chain of its dependents' times (the replay's priority)."""
    rank: dict[str, float] = {}

    def of(name: str, seen: frozenset = frozenset()) -> float:
        if name not in rank:
            if name in seen:
                raise ValueError("the jobs' needs form a cycle")
            rank[name] = seconds[name] + max((of(after, seen | {name}) for after in dependents[name]), default=0.0)
        return rank[name]

    for name in dependents:
        of(name)
    return rank


# --- the estimate ---


@dataclass
class Estimate:
    """The replayed seconds of one target's jobs on ``cores`` cores, and how their times were found."""

    target: str
    cores: int
    seconds: float
    jobs: int
    measured: int
    from_mean: dict[str, int]  # rule -> jobs given the mean of the rule's measured jobs
    unknown: dict[str, int]  # rule -> jobs counted as 0 s (no job of the rule measured)
    outdated: int = 0  # measured jobs that Snakemake would rerun (their time is of another config, code or input)


def estimate(target: str, jobs: list[PlannedJob], times: Times, cores: int) -> Estimate:
    """``target``'s jobs replayed on ``cores`` cores with ``times`` (of at least these jobs)."""
    rule_of = {job.name: job.rule for job in jobs}

    def per_rule(names: set[str]) -> dict[str, int]:
        counts: dict[str, int] = {}
        for name in sorted(names & rule_of.keys()):
            counts[rule_of[name]] = counts.get(rule_of[name], 0) + 1
        return counts

    outdated = sum(job.outdated and job.name in times.measured for job in jobs)
    return Estimate(target, cores, makespan(jobs, times.seconds, cores), len(jobs),
                    len(times.measured & rule_of.keys()), per_rule(times.from_mean), per_rule(times.unknown),
                    outdated)


def duration(seconds: float) -> str:
    """``seconds`` as people say it: "45 s", "3 min 20 s" (under 10 min), "40 min", "1 h 25 min", "2 h"."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 600:
        return f"{whole // 60} min {whole % 60} s" if whole % 60 else f"{whole // 60} min"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min" if minutes % 60 else f"{minutes // 60} h"


def _jobs(n: int) -> str:
    return f"{n} job{'s' if n != 1 else ''}"


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{rule} {n}" for rule, n in counts.items())


def format_estimate(whole: Estimate, on_two: Estimate | None, figures: list[Estimate]) -> str:
    """The line for the whole run (``whole``; ``on_two``: the same on 2 cores, shown beside it), the
    notes on jobs without a time, and one line per figure's target alone on the same cores."""
    notes = [f"{whole.measured} of {whole.jobs} jobs measured"]
    if whole.outdated:
        notes[0] += (f", {whole.outdated} of them by a run Snakemake would redo (another config, code or input: "
                     f"their times may not fit)")
    if whole.from_mean:
        notes.append(f"{sum(whole.from_mean.values())} timed by the mean of their rule's measured jobs "
                     f"({_counts(whole.from_mean)})")
    if whole.unknown:
        notes.append(f"partial: {sum(whole.unknown.values())} never measured, counted as 0 s "
                     f"({_counts(whole.unknown)})")
    if on_two is not None:
        notes.append(f"2 cores: about {duration(on_two.seconds)}")
    cores = f"{whole.cores} core{'s' if whole.cores > 1 else ''}"
    lines = [f"{'partial estimate: ' if whole.unknown else ''}about {duration(whole.seconds)} on {cores}, "
             f"from the last run's job times ({'; '.join(notes)})"]
    if figures:
        lines.append(f"each figure alone on {cores} (snakemake --cores {whole.cores} FIGURE):")
        width = max(len(figure.target) for figure in figures)
        for figure in figures:
            unmeasured = figure.jobs - figure.measured
            lines.append(f"  {figure.target.ljust(width)}  about {duration(figure.seconds)} ({_jobs(figure.jobs)}"
                         f"{f', {unmeasured} not measured' if unmeasured else ''})")
    return "\n".join(lines)


def estimate_run(configfiles: list[Path] | tuple[Path, ...], figures: list[str], cores: int,
                 results: Path = Path(paths.RESULTS), snakefile: Path = Path("Snakefile")) -> str:
    """:func:`format_estimate` of the config's whole run (target ``all``) on ``cores`` cores (and on 2)
    and of each of ``figures`` alone, from the benchmark files under ``results``."""
    plan = planned_jobs(configfiles, ["all", *figures], snakefile)
    times = job_times(plan["all"], results)
    whole = estimate("all", plan["all"], times, cores)
    on_two = estimate("all", plan["all"], times, 2) if cores != 2 else None
    return format_estimate(whole, on_two, [estimate(figure, plan[figure], times, cores) for figure in figures])

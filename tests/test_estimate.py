"""`lengthgen status --estimate`: a run's wall time on N cores, replayed from its jobs' benchmark files
on the DAG Snakemake plans (pipeline_src/runs/estimate.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline_src.cli import main
from pipeline_src.runs.estimate import (
    EstimateError,
    PlannedJob,
    Times,
    duration,
    estimate,
    format_estimate,
    job_times,
    makespan,
    measured_seconds,
)
from tests.helpers import copy_workflow

# A benchmark file as Snakemake 9 writes it (results/benchmarks/train/.../seed0.tsv of a smoke run).
BENCHMARK_TSV = ("s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
                 "7.80\t0:00:07\t326.38\t1695.01\t284.14\t300.67\t2.21\t1.23\t39.50\t3.18\n")


def job(name: str, *needs: str, threads: int = 1, rule: str = "train") -> PlannedJob:
    return PlannedJob(name, rule, threads, tuple(needs), f"results/benchmarks/{name}.tsv")


def ten(*jobs: PlannedJob) -> dict[str, float]:
    return {j.name: 10.0 for j in jobs}


# --- the replay ---


def test_chain_takes_the_sum_whatever_the_slots():
    chain = [job("a"), job("b", "a"), job("c", "b")]
    seconds = {"a": 1.0, "b": 2.0, "c": 4.0}
    assert makespan(chain, seconds, 1) == 7.0
    assert makespan(chain, seconds, 8) == 7.0


def test_independent_jobs_share_the_slots():
    jobs = [job(f"j{i}") for i in range(4)]
    assert makespan(jobs, ten(*jobs), 1) == 40.0
    assert makespan(jobs, ten(*jobs), 2) == 20.0
    assert makespan(jobs, ten(*jobs), 3) == 20.0
    assert makespan(jobs, ten(*jobs), 4) == 10.0


def test_more_slots_than_jobs_is_the_longest_path():
    jobs = [job("data"), job("train1", "data"), job("train2", "data"), job("figure", "train1", "train2")]
    seconds = {"data": 5.0, "train1": 30.0, "train2": 20.0, "figure": 1.0}
    assert makespan(jobs, seconds, 100) == 36.0
    assert makespan(jobs, seconds, 1) == 56.0


def test_mixed_graph_starts_the_longest_chain_first():
    """Two slots; a chain of two 10 s jobs and two lone 10 s jobs named to sort first: the chain's
    first job starts at once (20 s in all), not after the lone jobs (30 s)."""
    jobs = [job("a_lone1"), job("a_lone2"), job("z_chain1"), job("z_chain2", "z_chain1")]
    assert makespan(jobs, ten(*jobs), 2) == 20.0


def test_a_job_with_two_threads_takes_two_slots():
    assert makespan([job("wide", threads=2), job("narrow")], {"wide": 10.0, "narrow": 10.0}, 2) == 20.0
    jobs = [job("wide", threads=2), job("narrow1"), job("narrow2")]
    assert makespan(jobs, ten(*jobs), 2) == 20.0
    assert makespan(jobs, ten(*jobs), 4) == 10.0
    assert makespan([job("wide", threads=4)], {"wide": 10.0}, 2) == 10.0  # capped at the cores


def test_a_job_that_does_not_fit_lets_a_smaller_one_start():
    """Three slots, two 2-thread jobs of 10 s and two 1-thread jobs of 9 s: the second wide job waits
    for a second slot, the 1-thread jobs run beside the wide ones (20 s; 28 s if they queued behind)."""
    jobs = [job("wide1", threads=2), job("wide2", threads=2), job("narrow1"), job("narrow2")]
    seconds = {"wide1": 10.0, "wide2": 10.0, "narrow1": 9.0, "narrow2": 9.0}
    assert makespan(jobs, seconds, 3) == 20.0


def test_needs_outside_the_jobs_are_ignored_and_cycles_refused():
    assert makespan([job("figure", "elsewhere")], {"figure": 3.0}, 2) == 3.0
    with pytest.raises(ValueError, match="cycle"):
        makespan([job("a", "b"), job("b", "a")], {"a": 1.0, "b": 1.0}, 2)


# --- the times ---


def test_benchmark_file_of_snakemake(tmp_path):
    path = tmp_path / "seed0.tsv"
    path.write_text(BENCHMARK_TSV)
    assert measured_seconds(path) == pytest.approx(7.80)
    path.write_text(BENCHMARK_TSV + "8.20\t0:00:08\t1\t1\t1\t1\t0\t0\t1\t1\n")  # benchmark repeats: the mean
    assert measured_seconds(path) == pytest.approx(8.0)
    assert measured_seconds(tmp_path / "none.tsv") is None
    path.write_text("h:m:s\n0:00:07\n")
    with pytest.raises(EstimateError, match="not a Snakemake benchmark file"):
        measured_seconds(path)


def write_times(results: Path, seconds: dict[str, float]) -> None:
    for name, value in seconds.items():
        path = results / "benchmarks" / f"{name}.tsv"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(BENCHMARK_TSV.splitlines()[0] + f"\n{value}\t0:00:00\t1\t1\t1\t1\t0\t0\t1\t1\n")


def test_unmeasured_jobs_take_their_rules_mean_or_count_as_partial(tmp_path):
    jobs = [job("data/a", rule="data"), job("train/a", "data/a"), job("train/b", "data/a"), job("train/c", "data/a"),
            job("eval/a", "train/a", rule="evaluate")]
    write_times(tmp_path, {"data/a": 4.0, "train/a": 10.0, "train/b": 20.0})
    times = job_times(jobs, tmp_path)
    assert times.seconds == {"data/a": 4.0, "train/a": 10.0, "train/b": 20.0, "train/c": 15.0, "eval/a": 0.0}
    assert (times.from_mean, times.unknown) == ({"train/c"}, {"eval/a"})
    found = estimate("all", [*jobs[:-2], PlannedJob("train/c", "train", outdated=True), jobs[-1]], times, 8)
    assert (found.seconds, found.jobs, found.measured, found.outdated) == (24.0, 5, 3, 0)  # train/c: not measured
    found = estimate("all", [PlannedJob("data/a", "data", outdated=True), *jobs[1:]], times, 8)
    assert (found.seconds, found.jobs, found.measured, found.outdated) == (24.0, 5, 3, 1)
    assert (found.from_mean, found.unknown) == ({"train": 1}, {"evaluate": 1})


def test_no_benchmark_at_all_is_one_error_naming_the_folder(tmp_path):
    with pytest.raises(EstimateError, match=r"benchmarks: no job times .* run the pipeline first"):
        job_times([job("train/a")], tmp_path)


def test_the_estimate_line_and_each_figure():
    whole = estimate("all", [job("a"), job("b", "a")], Times({"a": 600.0, "b": 1800.0}, {"a", "b"}), 8)
    two = estimate("all", [job("a"), job("b", "a")], Times({"a": 600.0, "b": 4500.0}, {"a", "b"}), 2)
    figure = estimate("figure1", [job("a")], Times({"a": 600.0}, {"a"}), 8)
    assert format_estimate(whole, two, [figure]).splitlines() == [
        "about 40 min on 8 cores, from the last run's job times (2 of 2 jobs measured; 2 cores: about 1 h 25 min)",
        "each figure alone on 8 cores (snakemake --cores 8 FIGURE):",
        "  figure1  about 10 min (1 job)"]


@pytest.mark.parametrize("seconds, said", [(44.6, "45 s"), (107, "1 min 47 s"), (120, "2 min"),
                                           (2400, "40 min"), (5100, "1 h 25 min"), (7200, "2 h")])
def test_duration(seconds, said):
    assert duration(seconds) == said


# --- the command, on the smoke config's DAG ---


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return copy_workflow(tmp_path_factory.mktemp("estimate"))


def smoke_estimate(*args: str):
    return CliRunner().invoke(main, ["status", "--estimate", "--configfile", "config/smoke.yaml", *args])


@pytest.mark.e2e
def test_the_command_replays_every_job_of_the_smoke_config(workdir, monkeypatch):
    """Every job of the smoke run takes 60 s: on one core the sum, on many the longest chain (data,
    training, evaluation, figure: 4 jobs); the language figures' own chains are as long."""
    from pipeline_src.runs.estimate import planned_jobs

    monkeypatch.chdir(workdir)
    plan = planned_jobs([Path("config/smoke.yaml")], ["all", "figure1"])
    names = [j.name for j in plan["all"]]
    assert all(j.outdated for j in plan["all"])  # nothing made yet: Snakemake would run every job
    assert len(names) == len(set(names)) and {j.rule for j in plan["all"]} >= {
        "train_data", "eval_data", "train", "evaluate", "plot_figure1", "language_corpus", "language_train"}
    assert set(j.name for j in plan["figure1"]) < set(names) and "figures/figure1" in [j.name for j in plan["figure1"]]
    write_times(workdir / "results", {name: 60.0 for name in names})
    done = smoke_estimate("--cores", "1")
    assert done.exit_code == 0, done.output
    first, n = done.output.splitlines()[0], len(names)
    on_two = makespan(plan["all"], {name: 60.0 for name in names}, 2)
    assert first == (f"about {duration(60 * n)} on 1 core, from the last run's job times ({n} of {n} jobs "
                     f"measured, {n} of them by a run Snakemake would redo (another config, code or input: their "
                     f"times may not fit); 2 cores: about {duration(on_two)})"), first
    done = smoke_estimate("--cores", "1000")
    assert done.exit_code == 0, done.output
    assert done.output.startswith("about 4 min on 1000 cores"), done.output
    assert "  figure1 " in done.output and "each figure alone on 1000 cores" in done.output

    for name in names:  # no language model measured, one training job less
        if name.startswith("language/train/") or name == next(n for n in names if n.startswith("train/")):
            (workdir / "results" / "benchmarks" / f"{name}.tsv").unlink()
    done = smoke_estimate("--cores", "1000")
    assert done.exit_code == 0, done.output
    assert done.output.startswith("partial estimate: about 4 min on 1000 cores"), done.output
    assert "1 timed by the mean of their rule's measured jobs (train 1)" in done.output
    assert "never measured, counted as 0 s (language_train " in done.output


@pytest.mark.e2e
def test_the_command_without_benchmarks_says_to_run_first(workdir, monkeypatch, tmp_path):
    monkeypatch.chdir(workdir)
    done = smoke_estimate("--cores", "2", "--results", str(tmp_path / "elsewhere"))
    assert done.exit_code == 1
    assert done.output.count("\n") == 1 and "elsewhere/benchmarks: no job times" in done.output, done.output
    assert "run the pipeline first" in done.output


def test_the_command_needs_its_cores(workdir, monkeypatch):
    monkeypatch.chdir(workdir)
    done = smoke_estimate()
    assert done.exit_code == 2 and "--estimate --cores N" in done.output
    done = CliRunner().invoke(main, ["status", "--cores", "2"])
    assert done.exit_code == 2 and "go with --estimate" in done.output

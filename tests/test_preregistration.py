"""Whether a claim predates the results it judges, read from git and the tables' provenance, in a
throwaway git repository: a claim committed before the run, after it, and edited between two runs."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from pipeline_src.findings import preregistration as pre
from pipeline_src.provenance.sidecars import sidecar_path

DAY = 86_400
START = 1_800_000_000  # every time below counts from here, one day apart


def commit(repo: Path, file: Path, text: str, when: int) -> str:
    """Write ``file`` with ``text`` and commit it at ``when``; the commit's hash."""
    file.write_text(text)
    env = {**os.environ, "GIT_AUTHOR_DATE": f"@{when}", "GIT_COMMITTER_DATE": f"@{when}", "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "x"], check=True, env=env)
    pre.versions.cache_clear()
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


def run(repo: Path, seeds: list[int], when: int, code: str | None) -> list[Path]:
    """Tables of ``seeds`` written at ``when`` by the code commit ``code``, each with its record."""
    tables = []
    for seed in seeds:
        table = repo / "results" / "eval" / f"seed{seed}" / "accuracy.parquet"
        table.parent.mkdir(parents=True, exist_ok=True)
        table.write_bytes(b"table")
        sidecar_path(table).write_text(json.dumps({"code": {"git_commit": code}}))
        os.utime(table, (when, when))
        tables.append(table)
    return tables


@pytest.fixture
def repo(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("results/\n")
    return tmp_path


def test_a_claim_committed_before_the_run_is_pre_registered(repo):
    claim = repo / "claim.yaml"
    first = commit(repo, claim, "name: mine\n", START)
    found = pre.written(claim, pre.tables_made(run(repo, [8, 9], START + DAY, first)))
    assert found.predates is True and found.line.startswith("pre-registered: claim as judged committed")


def test_a_claim_committed_after_the_run_is_post_hoc_naming_its_seeds(repo):
    claim = repo / "claim.yaml"
    code = commit(repo, repo / "code.py", "x = 1\n", START)
    tables = run(repo, [8, 9], START + DAY, code)
    commit(repo, claim, "name: mine\n", START + 2 * DAY)
    found = pre.written(claim, pre.tables_made(tables))
    assert found.predates is False and found.line.startswith("post hoc: ") and "after seeds 8, 9" in found.line


def test_a_claim_edited_between_two_runs_says_which_seeds_an_earlier_version_judged(repo):
    claim = repo / "claim.yaml"
    first = commit(repo, claim, "name: mine\n", START)
    seen = run(repo, [8, 9], START + DAY, first)
    second = commit(repo, claim, "name: mine\nseeds: all\n", START + 2 * DAY)
    fresh = run(repo, [10, 11], START + 3 * DAY, second)
    both = pre.written(claim, pre.tables_made(seen + fresh))
    assert both.predates is False and "after seeds 8, 9" in both.line
    assert f"seeds 8, 9 were already judged by an earlier version ({first[:7]})" in both.line
    only_fresh = pre.written(claim, pre.tables_made(fresh))
    assert only_fresh.predates is True and "earlier version" not in only_fresh.line


def test_the_code_commit_decides_where_the_clock_does_not(repo):
    """A table written by code that already held the claim predates nothing it was not made with: its
    code commit descends from the claim's, whatever the file's time says (a copy that reset it)."""
    claim = repo / "claim.yaml"
    first = commit(repo, claim, "name: mine\n", START + DAY)
    found = pre.written(claim, pre.tables_made(run(repo, [8], START, first)))
    assert found.predates is True


def test_uncommitted_changes_are_post_hoc_and_no_repository_cannot_tell(repo, tmp_path_factory):
    claim = repo / "claim.yaml"
    first = commit(repo, claim, "name: mine\n", START)
    claim.write_text("name: mine\nedited: yes\n")
    made = pre.tables_made(run(repo, [8], START + DAY, first))
    assert pre.written(claim, made).line == f"post hoc: {claim} has changes not committed"
    elsewhere = tmp_path_factory.mktemp("no_git") / "claim.yaml"
    elsewhere.write_text("name: mine\n")
    assert pre.written(elsewhere, made).predates is None


def test_a_criterion_registered_before_the_run_predates_a_claim_file_written_after_it(repo):
    """``registered`` dates the criterion by the commit that first stated it; the file committed after the run."""
    criterion = commit(repo, repo / "findings.md", "the criterion\n", START)
    tables = run(repo, [8], START + DAY, criterion)
    claim = repo / "claim.yaml"
    commit(repo, claim, f"name: mine\nregistered: {{commit: {criterion}, text: findings.md}}\n", START + 2 * DAY)
    found = pre.written(claim, pre.tables_made(tables), (criterion, "findings.md"))
    assert (found.predates is True
            and f"criterion committed {pre.day(START)} ({criterion[:7]}, findings.md)" in found.line)
    assert pre.written(claim, pre.tables_made(tables)).predates is False  # the file alone is after the run


def test_a_registration_named_before_the_fields_changed_is_not_believed(repo):
    criterion = commit(repo, repo / "findings.md", "the criterion\n", START)
    claim = repo / "claim.yaml"
    named = f"registered: {{commit: {criterion}, text: findings.md}}\n"
    commit(repo, claim, f"name: mine\n{named}", START + DAY)
    tables = run(repo, [8], START + 2 * DAY, criterion)
    commit(repo, claim, f"name: mine\nseeds: all\n{named}", START + 3 * DAY)
    found = pre.written(claim, pre.tables_made(tables), (criterion, "findings.md"))
    assert found.predates is False and f"its fields changed after registered.commit {criterion[:7]}" in found.line


def test_a_registration_outside_the_history_of_head_stops_in_one_line(repo):
    from pipeline_src.findings.claim_file import ClaimError

    claim = repo / "claim.yaml"
    commit(repo, claim, "name: mine\n", START)
    subprocess.run(["git", "-C", str(repo), "checkout", "-qb", "elsewhere"], check=True)
    other = commit(repo, repo / "findings.md", "a criterion on another branch\n", START + DAY)
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "-"], check=True)
    for missing in (other, "0" * 40):
        with pytest.raises(ClaimError,
                           match=rf"^{claim}: field registered\.commit: {missing} is not a commit of HEAD's history$"):
            pre.registered_version(claim, missing)


def test_a_summary_dates_each_model_by_the_first_commit_that_held_its_rows(repo):
    """A summary rewritten for one figure: a model with a new number dated by the rewrite (its other row,
    the same by chance, does not date it), the models it kept (the other figure's, a seed re-exported with
    the same numbers) by the first commit that held them; the figure spec's rows date nothing."""
    summary = repo / "summary.csv"
    header = "task,variant,scheme,seed,k,length,metric,value\n"
    seed0 = "parity_scratchpad,scratchpad,ppc,0,,10,accuracy,1.0\n"
    seed1 = "parity_scratchpad,scratchpad,ppc,1,,10,accuracy,0.0\nparity_scratchpad,scratchpad,ppc,1,,20,accuracy,"
    language = "language,own,,3,4,,fraction,0.5\n"
    first = commit(repo, summary, f"{header}language,,,,,,spec.seed,0.0\n{seed0}{seed1}1.0\n", START)
    again = commit(repo, summary, f"{header}{language}language,,,,,,spec.seed,0.0\n{seed0}{seed1}0.9\n", START + DAY)
    assert pre.summary_made(summary, "figure4") == [pre.Made(None, START + DAY, again)]  # a target's row, not a seed
    assert pre.summary_made(summary, "figure2") == [pre.Made(0, START, first), pre.Made(1, START + DAY, again)]
    assert pre.summary_made(summary, "figure3") == []  # no row of variable assignment


def test_a_summary_dates_the_forecast_by_each_models_forecast_rows_whatever_its_task(repo):
    """The forecast figure's results in a summary: each model's ``forecast.*`` rows, of any task, dated by
    the first commit that held them (its accuracy rows, Figure 2's results, date nothing of the forecast)."""
    summary = repo / "summary.csv"
    header = "task,variant,scheme,seed,k,length,metric,value\n"
    accuracy = "parity_scratchpad,scratchpad,ppc,2,,10,accuracy,1.0\n"
    forecast = ("parity_scratchpad,scratchpad,ppc,2,,20,forecast.measured_reach,40.0\n"
                "variable_assignment,scratchpad,ppc,3,,6,forecast.measured_reach,12.0\n")
    first = commit(repo, summary, f"{header}{accuracy}", START)
    again = commit(repo, summary, f"{header}{accuracy}{forecast}", START + DAY)
    assert pre.summary_made(summary, "forecast") == [pre.Made(2, START + DAY, again), pre.Made(3, START + DAY, again)]
    assert pre.summary_made(summary, "figure2") == [pre.Made(2, START, first)]

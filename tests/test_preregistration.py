"""Whether a claim predates the results it judges, read from git and the tables' provenance, in a
throwaway git repository: a claim committed before the run, after it, and edited between two runs."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from pipeline_src.findings import preregistration as pre
from pipeline_src.storage.provenance import sidecar_path

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

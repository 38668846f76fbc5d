"""Claim files (docs/claims.md): a faulty one stops `lengthgen findings` in one line naming the file and the
field before any table is read; a user's own claims are judged beside the paper's, in the caption of their
figure and the README's table; the shipped claims hard-code no K_train."""

from __future__ import annotations

import re
import subprocess

import pytest
from click.testing import CliRunner

from pipeline_src.cli import main
from pipeline_src.findings.claim_file import SHIPPED, load_claims
from tests.conftest import REPO

F2 = (SHIPPED / "F2.yaml").read_text()
F1 = (SHIPPED / "F1.yaml").read_text()


@pytest.mark.parametrize("text, field", [
    (F2.replace("coupled: true, name", "coupeld: true, name"),
     "field compare[0].better: unknown key ('coupeld' was unexpected) (did you mean 'coupled'?)"),
    (F2.replace("figure: figure2", "figur: figure2"), "unknown key ('figur' was unexpected) (did you mean 'figure'?)"),
    (F2.replace("variant: scratchpad, coupled: true", "variant: scratchpd, coupled: true"),
     "field compare[0].better.variant: no run variant 'scratchpd'"),
    (F1.replace("scheme: rope_pose, K_train: larger", "scheme: rope, K_train: larger")
     .replace("rope_pose", "rope_posee"),
     "field compare[0].better.scheme: no scheme 'rope_posee'"),
    (F2.replace("figure: figure2", "figure: figure9"), "field figure: no figure 'figure9'"),
    (F2.replace("lengths: {beyond: 1.5}", "lengths: {beyond: 0}"),
     "field lengths.beyond: 0 is less than or equal to the minimum of 0"),
    (F1.replace("lengths: longest", "lengths: {from: 8, to: 2}"), "field lengths.from: 8 is above lengths.to 2"),
    (F2.replace("lengths: {beyond: 1.5}", "lengths: {at: [-30]}"),
     "field lengths.at[0]: -30 is less than the minimum of 1"),
    (F2.replace("test: permutation", "test: page"), "field compare[0]: a page test compares the groups of 'rising'"),
    (F2.replace("name: F2\n", "name: F3\n"), "field name: 'F3' is also the name of"),
    (re.sub(r"commit: [0-9a-f]{40}", "commit: 6516a14", F2), "field registered.commit: '6516a14' does not match"),
])
def test_a_faulty_claim_stops_findings_in_one_line_naming_file_and_field_before_any_table(tmp_path, monkeypatch, text,
                                                                                            field):
    monkeypatch.chdir(REPO)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "faulty.yaml").write_text(text)
    unreadable = tmp_path / "summary.csv"
    unreadable.write_text("not a run summary")  # read first, it would stop the command with another line
    done = CliRunner().invoke(main, ["findings", "--from-summary", str(unreadable), "--claims", str(tmp_path / "mine")])
    assert done.exit_code == 1 and len(done.output.strip().splitlines()) == 1, done.output
    assert f"{tmp_path / 'mine' / 'faulty.yaml'}: {field}" in done.output


def test_a_users_claim_is_judged_beside_the_papers(tmp_path, monkeypatch):
    """F2 under another name, judged from the default run's summary as F2 is."""
    monkeypatch.chdir(REPO)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "again.yaml").write_text(F2.replace("name: F2\n", "name: F2b\n"))
    done = CliRunner().invoke(main, ["findings", "--from-summary", "docs/findings/default_run.csv",
                                     "--claims", str(tmp_path / "mine")])
    assert done.exit_code == 0, done.output
    verdicts = dict(re.findall(r"^(F[^:]*): (.*)$", done.output, flags=re.M))
    assert list(verdicts)[-1] == "F2b" and verdicts["F2b"] == verdicts["F2"] == "reproduced"


def test_no_shipped_claim_names_a_k_train():
    """The K_train and k_test of a claim over K_train are the config's (each, smallest, largest trained, ...):
    no side names a K_train value or a k_test value, so a Figure 1 of other K_train is judged the same way."""
    for claim in load_claims():
        for side in claim.sides:
            assert side.K_train is None or not str(side.K_train).isdigit(), claim.path
            assert not isinstance(side.k_test, int), claim.path


def test_a_registration_not_in_heads_history_stops_findings_before_any_table(tmp_path, monkeypatch):
    """A claim (committed to a git repository) naming a commit its HEAD does not descend from."""
    monkeypatch.chdir(REPO)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "again.yaml").write_text(re.sub(r"commit: [0-9a-f]{40}", f"commit: {'dead' * 10}", F2)
                                     .replace("name: F2\n", "name: F2b\n"))
    for command in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(mine), *command], check=True)
    unreadable = tmp_path / "summary.csv"
    unreadable.write_text("not a run summary")
    done = CliRunner().invoke(main, ["findings", "--from-summary", str(unreadable), "--claims", str(mine)])
    assert done.exit_code == 1 and len(done.output.strip().splitlines()) == 1, done.output
    assert (f"{mine / 'again.yaml'}: field registered.commit: {'dead' * 10} is not a commit of HEAD's history"
            in done.output)


def test_each_shipped_registration_is_in_heads_history_and_names_a_heading():
    """Where a shipped claim names the commit that first stated its criterion: a commit HEAD descends from,
    older than the claim file, and its text a heading of the page that states it now."""
    from pipeline_src.findings.preregistration import registered_version, versions
    from tests.helpers import anchors

    named = [claim for claim in load_claims() if claim.registered is not None]
    assert {claim.name for claim in named} == {"F1", "F1'", "F1r", "F2", "F3", "F4", "F4'", "forecast"}
    for claim in named:
        commit, text = claim.registered
        assert registered_version(claim.path, commit).time < versions(claim.path)[0].time, claim.path
        page, _, heading = text.partition("#")
        assert heading in anchors((REPO / page).read_text()), f"{claim.path}: registered.text {text}"

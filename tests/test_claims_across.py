"""A claim whose sides are runs of two configs (claims/ssmax_reach.yaml: PPC with scalable softmax and
without at d_model 128, runs of the same paths in two results folders) judged by `lengthgen findings` from
both folders (RESULTS and --also), from both run summaries, or from a scale of two summaries: each side
from the results its config made, by the same tests as every claim, dated against both sides' results;
one line naming the file and field, or the folder, where a side's results cannot be told."""

from __future__ import annotations

import json
import os
import re
import shutil

import pytest
import yaml
from click.testing import CliRunner

from pipeline_src.cli import main
from pipeline_src.findings.claim_file import ClaimError, load
from pipeline_src.planning.load_config import load_config
from pipeline_src.provenance.sidecars import sidecar_path
from tests.conftest import REPO
from tests.helpers import recorded_tables

CLAIM = "claims/ssmax_reach.yaml"
WITH = ("config/mid_parity.yaml", "config/attention_scale.yaml", "config/gpu_window_ssmax.yaml")
WITHOUT = ("config/mid_parity.yaml", "config/gpu_window_ssmax.yaml")
COMPARED = r"ppc with scalable softmax (\S+) vs ppc without (\S+) at length (\d+) \(8 and 8 seeds\): .*?p = ([\d.e-]+)"
OLD = 1_577_836_800  # 2020-01-01: before any commit of the claim
SSMAX = (REPO / CLAIM).read_text()


def ppc_at(level: float):
    """Each cell's accuracy: PPC's mean ``level``, rope_pose's 0.3, seeds 8 to 15 0.01 apart around it."""
    return lambda cell: lambda k, length: (level if cell["scheme"] == "ppc" else 0.3) + 0.01 * (cell["seed"] - 11.5)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """Results folders with their jobs' records: PPC with scalable softmax well above the same model without
    it (``with``, ``without``), at its level (``alike``), and a third config's runs (``other``)."""
    root = tmp_path_factory.mktemp("across")
    (root / "other.yaml").write_text("parity_scratchpad:\n  seeds: [8, 9]\n  model:\n    n_layer: 2\n")
    made = {"with": ([REPO / f for f in WITH], 0.9), "without": ([REPO / f for f in WITHOUT], 0.4),
            "alike": ([REPO / f for f in WITH], 0.4), "other": ([*(REPO / f for f in WITH), root / "other.yaml"], 0.9)}
    for name, (files, level) in made.items():
        recorded_tables(root / name, load_config(files), ppc_at(level))
    return root


@pytest.fixture
def in_repo(monkeypatch):
    monkeypatch.chdir(REPO)  # config/config.yaml, the config files the claim names, claims/


def findings(results, configfiles, *args):
    options = [arg for file in configfiles for arg in ("--configfile", str(file))]
    return CliRunner().invoke(main, ["findings", *([str(results)] if results else []), *options, *map(str, args)])


def judged(done) -> str:
    """The ssmax_reach block of the printed findings, its wrapped lines joined (a path wrapped at a hyphen too)."""
    assert done.exit_code == 0, done.output
    block = done.output[done.output.index("\nssmax_reach: ") + 1:]
    return re.sub(r"(\w-) (?=\w)", r"\1", " ".join(block.split()))


def error(done) -> str:
    assert done.exit_code == 1 and len(done.output.strip().splitlines()) == 1, done.output
    return done.output.strip().removeprefix("Error: ")


def test_ssmax_above_without_in_two_folders_is_reproduced_and_dated_against_both(folders, in_repo):
    """Either folder judged with its config, the other given with --also: the same verdict and numbers,
    each side read from the folder its config made, pre-registered against both folders' tables."""
    with_, without = folders / "with", folders / "without"
    one = judged(findings(without, WITHOUT, "--also", with_))
    other = judged(findings(with_, WITH, "--also", without))
    assert one.startswith("ssmax_reach: reproduced written pre-registered: claim as judged committed "), one
    assert f"Read ppc with scalable softmax from {with_}, ppc without from {without}." in one
    compared = re.findall(COMPARED, one)
    assert [(better, worse, length) for better, worse, length, _ in compared] == [("0.90", "0.40", "40"),
                                                                                  ("0.90", "0.40", "80")]
    assert all(float(p) <= 0.05 / 2 for *_, p in compared)  # significant after Holm over the two lengths
    assert re.findall(COMPARED, other) == compared


def test_ssmax_at_the_level_without_it_is_not_reproduced(folders, in_repo):
    found = judged(findings(folders / "without", WITHOUT, "--also", folders / "alike"))
    assert found.startswith("ssmax_reach: undecided: ") and "no results" not in found, found
    assert all(float(p) > 0.05 for *_, p in re.findall(COMPARED, found)), found


def test_results_of_one_side_made_before_the_claim_are_post_hoc(folders, in_repo, tmp_path):
    """The folder with scalable softmax made before the claim's commit (its tables' time, no code commit
    that held the claim): post hoc, naming its seeds, though the other folder's tables are newer."""
    old = shutil.copytree(folders / "with", tmp_path / "with")
    for table in old.rglob("accuracy.parquet"):
        record = json.loads(sidecar_path(table).read_text())
        record["code"]["git_commit"] = None
        sidecar_path(table).write_text(json.dumps(record))
        os.utime(table, (OLD, OLD))
    found = judged(findings(folders / "without", WITHOUT, "--also", old))
    assert found.startswith("ssmax_reach: reproduced written post hoc: claim as judged committed "), found
    assert "after seeds 8, 9, 10, 11, 12, 13, 14, 15 (made 2020-01-01 00:00)" in found


def exported(folders, tmp_path) -> dict[str, str]:
    """Each folder's run summary (``lengthgen findings RESULTS --export``), by folder name."""
    summaries = {}
    for name, files in (("with", WITH), ("without", WITHOUT)):
        summaries[name] = str(tmp_path / f"{name}.csv")
        assert findings(folders / name, files, "--export", summaries[name]).exit_code == 0
    return summaries


def test_two_summaries_give_the_verdict_and_numbers_of_their_folders(folders, in_repo, tmp_path):
    summaries = exported(folders, tmp_path)
    from_folders = judged(findings(folders / "without", WITHOUT, "--also", folders / "with"))
    done = findings(None, WITHOUT, "--from-summary", summaries["without"],
                    "--also", f"{summaries['with']}={','.join(WITH)}")
    from_summaries = judged(done)
    assert from_summaries.startswith("ssmax_reach: reproduced")
    assert (f"Read ppc with scalable softmax from {summaries['with']}, ppc without from {summaries['without']}."
            in from_summaries)
    assert re.findall(COMPARED, from_summaries) == re.findall(COMPARED, from_folders) != []


def test_a_scale_of_two_summaries_shows_the_claim_in_the_table(folders, in_repo, tmp_path):
    """A scale's ``also`` names the summary of the other config: the README's table shows the claim's
    verdict there; a scale whose other summary is not made yet reads "no results yet"."""
    summaries = exported(folders, tmp_path)
    scale = {"name": "GPU ssmax", "short": "ssmax", "summary": "without.csv", "configfiles": list(WITHOUT),
             "device": "a GPU", "date": "2026-12-01", "also": [{"summary": "with.csv", "configfiles": list(WITH)}]}
    waiting = {**scale, "name": "later", "short": "later",
               "also": [{"summary": "later.csv", "configfiles": list(WITH)}]}
    (tmp_path / "scales.yaml").write_text(yaml.safe_dump([scale, waiting]))
    done = CliRunner().invoke(main, ["findings", "--scales", str(tmp_path / "scales.yaml"),
                                     "--markdown", str(tmp_path / "page.md")])
    assert done.exit_code == 0, done.output
    page = (tmp_path / "page.md").read_text()
    row = next(line for line in page.splitlines() if line.startswith("| ssmax_reach |")).split(" | ")
    assert row[1].startswith("reproduced (p <= ") and row[2] == "no results yet |", row
    assert "with.csv: config/config.yaml " + " ".join(WITH) in page
    assert f"Read ppc with scalable softmax from {summaries['with']}" in page


def test_a_side_no_folder_was_made_with_stops_in_one_line_naming_the_field(folders, in_repo):
    line = error(findings(folders / "without", WITHOUT, "--also", folders / "other"))
    assert line == (f"{CLAIM}: field compare[0].better.config: none of the results given was made with it "
                    f"({folders / 'without'}: made with train model.attention_scale unset, the side's config says "
                    f"\"log_length\"; {folders / 'other'}: made with train model.n_layer=2, the side's config says 3)")


def test_two_folders_made_with_a_sides_config_stop_in_one_line(folders, in_repo, tmp_path):
    copy = shutil.copytree(folders / "with", tmp_path / "copy")
    line = error(findings(folders / "without", WITHOUT, "--also", folders / "with", "--also", copy))
    assert line == (f"{CLAIM}: field compare[0].better.config: {folders / 'with'} and {copy} were both made with it; "
                    "give one of them")


def test_a_folder_without_the_sides_runs_stops_in_one_line_naming_it(folders, in_repo, tmp_path):
    """Made with the side's config (its rope_pose tables say so), but no PPC table is there."""
    partial = shutil.copytree(folders / "with", tmp_path / "partial")
    for table in partial.rglob("accuracy.parquet"):
        if "ppc" in table.parts:
            table.unlink()
    line = error(findings(folders / "without", WITHOUT, "--also", partial))
    assert line == (f"{partial}: no results of ppc (scratchpad), the runs of {CLAIM} field compare[0].better "
                    "('ppc with scalable softmax'), though made with its config")


def test_two_sides_whose_configs_make_the_same_runs_stop_in_one_line(folders, in_repo, tmp_path):
    """Config files in another order that layer to the same config: both sides would read one folder."""
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "same.yaml").write_text(SSMAX.replace("name: ssmax_reach", "name: same").replace(
        "config: [config/mid_parity.yaml, config/gpu_window_ssmax.yaml]",
        "config: [config/mid_parity.yaml, config/gpu_window_ssmax.yaml, config/attention_scale.yaml]"))
    line = error(findings(folders / "without", WITHOUT, "--also", folders / "with", "--claims", tmp_path / "mine"))
    assert line == (f"{tmp_path / 'mine' / 'same.yaml'}: field compare[0].worse.config: {folders / 'with'} was made "
                    "with it and with better's config alike: the two configs make the same runs")


def test_a_summary_given_without_its_config_files_stops_in_one_line(folders, in_repo, tmp_path):
    summaries = exported(folders, tmp_path)
    line = error(findings(None, WITHOUT, "--from-summary", summaries["without"], "--also", summaries["with"]))
    assert line.startswith(f"--also {summaries['with']}: a run summary records no config; give the config files")


def test_without_also_the_claim_reads_no_results_as_before(folders, in_repo):
    found = judged(findings(folders / "with", WITH))
    assert found.startswith("ssmax_reach: undecided: no results: its sides are runs of two configs"), found



@pytest.mark.parametrize("edit, field", [
    (("test: permutation", "test: sign-flip"), "compare[0].test: a comparison of runs of two configs"),
    (("      config: [config/mid_parity.yaml, config/gpu_window_ssmax.yaml]\n", ""),
     "compare[0].worse.config: a claim whose sides name their config names it on every side"),
    (("name: ppc without", "name: ppc with scalable softmax"), "compare[0].worse.name: name each side"),
    (("correction: holm", "correction: holm\ngate: some run fits"), "gate: a claim whose sides name their config"),
    (("config: [config/mid_parity.yaml, config/gpu_window_ssmax.yaml]",
      "config: [config/mid_parity.yaml, config/attention_scale.yaml, config/gpu_window_ssmax.yaml]"),
     "compare[0].worse.config: the same config files as better's"),
])
def test_a_claim_across_configs_that_cannot_be_judged_so_is_refused_naming_the_field(tmp_path, edit, field):
    assert edit[0] in SSMAX
    (tmp_path / "mine.yaml").write_text(SSMAX.replace(*edit))
    with pytest.raises(ClaimError, match=rf"^{tmp_path / 'mine.yaml'}: field {re.escape(field)}"):
        load(tmp_path / "mine.yaml")

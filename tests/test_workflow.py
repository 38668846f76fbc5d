"""The Snakemake workflow end to end on the smoke config: outputs, no-op reruns, exact reruns
after a config edit, config errors before any job, lint."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
import yaml
from click.testing import CliRunner

from pipeline_src.cli import main
from tests.helpers import (
    FIGURES,
    MECHANISM_TASKS,
    MODELS,
    REPO,
    TASK_FIGURES,
    changed_files,
    copy_workflow,
    finished_files,
    planned_blocks,
    planned_jobs,
    snakemake,
    write_override,
)


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory) -> Path:
    """A copy of the workflow that has run the smoke config once."""
    workdir = copy_workflow(tmp_path_factory.mktemp("workflow"))
    snakemake(workdir, "all", "--configfile", "config/smoke.yaml")
    return workdir


def _training_figures() -> dict[str, str]:
    """The training-curve figure of each task figure of the smoke config, with the task it shows."""
    from pipeline_src.planning import jobs, paths

    return {paths.training_figure(figure): jobs.FIGURE_TASK[figure] for figure in FIGURES if figure in jobs.FIGURE_TASK}


TRAINING_FIGURES = _training_figures()


@pytest.mark.e2e
def test_smoke_run_writes_every_figure_and_provenance(pipeline):
    figures = pipeline / "results" / "figures"
    for figure in FIGURES:
        for suffix in (".png", ".pdf", ".png.prov.json", ".pdf.prov.json"):
            assert (figures / f"{figure}{suffix}").stat().st_size > 0, figure + suffix
    assert len(list((pipeline / "results" / "eval").rglob("accuracy.parquet"))) == MODELS
    for name in ("attention", "flips", "first_errors"):  # every model's mechanism, and each task's figure
        assert len(list((pipeline / "results" / "mechanism").rglob(f"{name}.parquet"))) == MODELS
    assert MECHANISM_TASKS
    for task in MECHANISM_TASKS:
        for suffix in (".png", ".pdf", ".caption.rst"):
            assert (figures / f"mechanism_{task}{suffix}").stat().st_size > 0, task + suffix
    assert len(TRAINING_FIGURES) == len(TASK_FIGURES)  # each task figure's job draws its training curves
    for figure in TRAINING_FIGURES:
        for suffix in (".png", ".pdf", ".png.prov.json", ".pdf.prov.json", ".caption.rst"):
            assert (figures / f"{figure}{suffix}").stat().st_size > 0, figure + suffix


@pytest.mark.e2e
def test_second_run_does_nothing(pipeline):
    assert planned_jobs(snakemake(pipeline, "-n", "all", "--configfile", "config/smoke.yaml")) == {}


@pytest.mark.e2e
def test_reordered_yaml_reruns_nothing(pipeline):
    def reversed_keys(value):
        if isinstance(value, dict):
            return {key: reversed_keys(value[key]) for key in reversed(list(value))}
        return value

    smoke = yaml.safe_load((pipeline / "config" / "smoke.yaml").read_text())
    override = write_override(pipeline, "reordered.yaml", reversed_keys(smoke))
    assert planned_jobs(snakemake(pipeline, "-n", "all", "--configfile", override)) == {}


FORECAST = {"plot_forecast": 1}  # every model's accuracy and attention tables are its inputs

EDITS = {  # a config edit over smoke.yaml -> exactly the jobs a dry run must plan
    "eval batch size": ({"sparse_parity": {"eval": {"batch_size": 7}}}, {"evaluate": 4, "plot_figure1": 1, **FORECAST}),
    "eval samples": ({"sparse_parity": {"eval": {"n_per_cell": 11}}},
                     {"eval_data": 1, "evaluate": 4, "plot_figure1": 1, **FORECAST}),
    "training steps": ({"sparse_parity": {"train": {"steps": 31}}},
                       {"train": 4, "evaluate": 4, "plot_figure1": 1, **FORECAST}),
    "one more scheme": ({"parity_scratchpad": {"runs": {"scratchpad": ["ppc", "coupled", "rope_pose", "nope"]}}},
                        {"train": 1, "evaluate": 1, "plot_figure2": 1, **FORECAST}),
    "ppc loss weight": ({"variable_assignment": {"train": {"position_loss_weight": 0.5}}},
                        {"train": 1, "evaluate": 1, "plot_figure3": 1, **FORECAST}),
    # only the PoSE language model uses pose_chunks: the rope models are not retrained
    "language pose chunks": ({"language": {"pose": {"pose_chunks": 3}}},
                             {"language_train": 1, "language_eval": 1, "plot_language_pose": 1}),
    # the device (cpu -> auto) enters every model job's spec, never the datasets'
    "device": ({"device": "auto"}, {"train": MODELS, "evaluate": MODELS, "language_train": 3, "language_eval": 3,
                                   "language_influence": 1, **TASK_FIGURES, "plot_figure4": 1,
                                   "plot_language_pose": 1, **FORECAST}),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
@pytest.mark.e2e
def test_config_edit_reruns_exactly_the_affected_jobs(pipeline, edit):
    body, expected = EDITS[edit]
    override = write_override(pipeline, "edit.yaml", body)
    jobs = planned_jobs(snakemake(pipeline, "-n", "all", "--configfile", "config/smoke.yaml", override))
    assert jobs == {**expected, "all": 1}


@pytest.fixture(scope="module")
def own_package(pipeline, tmp_path_factory) -> Path:
    """A copy of ``pipeline`` (its results and .snakemake too) with a copy of the package, which its jobs
    then import (:func:`snakemake`). The figure jobs name their claim files by their path from the working
    folder, so they alone are planned anew: marked made (``--touch``), not drawn again. Tests edit copies of it."""
    workdir = shutil.copytree(pipeline, tmp_path_factory.mktemp("own") / "pipeline", symlinks=True)
    shutil.copytree(REPO / "pipeline_src", workdir / "pipeline_src")
    smoke = ("all", "--configfile", "config/smoke.yaml")
    planned = planned_jobs(snakemake(workdir, "-n", *smoke))
    assert planned and all(rule.startswith("plot_") for rule in planned if rule != "all"), planned
    snakemake(workdir, "--touch", *smoke)
    return workdir


def edited_copy(own_package: Path, tmp_path: Path) -> Path:
    """A copy of :func:`own_package` (its results, .snakemake and package) for one test to edit."""
    return shutil.copytree(own_package, tmp_path / "pipeline", symlinks=True)


@pytest.mark.e2e
def test_code_edits_rerun_exactly_the_jobs_that_import_the_code(own_package, tmp_path):
    """A comment in the model reruns nothing; a code edit of greedy decoding reruns the evaluations
    (and the figures drawn from them), no dataset and no training."""
    workdir = edited_copy(own_package, tmp_path)
    package = workdir / "pipeline_src"
    dry_run = ("-n", "all", "--configfile", "config/smoke.yaml")
    assert planned_jobs(snakemake(workdir, *dry_run)) == {}
    model = package / "model.py"
    model.write_text(model.read_text().replace("\n\n\n", "\n\n\n# an added comment\n", 1) + "# the end\n")
    assert planned_jobs(snakemake(workdir, *dry_run)) == {}
    decoding = package / "evaluation" / "decoding.py"
    decoding.write_text(decoding.read_text() + "\n_EDITED = True\n")
    assert planned_jobs(snakemake(workdir, *dry_run)) == {"evaluate": MODELS, **TASK_FIGURES, **FORECAST,
                                                                   "all": 1}


@pytest.mark.e2e
def test_a_claim_edit_redraws_only_the_figure_that_states_it(own_package, tmp_path):
    """A shipped claim file is an input of the job of the figure whose caption states it, and of no other:
    editing F2's replans Figure 2's job alone."""
    workdir = edited_copy(own_package, tmp_path)
    claim = workdir / "pipeline_src" / "findings" / "claims" / "F2.yaml"
    claim.write_text(claim.read_text().replace("says: each coupled scheme", "says: every coupled scheme"))
    assert planned_jobs(snakemake(workdir, "-n", "all", "--configfile", "config/smoke.yaml")) == {
        "plot_figure2": 1, "all": 1}


MALFORMED = [  # a config edit over smoke.yaml -> what its error names
    ({"variable_assignment": {"runs": {"scratch": ["ppc"]}}}, "scratch"),
    ({"parity_scratchpad": {"runs": {"direct": ["bogus"]}}}, "bogus"),
    ({"tasks": ["sparse_parity", "parity"]}, "tasks"),
    ({"variable_assignment": {"data": {"n_vars": 8}}}, "n_vars"),
    ({"parity_scratchpad": {"model": {"max_positions": 20}}}, "max_positions"),
    ({"sparse_parity": {"train": {"lr": "1e-3"}}}, "lr"),
    ({"sparse_parity": {"train": {"learning_rate": 0.1}}}, "learning_rate"),
    ({"sparse_parity": {"schemes": ["rope", "bogus"]}}, "schemes"),
    ({"sparse_parity": {"k_train": [40]}}, "k_train"),
    ({"device": "gpu"}, "device"),
]


@pytest.mark.parametrize("body, field", MALFORMED)
def test_malformed_config_names_the_field_where_the_snakefile_loads_it(tmp_path, monkeypatch, body, field):
    """Each edit fails the Snakefile's config load (read_config and validate: load_config) naming its field."""
    from pipeline_src.config.layers import ConfigError
    from pipeline_src.planning.load_config import load_config

    monkeypatch.chdir(REPO)
    override = tmp_path / "bad.yaml"
    override.write_text(yaml.safe_dump(body))
    with pytest.raises(ConfigError, match=re.escape(field)):
        load_config([Path("config/smoke.yaml"), override])


# Snakemake itself on one edit of each check: an unknown key and a wrong type (the schema), a task
# not registered, a cross-field rule of a task's (its study) and a device not known
@pytest.mark.parametrize("body, field", [case for case in MALFORMED
                                         if case[1] in ("learning_rate", "lr", "tasks", "n_vars", "device")])
@pytest.mark.e2e
def test_malformed_config_fails_before_any_job_naming_the_field(pipeline, body, field):
    override = write_override(pipeline, "bad.yaml", body)
    done = snakemake(pipeline, "-n", "all", "--configfile", "config/smoke.yaml", override, check=False)
    assert done.returncode != 0
    assert field in done.stdout + done.stderr
    assert "Job stats" not in done.stdout + done.stderr


@pytest.mark.e2e
def test_every_figure_of_the_run_shows_its_text_readable_in_the_report(pipeline):
    """No plot job warned that its smallest text shows under MIN_TEXT_PX at the report's width."""
    logs = sorted((pipeline / "results" / "logs" / "figures").glob("*.log"))
    assert len(logs) == len(FIGURES)
    warned = [path.name for path in logs if "smallest text shows" in path.read_text()]
    assert not warned, warned


@pytest.mark.e2e
def test_lint_is_clean(pipeline):
    done = snakemake(pipeline, "--lint", check=False)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.e2e
def test_each_job_records_the_name_of_its_rule(pipeline):
    # A rule passes its own name to the command as params.rule: Snakemake's `{rule}` would say it once,
    # but its lint rejects `{rule}` in a shell command. So a renamed rule must fail here, not record
    # another rule's name in every provenance record it writes.
    done = snakemake(pipeline, "-n", "-p", "--forceall", "all", "--configfile", "config/smoke.yaml")
    named = {}
    for rule, block in planned_blocks(done.stdout):
        passed = re.search(r"lengthgen [\w-]+(?: \S+)? --rule (\S+)", block)
        if passed:
            named.setdefault(rule, set()).add(passed[1])
    assert {"train_data", "eval_data", "train", "evaluate", "plot_figure1", "language_corpus", "language_train",
            "language_eval", "language_influence"} <= set(named)
    assert {rule: names for rule, names in named.items() if names != {rule}} == {}


@pytest.fixture(scope="module")
def report(pipeline) -> tuple[Path, subprocess.CompletedProcess]:
    """The smoke run's report, made once for the tests that read it, and the run that made it."""
    return pipeline / "report.html", snakemake(pipeline, "--report", "report.html", "--configfile", "config/smoke.yaml")


@pytest.mark.e2e
def test_report_landing_page_and_captions_read_as_intended_in_a_browser(pipeline, report, monkeypatch):
    """The report as a person sees it (rendered by a headless browser): a landing page led by the
    findings' verdicts and comparisons, with labelled entries for the code version, libraries and
    unfinished cells, every figure made with this config; captions stating what each figure was made
    with."""
    from pipeline_src.provenance.records import code_version
    from tests.browser import rendered_text

    path, done = report
    assert "workflow specific profile profiles/default" in done.stdout + done.stderr  # applied by itself
    page = rendered_text(path)
    first, landing = page.split("Code and libraries", 1)
    findings = first.split("The paper's findings, judged from this run's tables", 1)[1]  # the page leads with them
    for name in ("F1", "F2", "F3", "F4"):  # the smoke config's runs rehearse the code path, and say so
        assert re.search(rf"{name}: rehearsal, not evidence: the code path gives (reproduced|contradicted|undecided: "
                         r".+?) \(the claim: ", findings), name
    assert "p = " in findings and "seeds)" in findings  # the comparisons' numbers
    monkeypatch.chdir(pipeline)  # the records name their inputs relative to the run's folder
    told = CliRunner().invoke(main, ["findings", "results", "--configfile", "config/smoke.yaml"])
    verdicts = [line for line in told.output.splitlines() if re.match(r"F\d'?\w*: ", line)]
    assert told.exit_code == 0 and len(verdicts) >= 4, told.output
    assert all(": rehearsal, not evidence: the code path gives " in line for line in verdicts), verdicts
    caption = (pipeline / "results/figures/figure1.caption.rst").read_text()
    assert ": rehearsal, not evidence: the code path gives " in caption and "**F1: reproduced" not in caption
    assert f"git commit: {code_version()['git_commit']}" in landing
    assert re.search(r"uncommitted changes: (yes|no) ", landing)
    assert re.search(r"library versions: python 3\.[\d.]+; torch \S+; numpy", landing)
    for figure in FIGURES:
        assert f"{figure}: made with this config" in landing
    assert "cells whose training diverged: none jobs that failed (their log, no output): none" in landing
    # each task's figure job also draws its mechanism figure (tasks with dependency sets) and its training curves
    figures = len(FIGURES) + len(MECHANISM_TASKS) + len(TRAINING_FIGURES)
    assert f"figures under results/figures {figures}" in landing  # the numbers under the text
    for heading in ("whole", "encoding", "errors"):  # what a string in --report-metadata renders as
        assert f" {heading} " not in landing
    raw = (pipeline / "report.html").read_text()  # the captions, shown one figure at a time
    assert raw.count("This run") == figures and "training steps of batch" in raw
    listed = json.loads(re.search(r"var categories = (\{.*?\});?\n", raw)[1])  # the report's figures by category
    for figure, task in TRAINING_FIGURES.items():
        assert f"results/figures/{figure}.png" in [path for sub in listed[task].values() for path in sub], figure
    assert "1 layer," in raw and "1 layers" not in raw  # the smoke models have one layer


@pytest.mark.e2e
def test_the_report_landing_page_starts_inside_the_window(pipeline, report):
    """Snakemake's template centres a page taller than the window, which would push its top out of
    reach; the landing page's first line and its first heading are in view at 1280 x 800. And a
    figure wider than the report shows it at least as wide as the text check of every saved figure
    assumes (``REPORT_WIDTH_PX``): opened as the report opens an image, in the same place."""
    import struct

    from pipeline_src.figures.shared import REPORT_WIDTH_PX
    from tests.browser import measured, screenshot_on_failure

    page = report[0]
    widths = {path: struct.unpack(">I", path.read_bytes()[16:20])[0]
              for path in (pipeline / "results" / "figures").glob("*.png")}
    widest = max(widths, key=widths.get)
    assert widths[widest] > REPORT_WIDTH_PX  # else the check below would show nothing
    open_image = ("var grow = document.querySelector('#brand').closest('.grow');"
                  " var view = document.createElement('div'); view.className = 'p-3';"  # the report's image view
                  " var img = document.createElement('img'); img.id = 'probe';"
                  f" img.src = results['results/figures/{widest.name}'].data_uri; view.appendChild(img);"
                  " grow.parentNode.replaceChild(view, grow);")
    shown = measured(page, "document.getElementById('probe').getBoundingClientRect().width",
                     setup=open_image)
    with screenshot_on_failure(page, "report_wide_figure", setup=open_image):
        assert REPORT_WIDTH_PX <= float(shown) < widths[widest], f"{widest.name} shown {shown} px wide"
    top = ("(function (start) { var all = Array.prototype.slice.call(document.querySelectorAll('p, strong'));"
           " var el = all.filter(function (e) { return e.textContent.indexOf(start) === 0; })[0];"
           " return el ? el.getBoundingClientRect().top : 'missing'; })")
    starts = ("What this run", "The paper")  # the page's first line, its first heading (the findings)
    values = measured(page, "[" + ", ".join(f"{top}('{start}')" for start in starts) + "]")
    for start, value in zip(starts, values.split(","), strict=True):  # one browser run measures both
        with screenshot_on_failure(page, "report_landing_page"):
            assert value != "missing", start
            assert 0 <= float(value) < 800, f"{start!r} starts at {value} px, outside the 800 px window"


@pytest.mark.e2e
def test_a_report_made_with_another_config_says_so_and_keeps_each_figures_own_caption(pipeline):
    """A report made with a config other than the figures': the landing page names the figure and
    the values that differ; the captions still state what the figures were made with."""
    from tests.browser import rendered_text

    other = write_override(pipeline, "more_samples.yaml", {"parity_scratchpad": {"eval": {"n_per_cell": 11}}})
    snakemake(pipeline, "--report", "other.html", "--configfile", "config/smoke.yaml", other)
    page = rendered_text(pipeline / "other.html")
    assert ("figure2: made with another config than this report's" in page
            and "eval_data params.n_per_cell: 10 in the figure, 11 in this config" in page), page[:3000]
    assert "figure3: made with this config" in page
    caption = (pipeline / "results" / "figures" / "figure2.caption.rst").read_text()
    assert "10 evaluation samples per cell" in " ".join(caption.split())
    assert "\n**F2: " in caption and "judged from this figure's tables" in caption  # its finding, from its tables
    raw = (pipeline / "other.html").read_text()
    assert "11 evaluation samples" not in raw


@pytest.mark.e2e
def test_a_report_of_a_config_whose_runs_are_absent_prints_no_line_per_absent_file(pipeline):
    """After the smoke run, `snakemake --report` of the default config: its runs were never made, and
    Snakemake's "Missing metadata" warning for each of their files is dropped."""
    done = snakemake(pipeline, "--report", "default.html")
    assert "Missing metadata" not in done.stdout + done.stderr
    assert (pipeline / "default.html").exists()


def test_a_made_file_without_metadata_still_gets_its_warning(tmp_path):
    import logging

    from pipeline_src.runs.workflow_process import _AbsentFiles

    made = tmp_path / "made.parquet"
    made.touch()
    def record(path):
        return logging.LogRecord("snakemake.logging", logging.WARNING, __file__, 0,
                                 f"Missing metadata for file {path}. Maybe metadata was deleted ...", None, None)

    assert _AbsentFiles().filter(record(made)) and not _AbsentFiles().filter(record(tmp_path / "absent.parquet"))
    assert _AbsentFiles().filter(logging.LogRecord("snakemake.logging", logging.WARNING, __file__, 0, "other",
                                                   None, None))


TINY_TRAIN = {"steps": 4, "batch_size": 8, "warmup_steps": 1, "log_every": 2, "checkpoint_every": 2}
TINY = {  # sparse parity: two cells (seeds 0 and 1), each a few seconds from data to accuracy
    "tasks": ["sparse_parity"],
    "language": {"enabled": False},
    "sparse_parity": {"schemes": ["rope"], "k_train": [2], "seeds": [0, 1],
                      "data": {"n_train": 100}, "eval": {"k_test": [2], "lengths": [60], "n_per_cell": 4},
                      "model": {"d_model": 16, "n_layer": 1, "n_head": 2, "d_mlp": 32}, "train": TINY_TRAIN},
}
DIVERGING = {  # parity, rope_pose with and without scratchpad (runs merge over the default's), at a
    # learning rate no run survives: two cells, both diverged
    "tasks": ["sparse_parity", "parity_scratchpad"],
    "language": {"enabled": False},
    "parity_scratchpad": {"runs": {"scratchpad": ["rope_pose"]}, "seeds": [0], "data": {"n_train": 100},
                          "eval": {"lengths": [5, 20], "n_per_cell": 4},
                          "model": {"d_model": 16, "n_layer": 1, "n_head": 2, "d_mlp": 32},
                          "train": {**TINY_TRAIN, "steps": 8, "lr": 1.0e6}},
}


@pytest.mark.e2e
def test_keep_going_finishes_every_cell_and_the_report_names_the_failed_ones(tmp_path):
    """One cell's job fails (a corrupt resume checkpoint in its folder), two cells diverge. With
    --keep-going the other sparse parity cell is still trained and evaluated, the corrupt file is
    named and left as it was; the diverged cells are a result: their figure is made and names them.
    The run ends naming both kinds of cell; the report of the figures that could be made lists them
    on its landing page."""
    from pipeline_src.planning import jobs
    from pipeline_src.storage.canonical import config_hash
    from tests.browser import rendered_text
    from tests.helpers import DEFAULT, merged

    workdir = copy_workflow(tmp_path)
    overrides = [write_override(workdir, "tiny.yaml", TINY), write_override(workdir, "diverging.yaml", DIVERGING)]
    spec = jobs.train_spec({**merged(DEFAULT, TINY), "device": "cpu"},  # copy_workflow's
                           "sparse_parity", "k2", "rope", 1)
    cell = "sparse_parity/rope/k2"
    resume = workdir / "results" / "train" / cell / "seed1" / f"resume-{config_hash(spec)[:16]}.pt"
    resume.parent.mkdir(parents=True)
    resume.write_bytes(b"half a checkpoint")

    done = snakemake(workdir, "all", "--configfile", *overrides, "--keep-going", check=False)
    assert done.returncode != 0, "the failed cell fails the run"
    assert (workdir / "results" / "eval" / cell / "seed0" / "accuracy.parquet").exists(), done.stderr
    assert not (workdir / "results" / "train" / cell / "seed1" / "model.safetensors").exists()
    assert resume.read_bytes() == b"half a checkpoint", "never retrained over"
    log = (workdir / "results" / "logs" / "train" / cell / "seed1.log").read_text()
    assert f"{resume.name}: unreadable resume checkpoint" in log
    assert not (workdir / "results" / "figures" / "figure1.png").exists()
    diverged = workdir / "results" / "train" / "parity_scratchpad" / "rope_pose" / "scratchpad" / "seed0"
    assert "diverged" in (diverged / "summary.json").read_text(), done.stderr
    assert (workdir / "results" / "figures" / "figure2.png").exists()
    warning = done.stderr.split("WARNING: cells whose training diverged:\n")[-1]
    assert warning.startswith("  parity_scratchpad/rope_pose/direct/seed0: training diverged at step"), done.stderr
    assert f"jobs that failed (their log, no output):\n  results/logs/train/{cell}/seed1.log" in warning

    made = snakemake(workdir, "--report", "report.html", "figure2", "--configfile", *overrides)
    assert "Adding figure2.png" in made.stderr and "Adding figure1.png" not in made.stderr, made.stderr
    page = rendered_text(workdir / "report.html")
    assert "figure1: not made yet (no results/figures/figure1.png)" in page
    assert "cells whose training diverged: parity_scratchpad/rope_pose/direct/seed0: training diverged at step" in page
    assert "parity_scratchpad/rope_pose/scratchpad/seed0: training diverged at step" in page
    assert f"jobs that failed (their log, no output): results/logs/train/{cell}/seed1.log" in page
    assert "cells whose training diverged 2 jobs that failed (their log, no output) 1" in page


@pytest.mark.parametrize("body, field", [
    ({"sparse_parity": {"schemes": ["../x"]}}, "config field sparse_parity.schemes[0]"),
    ({"sparse_parity": {"seeds": [-1]}}, "config field sparse_parity.seeds[0]"),
    ({"variable_assignment": {"runs": {"a/b": ["rope"]}}}, "config field variable_assignment.runs"),
])
@pytest.mark.e2e
def test_a_config_value_naming_a_path_outside_results_fails_before_any_job(tmp_path, body, field):
    workdir = copy_workflow(tmp_path)
    override = write_override(workdir, "bad.yaml", body)
    done = snakemake(workdir, "-n", "all", "--configfile", "config/smoke.yaml", override, check=False)
    assert done.returncode != 0
    assert field in done.stdout + done.stderr
    assert "Job stats" not in done.stdout + done.stderr


@pytest.mark.e2e
def test_a_training_killed_in_a_forced_rerun_is_made_again_by_the_next_run(tmp_path):
    """Snakemake deletes a job's outputs when it starts the job. A forced rerun of one training,
    killed (SIGKILL, the whole process group) while the model trains, leaves the model folder
    without a model while its accuracy table and the figure remain. After --unlock, `all` and the
    figure's own target plan the model again instead of "Nothing to be done"; `snakemake figure1`
    makes it (the same bytes: training is deterministic) and reruns what follows it."""
    workdir = copy_workflow(tmp_path)
    # long enough to be killed between its first checkpoint (step 200) and its end (some 3 s later)
    slow = {**TINY, "sparse_parity": {**TINY["sparse_parity"], "seeds": [0],  # the one it kills
                                      "train": {**TINY_TRAIN, "steps": 1000, "checkpoint_every": 200}}}
    override = write_override(workdir, "slow.yaml", slow)
    snakemake(workdir, "all", "--configfile", override)
    results = workdir / "results"
    before = finished_files(workdir)
    folder = results / "train" / "sparse_parity" / "rope" / "k2" / "seed0"

    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    job = subprocess.Popen([sys.executable, "-m", "snakemake", "--cores", "1", "all", "--configfile", override,
                            "--forcerun", str((folder / "model.safetensors").relative_to(workdir))],
                           cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not list(folder.glob("resume-*.pt")) and job.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert list(folder.glob("resume-*.pt")), "the forced training never wrote a checkpoint"
    finally:
        os.killpg(job.pid, signal.SIGKILL)
        job.wait()
    assert not (folder / "model.safetensors").exists() and (results / "figures" / "figure1.png").exists()

    snakemake(workdir, "--unlock", "all", "--configfile", override)
    for target in ("all", "figure1"):
        plan = planned_jobs(snakemake(workdir, "-n", target, "--configfile", override))
        assert plan.get("train") == 1 and plan.get("evaluate") == 1 and plan.get("plot_figure1") == 1, (target, plan)
    snakemake(workdir, "figure1", "--configfile", override)
    assert planned_jobs(snakemake(workdir, "-n", "all", "--configfile", override)) == {}
    changed = changed_files(before, workdir)
    assert changed == [], f"differ from the uninterrupted run: {changed}"
    log = folder / "train_log.parquet"
    assert pl.read_parquet(log).drop("seconds").equals(pl.read_parquet(io.BytesIO(before[log])).drop("seconds"))


@pytest.mark.e2e
def test_jobs_find_lengthgen_without_an_activated_environment(tmp_path):
    """`.venv/bin/snakemake ...` as a new user types it: the environment's bin folder is not on PATH."""
    workdir = copy_workflow(tmp_path)
    bin_folder = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != bin_folder) or "/usr/bin"
    done = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "results/data/sparse_parity/eval.parquet",
                           "--configfile", "config/smoke.yaml"], cwd=workdir, env={**os.environ, "PATH": path},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (workdir / "results/data/sparse_parity/eval.parquet").exists()


@pytest.mark.e2e
def test_the_readme_counts_the_jobs_and_models_of_a_dry_run_of_the_default(tmp_path):
    said = re.search(r"Today's default plans (\d+) jobs: (\d+) synthetic-task models and (\d+) language models",
                     (REPO / "README.md").read_text())
    assert said, "README: the sentence with the default run's job and model counts is gone"
    plan = planned_jobs(snakemake(copy_workflow(tmp_path), "-n", "all"))
    assert (sum(plan.values()), plan["train"], plan["language_train"]) == tuple(map(int, said.groups()))

"""The GPU window plan (config/gpu_window.yaml, config/gpu_window_mid.yaml; docs/cluster.md): what
it trains, and its rehearsal on the CPU with tiny steps, through the tarball the GPU kit brings back
(result tables and their records, no weights, no data) to the findings judged from it."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline_src.cli import main
from pipeline_src.planning import jobs
from pipeline_src.planning.load_config import load_config
from tests.conftest import REPO
from tests.helpers import copy_workflow, snakemake, write_override

WINDOW = ("config/gpu_window.yaml",)
MID = ("config/mid_parity.yaml", "config/attention_scale.yaml", "config/gpu_window_mid.yaml")
# What the GPU kit returns in results.tar.gz (../shared/gpu/run.sh, "What comes back"): these files
# under these folders of results/, so no weights, no datasets
KIT_FOLDERS = ("figures", "train", "eval", "mechanism", "language/train", "benchmarks")
KIT_FILES = ("*.png", "summary.json", "model.json", "*.tsv", "*.parquet", "*.parquet.prov.json",
             "model.json.prov.json", "*.caption.rst")


def trainings(configfiles: tuple[str, ...], task: str) -> int:
    return len(jobs.cells(load_config([REPO / file for file in configfiles]), task))  # a cell per seed


def test_the_plan_trains_eight_seeds_of_each_figure_on_the_gpu():
    """Part (a): the default config's Figures 1, 3 and 2 with 8 seeds (16, 32 and 56 trainings, the
    numbers docs/cluster.md's table names); part (b): Figure 2 at the mid size, 40 trainings."""
    config = load_config([REPO / WINDOW[0]])
    assert config["device"] == "cuda" and config["models_per_gpu"] == 8
    assert [trainings(WINDOW, task) for task in ("sparse_parity", "variable_assignment", "parity_scratchpad")] \
        == [16, 32, 56]
    assert trainings(MID, "parity_scratchpad") == 40
    mid = load_config([REPO / file for file in MID])["parity_scratchpad"]
    assert mid["seeds"] == list(range(8)) and mid["model"]["attention_scale"] == "log_length"


RANGE = ("config/gpu_window.yaml", "config/figure1_range.yaml")


def test_part_g_trains_figure1_range_in_two_windows_whose_models_are_its_own():
    """Part (g): config/figure1_range.yaml's 40 trainings (K_train 4 to 12, seeds 20 to 27) in two
    windows, 24 and 16, each model's spec and its evaluation set those of the whole config, so the
    two windows' tables are judged together with figure1_range.yaml."""
    whole = load_config([REPO / file for file in RANGE])
    halves = [load_config([REPO / file for file in (*RANGE, f"config/gpu_window_range_{half}.yaml")])
              for half in ("low", "high")]
    assert [trainings((*RANGE, f"config/gpu_window_range_{half}.yaml"), "sparse_parity")
            for half in ("low", "high")] == [24, 16]

    def specs(config):
        return {(cell["variant"], cell["seed"]): jobs.train_spec(config, "sparse_parity", cell["variant"],
                                                                 cell["scheme"], cell["seed"])
                for cell in jobs.cells(config, "sparse_parity")}

    assert {**specs(halves[0]), **specs(halves[1])} == specs(whole) and len(specs(whole)) == 40
    assert {seed for _, seed in specs(whole)} == set(range(20, 28))
    assert all(jobs.eval_data_spec(half, "sparse_parity", "k4" if i == 0 else "k10")
               == jobs.eval_data_spec(whole, "sparse_parity", "k4") for i, half in enumerate(halves))


def kit_tarball(workdir: Path, out: Path) -> Path:
    """``workdir``'s results as the GPU kit packs them."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(out, "w:gz") as tar:
        for folder in KIT_FOLDERS:
            for pattern in KIT_FILES:
                for path in sorted((workdir / "results" / folder).rglob(pattern)):
                    tar.add(path, arcname=str(path.relative_to(workdir)))
    return out


def test_the_kits_returned_files_are_these(tmp_path):
    """Where the kit is at hand (a development machine; not in CI), it still returns what the
    rehearsal packs."""
    kit = REPO.parent / "shared" / "gpu" / "run.sh"
    if not kit.is_file():
        pytest.skip("no GPU kit beside this checkout (../shared/gpu)")
    text = kit.read_text()
    assert all(f"results/{folder}" in text for folder in KIT_FOLDERS)
    assert all(f"-name '{pattern}'" in text for pattern in KIT_FILES)


@pytest.mark.e2e
def test_the_plan_rehearsed_on_the_cpu_comes_back_judged(tmp_path, monkeypatch):
    """Figure 1 of the plan with the smoke config's tiny steps on the CPU, packed as the kit packs it,
    unpacked elsewhere: judged with the plan's config files (the training's config compared through
    model.json, the weights being absent), exported as a summary, and shown beside a scale not run
    yet; the accuracy and mechanism tables read there too."""
    import yaml

    workdir = copy_workflow(tmp_path)
    on_cpu = write_override(workdir, "on_cpu.yaml", {"device": "cpu", "sparse_parity": {"schemes": ["rope_pose"]}})
    layering = [*WINDOW, "config/smoke.yaml", on_cpu]  # 2 tiny trainings on the CPU
    snakemake(workdir, "figure1", "--configfile", *layering)
    with tarfile.open(kit_tarball(workdir, tmp_path / "kit" / "results.tar.gz")) as tar:
        tar.extractall(tmp_path / "back", filter="data")
    back = tmp_path / "back" / "results"
    assert not list(back.rglob("*.safetensors")) and not (back / "data").exists()

    monkeypatch.chdir(workdir)
    options = [arg for file in layering for arg in ("--configfile", file)]
    done = CliRunner().invoke(main, ["findings", str(back), *options, "--export", str(tmp_path / "gpu.csv")])
    assert done.exit_code == 0, done.output
    assert done.output.startswith("F1: ") and "F1: undecided: no results" not in done.output
    steps = write_override(workdir, "more_steps.yaml", {"defaults": {"train": {"steps": 31}}})
    other = CliRunner().invoke(main, ["findings", str(back), *options, "--configfile", steps])
    assert other.exit_code != 0 and "made with train train.steps=30, the config says 31" in other.output, other.output

    scales = [{"name": name, "short": name, "summary": summary, "configfiles": layering, "device": "a CPU",
               "date": "today"}
              for name, summary in (("window", "gpu.csv"), ("mid", "gpu_mid.csv"))]
    (tmp_path / "scales.yaml").write_text(yaml.safe_dump(scales))
    judged = CliRunner().invoke(main, ["findings", "--scales", str(tmp_path / "scales.yaml")])
    assert judged.exit_code == 0, judged.output
    f1 = judged.output.splitlines()[:2]
    assert f1[0].startswith("F1  window") and f1[1].split() == ["mid", "no", "results", "yet"], judged.output

    tables = sorted(str(path) for path in back.glob("eval/sparse_parity/*/*/*/accuracy.parquet"))
    for command in (["table", *tables], ["mechanism-table", str(back / "mechanism/sparse_parity/rope_pose/k2/seed0")]):
        shown = CliRunner().invoke(main, command)
        assert shown.exit_code == 0 and shown.output.startswith("| task |"), shown.output

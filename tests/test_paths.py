"""Result paths: one module names them for the rules and for ``lengthgen status``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from pipeline_src.planning import jobs, paths
from pipeline_src.planning.cell_jobs import cell_jobs
from pipeline_src.planning.load_config import load_config

REPO = Path(__file__).resolve().parents[1]
CELL = {"task": "parity_scratchpad", "variant": "scratchpad", "scheme": "ppc", "seed": 1}
# what a results path may end with: every kind of file the pipeline writes
RESULT_FILE = re.compile(r"\.(parquet|safetensors|json|log|tsv|png|pdf)$")


def test_a_path_is_a_snakemake_pattern_or_a_concrete_path():
    assert paths.train_data() == "results/data/{task}/train_{variant}.parquet"
    assert paths.accuracy() == "results/eval/{task}/{scheme}/{variant}/seed{seed}/accuracy.parquet"
    assert paths.accuracy(**CELL) == "results/eval/parity_scratchpad/ppc/scratchpad/seed1/accuracy.parquet"
    assert (paths.train_outputs(**CELL)["model"]
            == "results/train/parity_scratchpad/ppc/scratchpad/seed1/model.safetensors")
    assert paths.log(paths.train_job(**CELL)) == "results/logs/train/parity_scratchpad/ppc/scratchpad/seed1.log"
    assert paths.benchmark(paths.figure_job("figure2")) == "results/benchmarks/figures/figure2.tsv"
    assert paths.sidecar(paths.figure("figure2", "pdf")) == "results/figures/figure2.pdf.prov.json"
    assert paths.language_eval_outputs("main")["targets"] == "results/language/eval/main/target_loss.parquet"
    assert paths.train_data(task="*", variant="*") == "results/data/*/train_*.parquet"


def test_find_lists_the_files_of_a_pattern_with_their_wildcards(tmp_path):
    for name in ("train/a/rope/k2/seed0/summary.json", "train/a/rope/k2/seed1/model.json", "train/b/c/d/summary.json"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("{}")
    found = paths.find(paths.train_outputs()["summary"], tmp_path)
    assert found == [(tmp_path / "train/a/rope/k2/seed0/summary.json",
                      {"task": "a", "scheme": "rope", "variant": "k2", "seed": "0"})]
    assert paths.under(tmp_path, paths.accuracy(**found[0][1])) == tmp_path / "eval/a/rope/k2/seed0/accuracy.parquet"


def string_constants(path: Path) -> list[str]:
    return [node.value for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def test_status_writes_no_result_path_of_its_own():
    written = [text for text in string_constants(REPO / "pipeline_src/runs/cell_status.py")
               if "results" in text.split("/") or RESULT_FILE.search(text)]
    assert written == []


def test_every_path_status_reads_comes_from_paths(monkeypatch):
    config = load_config([REPO / "config/smoke.yaml"], base=REPO / "config/config.yaml")
    cells = [cell for task in jobs.tasks(config) for cell in jobs.cells(config, task)]
    monkeypatch.setattr(paths, "RESULTS", "elsewhere")
    for cell in cells:
        for job in cell_jobs(config, cell):
            for path in [*job.outputs, *job.inputs.values()]:
                assert path.startswith("elsewhere/"), path


def test_the_rules_write_no_result_path_of_their_own():
    for rules in [REPO / "Snakefile", *sorted((REPO / "workflow/rules").glob("*.smk"))]:
        text = rules.read_text()
        assert not re.search(r"""["']results/|f["'][^"']*\.(parquet|log|tsv|png|pdf)["']""", text), rules


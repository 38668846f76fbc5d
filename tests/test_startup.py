"""A small job's start-up: a data, training or evaluation job imports neither torch's compiler stack
nor pandera (a table that passes its schema's checks needs no pandera), and the console script ends
with the command's status once its output is flushed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pipeline_src.cli import main
from tests.conftest import REPO, tiny_train_spec

pytestmark = pytest.mark.e2e  # the console script and fresh interpreters, each in a process of its own

HEAVY = ("torch._dynamo", "pandera", "pandas")  # what a data, training or evaluation job has no use for


def lengthgen(*args: str) -> subprocess.CompletedProcess:
    """``lengthgen ARGS`` as the console script runs it (``python -m pipeline_src.cli``)."""
    return subprocess.run([sys.executable, "-m", "pipeline_src.cli", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=300)


def train_args(spec: dict, train_data, out_dir) -> list[str]:
    return ["train", "--spec", json.dumps(spec), "--train-data", str(train_data), "--out-dir", str(out_dir)]


def test_data_training_and_evaluation_jobs_import_no_compiler_and_no_pandera(tmp_path, train_data):
    eval_data, model = tmp_path / "eval.parquet", tmp_path / "model"
    eval_spec = {"task": "sparse_parity", "split": "eval", "seed": 2,
                 "params": {"k_test": [1, 2], "lengths": [20, 60], "n_per_cell": 6}}
    evaluate_spec = {"batch_size": 16, "device": "cpu", "mechanism_samples": 4, "precision": "fp32", "seed": 2}
    jobs = [["generate", "--spec", json.dumps(eval_spec), "--out", str(eval_data)],
            train_args(tiny_train_spec(steps=3), train_data, model),
            ["evaluate", "--spec", json.dumps(evaluate_spec), "--model-dir", str(model), "--eval-data", str(eval_data),
             "--out", str(tmp_path / "eval" / "accuracy.parquet"), "--mechanism-dir", str(tmp_path / "mechanism")]]
    code = ("import sys\nfrom pipeline_src.cli import main\n"
            + "".join(f"main(args={args!r}, standalone_mode=False)\n" for args in jobs)
            + f"print([name for name in {HEAVY!r} if name in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
    assert (model / "model.safetensors").exists() and (tmp_path / "eval" / "accuracy.parquet").exists()
    assert (tmp_path / "mechanism" / "attention.parquet").exists()


def test_console_script_flushes_its_output_and_keeps_the_status(tmp_path, train_data):
    done = lengthgen(*train_args(tiny_train_spec(steps=3), train_data, tmp_path / "model"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stderr.strip().splitlines()[-1])["steps"] == 3  # the summary, whole
    helped = lengthgen("--help")  # into a pipe: block-buffered, so only a flush gets it out
    assert helped.returncode == 0 and "Usage: " in helped.stdout
    assert all(f"  {name} " in helped.stdout for name in main.commands)  # to the last line

    junk = tmp_path / "junk.parquet"
    junk.write_text("not parquet")
    failed = lengthgen(*train_args(tiny_train_spec(steps=3), junk, tmp_path / "other"))
    assert failed.returncode == 1 and "junk.parquet" in failed.stderr

    bad = lengthgen("train", "--spec", "{", "--train-data", str(train_data), "--out-dir", str(tmp_path / "x"))
    assert bad.returncode == 2 and "not valid JSON" in bad.stderr


def test_drawing_figures_and_reading_mechanism_tables_does_not_import_torch():
    """A figure job (a task's figure, its mechanism and training figures, its caption's finding; the
    language figures and their summary statistics) never starts torch: it reads tables."""
    code = ("import sys\nimport pipeline_src.figures.mechanism_figure, pipeline_src.figures.figure2\n"
            "import pipeline_src.figures.training_curves, pipeline_src.findings.judge\n"
            "import pipeline_src.figures.figure4, pipeline_src.figures.language_pose\n"
            "import pipeline_src.evaluation.mechanism_summary\nprint('torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"

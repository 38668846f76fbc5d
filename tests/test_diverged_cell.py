"""A cell whose training diverges is a result, not a lost run: its evaluation table has every row
of the grid without accuracy, the figures name it and average over the other seeds, and tables
count only the seeds that finished."""

from __future__ import annotations

import polars as pl
import pytest

from pipeline_src import datasets
from pipeline_src.evaluation import accuracy_schema
from pipeline_src.evaluation.accuracy_schema import AccuracySchema
from pipeline_src.evaluation.evaluate import evaluate
from pipeline_src.figures import figure1
from pipeline_src.figures import shared as common
from pipeline_src.findings.tables import accuracy_table
from pipeline_src.training.train import train
from tests.conftest import tiny_train_spec

quiet = {"progress": lambda _: None}
EVAL_CONFIG = {"batch_size": 4, "seed": 2}


@pytest.fixture
def tables(tmp_path, train_data, eval_data):
    """Accuracy tables of two seeds of one run: seed 3 trains, seed 4 diverges (huge lr)."""
    good = tiny_train_spec()
    bad = tiny_train_spec(lr=1e3, checkpoint_every=2) | {"seed": 4}
    paths = []
    for spec in (good, bad):
        model_dir = tmp_path / f"seed{spec['seed']}"
        train(spec, train_data, model_dir, **quiet)
        paths.append(tmp_path / f"acc{spec['seed']}.parquet")
        evaluate(EVAL_CONFIG, model_dir, eval_data, paths[-1], **quiet)
    return paths


def test_a_diverged_model_is_evaluated_as_rows_without_accuracy(tables):
    scored, unscored = (datasets.read(path, AccuracySchema) for path in tables)
    assert unscored.select("k", "length", "metric", "n").equals(scored.select("k", "length", "metric", "n"))
    assert unscored.null_count().select("correct", "accuracy", "ci_low", "ci_high").row(0) == (len(unscored),) * 4
    assert scored["accuracy"].null_count() == 0 and set(unscored["seed"]) == {4}


def test_the_schema_refuses_a_row_only_partly_unscored(tables):
    frame = datasets.read(tables[0], AccuracySchema).with_columns(accuracy=pl.lit(None, pl.Float64))
    with pytest.raises(Exception, match="unscored_rows_are_null_throughout"):
        AccuracySchema.validate(frame)


def test_figures_name_the_diverged_run_and_average_the_others(tables, tmp_path, monkeypatch):
    frame = accuracy_schema.read_accuracy(tables, metric="answer")
    assert common.diverged_runs(frame) == ["sparse_parity/rope_pose/k2 seed4"]
    summary = common.mean_over_seeds(frame, ["k", "length"])
    only_good = common.mean_over_seeds(frame.filter(pl.col("seed") == 3), ["k", "length"])
    assert summary.equals(only_good), "the diverged seed takes no part in means, spreads or seed counts"
    spec = {"task": "sparse_parity", "runs": {"k2": ["rope_pose"]}, "seeds": [3, 4], "x_scale": "log",
            "train_lengths": [20, 50]}
    texts = []
    real = common.note_diverged

    def spy(fig, frame):
        real(fig, frame)
        texts.extend(text.get_text() for text in fig.texts)

    monkeypatch.setattr(figure1, "note_diverged", spy)
    figure1.plot(spec, tables, [tmp_path / "f.png"])
    assert any("Training diverged" in text and "rope_pose/k2 seed4" in text for text in texts)
    assert (tmp_path / "f.png").stat().st_size > 0


def test_a_figure_where_every_seed_diverged_still_draws(tables, tmp_path):
    spec = {"task": "sparse_parity", "runs": {"k2": ["rope_pose"]}, "seeds": [4], "x_scale": "log",
            "train_lengths": [20, 50]}
    figure1.plot(spec, tables[1:], [tmp_path / "f.png"])
    assert (tmp_path / "f.png").stat().st_size > 0


def test_tables_count_the_seeds_that_finished(tables):
    table = accuracy_table(tables, "answer")
    assert table["seeds"].to_list() == [1, 1]
    assert table.drop("task", "variant", "scheme", "k_train", "k", "seeds").null_count().sum_horizontal().item() == 0

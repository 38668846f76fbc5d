"""Evaluation: Wilson intervals and the per-cell accuracy table."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
import torch

from pipeline_src import datasets
from pipeline_src.accuracy_schema import AccuracySchema
from pipeline_src.checkpoints import load_model
from pipeline_src.evaluate import evaluate
from pipeline_src.stats import wilson_interval
from pipeline_src.train import train
from tests.conftest import tiny_train_spec


def test_wilson_interval_known_values():
    # Reference values of the Wilson score interval (z = 1.96): 8/10 -> (0.4902, 0.9433).
    low, high = wilson_interval([8, 0, 10], [10, 10, 10])
    assert low[0] == pytest.approx(0.4902, abs=1e-4) and high[0] == pytest.approx(0.9433, abs=1e-4)
    assert low[1] == 0.0 and high[1] == pytest.approx(0.2775, abs=1e-4)
    assert high[2] == pytest.approx(1.0) and low[2] == pytest.approx(0.7225, abs=1e-4)
    with pytest.raises(ValueError):
        wilson_interval([3], [0])


def test_evaluate_counts_match_a_direct_forward(tmp_path, train_data, eval_data):
    train(tiny_train_spec(), train_data, tmp_path / "m", progress=lambda _: None)
    out = tmp_path / "acc.parquet"
    result = evaluate({"batch_size": 4, "seed": 2}, tmp_path / "m", eval_data, out, progress=lambda _: None)
    stored = datasets.read(out, AccuracySchema)
    assert stored.equals(result)
    assert sorted(zip(stored["k"], stored["length"])) == [(1, 20), (1, 60), (2, 20), (2, 60)]
    model, _ = load_model(tmp_path / "m")
    frame = pl.read_parquet(eval_data)
    for row in stored.iter_rows(named=True):
        cell = frame.filter((pl.col("k") == row["k"]) & (pl.col("length") == row["length"]))
        correct = 0
        for prompt, pos, response in cell.select("prompt", "prompt_pos", "response").iter_rows():
            with torch.no_grad():
                logits = model(torch.tensor([prompt]), torch.tensor([pos])).token_logits
            correct += int(logits[0, -1].argmax()) == response[0]
        assert row["correct"] == correct and row["n"] == len(cell)
        assert row["ci_low"] <= row["accuracy"] <= row["ci_high"]
    assert np.all(stored["scheme"].to_numpy() == "rope_pose")

"""The fit gate per k: a model of K_train is named for each k <= K_train below 0.9 at the longest
evaluated training length, in Figure 1's captions and in lengthgen status (tests/test_status.py)."""

from __future__ import annotations

import polars as pl

from pipeline_src.findings.fit_gate import FITS, caption_note, not_learned


def cells(accuracy: dict[tuple[int, int], float | None], **run) -> pl.DataFrame:
    rows = [{"k": k, "length": length, "accuracy": value, **run} for (k, length), value in accuracy.items()]
    return pl.DataFrame(rows, schema_overrides={"accuracy": pl.Float64})


def test_each_k_up_to_k_train_below_the_gate_is_named_at_the_longest_training_length():
    table = cells({(1, 20): 1.0, (1, 50): 0.99, (4, 20): 0.95, (4, 50): 0.62, (6, 50): 0.51, (8, 50): 0.5,
                   (4, 100): 0.1})
    gate = not_learned(table, k_train=6, train_length=50)
    assert gate.length == 50 and gate.missed == ((4, 0.62), (6, 0.51)), "k = 8 > K_train is not judged"
    assert gate.describe() == f"below {FITS:g} at length 50 for k = 4 (0.62), 6 (0.51)"
    assert not_learned(table, k_train=1, train_length=50) is None
    assert not_learned(table, k_train=6, train_length=10) is None, "no evaluated training length: nothing to say"


def test_a_diverged_models_null_rows_and_lengths_beyond_training_are_not_read():
    table = cells({(1, 20): 0.97, (1, 50): None, (1, 100): 0.2})
    assert not_learned(table, k_train=1, train_length=50) is None, "judged at 2l = 20, the longest with a number"


def test_the_caption_names_every_model_that_missed_a_k_and_only_those():
    frame = pl.concat([
        cells({(1, 50): 0.99, (2, 50): 0.97}, scheme="rope_pose", k_train=2, seed=0),
        cells({(1, 50): 0.99, (2, 50): 0.55}, scheme="rope_pose", k_train=2, seed=1),
        cells({(1, 50): 0.5, (2, 50): 0.5, (4, 50): 0.5}, scheme="rope_pose", k_train=4, seed=0),
    ])
    note = caption_note(frame, 50)
    assert note == ("**Not learned at the training length** (the findings' fit gate, accuracy 0.9): rope_pose "
                    "K_train 2 seed 1: below 0.9 at length 50 for k = 2 (0.55); rope_pose K_train 4 seed 0: below "
                    "0.9 at length 50 for k = 1 (0.50), 2 (0.50), 4 (0.50).")
    assert caption_note(frame.filter(pl.col("seed") == 0, pl.col("k_train") == 2), 50) == ""
    assert caption_note(frame.drop("k_train"), 50) == "", "a table without K_train: no gate per k"

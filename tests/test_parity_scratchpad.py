"""parity_scratchpad generator (Figure 2) and its own Parquet schema checks.

Expected values are recomputed independently of the generator: prompts are decoded to strings and
the running parity and coupled IDs are rebuilt with plain Python loops.
"""

from __future__ import annotations

import functools
from collections import Counter

import polars as pl
import pytest

from pipeline_src.tasks import get_task

from .helpers import TASK_PARAMS, assert_write_rejects, frame_fixtures, small_frame
from .helpers import generate as generate_task

NAME = "parity_scratchpad"
TASK = get_task(NAME)
VOCAB = TASK.vocab

TRAIN = {**TASK_PARAMS[NAME]["train"], "n_samples": 2000}
EVAL = TASK_PARAMS[NAME]["eval"]

generate = functools.partial(generate_task, NAME)
train_frame, eval_frame = frame_fixtures(NAME, TRAIN)


def parse(prompt_ids) -> list[int]:
    """Decode a prompt ``<bos> b_1 ... b_n =`` into its bits, checking the layout."""
    tokens = VOCAB.decode(prompt_ids)
    assert tokens[0] == "<bos>" and tokens[-1] == "=", tokens
    assert all(t in ("0", "1") for t in tokens[1:-1]), tokens
    return [int(t) for t in tokens[1:-1]]


def running_parity(bits: list[int]) -> list[int]:
    out, acc = [], 0
    for bit in bits:
        acc ^= bit
        out.append(acc)
    return out


# --- labels, layout and coupled IDs -------------------------------------------------------------

@pytest.mark.parametrize("which", ["train", "eval"])
def test_labels_and_layout_match_an_independent_decoding(which, train_frame, eval_frame):
    frame = {"train": train_frame, "eval": eval_frame}[which]
    assert frame.height > 0
    for row in frame.iter_rows(named=True):
        bits = parse(row["prompt"])
        n = len(bits)
        assert row["length"] == n
        expected = running_parity(bits)
        assert VOCAB.decode(row["response"]) == [str(s) for s in expected] + ["<eos>"]
        assert row["answer"] == expected[-1]


@pytest.mark.parametrize("which", ["train", "eval"])
def test_coupled_ids_follow_the_rule(which, train_frame, eval_frame):
    """<bos> -> 0, b_i -> r+i, `=` -> r, s_i -> r+i, <eos> -> r+n+1 with r = 1."""
    frame = {"train": train_frame, "eval": eval_frame}[which]
    r = 1
    for row in frame.iter_rows(named=True):
        n = row["length"]
        assert row["prompt_pos"] == [0] + [r + i for i in range(1, n + 1)] + [r]
        assert row["response_pos"] == [r + i for i in range(1, n + 1)] + [r + n + 1]


def test_each_scratchpad_step_reads_the_bit_with_its_own_id(eval_frame):
    """Locality: s_i shares its ID with b_i, and s_i = s_{i-1} XOR (the prompt bit with s_i's ID);
    the token that predicts s_i (`=` or s_{i-1}) sits exactly one ID before it."""
    for row in eval_frame.iter_rows(named=True):
        prompt, ppos = VOCAB.decode(row["prompt"]), row["prompt_pos"]
        response, rpos = VOCAB.decode(row["response"]), row["response_pos"]
        bit_at = {p: t for t, p in zip(prompt, ppos, strict=False) if t in ("0", "1")}
        previous, previous_id = 0, ppos[-1]  # `=` predicts s_1
        for token, pid in zip(response[:-1], rpos[:-1], strict=False):
            assert pid in bit_at
            assert int(token) == previous ^ int(bit_at[pid])
            assert pid == previous_id + 1
            previous, previous_id = int(token), pid


def test_both_answers_occur_and_are_balanced(train_frame):
    assert abs(train_frame["answer"].mean() - 0.5) < 0.05


def test_sequence_tokens_and_max_position(eval_frame):
    for row in eval_frame.iter_rows(named=True):
        assert TASK.sequence_tokens(row["length"]) == len(row["prompt"]) + len(row["response"])
        assert TASK.max_position_id(row["length"]) == max(row["prompt_pos"] + row["response_pos"])
    assert TASK.answer_index == -2 and TASK.cell_columns == ("length",)


def test_without_scratchpad_the_response_is_the_last_step():
    """Same prompts and answers as with the scratchpad (same draws); response ``s_n <eos>`` with the
    IDs r+n and r+n+1."""
    params = {**EVAL, "scratchpad": False}
    direct, full = generate("eval", params, 4), generate("eval", EVAL, 4)
    assert direct["prompt"].equals(full["prompt"]) and direct["answer"].equals(full["answer"])
    for row in direct.iter_rows(named=True):
        n = row["length"]
        assert VOCAB.decode(row["response"]) == [str(running_parity(parse(row["prompt"]))[-1]), "<eos>"]
        assert row["response_pos"] == [1 + n, 1 + n + 1]
        assert TASK.sequence_tokens(n, params) == len(row["prompt"]) + 2


# --- training law and evaluation grid -----------------------------------------------------------

def test_training_law_is_uniform(train_frame):
    counts = Counter(train_frame["length"].to_list())
    support = range(TRAIN["n_min"], TRAIN["n_max"] + 1)
    assert set(counts) == set(support)
    for value in support:
        assert abs(counts[value] / TRAIN["n_samples"] - 1 / len(support)) < 0.025


def test_eval_grid_cells():
    """One cell per length, in order (the frame's cells are checked by the contract)."""
    assert TASK.eval_cells(EVAL) == [(n,) for n in EVAL["lengths"]]


@pytest.mark.parametrize("params", [{"n_min": 0, "n_max": 5, "scratchpad": True, "n_samples": 5},
                                    {"n_min": 6, "n_max": 5, "scratchpad": True, "n_samples": 5},
                                    {"n_min": 1, "n_max": 5, "scratchpad": "yes", "n_samples": 5}])
def test_bad_train_params_raise(params):
    with pytest.raises(ValueError):
        generate("train", params, 0)


@pytest.mark.parametrize("lengths", [[0], [3, 3], []])
def test_bad_eval_lengths_raise(lengths):
    with pytest.raises(ValueError):
        generate("eval", {"lengths": lengths, "scratchpad": True, "n_per_cell": 3}, 0)


# --- schema checks specific to this task (the shared ones are in test_task_contract.py) ---------

BAD_FRAMES = {
    "length_off": lambda f: f.with_columns(length=pl.col("length") + 1),
    "answer_flipped": lambda f: f.with_columns(answer=1 - pl.col("answer")),
    "answer_two": lambda f: f.with_columns(answer=pl.lit(2, dtype=pl.Int32)),
    "no_eos": lambda f: f.with_columns(response=pl.col("response").list.head(pl.col("length"))),
}


@pytest.mark.parametrize("kind", sorted(BAD_FRAMES))
def test_write_validates_before_writing(tmp_path, kind):
    assert_write_rejects(NAME, BAD_FRAMES[kind](small_frame(NAME)), tmp_path)

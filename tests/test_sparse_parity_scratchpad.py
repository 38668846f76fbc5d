"""sparse_parity_scratchpad generator (ours, beyond the paper) and its own Parquet schema checks.

Expected values are recomputed independently of the generator: prompts are decoded to strings (by
sparse parity's test parser) and the running parity over the marked bits and its coupled IDs are
rebuilt with plain Python loops.
"""

from __future__ import annotations

import functools
from collections import Counter

import polars as pl
import pytest

from pipeline_src.tasks import get_task

from .helpers import (
    TASK_PARAMS,
    assert_write_rejects,
    frame_fixtures,
    parse,  # the prompt is sparse parity's
    small_frame,
)
from .helpers import generate as generate_task

NAME = "sparse_parity_scratchpad"
TASK = get_task(NAME)
VOCAB = TASK.vocab

TRAIN = {**TASK_PARAMS[NAME]["train"], "n_samples": 2000}
EVAL = TASK_PARAMS[NAME]["eval"]

generate = functools.partial(generate_task, NAME)
train_frame, eval_frame = frame_fixtures(NAME, TRAIN)


def scratchpad(markers, bits) -> list[tuple[int, int]]:
    """[(s_j, 1-based index of the j-th marked bit)] in order."""
    out, acc = [], 0
    for i, (marker, bit) in enumerate(zip(markers, bits, strict=False), start=1):
        if marker == "*":
            acc ^= int(bit)
            out.append((acc, i))
    return out


# --- same prompts as sparse parity --------------------------------------------------------------

@pytest.mark.parametrize("split,params", [("train", {**TRAIN, "n_samples": 200}), ("eval", EVAL)])
def test_prompts_are_those_of_sparse_parity(split, params):
    """Same seed and params: the same prompts, k, l and answers as the sparse_parity task."""
    plain = get_task("sparse_parity")
    other = {"train": plain.generate_train, "eval": plain.generate_eval}[split](params, 3)
    ours = generate(split, params, 3)
    columns = ["k", "l", "length", "prompt", "prompt_pos", "answer"]
    assert ours.select(columns).equals(other.select(columns))
    assert VOCAB == plain.vocab


# --- labels, layout and coupled IDs -------------------------------------------------------------

@pytest.mark.parametrize("which", ["train", "eval"])
def test_labels_and_layout_match_an_independent_decoding(which, train_frame, eval_frame):
    frame = {"train": train_frame, "eval": eval_frame}[which]
    assert frame.height > 0
    for row in frame.iter_rows(named=True):
        markers, bits = parse(row["prompt"])
        n_bits = len(markers)
        assert row["l"] == n_bits and row["length"] == 2 * n_bits
        assert markers.count("*") == row["k"]
        steps = scratchpad(markers, bits)
        assert VOCAB.decode(row["response"]) == [str(s) for s, _ in steps] + ["<eos>"]
        assert row["answer"] == steps[-1][0]


@pytest.mark.parametrize("which", ["train", "eval"])
def test_coupled_ids_follow_the_rule(which, train_frame, eval_frame):
    """Prompt 0..2l+1; s_j -> ID of the j-th marked bit (2 i_j); <eos> -> 2l+2."""
    frame = {"train": train_frame, "eval": eval_frame}[which]
    for row in frame.iter_rows(named=True):
        markers, bits = parse(row["prompt"])
        n_bits = len(markers)
        assert row["prompt_pos"] == list(range(2 * n_bits + 2))
        assert row["response_pos"] == [2 * i for _, i in scratchpad(markers, bits)] + [2 * n_bits + 2]


def test_each_step_reads_the_marked_bit_with_its_own_id(eval_frame):
    """Locality: s_j's ID is that of a bit token whose marker is `*`, the j-th one, and
    s_j = s_{j-1} XOR that bit; IDs increase along the response."""
    for row in eval_frame.iter_rows(named=True):
        prompt = VOCAB.decode(row["prompt"])
        token_at = dict(zip(row["prompt_pos"], prompt, strict=False))
        index_at = dict(zip(row["prompt_pos"], range(len(prompt)), strict=False))
        response = VOCAB.decode(row["response"])[:-1]
        ids = row["response_pos"][:-1]
        marked_bit_ids = [row["prompt_pos"][i + 1] for i, t in enumerate(prompt) if t == "*"]
        assert ids == marked_bit_ids
        previous = 0
        for token, pid in zip(response, ids, strict=False):
            assert token_at[pid] in ("0", "1")
            assert prompt[index_at[pid] - 1] == "*"
            assert int(token) == previous ^ int(token_at[pid])
            previous = int(token)
        assert ids == sorted(ids)


def test_sequence_tokens_and_max_position(eval_frame):
    for row in eval_frame.iter_rows(named=True):
        used = len(row["prompt"]) + len(row["response"])
        assert used <= TASK.sequence_tokens(row["length"], EVAL) <= TASK.sequence_tokens(row["length"])
        assert TASK.max_position_id(row["length"]) == max(row["prompt_pos"] + row["response_pos"])
    # exact when the largest k fits
    assert TASK.sequence_tokens(40, EVAL) == 42 + 6 + 1
    assert TASK.sequence_tokens(4, EVAL) == 6 + 2 + 1
    assert TASK.sequence_tokens(30, {**TRAIN}) == 32 + 6 + 1
    assert TASK.cell_columns == ("k", "length") and TASK.answer_index == -2


def test_training_law_matches_sparse_parity(train_frame):
    k = Counter(train_frame["k"].to_list())
    assert set(k) == set(range(1, TRAIN["k_train"] + 1))
    for ki, li in train_frame.select("k", "l").iter_rows():
        assert max(ki, TRAIN["l_min"]) <= li <= TRAIN["l_max"]


def test_eval_grid_cells():
    """The cells of sparse parity: k <= l = length/2 (the frame's cells are checked by the contract)."""
    expected = {(k, n) for k in EVAL["k_test"] for n in EVAL["lengths"] if 2 * k <= n}
    assert set(TASK.eval_cells(EVAL)) == expected


@pytest.mark.parametrize("split,params", [
    ("eval", {**EVAL, "lengths": [11]}),
    ("eval", {**EVAL, "k_test": [9], "lengths": [10]}),
    ("train", {**TRAIN, "k_train": 13}),
])
def test_bad_params_raise(split, params):
    with pytest.raises(ValueError):
        generate(split, params, 0)


# --- schema checks specific to this task (the shared ones are in test_task_contract.py) ---------

BAD_FRAMES = {
    "k_gt_l": lambda f: f.with_columns(k=pl.col("l") + 1),
    "k_off": lambda f: f.with_columns(k=pl.col("k") + 1),
    "length_not_2l": lambda f: f.with_columns(length=pl.col("length") + 2),
    "answer_flipped": lambda f: f.with_columns(answer=1 - pl.col("answer")),
    "no_eos": lambda f: f.with_columns(response=pl.col("response").list.head(pl.col("k")),
                                       response_pos=pl.col("response_pos").list.head(pl.col("k"))),
}


@pytest.mark.parametrize("kind", sorted(BAD_FRAMES))
def test_write_validates_before_writing(tmp_path, kind):
    assert_write_rejects(NAME, BAD_FRAMES[kind](small_frame(NAME)), tmp_path)

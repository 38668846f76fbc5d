"""sparse_parity generator (Figure 1) and its Parquet schema checks (pipeline_src.datasets).

Expected values are recomputed independently of the generator: prompts are decoded to strings and
parsed with plain Python loops.
"""

from __future__ import annotations

import functools
import itertools
from collections import Counter

import polars as pl
import pytest

from pipeline_src import datasets
from pipeline_src.tasks import get_task

from .helpers import TASK_PARAMS, assert_write_rejects, frame_fixtures, parse, small_frame
from .helpers import generate as generate_task

NAME = "sparse_parity"
TASK = get_task(NAME)
VOCAB = TASK.vocab

TRAIN = {**TASK_PARAMS[NAME]["train"], "n_samples": 3000}
EVAL = TASK_PARAMS[NAME]["eval"]

generate = functools.partial(generate_task, NAME)
train_frame, eval_frame = frame_fixtures(NAME, TRAIN)


def parity(markers: list[str], bits: list[str]) -> int:
    acc = 0
    for marker, bit in zip(markers, bits, strict=False):
        if marker == "*":
            acc ^= 1 if bit == "1" else 0
    return acc


# --- labels and layout --------------------------------------------------------------------------

@pytest.mark.parametrize("which", ["train", "eval"])
def test_labels_and_layout_match_an_independent_decoding(which, train_frame, eval_frame):
    frame = {"train": train_frame, "eval": eval_frame}[which]
    assert frame.height > 0
    for row in frame.iter_rows(named=True):
        markers, bits = parse(row["prompt"])
        n_bits = len(markers)
        assert row["l"] == n_bits
        assert row["length"] == 2 * n_bits
        assert len(row["prompt"]) == 2 * n_bits + 2
        assert markers.count("*") == row["k"]
        expected = parity(markers, bits)
        assert VOCAB.decode(row["response"]) == [str(expected)]
        assert row["answer"] == expected
        assert row["prompt_pos"] == list(range(len(row["prompt"])))
        assert row["response_pos"] == [len(row["prompt"])]


def test_both_answers_occur_for_each_k(eval_frame):
    seen = {(k, a) for k, a in eval_frame.select("k", "answer").iter_rows()}
    for k in EVAL["k_test"]:
        assert (k, 0) in seen and (k, 1) in seen


def test_sequence_tokens_counts_prompt_and_response(train_frame):
    row = train_frame.row(0, named=True)
    assert TASK.sequence_tokens(row["length"]) == len(row["prompt"]) + len(row["response"])


# --- training law -------------------------------------------------------------------------------

def test_training_law_ranges(train_frame):
    k = train_frame["k"].to_list()
    n_bits = train_frame["l"].to_list()
    assert train_frame.height == TRAIN["n_samples"]
    for ki, li in zip(k, n_bits, strict=False):
        assert 1 <= ki <= TRAIN["k_train"]
        assert max(ki, TRAIN["l_min"]) <= li <= TRAIN["l_max"]
    counts = Counter(k)
    assert set(counts) == set(range(1, TRAIN["k_train"] + 1))
    n = TRAIN["n_samples"]
    for value in counts.values():  # k ~ Unif{1..K_train}
        assert abs(value / n - 1 / TRAIN["k_train"]) < 0.04
    # for each k, both ends of l's range occur, including l = k when k > l_min
    for kv in range(1, TRAIN["k_train"] + 1):
        ls = {li for ki, li in zip(k, n_bits, strict=False) if ki == kv}
        assert max(kv, TRAIN["l_min"]) in ls
        assert TRAIN["l_max"] in ls


def test_l_is_uniform_given_k(train_frame):
    for kv in (1, 6):
        ls = [li for ki, li in train_frame.select("k", "l").iter_rows() if ki == kv]
        low = max(kv, TRAIN["l_min"])
        support = range(low, TRAIN["l_max"] + 1)
        counts = Counter(ls)
        assert set(counts) == set(support)
        for value in support:
            assert abs(counts[value] / len(ls) - 1 / len(support)) < 0.06


def test_answers_and_bits_are_balanced(train_frame):
    assert abs(train_frame["answer"].mean() - 0.5) < 0.05
    ones = total = 0
    for prompt in train_frame["prompt"].to_list()[:500]:
        _, bits = parse(prompt)
        ones += bits.count("1")
        total += len(bits)
    assert abs(ones / total - 0.5) < 0.03


def test_marked_slots_have_frequency_k_over_l(train_frame):
    l_max = TRAIN["l_max"]
    marked = [0] * l_max
    expected = [0.0] * l_max
    variance = [0.0] * l_max
    for prompt, k, n_bits in train_frame.select("prompt", "k", "l").iter_rows():
        markers, _ = parse(prompt)
        for i in range(n_bits):
            marked[i] += markers[i] == "*"
            expected[i] += k / n_bits
            variance[i] += (k / n_bits) * (1 - k / n_bits)
    for i in range(l_max):  # a sum of independent Bernoulli(k/l): within 4.5 standard deviations
        assert expected[i] > 50
        assert abs(marked[i] - expected[i]) < 4.5 * variance[i] ** 0.5, (i, marked[i], expected[i])
    # the last slot is marked only when l reaches it: never beyond l
    assert sum(marked) == train_frame["k"].sum()


def test_marked_set_is_a_uniform_k_subset():
    params = {"k_test": [2], "lengths": [10], "n_per_cell": 4000}  # k = 2 of l = 5: 10 subsets
    frame = generate("eval", params, 7)
    subsets = Counter()
    for prompt in frame["prompt"].to_list():
        markers, _ = parse(prompt)
        subsets[tuple(i for i, m in enumerate(markers) if m == "*")] += 1
    assert set(subsets) == set(itertools.combinations(range(5), 2))
    for count in subsets.values():
        assert abs(count / 4000 - 0.1) < 0.025


# --- evaluation grid ----------------------------------------------------------------------------

def test_eval_grid_cells(eval_frame):
    """The cells are the (k, length) with k <= l = length/2, recomputed here; that the frame holds
    each of them ``n_per_cell`` times is part of the task contract (same params and seed)."""
    expected_cells = set()
    for k in EVAL["k_test"]:
        for length in EVAL["lengths"]:
            if 2 * k <= length:
                expected_cells.add((k, length))
    assert (3, 4) not in expected_cells and (6, 10) not in expected_cells
    assert set(TASK.eval_cells(EVAL)) == expected_cells
    # every sample of a cell has exactly that k and l = length / 2
    for k, n_bits, length in eval_frame.select("k", "l", "length").iter_rows():
        assert 2 * n_bits == length and k <= n_bits


def cell(frame: pl.DataFrame, k: int, length: int) -> pl.DataFrame:
    return frame.filter((pl.col("k") == k) & (pl.col("length") == length))


def test_cells_differ_from_each_other(eval_frame):
    a = cell(eval_frame, 1, 20)["prompt"].to_list()
    b = cell(eval_frame, 3, 20)["prompt"].to_list()
    assert a != b


def test_eval_seed_changes_cells():
    a = generate("eval", EVAL, 5)
    b = generate("eval", EVAL, 6)
    assert cell(a, 3, 20)["prompt"].to_list() != cell(b, 3, 20)["prompt"].to_list()


@pytest.mark.parametrize("lengths", [[21], [10, 15]])
def test_odd_eval_length_raises(lengths):
    with pytest.raises(ValueError):
        generate("eval", {**EVAL, "lengths": lengths}, 5)


# --- schema errors specific to sparse parity (the shared ones are in test_task_contract.py) -----

def test_read_catches_k_greater_than_l(tmp_path):
    bad = small_frame(NAME).with_columns(
        pl.when(pl.int_range(pl.len()) == 3).then(pl.col("l") + 1).otherwise(pl.col("k")).alias("k"))
    assert (bad["k"] > bad["l"]).sum() == 1
    path = tmp_path / "k_gt_l.parquet"
    bad.write_parquet(path)
    with pytest.raises(datasets.DataError) as info:
        datasets.read(path, TASK.schema)
    assert str(path) in str(info.value)


BAD_FRAMES = {
    "k_gt_l": lambda f: f.with_columns(k=pl.col("l") + 1),
    "k_zero": lambda f: f.with_columns(k=pl.lit(0, dtype=pl.Int32)),
    "length_not_2l": lambda f: f.with_columns(length=pl.col("length") + 2),
    "answer_two": lambda f: f.with_columns(answer=pl.lit(2, dtype=pl.Int32)),
    "short_prompt": lambda f: f.with_columns(prompt=pl.col("prompt").list.head(pl.col("prompt").list.len() - 1)),
    "two_responses": lambda f: f.with_columns(response=pl.concat_list("response", "response")),
}


@pytest.mark.parametrize("kind", sorted(BAD_FRAMES))
def test_write_validates_before_writing(tmp_path, kind):
    assert_write_rejects(NAME, BAD_FRAMES[kind](small_frame(NAME)), tmp_path)

"""Addition (Cho et al. 2024): sums against Python's integers, coupled IDs by significance, the law,
the schema's own checks. The contract every task meets is in test_task_contract.py."""

from __future__ import annotations

import polars as pl
import pytest

from pipeline_src.tasks import addition, get_task

TASK = get_task("addition")


def decoded(row: dict) -> tuple[int, int, list[str], list[int], list[int]]:
    """(a, b, the response's digit strings, prompt IDs, response IDs) of one frame row, parsed
    without the module's helpers."""
    tokens = TASK.vocab.decode(row["prompt"])
    assert tokens[0] == "<bos>" and tokens[-1] == "="
    a, b = "".join(tokens[1:-1]).split("+")
    return int(a), int(b), TASK.vocab.decode(row["response"]), row["prompt_pos"], row["response_pos"]


@pytest.fixture(scope="module")
def frame() -> pl.DataFrame:
    return TASK.generate_train({"n_min": 1, "n_max": 25, "n_samples": 400}, seed=3)


def test_response_is_the_sum_least_significant_digit_first(frame):
    for row in frame.iter_rows(named=True):
        a, b, response, _, _ = decoded(row)
        n = row["length"]
        assert len(str(a).zfill(n)) == n and response[-1] == "<eos>"
        digits = response[:-1]
        assert len(digits) == n + 1
        assert int("".join(reversed(digits))) == a + b
        assert row["answer"] == (a + b) // 10 ** n  # the carry out of the top digit


def test_operands_are_zero_padded_to_n_digits(frame):
    for row in frame.iter_rows(named=True):
        tokens = TASK.vocab.decode(row["prompt"])
        assert tokens.index("+") == row["length"] + 1 and len(tokens) == 2 * row["length"] + 3


def test_coupled_ids_give_digits_of_equal_significance_one_id(frame):
    r = addition.OFFSET
    for row in frame.iter_rows(named=True):
        n = row["length"]
        _, _, _, prompt_pos, response_pos = decoded(row)
        significance = list(range(n, 0, -1))  # a_n .. a_1
        assert prompt_pos == [0, *(r + i for i in significance), r, *(r + i for i in significance), r]
        assert response_pos == [r + i for i in range(1, n + 2)] + [r + n + 2]
        assert max(response_pos) == TASK.max_position_id(n)
        assert len(row["prompt"]) + len(row["response"]) == TASK.sequence_tokens(n)


def test_training_law_covers_every_length_and_digit(frame):
    assert set(frame["length"]) == set(range(1, 26))
    digits = {d for row in frame["prompt"] for d in TASK.vocab.decode(row) if d.isdigit()}
    assert digits == {str(d) for d in range(10)}
    carries = frame["answer"].value_counts()
    assert set(carries["answer"]) == {0, 1}


def test_schema_rejects_a_wrong_carry(frame):
    bad = frame.with_columns(answer=1 - pl.col("answer"))
    with pytest.raises(Exception, match="answer_is_the_carry_out"):
        TASK.schema.validate(bad)


def test_lengths_below_one_are_errors():
    with pytest.raises(ValueError, match="n >= 1"):
        addition.sample(__import__("numpy").random.default_rng(0), [0, 2])
    with pytest.raises(ValueError, match="addition eval lengths must be >= 1"):
        TASK.generate_eval({"lengths": [0], "n_per_cell": 2}, 0)


PADDED = {"n_min": 1, "n_max": 25, "n_samples": 400, "pad_operands": True}


def test_padded_operands_give_the_same_sums_with_one_more_leading_zero(frame):
    padded = TASK.generate_train(PADDED, seed=3)
    TASK.schema.validate(padded)
    assert padded["response"].to_list() == frame["response"].to_list()
    assert padded["response_pos"].to_list() == frame["response_pos"].to_list()
    for plain, row in zip(frame.iter_rows(named=True), padded.iter_rows(named=True), strict=False):
        a, b, _, _, _ = decoded(plain)
        tokens = TASK.vocab.decode(row["prompt"])
        n = row["length"]
        assert len(tokens) == 2 * n + 5 and len(tokens) + len(row["response"]) == TASK.sequence_tokens(n, PADDED)
        left, right = "".join(tokens[1:-1]).split("+")
        assert left == "0" + str(a).zfill(n) and right == "0" + str(b).zfill(n)


def test_padded_operands_give_every_response_token_a_partner_of_its_own_id():
    """c_i -> r+i shared with a_i and b_i (the carry out with the two leading zeros); <eos> with +."""
    padded = TASK.generate_eval({"lengths": [1, 7, 30], "n_per_cell": 5, "pad_operands": True}, seed=0)
    for row in padded.iter_rows(named=True):
        tokens = TASK.vocab.decode(row["prompt"])
        partners = {}
        for token, position in zip(tokens, row["prompt_pos"], strict=False):
            partners.setdefault(position, []).append(token)
        n, r = row["length"], addition.OFFSET
        for i, position in enumerate(row["response_pos"][:-1], start=1):
            assert position == r + i and sorted(partners[position]) == sorted(
                [tokens[n + 2 - i], tokens[2 * n + 4 - i]]) and all(t.isdigit() for t in partners[position])
        assert partners[row["response_pos"][-1]] == ["+"] and partners[r] == ["="]
        assert tokens[1] == tokens[n + 3] == "0" and max(row["response_pos"]) == TASK.max_position_id(n)

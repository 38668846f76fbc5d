"""parity_scratchpad generator (SPEC 2.2) and its Parquet schema checks.

Expected values are recomputed independently of the generator: prompts are decoded to strings and
the running parity and coupled IDs are rebuilt with plain Python loops.
"""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from pipeline_src import datasets
from pipeline_src.provenance import build_record
from pipeline_src.tasks import get_task

TASK = get_task("parity_scratchpad")
VOCAB = TASK.vocab

TRAIN = {"n_min": 1, "n_max": 20, "n_samples": 2000}
EVAL = {"lengths": [1, 5, 20, 60], "n_per_cell": 30}


def record(split: str, params: dict, seed: int) -> dict:
    spec = {"task": "parity_scratchpad", "split": split, "seed": seed, "params": params}
    return build_record("test", "data", spec, seeds={"seed": seed})


def generate(split: str, params: dict, seed: int) -> pl.DataFrame:
    return {"train": TASK.generate_train, "eval": TASK.generate_eval}[split](params, seed)


def write(frame: pl.DataFrame, path: Path, rec: dict) -> Path:
    datasets.write(frame, path, TASK.schema, rec)
    return path


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


def parquet_bytes(frame: pl.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.write_parquet(buffer, statistics=False)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def train_frame() -> pl.DataFrame:
    return generate("train", TRAIN, 11)


@pytest.fixture(scope="module")
def eval_frame() -> pl.DataFrame:
    return generate("eval", EVAL, 5)


# --- determinism -------------------------------------------------------------------------------

@pytest.mark.parametrize("split,params", [("train", {**TRAIN, "n_samples": 200}), ("eval", EVAL)])
def test_same_seed_gives_byte_identical_parquet(tmp_path, split, params):
    rec = record(split, params, 3)
    a = write(generate(split, params, 3), tmp_path / "a.parquet", rec)
    b = write(generate(split, params, 3), tmp_path / "b.parquet", rec)
    assert a.read_bytes() == b.read_bytes()
    assert datasets.read(a, TASK.schema).equals(generate(split, params, 3))


@pytest.mark.parametrize("split,params", [("train", {**TRAIN, "n_samples": 200}), ("eval", EVAL)])
def test_different_seeds_give_different_data(tmp_path, split, params):
    rec = record(split, params, 3)  # same record: only the data may differ
    a = write(generate(split, params, 3), tmp_path / "a.parquet", rec)
    b = write(generate(split, params, 4), tmp_path / "b.parquet", rec)
    assert a.read_bytes() != b.read_bytes()
    prompts_a = generate(split, params, 3).filter(pl.col("length") > 4)["prompt"].to_list()
    prompts_b = generate(split, params, 4).filter(pl.col("length") > 4)["prompt"].to_list()
    assert sum(p != q for p, q in zip(prompts_a, prompts_b)) > len(prompts_a) // 2


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
        bit_at = {p: t for t, p in zip(prompt, ppos) if t in ("0", "1")}
        previous, previous_id = 0, ppos[-1]  # `=` predicts s_1
        for token, pid in zip(response[:-1], rpos[:-1]):
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


# --- training law and evaluation grid ----------------------------------------------------------

def test_training_law_is_uniform(train_frame):
    counts = Counter(train_frame["length"].to_list())
    support = range(TRAIN["n_min"], TRAIN["n_max"] + 1)
    assert set(counts) == set(support)
    for value in support:
        assert abs(counts[value] / TRAIN["n_samples"] - 1 / len(support)) < 0.025


def test_eval_grid_cells_and_counts(eval_frame):
    counts = Counter(eval_frame["length"].to_list())
    assert counts == {n: EVAL["n_per_cell"] for n in EVAL["lengths"]}
    assert TASK.eval_cells(EVAL) == [(n,) for n in EVAL["lengths"]]


@pytest.mark.parametrize("new_lengths", [[60, 20, 5, 1], [5, 80]])
def test_changing_the_grid_leaves_other_cells_identical(eval_frame, new_lengths):
    other = generate("eval", {**EVAL, "lengths": new_lengths}, 5)
    for n in set(EVAL["lengths"]) & set(new_lengths):
        old = eval_frame.filter(pl.col("length") == n)
        assert parquet_bytes(old) == parquet_bytes(other.filter(pl.col("length") == n))


@pytest.mark.parametrize("params", [{"n_min": 0, "n_max": 5, "n_samples": 5},
                                    {"n_min": 6, "n_max": 5, "n_samples": 5}])
def test_bad_train_params_raise(params):
    with pytest.raises(ValueError):
        generate("train", params, 0)


@pytest.mark.parametrize("lengths", [[0], [3, 3], []])
def test_bad_eval_lengths_raise(lengths):
    with pytest.raises(ValueError):
        generate("eval", {"lengths": lengths, "n_per_cell": 3}, 0)


# --- schema -------------------------------------------------------------------------------------

@pytest.fixture
def small_frame() -> pl.DataFrame:
    return generate("train", {"n_min": 1, "n_max": 8, "n_samples": 30}, 2)


def test_valid_frame_round_trips(tmp_path, small_frame):
    path = write(small_frame, tmp_path / "ok.parquet", record("train", {}, 0))
    assert datasets.read(path, TASK.schema).equals(small_frame)


@pytest.mark.parametrize("change,column", [
    (lambda f: f.rename({"response": "responses"}), "responses"),
    (lambda f: f.drop("answer"), "answer"),
    (lambda f: f.with_columns(pl.col("length").cast(pl.Int64)), "length"),
])
def test_read_errors_name_file_and_column(tmp_path, small_frame, change, column):
    path = tmp_path / "bad.parquet"
    change(small_frame).write_parquet(path)
    with pytest.raises(datasets.DataError) as info:
        datasets.read(path, TASK.schema)
    assert str(path) in str(info.value)
    assert column in str(info.value)


BAD_FRAMES = {
    "length_off": lambda f: f.with_columns(length=pl.col("length") + 1),
    "answer_flipped": lambda f: f.with_columns(answer=1 - pl.col("answer")),
    "answer_two": lambda f: f.with_columns(answer=pl.lit(2, dtype=pl.Int32)),
    "no_eos": lambda f: f.with_columns(response=pl.col("response").list.head(pl.col("length"))),
    "short_prompt_pos": lambda f: f.with_columns(prompt_pos=pl.col("prompt_pos").list.head(2)),
    "token_out_of_vocab": lambda f: f.with_columns(prompt=pl.col("prompt").list.eval(pl.element() + 50)),
    "negative_id": lambda f: f.with_columns(response_pos=pl.col("response_pos").list.eval(pl.element() - 100)),
    "extra_column": lambda f: f.with_columns(extra=pl.lit(1, dtype=pl.Int32)),
}


@pytest.mark.parametrize("kind", sorted(BAD_FRAMES))
def test_write_validates_before_writing(tmp_path, small_frame, kind):
    bad = BAD_FRAMES[kind](small_frame)
    path = tmp_path / "out" / "bad.parquet"
    with pytest.raises(datasets.DataError) as info:
        datasets.write(bad, path, TASK.schema, record("train", {}, 0))
    assert str(path) in str(info.value)
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]

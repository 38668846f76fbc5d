"""sparse_parity generator (SPEC 2.1) and its Parquet schema checks (pipeline_src.datasets).

Expected values are recomputed independently of the generator: prompts are decoded to strings and
parsed with plain Python loops.
"""

from __future__ import annotations

import io
import itertools
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from pipeline_src import datasets
from pipeline_src.provenance import build_record
from pipeline_src.tasks import get_task

TASK = get_task("sparse_parity")
VOCAB = TASK.vocab

TRAIN = {"k_train": 6, "l_min": 4, "l_max": 12, "n_samples": 3000}
EVAL = {"k_test": [1, 3, 6], "lengths": [4, 10, 20], "n_per_cell": 40}


def record(split: str, params: dict, seed: int) -> dict:
    spec = {"task": "sparse_parity", "split": split, "seed": seed, "params": params}
    return build_record("test", "data", spec, seeds={"seed": seed})


def generate(split: str, params: dict, seed: int) -> pl.DataFrame:
    return {"train": TASK.generate_train, "eval": TASK.generate_eval}[split](params, seed)


def write(frame: pl.DataFrame, path: Path, rec: dict) -> Path:
    datasets.write(frame, path, TASK.schema, rec)
    return path


def parse(prompt_ids) -> tuple[list[str], list[str]]:
    """Decode a prompt and split it into (markers, bits), checking the layout on the way."""
    tokens = VOCAB.decode(prompt_ids)
    assert tokens[0] == "<bos>", tokens
    assert tokens[-1] == "=", tokens
    body = tokens[1:-1]
    assert len(body) % 2 == 0, tokens
    markers, bits = body[0::2], body[1::2]
    assert all(m in ("*", "-") for m in markers), tokens
    assert all(b in ("0", "1") for b in bits), tokens
    return markers, bits


def parity(markers: list[str], bits: list[str]) -> int:
    acc = 0
    for marker, bit in zip(markers, bits):
        if marker == "*":
            acc ^= 1 if bit == "1" else 0
    return acc


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
    # the written file reads back to the generated frame
    assert datasets.read(a, TASK.schema).equals(generate(split, params, 3))


@pytest.mark.parametrize("split,params", [("train", {**TRAIN, "n_samples": 200}), ("eval", EVAL)])
def test_different_seeds_give_different_data(tmp_path, split, params):
    rec = record(split, params, 3)  # same record: only the data may differ
    a = write(generate(split, params, 3), tmp_path / "a.parquet", rec)
    b = write(generate(split, params, 4), tmp_path / "b.parquet", rec)
    assert a.read_bytes() != b.read_bytes()
    prompts_a = generate(split, params, 3)["prompt"].to_list()
    prompts_b = generate(split, params, 4)["prompt"].to_list()
    assert prompts_a != prompts_b
    # not just a permutation or a single changed row: most prompts differ
    assert sum(p != q for p, q in zip(prompts_a, prompts_b)) > len(prompts_a) // 2


# --- labels and layout --------------------------------------------------------------------------

@pytest.mark.parametrize("which", ["train", "eval"])
def test_labels_and_layout_match_an_independent_decoding(which, train_frame, eval_frame):
    frame = {"train": train_frame, "eval": eval_frame}[which]
    assert frame.height > 0
    for row in frame.iter_rows(named=True):
        markers, bits = parse(row["prompt"])
        l = len(markers)
        assert row["l"] == l
        assert row["length"] == 2 * l
        assert len(row["prompt"]) == 2 * l + 2
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
    l = train_frame["l"].to_list()
    assert train_frame.height == TRAIN["n_samples"]
    for ki, li in zip(k, l):
        assert 1 <= ki <= TRAIN["k_train"]
        assert max(ki, TRAIN["l_min"]) <= li <= TRAIN["l_max"]
    counts = Counter(k)
    assert set(counts) == set(range(1, TRAIN["k_train"] + 1))
    n = TRAIN["n_samples"]
    for value in counts.values():  # k ~ Unif{1..K_train}
        assert abs(value / n - 1 / TRAIN["k_train"]) < 0.04
    # for each k, both ends of l's range occur, including l = k when k > l_min
    for kv in range(1, TRAIN["k_train"] + 1):
        ls = {li for ki, li in zip(k, l) if ki == kv}
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
    for prompt, k, l in train_frame.select("prompt", "k", "l").iter_rows():
        markers, _ = parse(prompt)
        for i in range(l):
            marked[i] += markers[i] == "*"
            expected[i] += k / l
            variance[i] += (k / l) * (1 - k / l)
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

def test_eval_grid_cells_and_counts(eval_frame):
    expected_cells = set()
    for k in EVAL["k_test"]:
        for length in EVAL["lengths"]:
            if 2 * k <= length:
                expected_cells.add((k, length))
    assert (3, 4) not in expected_cells and (6, 10) not in expected_cells
    counts = Counter(eval_frame.select("k", "length").iter_rows())
    assert set(counts) == expected_cells
    assert all(c == EVAL["n_per_cell"] for c in counts.values())
    assert set(TASK.eval_cells(EVAL)) == expected_cells
    assert eval_frame.height == EVAL["n_per_cell"] * len(expected_cells)
    # every sample of a cell has exactly that k and l = length / 2
    for k, l, length in eval_frame.select("k", "l", "length").iter_rows():
        assert 2 * l == length and k <= l


def cell(frame: pl.DataFrame, k: int, length: int) -> pl.DataFrame:
    return frame.filter((pl.col("k") == k) & (pl.col("length") == length))


@pytest.mark.parametrize("new_lengths", [[4, 10, 20, 30], [30, 20, 10, 4], [10, 20]])
def test_changing_the_grid_leaves_other_cells_identical(eval_frame, new_lengths):
    other = generate("eval", {**EVAL, "lengths": new_lengths}, 5)
    shared = set(TASK.eval_cells(EVAL)) & set(TASK.eval_cells({**EVAL, "lengths": new_lengths}))
    assert shared
    for k, length in shared:
        old, new = cell(eval_frame, k, length), cell(other, k, length)
        assert old.height == EVAL["n_per_cell"]
        assert parquet_bytes(old) == parquet_bytes(new)


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


# --- schema errors ------------------------------------------------------------------------------

@pytest.fixture
def small_frame() -> pl.DataFrame:
    return generate("train", {"k_train": 3, "l_min": 3, "l_max": 8, "n_samples": 30}, 2)


def raw_parquet(frame: pl.DataFrame, path: Path) -> Path:
    frame.write_parquet(path)
    return path


def test_read_renamed_column_names_file_and_column(tmp_path, small_frame):
    path = raw_parquet(small_frame.rename({"prompt": "prompts"}), tmp_path / "renamed.parquet")
    with pytest.raises(datasets.DataError) as info:
        datasets.read(path, TASK.schema)
    message = str(info.value)
    assert str(path) in message
    assert "prompts" in message


def test_read_missing_column_names_it(tmp_path, small_frame):
    path = raw_parquet(small_frame.drop("answer"), tmp_path / "dropped.parquet")
    with pytest.raises(datasets.DataError) as info:
        datasets.read(path, TASK.schema)
    assert str(path) in str(info.value)
    assert "answer" in str(info.value)


def test_read_wrong_dtype_names_column(tmp_path, small_frame):
    path = raw_parquet(small_frame.with_columns(pl.col("k").cast(pl.Int64)), tmp_path / "i64.parquet")
    with pytest.raises(datasets.DataError) as info:
        datasets.read(path, TASK.schema)
    message = str(info.value)
    assert str(path) in message
    assert "'k'" in message or '"k"' in message
    assert "Int64" in message


def test_read_catches_k_greater_than_l(tmp_path, small_frame):
    bad = small_frame.with_columns(
        pl.when(pl.int_range(pl.len()) == 3).then(pl.col("l") + 1).otherwise(pl.col("k")).alias("k"))
    assert (bad["k"] > bad["l"]).sum() == 1
    path = raw_parquet(bad, tmp_path / "k_gt_l.parquet")
    with pytest.raises(datasets.DataError) as info:
        datasets.read(path, TASK.schema)
    assert str(path) in str(info.value)


def test_read_missing_and_unreadable_files(tmp_path):
    with pytest.raises(datasets.DataError, match="no such"):
        datasets.read(tmp_path / "absent.parquet", TASK.schema)
    junk = tmp_path / "junk.parquet"
    junk.write_text("not parquet")
    with pytest.raises(datasets.DataError) as info:
        datasets.read(junk, TASK.schema)
    assert str(junk) in str(info.value)


BAD_FRAMES = {
    "k_gt_l": lambda f: f.with_columns(k=pl.col("l") + 1),
    "k_zero": lambda f: f.with_columns(k=pl.lit(0, dtype=pl.Int32)),
    "length_not_2l": lambda f: f.with_columns(length=pl.col("length") + 2),
    "answer_two": lambda f: f.with_columns(answer=pl.lit(2, dtype=pl.Int32)),
    "short_prompt": lambda f: f.with_columns(prompt=pl.col("prompt").list.head(pl.col("prompt").list.len() - 1)),
    "two_responses": lambda f: f.with_columns(response=pl.concat_list("response", "response")),
    "extra_column": lambda f: f.with_columns(extra=pl.lit(1, dtype=pl.Int32)),
    "wrong_dtype": lambda f: f.with_columns(pl.col("answer").cast(pl.Int64)),
}


@pytest.mark.parametrize("kind", sorted(BAD_FRAMES))
def test_write_validates_before_writing(tmp_path, small_frame, kind):
    bad = BAD_FRAMES[kind](small_frame)
    path = tmp_path / "out" / "bad.parquet"
    with pytest.raises(datasets.DataError) as info:
        datasets.write(bad, path, TASK.schema, record("train", {}, 0))
    assert str(path) in str(info.value)
    written = list(tmp_path.rglob("*")) if tmp_path.exists() else []
    assert [p for p in written if p.is_file()] == []


def test_valid_frame_round_trips(tmp_path, small_frame):
    path = write(small_frame, tmp_path / "ok.parquet", record("train", {}, 0))
    assert datasets.read(path, TASK.schema).equals(small_frame)

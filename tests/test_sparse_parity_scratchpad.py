"""sparse_parity_scratchpad generator (SPEC 2.2 variant) and its Parquet schema checks.

Expected values are recomputed independently of the generator: prompts are decoded to strings and
the running parity over the marked bits and its coupled IDs are rebuilt with plain Python loops.
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

TASK = get_task("sparse_parity_scratchpad")
VOCAB = TASK.vocab

TRAIN = {"k_train": 6, "l_min": 4, "l_max": 12, "n_samples": 2000}
EVAL = {"k_test": [1, 3, 6], "lengths": [4, 10, 40], "n_per_cell": 30}


def record(split: str, params: dict, seed: int) -> dict:
    spec = {"task": "sparse_parity_scratchpad", "split": split, "seed": seed, "params": params}
    return build_record("test", "data", spec, seeds={"seed": seed})


def generate(split: str, params: dict, seed: int) -> pl.DataFrame:
    return {"train": TASK.generate_train, "eval": TASK.generate_eval}[split](params, seed)


def write(frame: pl.DataFrame, path: Path, rec: dict) -> Path:
    datasets.write(frame, path, TASK.schema, rec)
    return path


def parse(prompt_ids) -> tuple[list[str], list[str]]:
    """Decode ``<bos> m_1 b_1 ... m_l b_l =`` into (markers, bits), checking the layout."""
    tokens = VOCAB.decode(prompt_ids)
    assert tokens[0] == "<bos>" and tokens[-1] == "=", tokens
    body = tokens[1:-1]
    assert len(body) % 2 == 0, tokens
    markers, bits = body[0::2], body[1::2]
    assert all(m in ("*", "-") for m in markers) and all(b in ("0", "1") for b in bits), tokens
    return markers, bits


def scratchpad(markers, bits) -> list[tuple[int, int]]:
    """[(s_j, 1-based index of the j-th marked bit)] in order."""
    out, acc = [], 0
    for i, (marker, bit) in enumerate(zip(markers, bits), start=1):
        if marker == "*":
            acc ^= int(bit)
            out.append((acc, i))
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
    rec = record(split, params, 3)
    a = write(generate(split, params, 3), tmp_path / "a.parquet", rec)
    b = write(generate(split, params, 4), tmp_path / "b.parquet", rec)
    assert a.read_bytes() != b.read_bytes()
    prompts_a = generate(split, params, 3)["prompt"].to_list()
    prompts_b = generate(split, params, 4)["prompt"].to_list()
    assert sum(p != q for p, q in zip(prompts_a, prompts_b)) > len(prompts_a) // 2


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
        l = len(markers)
        assert row["l"] == l and row["length"] == 2 * l
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
        l = len(markers)
        assert row["prompt_pos"] == list(range(2 * l + 2))
        assert row["response_pos"] == [2 * i for _, i in scratchpad(markers, bits)] + [2 * l + 2]


def test_each_step_reads_the_marked_bit_with_its_own_id(eval_frame):
    """Locality: s_j's ID is that of a bit token whose marker is `*`, the j-th one, and
    s_j = s_{j-1} XOR that bit; IDs increase along the response."""
    for row in eval_frame.iter_rows(named=True):
        prompt = VOCAB.decode(row["prompt"])
        token_at = dict(zip(row["prompt_pos"], prompt))
        index_at = dict(zip(row["prompt_pos"], range(len(prompt))))
        response = VOCAB.decode(row["response"])[:-1]
        ids = row["response_pos"][:-1]
        marked_bit_ids = [row["prompt_pos"][i + 1] for i, t in enumerate(prompt) if t == "*"]
        assert ids == marked_bit_ids
        previous = 0
        for token, pid in zip(response, ids):
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


def test_eval_grid_cells_and_counts(eval_frame):
    expected = {(k, n) for k in EVAL["k_test"] for n in EVAL["lengths"] if 2 * k <= n}
    counts = Counter(eval_frame.select("k", "length").iter_rows())
    assert set(counts) == expected == set(TASK.eval_cells(EVAL))
    assert all(c == EVAL["n_per_cell"] for c in counts.values())


def test_changing_the_grid_leaves_other_cells_identical(eval_frame):
    other = generate("eval", {**EVAL, "lengths": [40, 10]}, 5)
    for k, n in ((1, 10), (3, 40), (6, 40)):
        old = eval_frame.filter((pl.col("k") == k) & (pl.col("length") == n))
        new = other.filter((pl.col("k") == k) & (pl.col("length") == n))
        assert old.height == EVAL["n_per_cell"]
        assert parquet_bytes(old) == parquet_bytes(new)


@pytest.mark.parametrize("split,params", [
    ("eval", {**EVAL, "lengths": [11]}),
    ("eval", {**EVAL, "k_test": [9], "lengths": [10]}),
    ("train", {**TRAIN, "k_train": 13}),
])
def test_bad_params_raise(split, params):
    with pytest.raises(ValueError):
        generate(split, params, 0)


# --- schema -------------------------------------------------------------------------------------

@pytest.fixture
def small_frame() -> pl.DataFrame:
    return generate("train", {"k_train": 3, "l_min": 3, "l_max": 8, "n_samples": 30}, 2)


def test_valid_frame_round_trips(tmp_path, small_frame):
    path = write(small_frame, tmp_path / "ok.parquet", record("train", {}, 0))
    assert datasets.read(path, TASK.schema).equals(small_frame)


@pytest.mark.parametrize("change,column", [
    (lambda f: f.rename({"response_pos": "response_ids"}), "response_ids"),
    (lambda f: f.drop("k"), "k"),
    (lambda f: f.with_columns(pl.col("l").cast(pl.Int64)), "l"),
])
def test_read_errors_name_file_and_column(tmp_path, small_frame, change, column):
    path = tmp_path / "bad.parquet"
    change(small_frame).write_parquet(path)
    with pytest.raises(datasets.DataError) as info:
        datasets.read(path, TASK.schema)
    assert str(path) in str(info.value)
    assert f"'{column}'" in str(info.value) or f'"{column}"' in str(info.value)


BAD_FRAMES = {
    "k_gt_l": lambda f: f.with_columns(k=pl.col("l") + 1),
    "k_off": lambda f: f.with_columns(k=pl.col("k") + 1),
    "length_not_2l": lambda f: f.with_columns(length=pl.col("length") + 2),
    "answer_flipped": lambda f: f.with_columns(answer=1 - pl.col("answer")),
    "no_eos": lambda f: f.with_columns(response=pl.col("response").list.head(pl.col("k")),
                                       response_pos=pl.col("response_pos").list.head(pl.col("k"))),
    "short_prompt_pos": lambda f: f.with_columns(prompt_pos=pl.col("prompt_pos").list.head(3)),
    "token_out_of_vocab": lambda f: f.with_columns(prompt=pl.col("prompt").list.eval(pl.element() + 20)),
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

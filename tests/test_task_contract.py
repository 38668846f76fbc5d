"""The contract every registered task meets, parametrized over ``pipeline_src.tasks.TASKS``.

Determinism (the same seed writes the same bytes, another seed other data), the evaluation grid
(each cell ``n_per_cell`` times, cells independent of each other), the Parquet round trip and the
schema errors that do not depend on the task: unknown, missing or mistyped columns and the checks
every task schema inherits from ``frame_schema.TaskSchema``. Each task's own test file keeps what is
specific to it (labels against an independent recomputation, coupled IDs, laws, its own schema
checks) and reuses the per-task parameters and helpers of ``tests/helpers.py``.
"""

from __future__ import annotations

import io

import polars as pl
import pytest

from pipeline_src import datasets
from pipeline_src.provenance.sidecars import sidecar_path
from pipeline_src.storage.canonical import sha256_file
from pipeline_src.tasks import TASKS, get_task
from tests.helpers import TASK_PARAMS, assert_write_rejects, generate, record, small_frame, write

NAMES = sorted(TASKS)
SPLITS = [(name, split) for name in NAMES for split in ("train", "eval")]


def parquet_bytes(frame: pl.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.write_parquet(buffer, statistics=False)
    return buffer.getvalue()


def test_every_registered_task_has_a_spec():
    assert set(TASK_PARAMS) == set(TASKS)


# --- determinism --------------------------------------------------------------------------------

@pytest.mark.parametrize("name,split", SPLITS)
def test_same_seed_gives_byte_identical_parquet(tmp_path, name, split):
    params = TASK_PARAMS[name][split]
    rec = record(name, split, params, 3)
    a = write(name, generate(name, split, params, 3), tmp_path / "a.parquet", rec)
    b = write(name, generate(name, split, params, 3), tmp_path / "b.parquet", rec)
    assert a.read_bytes() == b.read_bytes()
    # the written file reads back to the generated frame
    assert datasets.read(a, get_task(name).schema).equals(generate(name, split, params, 3))


@pytest.mark.parametrize("name,split", SPLITS)
def test_different_seeds_give_different_data(tmp_path, name, split):
    params = TASK_PARAMS[name][split]
    rec = record(name, split, params, 3)  # same record: only the data may differ
    a = write(name, generate(name, split, params, 3), tmp_path / "a.parquet", rec)
    b = write(name, generate(name, split, params, 4), tmp_path / "b.parquet", rec)
    assert a.read_bytes() != b.read_bytes()
    varied = pl.col("length") >= TASK_PARAMS[name].get("varied_from", 0)
    prompts_a = generate(name, split, params, 3).filter(varied)["prompt"].to_list()
    prompts_b = generate(name, split, params, 4).filter(varied)["prompt"].to_list()
    assert prompts_a != prompts_b
    # not just a permutation or a single changed row: most prompts differ
    assert sum(p != q for p, q in zip(prompts_a, prompts_b, strict=False)) > len(prompts_a) // 2


# --- evaluation grid ----------------------------------------------------------------------------

def _cell(frame: pl.DataFrame, name: str, key: tuple) -> pl.DataFrame:
    columns = get_task(name).cell_columns
    return frame.filter(pl.all_horizontal([pl.col(c) == v for c, v in zip(columns, key, strict=False)]))


@pytest.mark.parametrize("name", NAMES)
def test_eval_frame_holds_each_cell_n_per_cell_times(name):
    params = TASK_PARAMS[name]["eval"]
    frame = generate(name, "eval", params, 5)
    task = get_task(name)
    counts = frame.group_by(list(task.cell_columns)).len()
    assert {tuple(row[:-1]) for row in counts.iter_rows()} == set(task.eval_cells(params))
    assert set(counts["len"].to_list()) == {params["n_per_cell"]}
    assert frame.height == params["n_per_cell"] * len(task.eval_cells(params))


@pytest.mark.parametrize("name,new_lengths", [(n, lengths) for n in NAMES for lengths in TASK_PARAMS[n]["regrid"]])
def test_changing_the_grid_leaves_other_cells_identical(name, new_lengths):
    params = TASK_PARAMS[name]["eval"]
    new_params = {**params, "lengths": new_lengths}
    old, new = generate(name, "eval", params, 5), generate(name, "eval", new_params, 5)
    task = get_task(name)
    shared = set(task.eval_cells(params)) & set(task.eval_cells(new_params))
    assert shared
    for key in shared:
        assert _cell(old, name, key).height == params["n_per_cell"]
        assert parquet_bytes(_cell(old, name, key)) == parquet_bytes(_cell(new, name, key))


@pytest.mark.parametrize("name", NAMES)
def test_answer_index_points_at_the_answer(name):
    task = get_task(name)
    frame = generate(name, "eval", TASK_PARAMS[name]["eval"], 5)
    for response, answer in frame.select("response", "answer").iter_rows():
        assert task.vocab.decode([response[task.answer_index]]) == [str(answer)]


# --- schema: round trip and read errors ---------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_valid_frame_round_trips(tmp_path, name):
    path = write(name, small_frame(name), tmp_path / "ok.parquet", record(name, "train", {}, 0))
    assert datasets.read(path, get_task(name).schema).equals(small_frame(name))


def _int64(frame: pl.DataFrame, column: str) -> pl.Expr:
    """``column`` cast from Int32 (or List(Int32)) to Int64 (or List(Int64))."""
    listed = frame.schema[column] == pl.List(pl.Int32)
    return pl.col(column).cast(pl.List(pl.Int64) if listed else pl.Int64)


READ_CHANGES = {  # (frame, column) -> (broken frame, the name the error must give, more words)
    "renamed": lambda f, c: (f.rename({c: c + "s"}), c + "s", ()),
    "missing": lambda f, c: (f.drop(c), c, ()),
    "wrong_dtype": lambda f, c: (f.with_columns(_int64(f, c)), c, ("Int64",)),
}


@pytest.mark.parametrize("name,change", [(n, c) for n in NAMES for c in READ_CHANGES])
def test_read_errors_name_file_and_column(tmp_path, name, change):
    frame = small_frame(name)
    for column in frame.columns:  # every column of the task, one at a time
        bad, named, words = READ_CHANGES[change](frame, column)
        path = tmp_path / f"{change}_{column}.parquet"
        bad.write_parquet(path)
        with pytest.raises(datasets.DataError) as info:
            datasets.read(path, get_task(name).schema)
        message = str(info.value)
        assert str(path) in message
        assert f"'{named}'" in message or f'"{named}"' in message, (column, message)
        assert all(word in message for word in words), (column, message)


@pytest.mark.parametrize("name", NAMES)
def test_read_missing_and_unreadable_files(tmp_path, name):
    schema = get_task(name).schema
    with pytest.raises(datasets.DataError, match="no such"):
        datasets.read(tmp_path / "absent.parquet", schema)
    junk = tmp_path / "junk.parquet"
    junk.write_text("not parquet")
    with pytest.raises(datasets.DataError) as info:
        datasets.read(junk, schema)
    assert str(junk) in str(info.value)


def test_a_recorded_file_is_read_by_its_digest_and_a_changed_one_refused(tmp_path):
    """Read as the task's own data, a file :func:`datasets.write` checked and recorded is read without
    building the schema; the same path with other bytes is refused naming both digests; without its
    record it is checked. Read without saying so, the file is always checked."""
    name = NAMES[0]
    path = write(name, small_frame(name), tmp_path / "ok.parquet", record(name, "train", {}, 0))

    def no_schema():
        raise AssertionError("a file that still has its recorded bytes needs no schema check")

    assert datasets.read(path, no_schema, checked_when_written=True).equals(small_frame(name))
    with pytest.raises(AssertionError, match="needs no schema"):
        datasets.read(path, no_schema)
    recorded = sha256_file(path)
    small_frame(name).head(3).write_parquet(path)  # other rows, the record left as it was
    with pytest.raises(datasets.DataError) as info:
        datasets.read(path, no_schema, checked_when_written=True)
    assert str(path) in str(info.value) and recorded in str(info.value) and sha256_file(path) in str(info.value)
    sidecar_path(path).unlink()
    assert datasets.read(path, lambda: get_task(name).schema, checked_when_written=True).equals(
        small_frame(name).head(3))
    small_frame(name).drop("prompt").write_parquet(path)
    with pytest.raises(datasets.DataError, match="missing column"):
        datasets.read(path, lambda: get_task(name).schema, checked_when_written=True)


# --- schema: what every write rejects -----------------------------------------------------------

def _set_item(frame: pl.DataFrame, column: str, index: int, value: int) -> pl.DataFrame:
    """``frame`` with item ``index`` of every ``column`` list set to ``value``."""
    lists = [[*x[:index], value, *x[index + 1:]] for x in frame[column].to_list()]
    return frame.with_columns(pl.Series(column, lists, dtype=pl.List(pl.Int32)))


def _drop_last(frame: pl.DataFrame, column: str) -> pl.DataFrame:
    return frame.with_columns(pl.col(column).list.head(pl.col(column).list.len() - 1))


def _shift(frame: pl.DataFrame, column: str, by: int) -> pl.DataFrame:
    return frame.with_columns(pl.col(column).list.eval(pl.element() + by))


# kind -> ((frame, vocabulary size) -> bad frame, words the error must hold). Each change that
# breaks one check of ``frame_schema.TaskSchema`` alone must be reported by that check: it still runs.
BAD_FRAMES = {
    "extra_column": (lambda f, size: f.with_columns(extra=pl.lit(1, dtype=pl.Int32)), ["'extra'"]),
    "wrong_dtype": (lambda f, size: f.with_columns(pl.col("answer").cast(pl.Int64)), ["'answer'"]),
    "prompt_token_past_vocab": (lambda f, size: _set_item(f, "prompt", 1, size),
                                ["tokens_in_vocabulary", "prompt"]),
    "prompt_token_negative": (lambda f, size: _set_item(f, "prompt", 1, -1),
                              ["tokens_in_vocabulary", "prompt"]),
    "prompt_tokens_shifted": (lambda f, size: _shift(f, "prompt", size), []),
    "response_tokens_shifted": (lambda f, size: _shift(f, "response", size), []),
    "negative_prompt_id": (lambda f, size: _set_item(f, "prompt_pos", 1, -1),
                           ["position_ids_non_negative", "prompt_pos"]),
    "negative_response_ids": (lambda f, size: _shift(f, "response_pos", -100),
                              ["position_ids_non_negative", "response_pos"]),
    "short_prompt_pos": (lambda f, size: _drop_last(f, "prompt_pos"),
                         ["one_position_id_per_token", "prompt_pos"]),
    "short_response_pos": (lambda f, size: _drop_last(f, "response_pos"),
                           ["one_position_id_per_token", "response_pos"]),
}


@pytest.mark.parametrize("name,kind", [(n, k) for n in NAMES for k in sorted(BAD_FRAMES)])
def test_write_validates_before_writing(tmp_path, name, kind):
    change, words = BAD_FRAMES[kind]
    bad = change(small_frame(name), len(get_task(name).vocab))
    assert_write_rejects(name, bad, tmp_path, *words)

"""A task keyed by cell columns other than (k, length) needs nothing outside its own module: a task
keyed by (depth, length), registered only inside these tests, is trained, evaluated, and read by
``lengthgen table``; its accuracy table has a ``depth`` column and one row per (depth, length,
metric). Also: the accuracy schema of every registered task, and of one keyed by extra columns."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from pipeline_src import datasets, tasks
from pipeline_src.cli import main
from pipeline_src.evaluation import accuracy_schema
from pipeline_src.evaluation.evaluate import evaluate
from pipeline_src.provenance import records
from pipeline_src.provenance.records import build_record
from pipeline_src.tasks import Figure, Layout, Task, Vocab, generator
from pipeline_src.tasks.task import count, data_schema
from pipeline_src.training.train import train
from tests.conftest import tiny_train_spec

NAME = "depth_lookup"
VOCAB = Vocab.with_specials("0", "1", "=")
BOS, EOS, ZERO, ONE, EQUALS = (VOCAB.id(t) for t in ("<bos>", "<eos>", "0", "1", "="))
quiet = {"progress": lambda _: None}


def sample(rng: np.random.Generator, depth: np.ndarray, n: np.ndarray) -> dict[str, np.ndarray]:
    """``<bos> b_1 ... b_n =`` -> ``b_depth <eos>``, IDs 0..T-1."""
    count_, width = len(n), int(n.max())
    rows, column = np.arange(count_), np.arange(width)[None, :]
    bits = rng.integers(0, 2, size=(count_, width)) * (column < n[:, None])
    prompt = np.zeros((count_, width + 2), dtype=np.int64)
    prompt[:, 0] = BOS
    prompt[:, 1:width + 1] = np.where(bits == 1, ONE, ZERO) * (column < n[:, None])
    prompt[rows, n + 1] = EQUALS
    answer = bits[rows, depth - 1]
    response = np.stack([np.where(answer == 1, ONE, ZERO), np.full(count_, EOS)], axis=1)
    return {"prompt": prompt, "prompt_pos": np.broadcast_to(np.arange(width + 2), prompt.shape), "prompt_len": n + 2,
            "response": response, "response_pos": (n + 2)[:, None] + np.arange(2)[None, :],
            "response_len": np.full(count_, 2), "answer": answer}


def frame(rng: np.random.Generator, depth: np.ndarray, n: np.ndarray) -> pl.DataFrame:
    return pl.DataFrame(generator.frame_columns(sample(rng, depth, n), depth=depth, length=n))


def generate_train(params: dict, seed: int) -> pl.DataFrame:
    n_min, n_max = generator.length_range(params, prefix=f"{NAME}: ")
    rng = np.random.default_rng(seed)
    n = rng.integers(n_min, n_max + 1, size=params["n_samples"])
    return frame(rng, 1 + (rng.random(len(n)) * n).astype(np.int64), n)


def eval_cells(params: dict) -> list[tuple[int, int]]:
    return [(d, n) for d in params["depths"] for n in params["lengths"] if d <= n]


def generate_eval(params: dict, seed: int) -> pl.DataFrame:
    def draw_cell(rng, depth: int, length: int):
        size = params["n_per_cell"]
        return frame(rng, np.full(size, depth), np.full(size, length))

    return generator.eval_grid(eval_cells(params), seed, draw_cell, "no cells")


def schema():
    from pipeline_src.storage.table_schema import Field
    from pipeline_src.tasks.frame_schema import TaskSchema

    class DepthLookupSchema(TaskSchema):
        depth: pl.Int32 = Field(ge=1)
        _vocab_size = len(VOCAB)

    return DepthLookupSchema


TASK = Task(
    name=NAME, summary="Look up bit number depth.", vocab=VOCAB, generate_train=generate_train,
    generate_eval=generate_eval, eval_cells=eval_cells, sequence_tokens=lambda length, params=None: length + 4,
    max_position_id=lambda length, params=None: length + 3, train_lengths=lambda data: (data["n_min"], data["n_max"]),
    make_schema=schema, layout=Layout(by_k_train=False, data_fields=("n_min", "n_max"), variants=("direct",),
                                      data_schema=data_schema(n_min=count("Fewest bits."), n_max=count("Most bits."))),
    figure=Figure(NAME, "tests.test_task_cells:no_figure"), cell_columns=("depth", "length"), answer_index=-2,
    module=__name__)


@pytest.fixture
def registered(monkeypatch):
    """The task, registered for this test only. Its module lies outside the package, so the code
    digests (which cover modules of pipeline_src) get a fixed stand-in."""
    monkeypatch.setitem(tasks.TASKS, NAME, TASK)
    monkeypatch.setattr(records, "stage_digest", lambda stage, task=None, scheme=None: f"test:{stage}")
    return TASK


def write(path, split: str, params: dict, seed: int):
    data = {"train": generate_train, "eval": generate_eval}[split](params, seed)
    spec = {"task": NAME, "split": split, "seed": seed, "params": params}
    datasets.write(data, path, TASK.schema, build_record("test", "data", spec, seeds={"seed": seed}))
    return path


def test_a_task_keyed_by_depth_and_length_is_evaluated_per_cell(registered, tmp_path):
    train_data = write(tmp_path / "train.parquet", "train", {"n_min": 2, "n_max": 6, "n_samples": 64}, 1)
    eval_data = write(tmp_path / "eval.parquet", "eval", {"depths": [1, 3], "lengths": [2, 4, 8], "n_per_cell": 5}, 2)
    spec = tiny_train_spec("rope", steps=4)
    spec.update(task=NAME, variant="direct", k_train=None)
    train(spec, train_data, tmp_path / "model", **quiet)
    out = tmp_path / "accuracy.parquet"
    result = evaluate({"batch_size": 4, "seed": 2}, tmp_path / "model", eval_data, out, **quiet)

    assert result.columns == ["task", "variant", "scheme", "k_train", "seed", "k", "length", "depth", "metric", "n",
                              "correct", "accuracy", "ci_low", "ci_high"]
    assert result["depth"].dtype == pl.Int32 and result["k"].null_count() == len(result)
    cells = [(d, n) for d in (1, 3) for n in (2, 4, 8) if d <= n]
    assert sorted(zip(result["depth"], result["length"], result["metric"], strict=False)) == \
        sorted((d, n, metric) for d, n in cells for metric in ("exact_match", "answer", "token_accuracy"))
    assert set(result.filter(pl.col("metric") != "token_accuracy")["n"]) == {5}
    assert accuracy_schema.read(out).equals(result)

    done = CliRunner().invoke(main, ["table", "--metric", "answer", str(out)])
    assert done.exit_code == 0, done.output
    lines = done.output.strip().splitlines()
    assert lines[0] == "| task | variant | scheme | depth | 2 | 4 | 8 | seeds |"
    assert [line.split(" | ")[3] for line in lines[2:]] == ["1", "3"]
    assert lines[3].split(" | ")[4] == "-", "depth 3 has no length-2 cell"


def accuracy_rows(**keys) -> pl.DataFrame:
    return pl.DataFrame({
        "task": NAME, "variant": "direct", "scheme": "rope", "k_train": pl.Series([None], dtype=pl.Int32),
        "seed": pl.Series([0], dtype=pl.Int64), "k": pl.Series([None], dtype=pl.Int32),
        "length": pl.Series([4], dtype=pl.Int32), **keys, "metric": "answer", "n": pl.Series([4], dtype=pl.Int64),
        "correct": pl.Series([2], dtype=pl.Int64), "accuracy": 0.5, "ci_low": 0.15, "ci_high": 0.85})


def test_the_schema_of_a_task_has_its_extra_cell_columns(registered, tmp_path):
    schema = accuracy_schema.accuracy_schema(TASK.cell_columns)
    schema.validate(accuracy_rows(depth=pl.Series([2], dtype=pl.Int32)))
    for bad in (accuracy_rows(), accuracy_rows(depth=pl.Series([2], dtype=pl.Int64)),
                accuracy_rows(depth=pl.Series([None], dtype=pl.Int32))):
        with pytest.raises(Exception, match="depth"):
            schema.validate(bad)
    with pytest.raises(Exception, match="depth"):
        accuracy_schema.AccuracySchema.validate(accuracy_rows(depth=pl.Series([2], dtype=pl.Int32)))
    with pytest.raises(ValueError, match="seed"):
        accuracy_schema.accuracy_schema(("seed", "length"))


def test_read_checks_a_file_against_the_schema_of_its_task(registered, tmp_path):
    path = tmp_path / "a.parquet"
    accuracy_rows().write_parquet(path)
    with pytest.raises(datasets.DataError, match="depth"):
        accuracy_schema.read(path)
    accuracy_rows(depth=pl.Series([2], dtype=pl.Int32)).with_columns(task=pl.lit("bogus")).write_parquet(path)
    with pytest.raises(datasets.DataError, match="names task 'bogus'"):
        accuracy_schema.read(path)


def test_every_registered_task_has_an_accuracy_schema():
    for task in tasks.TASKS.values():
        schema = accuracy_schema.accuracy_schema(task.cell_columns)
        assert set(schema.columns()) >= set(task.cell_columns) | {"k"}
    with pytest.raises(ValueError, match="must include 'length'"):
        dataclasses.replace(TASK, cell_columns=("depth",))

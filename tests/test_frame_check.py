"""The one-query check of a frame (``storage.frame_check.passes``) says yes exactly where pandera
accepts: on a valid frame of two tasks' schemas, the accuracy, influence and token stream schemas, and
on each frame broken one way at a time (a null, a NaN, a value out of range, a list emptied or
lengthened, a row repeated, a column of another dtype, a column added or dropped)."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl
import pytest

from pipeline_src import datasets
from pipeline_src.config.influence_config import InfluenceConfig
from pipeline_src.evaluation.accuracy_schema import AccuracySchema
from pipeline_src.language.corpus import HELDOUT, TRAIN
from pipeline_src.language.influence_table import influence_schema
from pipeline_src.language.tokenizer import token_schema
from pipeline_src.storage.frame_check import passes
from pipeline_src.tasks import get_task
from tests.helpers import SMALL, accuracy_file, influence_frame, small_frame

# the tasks whose schemas are broken here: every feature of a schema the others use (their own checks
# are tested with their tasks), as the accuracy, influence and token stream schemas add theirs
TASKS_BROKEN = ("parity_scratchpad", "variable_assignment")
OTHER_DTYPE = {pl.Int32: pl.Int64, pl.Int64: pl.Int32, pl.Float64: pl.Float32, pl.String: pl.Categorical,
               pl.Boolean: pl.Int8}


def accepted(frame: pl.DataFrame, schema) -> bool:
    try:
        schema.validate(frame)
        return True
    except (pa.errors.SchemaError, pa.errors.SchemaErrors, pl.exceptions.PolarsError):
        return False


def first_row(frame: pl.DataFrame, name: str, value) -> pl.DataFrame:
    values = frame[name].to_list()
    values[0] = value
    return frame.with_columns(pl.Series(name, values, dtype=frame.schema[name], strict=False))


def broken(frame: pl.DataFrame):
    """(what, frame) for each way of breaking ``frame`` one thing at a time."""
    for name, dtype in frame.schema.items():
        yield f"{name} null", first_row(frame, name, None)
        if dtype.is_numeric():
            for value in (-1, *((float("nan"), 1.5) if dtype.is_float() else (10**6,))):
                yield f"{name} = {value}", first_row(frame, name, value)
        elif isinstance(dtype, pl.List):
            row = frame[name][0].to_list()
            for what, value in (("emptied", []), ("lengthened", [*row, row[-1] if row else 0]),
                                ("first -1", [-1, *row[1:]])):
                yield f"{name} {what}", first_row(frame, name, value)
        elif dtype == pl.String:
            yield f"{name} unknown", first_row(frame, name, "unknown")
        base = dtype.inner if isinstance(dtype, pl.List) else dtype
        if base.base_type() in OTHER_DTYPE:
            other = OTHER_DTYPE[base.base_type()]
            yield f"{name} as {other}", frame.with_columns(pl.col(name).cast(pl.List(other) if base is not dtype
                                                                               else other))
        yield f"{name} dropped", frame.drop(name)
    yield "a row repeated", pl.concat([frame, frame.head(1)])
    yield "a column added", frame.with_columns(extra=pl.lit(1))


def schemas_and_frames(tmp_path_factory):
    for name in TASKS_BROKEN:
        yield name, get_task(name).schema, small_frame(name)
    path = accuracy_file(tmp_path_factory.mktemp("accuracy") / "acc.parquet", "rope", 0, {8: 7, 16: 3})
    yield "accuracy", AccuracySchema, datasets.load(path)
    yield "influence", influence_schema(InfluenceConfig(**SMALL)), influence_frame()
    yield "token stream", token_schema(50), pl.DataFrame({
        "doc": pl.Series([0, 1], dtype=pl.Int64), "split": [TRAIN, HELDOUT],
        "tokens": pl.Series([[3, 4, 1], [5, 1]], dtype=pl.List(pl.Int32))})


def test_one_query_accepts_exactly_what_pandera_accepts(tmp_path_factory):
    rejected = 0
    for label, schema, frame in schemas_and_frames(tmp_path_factory):
        assert passes(frame, schema), f"{label}: a valid frame is left to pandera"
        for what, bad in broken(frame):
            pandera_accepts = accepted(bad, schema)
            assert passes(bad, schema) == pandera_accepts, f"{label}, {what}"
            rejected += not pandera_accepts
    assert rejected > 100  # the breaks are caught (by both), not only let through


def test_validate_words_a_rejection_as_pandera_does(tmp_path):
    frame = small_frame("parity_scratchpad")
    bad = first_row(frame, "answer", 2)
    with pytest.raises(datasets.DataError, match=r"answer.*isin"):
        datasets.validate(bad, get_task("parity_scratchpad").schema, tmp_path / "bad.parquet")

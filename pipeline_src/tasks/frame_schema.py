"""The schema every task dataset shares (:mod:`pipeline_src.storage.table_schema`), and check
expressions for task schemas.

Every task's schema (built by its module's ``schema()``, see :class:`.task.Task`) derives from
:class:`TaskSchema`, which holds the columns all tasks share and the checks on them; a base's checks
run on every subclass, with ``cls`` the subclass. A task schema sets ``_vocab_size`` (a private
name: not a column) and adds its own columns and checks.
"""

import polars as pl

from ..storage.table_schema import Field, TableSchema, dataframe_check

# --- shared check expressions -------------------------------------------------------------------


def in_vocabulary(size: int, *columns: str) -> pl.Expr:
    """Every token of the list ``columns`` is an id of a vocabulary of ``size`` tokens."""
    expr = pl.lit(True)
    for column in columns:
        expr = expr & pl.col(column).list.eval(pl.element().is_between(0, size - 1)).list.all()
    return expr


def non_negative(*columns: str) -> pl.Expr:
    expr = pl.lit(True)
    for column in columns:
        expr = expr & pl.col(column).list.eval(pl.element() >= 0).list.all()
    return expr


def same_length(a: str, b: str) -> pl.Expr:
    return pl.col(a).list.len() == pl.col(b).list.len()


def token_is(column: str, index: int, token) -> pl.Expr:
    """The token at ``index`` of each list equals ``token`` (false when the list is too short)."""
    return (pl.col(column).list.get(index, null_on_oob=True) == token).fill_null(False)


# --- schemas ------------------------------------------------------------------------------------


class TaskSchema(TableSchema):
    """What every task dataset has: the length measure, the ragged token lists, their position IDs
    and the answer (a bit unless a task says otherwise). Not the schema of a task by itself."""

    length: pl.Int32 = Field(ge=1)
    prompt: pl.List(pl.Int32)
    response: pl.List(pl.Int32)
    prompt_pos: pl.List(pl.Int32)
    response_pos: pl.List(pl.Int32)
    answer: pl.Int32 = Field(isin=[0, 1])

    _vocab_size = 0  # the task's vocabulary size: set by each task schema

    @dataframe_check
    def tokens_in_vocabulary(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(in_vocabulary(cls._vocab_size, "prompt", "response"))

    @dataframe_check
    def position_ids_non_negative(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(non_negative("prompt_pos", "response_pos"))

    @dataframe_check
    def one_position_id_per_token(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(
            same_length("prompt", "prompt_pos") & same_length("response", "response_pos"))

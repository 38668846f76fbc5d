"""pandera (polars) schemas of the task datasets, checked on every write and read.

Every task schema derives from :class:`TaskSchema`, which holds the columns all tasks share and
the checks on them; pandera runs a base model's checks on every subclass, with ``cls`` the
subclass. A task schema sets ``_vocab_size`` (a private name: pandera does not take it for a
column) and adds its own columns and checks.

(No ``from __future__ import annotations`` here: pandera evaluates the field annotations.)
"""

import pandera.polars as pa
import polars as pl

from . import parity_scratchpad as _ps
from . import sparse_parity as _sp
from . import sparse_parity_scratchpad as _sps
from . import variable_assignment as _va

# --- shared check expressions -------------------------------------------------------------------


def _in_vocabulary(size: int, *columns: str) -> pl.Expr:
    """Every token of the list ``columns`` is an id of a vocabulary of ``size`` tokens."""
    expr = pl.lit(True)
    for column in columns:
        expr = expr & pl.col(column).list.eval(pl.element().is_between(0, size - 1)).list.all()
    return expr


def _non_negative(*columns: str) -> pl.Expr:
    expr = pl.lit(True)
    for column in columns:
        expr = expr & pl.col(column).list.eval(pl.element() >= 0).list.all()
    return expr


def _same_length(a: str, b: str) -> pl.Expr:
    return pl.col(a).list.len() == pl.col(b).list.len()


def _token_is(column: str, index: int, token) -> pl.Expr:
    """The token at ``index`` of each list equals ``token`` (false when the list is too short)."""
    return (pl.col(column).list.get(index, null_on_oob=True) == token).fill_null(False)


# --- schemas ------------------------------------------------------------------------------------


class TaskSchema(pa.DataFrameModel):
    """What every task dataset has: the length measure, the ragged token lists, their position IDs
    and the answer (a bit unless a task says otherwise). Not the schema of a task by itself."""

    length: pl.Int32 = pa.Field(ge=1)
    prompt: pl.List(pl.Int32)
    response: pl.List(pl.Int32)
    prompt_pos: pl.List(pl.Int32)
    response_pos: pl.List(pl.Int32)
    answer: pl.Int32 = pa.Field(isin=[0, 1])

    _vocab_size = 0  # the task's vocabulary size: set by each task schema

    class Config:
        strict = True
        coerce = False

    @pa.dataframe_check
    def tokens_in_vocabulary(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(_in_vocabulary(cls._vocab_size, "prompt", "response"))

    @pa.dataframe_check
    def position_ids_non_negative(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(_non_negative("prompt_pos", "response_pos"))

    @pa.dataframe_check
    def one_position_id_per_token(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(
            _same_length("prompt", "prompt_pos") & _same_length("response", "response_pos"))


class _SparseParityPrompt(TaskSchema):
    """The (k, l) columns and the prompt ``<bos> m_1 b_1 ... m_l b_l =`` of sparse parity (SPEC
    2.1), shared by its scratchpad variant."""

    k: pl.Int32 = pa.Field(ge=1)
    l: pl.Int32 = pa.Field(ge=1)
    length: pl.Int32 = pa.Field(ge=2)

    _vocab_size = len(_sp.VOCAB)

    @pa.dataframe_check
    def k_at_most_l(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("k") <= pl.col("l"))

    @pa.dataframe_check
    def length_is_2l(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("length") == 2 * pl.col("l"))

    @pa.dataframe_check
    def prompt_has_2l_plus_2_tokens(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("prompt").list.len() == pl.col("length") + 2)


class SparseParitySchema(_SparseParityPrompt):
    """One sample of D^sp(l, k) per row (SPEC 2.1)."""

    @pa.dataframe_check
    def one_response_token(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("response").list.len() == 1)


class SparseParityScratchpadSchema(_SparseParityPrompt):
    """One sample of sparse parity with a running-parity scratchpad per row (SPEC 2.2 variant)."""

    @pa.dataframe_check
    def response_has_k_plus_1_tokens(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(
            (pl.col("response").list.len() == pl.col("k") + 1) & _token_is("response", -1, _sps.EOS))

    @pa.dataframe_check
    def answer_is_last_scratchpad_token(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(_token_is("response", -2, _sps.ZERO + pl.col("answer")))


class ParityScratchpadSchema(TaskSchema):
    """One sample of parity with a scratchpad per row (SPEC 2.2): length = n bits."""

    _vocab_size = len(_ps.VOCAB)

    @pa.dataframe_check
    def prompt_has_n_plus_2_tokens(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(
            (pl.col("prompt").list.len() == pl.col("length") + 2)
            & _token_is("prompt", 0, _ps.BOS) & _token_is("prompt", -1, _ps.EQUALS))

    @pa.dataframe_check
    def response_is_scratchpad_or_answer(cls, data) -> pl.LazyFrame:
        """n tokens plus <eos> (scratchpad) or the answer plus <eos> (no scratchpad)."""
        size = pl.col("response").list.len()
        return data.lazyframe.select(
            ((size == pl.col("length") + 1) | (size == 2)) & _token_is("response", -1, _ps.EOS))

    @pa.dataframe_check
    def answer_is_last_scratchpad_token(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(_token_is("response", -2, _ps.ZERO + pl.col("answer")))


class VariableAssignmentSchema(TaskSchema):
    """One sample of variable assignment per row (SPEC 2.3): length = n statements."""

    n_statements: pl.Int32 = pa.Field(ge=1)
    depth: pl.Int32 = pa.Field(ge=1)
    answer: pl.Int32 = pa.Field(ge=0, le=9)

    _vocab_size = len(_va.VOCAB)

    @pa.dataframe_check
    def length_is_n_statements(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("length") == pl.col("n_statements"))

    @pa.dataframe_check
    def depth_at_most_n_statements(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("depth") <= pl.col("n_statements"))

    @pa.dataframe_check
    def prompt_has_4n_plus_4_tokens(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(
            (pl.col("prompt").list.len() == 4 * pl.col("n_statements") + 4)
            & _token_is("prompt", 0, _va.BOS) & _token_is("prompt", -3, _va.QUERY)
            & _token_is("prompt", -1, _va.EQUALS))

    @pa.dataframe_check
    def response_is_chain_or_answer(cls, data) -> pl.LazyFrame:
        """``depth`` tokens plus <eos> (scratchpad) or the answer plus <eos> (no scratchpad)."""
        size = pl.col("response").list.len()
        return data.lazyframe.select(
            ((size == pl.col("depth") + 1) | (size == 2)) & _token_is("response", -1, _va.EOS))

    @pa.dataframe_check
    def answer_is_last_response_digit(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(_token_is("response", -2, _va.DIGIT0 + pl.col("answer")))

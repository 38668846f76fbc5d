"""A figure's run-summary rows (:mod:`.run_summary`) from the files its job reads, and a summary's rows
merged with those of a later sitting: where the synthetic tasks' tables, the forecast's, Figure 4's
influence table, the tables of a draw analysed in parts (:mod:`.summary_parts`) and a committed summary
of such parts meet."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from . import summary_parts
from .run_summary import LANGUAGE, MODEL, SUMMARY_SUFFIX, canonical, empty, frame_rows, read, task_rows


def figure_rows(spec: dict, inputs: list[Path]) -> pl.DataFrame:
    """The rows of a figure with a finding, from the files its job reads: a task figure's accuracy
    tables, or Figure 4's influence table or its parts' (its spec has no ``task``); none: no rows."""
    if not inputs:
        return empty()
    if "task" in spec:
        return task_rows(spec, inputs)
    if "tasks" in spec:
        return forecast_rows(spec, inputs)
    return language_rows(spec, inputs)


FORECAST = "forecast."  # the metrics of the forecast figure's rows start so: forecast.predicted_reach, ...
FORECAST_COLUMNS = ("predicted_reach", "measured_reach", "predicted_far", "measured_far")


def forecast_rows(spec: dict, tables: list[Path]) -> pl.DataFrame:
    """The forecast figure's rows: per model of its tables (each model's accuracy and attention table), its
    reaches (:func:`pipeline_src.evaluation.forecast.reaches`) as metrics ``forecast.<column>``, at its
    k_test (``k``) and its task's longest training length T (``length``)."""
    from ..evaluation.forecast import from_tables

    reaches = from_tables(spec, inputs=tables)[1]
    long = reaches.with_columns(pl.col(list(FORECAST_COLUMNS)).cast(pl.Float64)).unpivot(
        list(FORECAST_COLUMNS), index=["task", "variant", "scheme", "seed", "k", "T"], variable_name="metric",
        value_name="value")
    return canonical(long.with_columns(metric=FORECAST + pl.col("metric")).rename({"T": "length"}))


def language_rows(spec: dict, influence: list[Path]) -> pl.DataFrame:
    """Figure 4's rows (figure spec ``spec``) from the influence table ``influence`` (a list of one), or
    from the tables of some or all parts of one draw (:mod:`.summary_parts`: their own rows, and Figure
    4's numbers once every part is there), or from a run summary of such parts (a ``.csv``: its Figure 4
    rows, ``language.figure.from_summary``)."""
    from ..config.influence_config import InfluenceConfig
    from ..language.influence_parts import in_draw_order
    from ..language.influence_table import read_influence

    if len(influence) == 1 and Path(influence[0]).suffix == SUMMARY_SUFFIX:
        return summary_parts.completed(read(Path(influence[0])).filter(pl.col("task") == LANGUAGE), spec)
    cfg = InfluenceConfig(context=spec["context"], local=spec["local"], k_max=spec["k_max"])
    ordered = in_draw_order(influence)
    if ordered[0][1] is None:
        return frame_rows(spec, read_influence(ordered[0][0], cfg))
    return summary_parts.completed(
        pl.concat([summary_parts.part_rows(read_influence(path, cfg), part) for path, part in ordered]), spec)


def merged(earlier: pl.DataFrame, rows: pl.DataFrame, source: Path | None = None) -> pl.DataFrame:
    """``rows``, with ``earlier``'s (the summary ``source``'s) rows of every model ``rows`` has none of: a
    synthetic task's runs (:data:`.run_summary.MODEL`: task, variant, scheme, seed) trained in another
    sitting, its whole figure or some of its seeds; Figure 4's rows, whose seed column holds a target, by
    task alone (the figure run apart), or, for a draw analysed in parts, by part
    (:func:`.summary_parts.merged`: Figure 4's numbers then need :func:`.summary_parts.completed` anew)."""
    summary_parts.check_one_draw(earlier, rows, source)
    fresh = set(rows.select(MODEL).iter_rows())
    language_fresh = LANGUAGE in rows["task"].to_list()
    apart = [not language_fresh if model[0] == LANGUAGE else model not in fresh
             for model in earlier.select(MODEL).iter_rows()]
    kept = earlier.filter(pl.Series(apart, dtype=pl.Boolean))
    if summary_parts.parts(rows):
        fresh_others = rows.filter(pl.col("task") != LANGUAGE)
        return canonical(pl.concat([kept, fresh_others, summary_parts.merged(earlier, rows)]))
    return canonical(pl.concat([kept, rows]))

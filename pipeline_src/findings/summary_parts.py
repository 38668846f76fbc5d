"""Figure 4's summary rows of a draw analysed in parts (``language.analysis.parts``), which sittings add
up: each part's tables give its per-target losses and its counts, so a summary can take the parts one
sitting at a time (``lengthgen findings --export FILE --keep-others``) and, once every part is in, hold
the very numbers of the whole draw's table (:func:`completed`). Until then Figure 4's claims are
withheld (:func:`withheld`).

The rows (task ``language``, beside :mod:`.run_summary`'s):

* per part (``seed``: the part's index, 1..of): ``part.of`` (how many parts the draw has), ``part.draw``
  (targets in the whole draw), ``part.first_target`` (its first target's row in the whole draw, from 0),
  ``part.targets`` (its targets) and ``part.screened_out`` (those the screening left out);
* per target (``seed``: its row in the whole draw): ``target.long_loss`` and ``target.short_loss`` of
  every drawn target, and ``target.sparse_loss``, ``target.other_loss``, ``target.random_loss`` at each
  ``k`` of every analysed one (none for a target screened out): the influence table's columns that
  every statistic of Figure 4 and its claims reads.
"""

from __future__ import annotations

import polars as pl

from ..config.influence_config import SCREENED_OUT
from ..language.influence_parts import parts_text
from ..planning.language_jobs import LANGUAGE
from . import run_summary

PART_FIELDS = ("of", "draw", "first_target", "targets", "screened_out")
TARGET = "target."
ANCHORS = ("long_loss", "short_loss")  # every drawn target's
PER_K = ("sparse_loss", "other_loss", "random_loss")  # an analysed target's, at each k


def part_rows(frame: pl.DataFrame, part: dict) -> pl.DataFrame:
    """The summary rows of one part's influence table ``frame`` (its record's ``part``)."""
    first, n = part["first_target"], frame.height
    screened = frame[SCREENED_OUT] if SCREENED_OUT in frame.columns else pl.Series([False] * n)
    counts = {"of": part["of"], "draw": part["drawn"], "first_target": first, "targets": n,
              "screened_out": int(screened.sum())}
    rows = [pl.DataFrame({"seed": [part["index"]] * len(counts), "metric": [f"part.{key}" for key in counts],
                          "value": [float(value) for value in counts.values()]})]
    target = pl.Series(range(first, first + n), dtype=pl.Int64)
    for column in ANCHORS:
        rows.append(pl.DataFrame({"seed": target, "metric": TARGET + column, "value": frame[column]}))
    analysed = frame.with_columns(seed=target).filter(~screened)
    for column in PER_K:
        rows.append(analysed.select("seed", value=pl.col(column)).with_columns(k=pl.int_ranges(1, pl.col("value")
                    .list.len() + 1)).explode("value", "k").with_columns(metric=pl.lit(TARGET + column)))
    return run_summary.canonical(pl.concat(rows, how="diagonal").with_columns(task=pl.lit(LANGUAGE)))


def parts(rows: pl.DataFrame) -> dict[int, dict[str, float]]:
    """The parts ``rows`` hold: index -> {field of :data:`PART_FIELDS`: value}; {} for a whole draw's rows."""
    found = rows.filter((pl.col("task") == LANGUAGE) & pl.col("metric").str.starts_with("part."))
    table: dict[int, dict[str, float]] = {}
    for index, metric, value in found.select("seed", "metric", "value").iter_rows():
        table.setdefault(index, {})[metric.removeprefix("part.")] = value
    return table


def withheld(rows: pl.DataFrame) -> str | None:
    """Why Figure 4's claims cannot be judged from ``rows`` yet: the parts of the draw that are in, where
    some are not (None: a whole draw, or every part in)."""
    found = parts(rows)
    if not found:
        return None
    of, draw = (int(next(iter(found.values()))[key]) for key in ("of", "draw"))
    if len(found) == of:
        return None
    targets = sum(int(part["targets"]) for part in found.values())
    screened = sum(int(part["screened_out"]) for part in found.values())
    return (f"parts of the draw not all there ({len(found)} of {of} in, {parts_text(list(found), of)}: {targets} of "
            f"{draw} drawn targets, {screened} of them screened out)")


def check_one_draw(earlier: pl.DataFrame, rows: pl.DataFrame, source) -> None:
    """The parts of ``earlier`` (the summary ``source``) and ``rows`` are parts of one draw: a
    SummaryError naming the field where they differ in the number of parts or the targets drawn."""
    before, now = parts(earlier), parts(rows)
    whole_before, whole_now = (not found and run_summary.targets(frame) is not None
                               for found, frame in ((before, earlier), (now, rows)))
    if (before and whole_now) or (now and whole_before):
        raise run_summary.SummaryError(f"{source}: Figure 4's rows there are {'parts' if before else 'a whole draw'}"
                                       f"'s, these {'parts' if now else 'a whole draw'}'s; export them into a summary "
                                       "of their own")
    if not before or not now:
        return
    for field in ("of", "draw"):
        was, is_ = next(iter(before.values()))[field], next(iter(now.values()))[field]
        if was != is_:
            raise run_summary.SummaryError(f"{source}: its parts are of a draw with part.{field} = {was:g}, these of "
                                           f"one with {is_:g}; export them into a summary of their own")


def merged(earlier: pl.DataFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """Figure 4's part rows of ``earlier`` (an earlier sitting's summary) whose parts ``rows`` has none of,
    with ``rows``' own (aggregates dropped: :func:`completed` makes them anew)."""
    fresh = parts(rows)
    kept = {index: part for index, part in parts(earlier).items() if index not in fresh}
    spans = [(int(part["first_target"]), int(part["first_target"] + part["targets"])) for part in kept.values()]
    language = earlier.filter(pl.col("task") == LANGUAGE)
    is_part = pl.col("metric").str.starts_with("part.") & pl.col("seed").is_in(list(kept))
    in_span = pl.any_horizontal(pl.col("seed").is_between(start, stop - 1) for start, stop in spans) if spans \
        else pl.lit(False)
    earlier_parts = language.filter(is_part | (pl.col("metric").str.starts_with(TARGET) & in_span))
    return run_summary.canonical(pl.concat([earlier_parts, only_parts(rows)]))


def only_parts(rows: pl.DataFrame) -> pl.DataFrame:
    """Figure 4's part and target rows of ``rows`` (its aggregates left out)."""
    return rows.filter((pl.col("task") == LANGUAGE)
                       & (pl.col("metric").str.starts_with("part.") | pl.col("metric").str.starts_with(TARGET)))


def frame_of(rows: pl.DataFrame, k_max: int) -> pl.DataFrame:
    """The whole draw's influence table as the statistics read it (the loss columns and ``screened_out``),
    one row per drawn target in draw order, from the target rows of every part."""
    targets = rows.filter((pl.col("task") == LANGUAGE) & pl.col("metric").str.starts_with(TARGET))
    frame = (targets.filter(pl.col("k").is_null()).pivot("metric", index="seed", values="value").sort("seed")
             .rename({TARGET + column: column for column in ANCHORS}))
    for column in PER_K:
        at_k = (targets.filter(pl.col("metric") == TARGET + column).sort("seed", "k")
                .group_by("seed", maintain_order=True).agg(pl.col("value").alias(column)))
        frame = frame.join(at_k, on="seed", how="left")
    nulls = pl.lit([None] * k_max, dtype=pl.List(pl.Float64))
    return frame.select(*ANCHORS, *(pl.col(column).fill_null(nulls) for column in PER_K),
                        **{SCREENED_OUT: pl.col(PER_K[0]).list.first().is_null()})


def whole_table(rows: pl.DataFrame, k_max: int, source) -> pl.DataFrame:
    """The whole draw's influence table (:func:`frame_of`) from the summary ``source``'s ``rows``: a
    SummaryError naming the file where it holds no draw in parts (no per-target losses) or not every part."""
    if not parts(rows):
        raise run_summary.SummaryError(f"{source}: no per-target losses to draw Figure 4 from (a summary holds them "
                                       "for a draw analysed in parts, language.analysis.parts)")
    partly = withheld(rows)
    if partly is not None:
        raise run_summary.SummaryError(f"{source}: Figure 4 waits for every part: {partly}")
    return frame_of(rows, k_max)


def completed(rows: pl.DataFrame, spec: dict) -> pl.DataFrame:
    """``rows`` with Figure 4's numbers (:func:`.run_summary.frame_rows`) of the whole draw its parts make,
    where every part is in; else ``rows`` without them (a summary of some parts judges nothing)."""
    found, others = parts(rows), rows.filter(pl.col("task") != LANGUAGE)
    if not found:
        return rows
    own = only_parts(rows)
    if withheld(rows) is not None:
        return run_summary.canonical(pl.concat([others, own]))
    whole = run_summary.frame_rows(spec, frame_of(rows, spec["k_max"]))
    return run_summary.canonical(pl.concat([others, own, whole]))

"""A run's numbers that the paper's findings are judged from, in one long table (:data:`SCHEMA`):
one row per task, variant, scheme, seed, k, length and metric, with its ``value``.

* A synthetic task's figure: each configured run's headline metric per seed and cell, as its
  accuracy table holds it (``value`` null: the seed's training diverged; ``k`` null: a task
  without k_test).
* Figure 4 (task ``language``): at each k, the median fraction of the long-context gain recovered
  by the target's own far tokens (variant ``own``) and by another document's, chosen alike
  (``other``), with its bootstrap interval and the targets it is over (metrics ``median``,
  ``ci_low``, ``ci_high``, ``n_targets``); the targets analysed (metric ``targets``); and the
  figure-spec fields the bootstrap ran with (:data:`BOOTSTRAP`, metric ``spec.<field>``), since the
  numbers hold for those only.
* F4''s paired test (task ``language``, metric :data:`FRACTION`): per target that gains more than
  the gain threshold (L_short - L_long), its own fraction (variant ``own``) and another document's
  (``other``) at F4's k only (``k``: :func:`f4_k`). **The ``seed`` column holds the
  target's row in the influence table (from 0)**, not a seed: it pairs a target's two rows. A
  summary made before F4' has no such rows (F4' reads "no results" there; F4 is judged as before).

A figure job builds these rows from its own inputs (its caption states its finding), ``lengthgen
findings`` from a results folder; ``--export`` writes them as CSV (floats written to round-trip
exactly), a compact summary that can be committed (``docs/findings/``) and judged again with
``--from-summary``: the same verdicts and numbers as the tables it was made from.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ..planning.language_jobs import LANGUAGE  # the task label of Figure 4's rows: the language study's name

SCHEMA = {"task": pl.String, "variant": pl.String, "scheme": pl.String, "seed": pl.Int64, "k": pl.Int32,
          "length": pl.Int32, "metric": pl.String, "value": pl.Float64}
ORDER = ["task", "variant", "scheme", "seed", "k", "length", "metric"]  # rows sorted so: a rewrite is byte-identical
MODEL = ORDER[:4]  # a synthetic task's trained model: its rows go together
OWN, OTHER = "own", "other"
GAIN_COLUMNS = {OWN: "sparse_loss", OTHER: "other_loss"}  # the influence table's loss column of each
GAIN_METRICS = ("n_targets", "median", "ci_low", "ci_high")
F4_K = 4  # F4 and F4' judge the fraction recovered at this k (or the largest k analysed, if smaller)
FRACTION = "fraction"  # a gaining target's recovered fraction at F4's k (F4'; ``seed``: the target's row)
TARGETS = "targets"
BOOTSTRAP = ("gain_threshold", "n_boot", "seed")  # Figure 4's spec fields the numbers were computed with
SUMMARY_SUFFIX = ".csv"  # a run summary's (--export FILE)


class SummaryError(ValueError):
    """A run summary that cannot be read, or that was made with another figure spec."""


def empty() -> pl.DataFrame:
    return pl.DataFrame(schema=SCHEMA)


def canonical(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with exactly the summary's columns and types, in its row order."""
    columns = [pl.col(name).cast(dtype) if name in frame.columns else pl.lit(None, dtype).alias(name)
               for name, dtype in SCHEMA.items()]
    return frame.select(columns).sort(ORDER, nulls_last=True)


def task_rows(spec: dict, tables: list[Path]) -> pl.DataFrame:
    """The rows of the task figure ``spec``'s runs (:func:`.seed_summary.configured`) in the accuracy
    tables ``tables``."""
    from ..evaluation.accuracy_schema import read_accuracy
    from .seed_summary import configured

    frame = read_accuracy(tables).rename({"accuracy": "value"})
    return canonical(configured(spec, frame.select(list(SCHEMA))))


def frame_rows(spec: dict, frame: pl.DataFrame) -> pl.DataFrame:
    """Figure 4's rows (figure spec ``spec``) from the whole draw's influence table ``frame``."""
    from ..language.influence_summary import paired_fractions, recovered_gain

    gains = [recovered_gain(frame, gain_threshold=spec["gain_threshold"], n_boot=spec["n_boot"], seed=spec["seed"],
                            column=column).with_columns(variant=pl.lit(variant))
             for variant, column in GAIN_COLUMNS.items()]
    long = (pl.concat(gains).with_columns(pl.col("n_targets").cast(pl.Float64))
            .unpivot(list(GAIN_METRICS), index=["variant", "k"], variable_name="metric", value_name="value"))
    k = f4_k(spec)
    per_target = (paired_fractions(frame, gain_threshold=spec["gain_threshold"], k=k)
                  .unpivot([OWN, OTHER], index="target", variable_name="variant", value_name="value")
                  .rename({"target": "seed"}).with_columns(k=pl.lit(k), metric=pl.lit(FRACTION)))
    made_with = [(f"spec.{field}", float(spec[field])) for field in BOOTSTRAP]
    whole = pl.DataFrame([(TARGETS, float(frame.height)), *made_with], schema=["metric", "value"], orient="row")
    return canonical(pl.concat([long, per_target, whole], how="diagonal").with_columns(task=pl.lit(LANGUAGE)))


def f4_k(spec: dict) -> int:
    """The k F4 and F4' judge at (Figure 4's spec ``spec``): :data:`F4_K`, or the largest k analysed if
    smaller."""
    return min(F4_K, spec["k_max"])


def gain(rows: pl.DataFrame, variant: str, k: int) -> dict[str, float]:
    """Figure 4's numbers of ``variant`` (:data:`OWN` or :data:`OTHER`) at ``k``: metric -> value."""
    found = rows.filter((pl.col("task") == LANGUAGE) & (pl.col("variant") == variant) & (pl.col("k") == k)
                        & pl.col("metric").is_in(GAIN_METRICS))
    return dict(zip(found["metric"], found["value"], strict=False))


def paired(rows: pl.DataFrame, k: int) -> pl.DataFrame:
    """F4''s per-target fractions at ``k`` (:data:`FRACTION` rows): columns ``target``, ``own``,
    ``other``, one row per gaining target in target order; no rows in a summary made before F4'. A
    SummaryError where a target has one side only."""
    found = rows.filter((pl.col("task") == LANGUAGE) & (pl.col("metric") == FRACTION) & (pl.col("k") == k))
    sides = {variant: found.filter(pl.col("variant") == variant).select(target="seed", **{variant: "value"})
             for variant in (OWN, OTHER)}
    both = sides[OWN].join(sides[OTHER], on="target", how="full", coalesce=True).sort("target")
    lone = both.filter(pl.col(OWN).is_null() | pl.col(OTHER).is_null())
    if lone.height:
        missing = OWN if lone[OWN][0] is None else OTHER
        raise SummaryError(f"Figure 4's per-target fractions at k = {k}: target {lone['target'][0]} has no "
                           f"{missing!r} fraction; export the summary again")
    return both.select("target", OWN, OTHER)


def targets(rows: pl.DataFrame) -> int | None:
    """How many targets Figure 4's analysis holds (None: no influence table among ``rows``)."""
    found = rows.filter((pl.col("task") == LANGUAGE) & (pl.col("metric") == TARGETS))["value"]
    return int(found[0]) if len(found) else None


def check_made_with(rows: pl.DataFrame, spec: dict, source: Path) -> None:
    """Figure 4's rows of the summary ``source`` were computed with the figure spec ``spec``'s
    bootstrap (:data:`BOOTSTRAP`); a SummaryError naming the field if not."""
    for field in BOOTSTRAP:
        made = rows.filter((pl.col("task") == LANGUAGE) & (pl.col("metric") == f"spec.{field}"))["value"]
        if len(made) and made[0] != float(spec[field]):
            raise SummaryError(f"{source}: Figure 4's numbers were computed with {field}={made[0]:g}, the "
                               f"config has language.figure.{field}={spec[field]:g}; export the summary again")


def write(rows: pl.DataFrame, path: Path) -> None:
    """``rows`` as the CSV run summary ``path`` (atomically)."""
    from ..storage.atomic import write_text

    write_text(Path(path), canonical(rows).write_csv())


def read(path: Path) -> pl.DataFrame:
    """The run summary ``path``, checked: exactly the columns of :data:`SCHEMA` (one line naming the
    file and the column where not)."""
    try:
        header = pl.read_csv(path, n_rows=0).columns
        missing = [name for name in SCHEMA if name not in header]
        if missing or len(header) != len(SCHEMA):
            extra = [name for name in header if name not in SCHEMA]
            raise SummaryError(f"{path}: "
                               + (f"no column {missing[0]!r}" if missing else f"unknown column {extra[0]!r}")
                               + f" (a run summary has {', '.join(SCHEMA)})")
        return pl.read_csv(path, schema=SCHEMA)
    except (OSError, pl.exceptions.PolarsError) as err:
        raise SummaryError(f"{path}: not a run summary ({str(err).splitlines()[0]})") from None

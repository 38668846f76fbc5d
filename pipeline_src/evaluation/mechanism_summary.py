"""The mechanism tables of several models in one table, for reading without a figure: one row per
run (task, variant, scheme, k_train), cell beyond length (k_test for sparse parity) and length; per
layer the dependency mass of its best head, then the mass uniform attention would give, and the
relevant and irrelevant flip rates. Each entry is the mean over seeds, and with several seeds the
seeds' range after it, "mean (lowest-highest)". Printed as Markdown by ``lengthgen mechanism-table``.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ..tasks import get_task
from . import mechanism_schema
from .accuracy_schema import table_cell_columns
from .mechanism_schema import table_paths

RUN = ["task", "variant", "scheme", "k_train"]


def _read(folder: Path, name: str) -> pl.DataFrame:
    path = table_paths(folder)[name]
    if not path.is_file():
        raise ValueError(f"{folder}: no {path.name}; give folders results/mechanism/<task>/<scheme>/<variant>/seed<S>")
    task = pl.read_parquet(path, columns=["task"], n_rows=1)
    cells = get_task(task["task"][0]).cell_columns if len(task) else ("length",)
    return mechanism_schema.read(path, name, cells)


def mechanism_summary(folders: list[Path], lengths: list[int] | None = None) -> pl.DataFrame:
    """The summary of the models whose mechanism tables are in ``folders`` (only ``lengths`` if given):
    means over seeds, as text with the seeds' range where there are several seeds."""
    attention = pl.concat([_read(folder, "attention") for folder in folders], how="diagonal")
    flips = pl.concat([_read(folder, "flips") for folder in folders], how="diagonal")
    if attention.is_empty():
        raise ValueError(f"no mechanism rows in the {len(folders)} given folders (diverged runs only?)")
    cells = [column for column in table_cell_columns(get_task(attention["task"][0]).cell_columns)
             if column in attention.columns]
    keys = [*RUN, *cells]
    best = (attention.filter(pl.col("queries") > 0)
            .group_by([*keys, "seed", "layer"])
            .agg(pl.col("dependency_mass").max(), pl.col("uniform_mass").first())
            .pivot(on="layer", index=[*keys, "seed"], values=["dependency_mass", "uniform_mass"]))
    layers = sorted(attention["layer"].unique().to_list())
    per_seed = best.select(*keys, "seed",
                           *(pl.col(f"dependency_mass_{layer}").alias(f"layer {layer}") for layer in layers),
                           pl.col(f"uniform_mass_{layers[0]}").alias("uniform"))
    per_seed = per_seed.join(flips.select(*keys, "seed", "relevant_flip_rate", "irrelevant_flip_rate"),
                             on=[*keys, "seed"], how="left", nulls_equal=True)
    values = [*(f"layer {layer}" for layer in layers), "uniform", "relevant_flip_rate", "irrelevant_flip_rate"]
    summary = (per_seed.group_by(keys)
               .agg(pl.col("seed").n_unique().alias("seeds"),
                    *(pl.col(value).mean() for value in values),
                    *(pl.col(value).min().alias(f"{value} min") for value in values),
                    *(pl.col(value).max().alias(f"{value} max") for value in values))
               .sort(keys, nulls_last=True))
    if lengths:
        summary = summary.filter(pl.col("length").is_in(lengths))
    if summary["seeds"].max() > 1:  # the mean, then the seeds' range
        summary = summary.with_columns(pl.format("{} ({}-{})", *(pl.col(name).round(2).cast(pl.String)
                                                                 for name in (value, f"{value} min", f"{value} max")))
                                       .alias(value) for value in values)
    unused = [key for key in keys if summary[key].null_count() == len(summary)]
    return summary.select(*(key for key in keys if key not in unused), "seeds", *values)


def depth_summary(folders: list[Path], lengths: list[int] | None = None) -> pl.DataFrame:
    """Per run, length and depth (the hops a sample needs; tasks whose samples have one): the samples
    analysed over every seed, the share with no error (exact match), and among those with one, the
    mean index of the first wrong response token, and the shares where a position ID goes wrong
    before the token (``id first``), the token before the ID (``token first``), or both at one index
    (``both``); schemes without a position head have only ``token first``."""
    errors = pl.concat([_read(folder, "first_errors") for folder in folders], how="diagonal")
    errors = errors.filter(pl.col("depth").is_not_null())
    if lengths:
        errors = errors.filter(pl.col("length").is_in(lengths))
    if errors.is_empty():
        raise ValueError(f"no analysed sample with a depth in the {len(folders)} given folders")
    token, position = pl.col("first_token_error"), pl.col("first_position_error")
    wrong = pl.col("first_error").is_not_null()
    keys = ["task", "variant", "scheme", "length", "depth"]
    return (errors.group_by(keys)
            .agg(pl.len().alias("samples"), pl.col("seed").n_unique().alias("seeds"),
                 (~wrong).mean().round(2).alias("exact"),
                 pl.col("first_error").mean().round(2).alias("first error at"),
                 *(((condition & wrong).sum() / wrong.sum()).round(2).alias(name) for name, condition in (
                     ("id first", position.is_not_null() & (token.is_null() | (position < token))),
                     ("token first", token.is_not_null() & (position.is_null() | (token < position))),
                     ("both", token.is_not_null() & (token == position)))))
            .sort(keys))

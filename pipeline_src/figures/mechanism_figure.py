"""A task's mechanism figure: where length generalization stops, beside what the attention does.

Panels, each against length with one line per run (variant, scheme): the headline accuracy of the
task's figure (exact match for scratchpad runs); per layer, the attention mass of the layer's best
head on the dependency sets (the head with the most mass, per model and length), with the mass
uniform attention would give as a grey line (per variant); and, among the wrong responses, where the
first wrong token falls (its index over the response length: 0 at the first token, near 1 at the
end); and, for a task whose samples have a depth (variable assignment: the hops its query chain
needs), exact match against depth over every length, the depths seen at the training lengths
shaded (the law that draws them is the same in training). Lines are means over seeds, each seed
first averaged over a task's other cell columns (k_test for sparse parity); bands span the seeds'
own values.
"""

from __future__ import annotations

import functools
from pathlib import Path

import polars as pl

from ..evaluation import accuracy_schema, mechanism_schema
from ..evaluation.accuracy_schema import read_accuracy
from . import lines
from .shared import grid_figure, note_diverged, save_figure, suptitle

RUN = ["variant", "scheme", "seed"]


def seed_band(frame: pl.DataFrame, value: str) -> pl.DataFrame:
    """Per (variant, scheme, length): the mean of ``value`` over seeds (each seed first averaged over
    the other cell columns), and the seeds' extremes as ``low`` and ``high``."""
    per_seed = frame.group_by([*RUN, "length"]).agg(pl.col(value).mean())
    return (per_seed.group_by(["variant", "scheme", "length"])
            .agg(mean=pl.col(value).mean(), low=pl.col(value).min(), high=pl.col(value).max())
            .sort("variant", "scheme", "length"))


def best_heads(attention: pl.DataFrame, cells: tuple[str, ...]) -> pl.DataFrame:
    """Per model, cell (its columns ``cells``) and layer: the largest dependency mass of a head
    (``best``) and the mass uniform attention would give (``uniform``, the same for every head)."""
    return (attention.filter(pl.col("queries") > 0)
            .group_by([*RUN, *cells, "layer"])
            .agg(best=pl.col("dependency_mass").max(), uniform=pl.col("uniform_mass").first()))


def by_depth(first_errors: pl.DataFrame, train_max: int) -> tuple[pl.DataFrame, tuple[int, int]] | None:
    """Exact match of the analysed samples (no first error) against their depth, pooled over every
    length, as :func:`seed_band` summarises it (the depth in its ``length`` column, which the line
    drawing plots against), and the depths the training lengths show; None where no sample has a
    depth."""
    samples = first_errors.filter(pl.col("depth").is_not_null())
    if samples.is_empty():
        return None
    trained = samples.filter(pl.col("length") <= train_max)["depth"]
    right = samples.select(*RUN, length=pl.col("depth"), right=pl.col("first_error").is_null().cast(pl.Float64))
    shown = (int(trained.min()), int(trained.max())) if len(trained) else (0, 0)
    return seed_band(right, "right"), shown


def plot(spec: dict, accuracy: list[Path], mechanism: list[dict[str, Path]], outputs: list[Path], rule: str) -> None:
    """Draw the mechanism figure of ``spec["task"]`` from each run's accuracy table and mechanism
    tables (``mechanism``: per run, its tables by name)."""
    from ..tasks import get_task

    task = get_task(spec["task"])
    frame = read_accuracy(accuracy)
    tables = {name: pl.concat([mechanism_schema.read(paths[name], name, task.cell_columns) for paths in mechanism])
              for name in ("attention", "flips", "first_errors")}
    heads = best_heads(tables["attention"], accuracy_schema.table_cell_columns(task.cell_columns))
    layers = sorted(set(heads["layer"])) or [0]
    runs, with_variant = lines.runs_of(spec), len(spec["runs"]) > 1
    styles = lines.variant_styles(spec)
    draw = functools.partial(lines.draw, runs=runs, spec=spec, with_variant=with_variant, styles=styles)
    depths = by_depth(tables["first_errors"], spec["train_lengths"][1])
    panels = len(layers) + 3 + (depths is not None)
    fig, _, axes = grid_figure(panels, (3.4, 3.2), extra_width=1.6)

    exact = frame.filter((pl.col("metric") == "exact_match") & pl.col("accuracy").is_not_null())
    draw(axes[0], seed_band(exact, "accuracy"), title="exact match")
    for ax, layer in zip(axes[1:], layers, strict=False):
        part = heads.filter(pl.col("layer") == layer)
        draw(ax, seed_band(part, "best"), title=f"layer {layer}: best head's mass on dependencies",
             ylabel="attention mass")
        uniform = part.group_by("variant", "length").agg(pl.col("uniform").mean()).sort("variant", "length")
        for (variant,), line in uniform.group_by(["variant"], maintain_order=True):
            ax.plot(line["length"], line["uniform"], color="0.55", ls=styles.get(variant, "-"), lw=1.2,
                    label=f"uniform attention{f' ({variant})' if with_variant else ''}")
    draw(axes[len(layers) + 1], seed_band(tables["flips"].drop_nulls("relevant_flip_rate"), "relevant_flip_rate"),
         title="a relevant token changed: prediction flips", ylabel="flip rate")
    wrong = tables["first_errors"].filter(pl.col("first_error").is_not_null()).with_columns(
        where=pl.col("first_error") / pl.col("response_length"))
    last = panels - 1 - (depths is not None)
    draw(axes[last], seed_band(wrong, "where"), title="first wrong token (wrong responses)",
         ylabel="index / response length")
    for ax in axes:
        ax.set_xlabel("length")
    if depths is not None:
        summary, shown = depths
        draw(axes[last + 1], summary, spec={**spec, "train_lengths": shown, "x_scale": "linear"},
             title="exact match against depth (every length)")
        axes[last + 1].set_xlabel("depth: hops the sample needs")
    handles, labels = axes[1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right center", title="scheme", fontsize=8)
    suptitle(fig, f"{task.summary.rstrip('.')}: accuracy and attention on the tokens each output depends on")
    note_diverged(fig, frame)
    save_figure(fig, outputs, rule, spec, [*accuracy, *(paths[name] for paths in mechanism for name in sorted(paths))])

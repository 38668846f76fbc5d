"""Every plotted run keeps its own look: no two labelled lines of a panel share colour, line style
and marker, so a run whose values equal another's is still seen (it is also dodged along the
length axis: tests/test_figure_bands.py)."""

from __future__ import annotations

import itertools

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402

from pipeline_src.figures import lines  # noqa: E402
from pipeline_src.figures.shared import mean_over_seeds  # noqa: E402
from pipeline_src.schemes import SCHEMES  # noqa: E402

VARIANTS = ["scratchpad", "direct", "k2", "k4"]  # a task's variants: with or without a scratchpad, or K_train


def looks(ax) -> list[tuple]:
    """(colour, line style, marker) of every labelled line of ``ax`` (seed curves and guides have none)."""
    return [(to_rgba(line.get_color()), line.get_linestyle(), line.get_marker()) for line in ax.lines
            if not line.get_label().startswith("_")]


def identical_runs(runs: list[tuple[str, str]]) -> pl.DataFrame:
    """Accuracy rows of ``runs`` that all give the same values (the case where lines would hide)."""
    rows = [(variant, scheme, seed, length, 100, 90)
            for variant, scheme in runs for seed in (0, 1) for length in (5, 10, 20)]
    return pl.DataFrame(rows, schema={"variant": pl.String, "scheme": pl.String, "seed": pl.Int64, "length": pl.Int32,
                                      "n": pl.Int64, "correct": pl.Int64}, orient="row"
                        ).with_columns(accuracy=pl.col("correct") / pl.col("n"))


@pytest.mark.parametrize("variants", [VARIANTS[:2], VARIANTS[2:]], ids=["scratchpad/direct", "k_train"])
def test_every_run_of_every_scheme_and_variant_has_its_own_look(variants):
    runs = list(itertools.product(variants, SCHEMES))
    spec = {"runs": {variant: list(SCHEMES) for variant in variants}, "train_lengths": [5, 10], "x_scale": "linear"}
    frame = identical_runs(runs)
    _, ax = plt.subplots()
    lines.draw(ax, mean_over_seeds(frame, ["variant", "scheme", "length"]), runs, spec, title="t",
               styles=lines.variant_styles(spec))
    drawn = looks(ax)
    plt.close("all")
    assert len(drawn) == len(runs)
    assert len(set(drawn)) == len(drawn), "two runs share colour, line style and marker"
    xs = [tuple(line.get_xdata()) for line in ax.lines if not line.get_label().startswith("_")]
    assert len(set(xs)) == len(xs), "two runs are drawn at the same positions"


def test_the_check_sees_two_runs_that_look_alike():
    _, ax = plt.subplots()
    ax.plot([1, 2], [0, 1], color="tab:red", ls="-", marker="o", label="a")
    ax.plot([1, 2], [0, 1], color="tab:red", ls="-", marker="o", label="b")
    ax.plot([1, 2], [0, 1], color="tab:red", lw=0.5)  # unlabelled: a seed's own curve
    drawn = looks(ax)
    plt.close("all")
    assert len(drawn) == 2 and len(set(drawn)) == 1

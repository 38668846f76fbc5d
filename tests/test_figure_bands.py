"""The band every accuracy figure draws: the 95% Wilson interval of the seeds' pooled counts, the
same whatever the number of seeds; and runs stay apart on the length axis (dodge)."""

from __future__ import annotations

import polars as pl
import pytest

from pipeline_src.evaluation.stats import wilson_interval
from pipeline_src.figures import lines
from pipeline_src.figures.shared import mean_over_seeds


def table(rows: list[tuple[int, int, int | None]]) -> pl.DataFrame:
    """(seed, n, correct) rows of one cell; correct None: a diverged seed."""
    return pl.DataFrame({"seed": [r[0] for r in rows], "length": [10] * len(rows), "n": [r[1] for r in rows],
                         "correct": [r[2] for r in rows]},
                        schema={"seed": pl.Int64, "length": pl.Int32, "n": pl.Int64, "correct": pl.Int64}
                        ).with_columns(accuracy=pl.col("correct") / pl.col("n"))


@pytest.mark.parametrize("rows", [[(0, 100, 70)], [(0, 100, 70), (1, 100, 90)],
                                  [(0, 50, 10), (1, 50, 20), (2, 50, None)]])
def test_band_is_the_wilson_interval_of_the_finished_seeds_pooled(rows):
    summary = mean_over_seeds(table(rows), ["length"])
    finished = [r for r in rows if r[2] is not None]
    low, high = wilson_interval(sum(r[2] for r in finished), sum(r[1] for r in finished))
    assert summary["low"][0] == pytest.approx(float(low)) and summary["high"][0] == pytest.approx(float(high))
    assert summary["seeds"][0] == len(finished)
    assert summary["mean"][0] == pytest.approx(sum(r[2] / r[1] for r in finished) / len(finished))


def test_every_seed_diverged_leaves_no_band():
    summary = mean_over_seeds(table([(0, 20, None)]), ["length"])
    assert summary["low"][0] is None and summary["high"][0] is None and summary["seeds"][0] == 0


@pytest.mark.parametrize("scale", ["log", "linear"])
def test_runs_are_dodged_symmetrically_and_slightly(scale):
    lengths = [5, 10, 100]
    left, middle, right = (lines.dodged(__import__("numpy").array([10.0]), slot, lengths, scale)[0]
                           for slot in (-1, 0, 1))
    assert middle == 10.0 and left < 10.0 < right
    assert abs(right - 10.0) < 0.05 * 10.0 if scale == "log" else abs(right - 10.0) < 0.01 * (100 - 5)


@pytest.mark.parametrize("seeds, thin", [(1, 0), (2, 2), (3, 3), (4, 0)])
def test_few_seeds_draw_their_own_thin_curves(seeds, thin):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [(seed, length, 100, 50 + seed) for seed in range(seeds) for length in (5, 10, 20)]
    frame = pl.DataFrame(rows, schema={"seed": pl.Int64, "length": pl.Int32, "n": pl.Int64, "correct": pl.Int64},
                         orient="row").with_columns(variant=pl.lit("scratchpad"), scheme=pl.lit("ppc"),
                                                    k=pl.lit(None, pl.Int32),
                                                    accuracy=pl.col("correct") / pl.col("n"))
    summary = mean_over_seeds(frame, ["variant", "scheme", "length"])
    _, ax = plt.subplots()
    lines.draw(ax, summary, [("scratchpad", "ppc")], {"train_lengths": [5, 10], "x_scale": "linear"}, title="t",
               per_seed=frame)
    assert len(ax.lines) == 1 + thin  # the mean, and each seed's own curve when there are few
    plt.close("all")


@pytest.mark.parametrize("panels, columns", [(1, 1), (2, 2), (3, 3), (4, 2), (5, 3), (6, 3), (7, 2), (8, 2), (9, 3)])
def test_a_grid_of_panels_leaves_the_fewest_cells_empty_in_at_most_three_columns(panels, columns):
    from pipeline_src.figures.shared import grid_columns

    assert grid_columns(panels) == columns


@pytest.mark.parametrize("rows, thin", [
    ([(0, 10, 5), (1, 10, 6)], 2),
    ([(0, 10, 5), (1, 10, 6), (2, 10, None)], 2),  # a diverged seed has no curve
    ([(0, 10, 5), (1, 10, None)], 0),  # one finished seed: its curve is the mean
    ([(s, 10, 5) for s in range(4)], 0),  # many seeds: the band says enough
])
def test_seed_curves_of_figures_drawing_their_own_lines(rows, thin):
    """Figure 1 and the sparse-parity-scratchpad figure draw their seeds through the same helper."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    lines.seed_curves(ax, table(rows), 0.0, [10], "linear", "tab:blue")
    assert len(ax.lines) == thin
    plt.close(fig)

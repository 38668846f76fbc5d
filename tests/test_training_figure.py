"""A task's training-curve figure: one line per model (seed) in every panel, in its scheme's colour and
its variant's style; a diverged run drawn up to its last logged step and named; long logs thinned."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from matplotlib.colors import to_rgba

from pipeline_src import datasets
from pipeline_src.cli import main
from pipeline_src.evaluation.accuracy_schema import AccuracySchema
from pipeline_src.figures import training_by_k
from pipeline_src.figures import training_curves as training
from pipeline_src.provenance.sidecars import attach
from pipeline_src.schemes import SCHEMES
from tests.helpers import accuracy_file

FIGURE_CONFIG = {"task": "parity_scratchpad", "runs": {"scratchpad": ["ppc", "rope_pose"], "direct": ["rope_pose"]},
        "seeds": [0, 1], "x_scale": "linear", "train_lengths": [1, 20]}
STEPS = {("scratchpad", "ppc", 0): 1200, ("scratchpad", "rope_pose", 1): 11}  # a long log; a diverged run's
DIVERGED = ("scratchpad", "rope_pose", 1)


def write_log(path, variant: str, scheme: str, seed: int, steps: int) -> None:
    """A training log of ``steps`` steps with the provenance record naming its run."""
    step = np.arange(1, steps + 1)
    frame = pl.DataFrame({"step": step, "loss": 2.0 / np.sqrt(step), "accuracy": 1 - 1 / np.sqrt(step),
                          "position_accuracy": np.full(steps, np.nan), "lr": np.full(steps, 1e-3),
                          "grad_norm": np.ones(steps), "seconds": step * 0.01})
    run = {"task": "parity_scratchpad", "variant": variant, "scheme": scheme, "seed": seed}
    record = {"rule": "train", "config": run}
    path.parent.mkdir(parents=True, exist_ok=True)
    attach(path, record, lambda tmp, meta: frame.write_parquet(tmp, metadata=meta))


@pytest.fixture
def models(tmp_path):
    """Every model of FIGURE_CONFIG: its accuracy table and training log (seed 1 of scratchpad rope_pose diverged)."""
    tables, logs = [], []
    for variant, schemes in FIGURE_CONFIG["runs"].items():
        for scheme in schemes:
            for seed in FIGURE_CONFIG["seeds"]:
                run = (variant, scheme, seed)
                folder = tmp_path / variant / scheme / f"seed{seed}"
                folder.mkdir(parents=True)
                table = datasets.read(accuracy_file(folder / "accuracy.parquet", scheme, seed, {5: 9}), AccuracySchema)
                unscored = [pl.lit(None, table[column].dtype).alias(column)
                            for column in ("correct", "accuracy", "ci_low", "ci_high")] if run == DIVERGED else []
                datasets.write(table.with_columns(pl.lit(variant).alias("variant"), *unscored),
                               folder / "accuracy.parquet", AccuracySchema, {"format": "test"})
                write_log(folder / "train_log.parquet", *run, STEPS.get(run, 30))
                tables.append(folder / "accuracy.parquet")
                logs.append(folder / "train_log.parquet")
    return tables, logs


def test_every_model_is_a_line_of_its_schemes_colour_and_its_variants_style(models, tmp_path, monkeypatch):
    drawn = []
    real = training.save_figure
    monkeypatch.setattr(training, "save_figure", lambda fig, *args: (drawn.append(fig), real(fig, *args)))
    outputs = [tmp_path / "training_figure2.png", tmp_path / "training_figure2.pdf"]
    training.plot(FIGURE_CONFIG, *models, outputs, rule="test")
    for path in outputs:
        assert path.stat().st_size > 0 and (path.parent / f"{path.name}.prov.json").exists()
    (fig,) = drawn
    assert len(fig.axes) == 4  # loss and accuracy (rows) of ppc and rope_pose (columns)
    for ax, scheme in zip(fig.axes, ["ppc", "rope_pose"] * 2, strict=False):
        models_drawn = {line.get_gid(): line for line in ax.lines if not line.get_gid().startswith("diverged")}
        expected = {f"{variant}/{name}/seed{seed}" for variant, schemes in FIGURE_CONFIG["runs"].items()
                    for name in schemes if name == scheme for seed in FIGURE_CONFIG["seeds"]}
        assert set(models_drawn) == expected, ax.get_title()
        for gid, line in models_drawn.items():
            assert to_rgba(line.get_color()) == to_rgba(SCHEMES[scheme].colour)
            assert line.get_linestyle() == ("--" if gid.startswith("direct") else "-")
    rope_loss = fig.axes[1]
    diverged = {line.get_gid(): line for line in rope_loss.lines}
    assert list(diverged["scratchpad/rope_pose/seed1"].get_xdata())[-1] == 11  # what the log has
    assert list(diverged["diverged scratchpad/rope_pose/seed1"].get_xdata()) == [11]
    long = {line.get_gid(): line for line in fig.axes[0].lines}["scratchpad/ppc/seed0"]
    assert len(long.get_xdata()) <= training.MAX_POINTS and list(long.get_xdata())[-1] == 1200
    assert any("parity_scratchpad/rope_pose/scratchpad seed1" in text.get_text() for text in fig.texts)


def test_thinning_averages_consecutive_steps_and_keeps_short_logs_whole():
    log = pl.DataFrame({"step": range(1, 11), "loss": [float(i) for i in range(10)], "accuracy": [0.5] * 10})
    assert training.thinned(log, points=20).equals(log)
    thin = training.thinned(log, points=4)  # groups of 3 steps
    assert thin["step"].to_list() == [3, 6, 9, 10] and thin["loss"].to_list() == [1.0, 4.0, 7.0, 9.0]


def test_the_plot_command_draws_the_training_figure_beside_the_task_figure(models, tmp_path):
    tables, logs = models
    template = tmp_path / "training.rst"
    template.write_text("Training curves.\n")
    args = ["plot", "figure2", "--spec", json.dumps(FIGURE_CONFIG), "--out", str(tmp_path / "figure2.png")]
    drawn = [*args, *(option for log in logs for option in ("--training-log", str(log))),
             "--training-out", str(tmp_path / "training_figure2.png"), *map(str, tables)]
    done = CliRunner().invoke(main, drawn)
    assert done.exit_code == 0, done.output
    assert (tmp_path / "figure2.png").stat().st_size > 0 and (tmp_path / "training_figure2.png").stat().st_size > 0
    alone = CliRunner().invoke(main, [*args, "--training-log", str(logs[0]), *map(str, tables)])
    assert alone.exit_code != 0 and "--training-log and --training-out go together" in alone.output


def test_a_log_without_its_runs_record_is_named(tmp_path):
    path = tmp_path / "train_log.parquet"
    attach(path, {"config": {"task": "parity_scratchpad"}}, lambda tmp, meta: pl.DataFrame({"step": [1]}).write_parquet(
        tmp, metadata=meta))
    with pytest.raises(ValueError, match=f"{path}: its provenance record names no variant, scheme, seed"):
        training.read_log(path)


def write_k_log(path, variant: str, seed: int, steps: int, k_train: int, learned_from: dict) -> None:
    """A sparse parity log counting 4 tokens per k at each step: k is drawn from step ``learned_from[k]``
    on, all right from 100 steps later."""
    step = np.arange(1, steps + 1)
    scored = [[4 if s >= learned_from[k] else 0 for k in range(1, k_train + 1)] for s in step]
    correct = [[4 if s >= learned_from[k] + 100 else 2 * (n > 0) for k, n in enumerate(row, start=1)]
               for s, row in zip(step, scored, strict=False)]
    frame = pl.DataFrame({"step": step, "loss": 1 / np.sqrt(step), "accuracy": np.full(steps, 0.5),
                          "k_correct": correct, "k_scored": scored},
                         schema_overrides={"k_correct": pl.List(pl.Int64), "k_scored": pl.List(pl.Int64)})
    run = {"task": "sparse_parity", "variant": variant, "scheme": "rope_pose", "seed": seed}
    path.parent.mkdir(parents=True, exist_ok=True)
    attach(path, {"rule": "train", "config": run}, lambda tmp, meta: frame.write_parquet(tmp, metadata=meta))


def test_logs_that_count_per_k_get_a_panel_per_model_with_a_line_per_k(tmp_path, monkeypatch):
    """Two K_train and two seeds: four panels below the loss and accuracy, each a line per k of its
    K_train, a k's line beginning where the curriculum first drew it (NaN before)."""
    spec = {"task": "sparse_parity", "runs": {"k2": ["rope_pose"], "k3": ["rope_pose"]}, "seeds": [0, 1],
            "x_scale": "linear", "train_lengths": [20, 50]}
    tables, logs = [], []
    for variant, k_train in (("k2", 2), ("k3", 3)):
        for seed in (0, 1):
            folder = tmp_path / variant / f"seed{seed}"
            folder.mkdir(parents=True)
            table = datasets.read(accuracy_file(folder / "accuracy.parquet", "rope_pose", seed, {20: 9}),
                                  AccuracySchema)
            datasets.write(table.with_columns(pl.lit(variant).alias("variant")), folder / "accuracy.parquet",
                           AccuracySchema, {"format": "test"})
            write_k_log(folder / "train_log.parquet", variant, seed, 1000, k_train, {1: 1, 2: 301, 3: 601})
            tables.append(folder / "accuracy.parquet")
            logs.append(folder / "train_log.parquet")
    drawn = []
    real = training.save_figure
    monkeypatch.setattr(training, "save_figure", lambda fig, *args: (drawn.append(fig), real(fig, *args)))
    training.plot(spec, tables, logs, [tmp_path / "training_figure1.png"], rule="test")
    (fig,) = drawn
    top, bottom = fig.subfigs
    assert len(top.axes) == 2 and len(bottom.axes) == 4
    titles = [ax.get_title() for ax in bottom.axes]
    assert titles == [f"rope_pose, K_train={k}, seed {seed}" for k in (2, 3) for seed in (0, 1)]
    k3 = {line.get_gid(): line for line in bottom.axes[2].lines if line.get_gid()}
    assert set(k3) == {f"k3/rope_pose/seed0 k={k}" for k in (1, 2, 3)}
    k3_line = k3["k3/rope_pose/seed0 k=3"]
    x, y = np.asarray(k3_line.get_xdata()), np.asarray(k3_line.get_ydata(), dtype=float)
    assert np.isnan(y[x < 600]).all() and y[-1] == 1.0 and y[x > 600][0] == 0.5


def test_binned_pools_the_counts_of_consecutive_steps():
    log = pl.DataFrame({"step": [1, 2, 3, 4], "k_correct": [[1, 0], [3, 0], [0, 0], [2, 1]],
                        "k_scored": [[2, 0], [4, 0], [0, 0], [2, 2]]})
    steps, accuracy = training_by_k.binned(log)
    assert steps.tolist() == [1, 2, 3, 4]
    assert np.allclose(accuracy[:, 0], [0.5, 0.75, np.nan, 1.0], equal_nan=True)



def test_binned_pools_whole_groups_of_steps(monkeypatch):
    log = pl.DataFrame({"step": [1, 2, 3, 4], "k_correct": [[1, 0], [3, 0], [0, 0], [2, 1]],
                        "k_scored": [[2, 0], [4, 0], [0, 0], [2, 2]]})
    monkeypatch.setattr(training_by_k, "BINS", 2)
    steps, accuracy = training_by_k.binned(log)
    assert steps.tolist() == [2, 4] and np.allclose(accuracy, [[4 / 6, np.nan], [1.0, 0.5]], equal_nan=True)

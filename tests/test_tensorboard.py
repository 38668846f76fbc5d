"""`lengthgen tensorboard`: every training log under a results folder as TensorBoard event files, one
run per model; without the optional tensorboard package, a one-line error naming the extra."""

from __future__ import annotations

import math

import polars as pl
import pytest
from click.testing import CliRunner

from pipeline_src.cli import main
from pipeline_src.planning import paths


def write_log(path, steps: int, position_accuracy: float = math.nan) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pl.DataFrame({"step": range(1, steps + 1), "loss": [2.0 / s for s in range(1, steps + 1)],
                  "accuracy": [0.5] * steps, "position_accuracy": [position_accuracy] * steps, "lr": [1e-3] * steps,
                  "grad_norm": [1.0] * steps, "seconds": [0.1 * s for s in range(1, steps + 1)]}).write_parquet(path)


@pytest.fixture
def results(tmp_path):
    """Two synthetic models (one ppc, with a position accuracy) and a language model with its held-out log."""
    results = tmp_path / "results"
    write_log(paths.under(results, paths.train_outputs(task="parity_scratchpad", scheme="ppc", variant="scratchpad",
                                                       seed=0)["log_table"]), 4, position_accuracy=0.25)
    write_log(paths.under(results, paths.train_outputs(task="sparse_parity", scheme="rope", variant="k2",
                                                       seed=1)["log_table"]), 3)
    language = paths.language_train_outputs("main")
    write_log(paths.under(results, language["log_table"]), 4)
    pl.DataFrame({"step": [2, 4], "heldout_loss": [3.0, 2.5], "heldout_tokens": [100, 100]}).write_parquet(
        paths.under(results, language["heldout_table"]))
    return results


def test_every_model_is_a_run_with_a_scalar_per_log_column(results, tmp_path):
    pytest.importorskip("tensorboard", reason="the optional tensorboard extra is not installed")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out = tmp_path / "tensorboard"
    for _ in range(2):  # a second export replaces the first
        done = CliRunner().invoke(main, ["tensorboard", str(results), str(out)])
        assert done.exit_code == 0, done.output
    runs = {"parity_scratchpad/ppc/scratchpad/seed0": 4, "sparse_parity/rope/k2/seed1": 3, "language/main": 4}
    assert sorted(str(p.parent.relative_to(out)) for p in out.rglob("events.out.tfevents.*")) == sorted(runs)
    for run, steps in runs.items():
        events = EventAccumulator(str(out / run))
        events.Reload()
        tags = set(events.Tags()["scalars"])
        assert {"loss", "accuracy", "lr", "grad_norm", "seconds"} <= tags
        assert ("position_accuracy" in tags) == ("ppc" in run)  # NaN (no position head) left out
        assert [event.step for event in events.Scalars("loss")] == list(range(1, steps + 1))
        assert events.Scalars("loss")[1].value == pytest.approx(1.0)
        times = [event.wall_time for event in events.Scalars("loss")]
        assert times[1] - times[0] == pytest.approx(0.1, abs=1e-3)  # the log's training time
    held_out = EventAccumulator(str(out / "language/main"))
    held_out.Reload()
    assert [(e.step, e.value) for e in held_out.Scalars("heldout_loss")] == [(2, 3.0), (4, 2.5)]


def test_without_the_tensorboard_package_the_command_names_the_extra(results, tmp_path, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "torch.utils.tensorboard", None)  # as if not installed
    done = CliRunner().invoke(main, ["tensorboard", str(results), str(tmp_path / "out")])
    assert done.exit_code == 1
    assert done.output.strip().splitlines() == [
        "Error: TensorBoard export needs the tensorboard package: pip install 'lengthgen[tensorboard]'"]


def test_a_folder_without_training_logs_is_named(tmp_path):
    pytest.importorskip("tensorboard", reason="the optional tensorboard extra is not installed")
    done = CliRunner().invoke(main, ["tensorboard", str(tmp_path), str(tmp_path / "out")])
    assert done.exit_code == 1 and f"{tmp_path}: no training log" in done.output

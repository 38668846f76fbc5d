"""The curriculum over k (train.curriculum) and the training log's accuracy per k: which samples a
batch draws, when k_max rises, that a run with it resumes exactly, that a finished curriculum is the
paper's law, and that the config names a curriculum where it cannot apply."""

from __future__ import annotations

import json
import re

import polars as pl
import pytest
import torch
from safetensors.torch import load_file

from pipeline_src.config.layers import ConfigError
from pipeline_src.planning import jobs
from pipeline_src.planning.load_config import validate
from pipeline_src.training.curriculum import KCurriculum
from pipeline_src.training.train import train
from tests.conftest import REPO, tiny_train_spec, write_dataset
from tests.helpers import edited

quiet = {"progress": lambda line: None}


@pytest.fixture
def k4_data(tmp_path):
    return write_dataset(tmp_path / "train_k4.parquet", "train",
                         {"k_train": 4, "l_min": 10, "l_max": 25, "n_samples": 400})


def k4_spec(**train_options) -> dict:
    spec = tiny_train_spec(**train_options)
    spec.update(variant="k4", k_train=4)
    return spec


def rising(every: int = 4, threshold: float = 0.01, start: int = 1) -> dict:
    return {"curriculum": {"start": start, "every": every, "threshold": threshold}}


def log_of(out_dir) -> pl.DataFrame:
    return pl.read_parquet(out_dir / "train_log.parquet")


def test_check_raises_k_max_only_at_the_threshold():
    curriculum = KCurriculum(k_train=3, start=1, every=10, threshold=0.9)
    assert not curriculum.check(10, [8, 0, 0], [10, 0, 0])  # 0.8 at k = 1
    assert curriculum.k_max == 1
    assert curriculum.check(20, [9, 0, 0], [10, 0, 0])
    assert (curriculum.k_max, curriculum.raised_at) == (2, [20])
    assert not curriculum.check(30, [10, 0, 0], [10, 0, 0]), "judged on k = k_max (2), never drawn here"
    assert curriculum.check(40, [0, 5, 0], [0, 5, 0]) and curriculum.done
    assert not curriculum.due(50), "a finished curriculum checks nothing more"
    restored = KCurriculum(k_train=3, start=1, every=10, threshold=0.9)
    restored.restore(curriculum.state())
    assert restored.summary() == curriculum.summary() == {"start": 1, "k_max": 3, "raised_at": [20, 40],
                                                          "reached_k_train": True}
    assert KCurriculum(k_train=2, start=5, every=1, threshold=0.5).done, "a start at or above K_train: no curriculum"


def test_batches_draw_only_k_up_to_k_max_until_it_rises(tmp_path, k4_data):
    """Never raised (threshold 1 at a tiny model), every batch holds k = 1 only; raised at every
    check, k_max reaches K_train and the draws widen with it."""
    train(k4_spec(**rising(threshold=1.0), steps=12), k4_data, tmp_path / "held", **quiet)
    scored = log_of(tmp_path / "held")["k_scored"].to_list()
    assert all(row[0] > 0 and not any(row[1:]) for row in scored)
    summary = json.loads((tmp_path / "held" / "summary.json").read_text())
    assert summary["curriculum"] == {"start": 1, "k_max": 1, "raised_at": [], "reached_k_train": False}

    lines = []
    train(k4_spec(**rising(every=4), steps=20), k4_data, tmp_path / "rising", progress=lines.append)
    summary = json.loads((tmp_path / "rising" / "summary.json").read_text())
    assert summary["curriculum"]["raised_at"] == [4, 8, 12] and summary["curriculum"]["reached_k_train"]
    assert [line.split(":")[0] for line in lines if "curriculum raises" in line] == ["step 4", "step 8", "step 12"]
    scored = log_of(tmp_path / "rising")["k_scored"].to_list()
    for step, row in enumerate(scored, start=1):
        k_max = 1 + sum(step > at for at in (4, 8, 12))
        assert not any(row[k_max:]), f"step {step} drew k > {k_max}"
    assert any(row[3] for row in scored[12:]), "after the last rise the batches hold k = 4 (the paper's law)"


def test_counts_per_k_add_up_to_the_logged_accuracy(tmp_path, k4_data):
    train(k4_spec(steps=10), k4_data, tmp_path / "run", **quiet)
    log = log_of(tmp_path / "run")
    for accuracy, correct, scored in log.select("accuracy", "k_correct", "k_scored").iter_rows():
        assert len(correct) == len(scored) == 4
        assert sum(scored) == 8, "one answer token per sample, a batch of 8"
        assert all(0 <= right <= n for right, n in zip(correct, scored, strict=False))
        assert sum(correct) / sum(scored) == pytest.approx(accuracy)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    last = log.tail(1)  # the summary's tail is the last tenth of the steps: here the last step
    assert summary["final_accuracy_by_k"] == [right / n if n else None for right, n in
                                              zip(last["k_correct"][0], last["k_scored"][0], strict=False)]
    assert "curriculum" not in summary


def test_a_finished_curriculum_is_the_papers_law(tmp_path, k4_data):
    """start >= K_train: the curriculum never limits a draw, so weights and log are those of a run
    without one (the curriculum draws nothing of the random generator)."""
    train(k4_spec(steps=10), k4_data, tmp_path / "plain", **quiet)
    train(k4_spec(**rising(start=4), steps=10), k4_data, tmp_path / "done", **quiet)
    plain, done = (load_file(tmp_path / "plain" / "model.safetensors"),
                   load_file(tmp_path / "done" / "model.safetensors"))
    assert all(torch.equal(plain[name], done[name]) for name in plain)
    assert log_of(tmp_path / "plain").drop("seconds").equals(log_of(tmp_path / "done").drop("seconds"))


def test_resume_with_a_curriculum_equals_an_uninterrupted_run(tmp_path, k4_data):
    """Checkpoints every 5 steps, rises at 4 and 8: stopped at 9, the run resumes from step 5 with
    k_max = 2 and rises again at 8, as the uninterrupted run did."""
    spec = k4_spec(**rising(every=4), steps=16)
    train(spec, k4_data, tmp_path / "straight", **quiet)
    assert train(spec, k4_data, tmp_path / "resumed", stop_at_step=9, **quiet) == {"stopped_at": 9}
    train(spec, k4_data, tmp_path / "resumed", **quiet)
    straight, resumed = load_file(tmp_path / "straight" / "model.safetensors"), load_file(
        tmp_path / "resumed" / "model.safetensors")
    assert all(torch.equal(straight[name], resumed[name]) for name in straight)
    assert log_of(tmp_path / "straight").drop("seconds").equals(log_of(tmp_path / "resumed").drop("seconds"))
    assert (json.loads((tmp_path / "straight" / "summary.json").read_text())["curriculum"]
            == json.loads((tmp_path / "resumed" / "summary.json").read_text())["curriculum"])


def test_a_training_set_of_another_k_train_is_named(tmp_path, k4_data):
    with pytest.raises(ValueError, match=re.escape(f"{k4_data}: samples of k up to 4, but the spec's k_train is 2")):
        train(tiny_train_spec(), k4_data, tmp_path / "run", **quiet)


def test_a_task_without_k_has_no_per_k_columns(tmp_path):
    from tests.helpers import train_task_model

    run = train_task_model(tmp_path / "run", tmp_path, "parity_scratchpad", "coupled", steps=6)
    assert not {"k_correct", "k_scored"} & set(log_of(run).columns)
    assert "final_accuracy_by_k" not in json.loads((run / "summary.json").read_text())


def test_config_curriculum_only_where_k_is_trained_and_only_in_specs_that_write_it():
    config = edited(parity_scratchpad={"train": rising()})
    with pytest.raises(jobs.TaskConfigError,
                       match=re.escape("parity_scratchpad.train.curriculum: a curriculum over k")):
        jobs.check(config)
    config = edited(sparse_parity={"train": rising()})
    jobs.check(config)
    assert (jobs.train_spec(config, "sparse_parity", "k4", "rope_pose", 0)["train"]["curriculum"]
            == rising()["curriculum"])
    config = edited(sparse_parity={"train": {"curriculum": None}})
    assert "curriculum" not in jobs.train_spec(config, "sparse_parity", "k4", "rope_pose", 0)["train"]


@pytest.mark.parametrize("curriculum, field", [
    ({"start": 1, "every": 10, "threshold": 0}, "threshold"),
    ({"start": 0, "every": 10, "threshold": 0.9}, "start"),
    ({"start": 1, "every": 10}, "threshold"),
    ({"start": 1, "every": 10, "threshold": 0.9, "stepz": 3}, "stepz"),
])
def test_config_schema_names_a_bad_curriculum_field(curriculum, field):
    import yaml

    raw = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    raw["sparse_parity"]["train"] = {**raw["sparse_parity"].get("train", {}), "curriculum": curriculum}
    with pytest.raises(ConfigError, match=re.escape(field)):
        validate(raw)

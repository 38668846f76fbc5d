"""The forecast of the dependency mass beyond the training lengths (pipeline_src/evaluation/forecast.py)
from the margin the mechanism tables measure (pipeline_src/evaluation/mechanism.py)."""

from __future__ import annotations

import re

import numpy as np
import polars as pl
import pytest
import torch

from pipeline_src.evaluation.forecast import forecast_of, mass_forecast, predicted_mass, reach, reaches
from pipeline_src.evaluation.mechanism import attention_means, attention_sums
from pipeline_src.findings.judge_forecast import judged
from tests.helpers import REPO

MARGIN = 2.5  # the synthetic head's logit on its dependency set, 0 on every other key


def synthetic_head(keys: int, dependency: list[int], margin: float = MARGIN):
    """One query seeing ``keys`` keys (at position keys - 1) of a head whose logits are ``margin`` on
    ``dependency`` and 0 elsewhere: its attention [Q=1, H=1, T] and the dependency mask [1, T]."""
    scores = torch.zeros(keys, dtype=torch.float64)
    scores[dependency] = margin
    depends = torch.zeros(1, keys)
    depends[0, dependency] = 1.0
    return [torch.softmax(scores, -1).float()[None, None]], depends


@pytest.mark.parametrize("dependency", [[0], [1, 3]])
def test_a_head_of_fixed_margin_has_its_mass_forecast_at_every_length(dependency):
    """Measured at 8 keys, the margin forecasts the mass the same head puts on the set at 16 to 400 keys
    (to float32's precision of the attention itself), and that margin is the head's logit gap."""
    def measured(keys: int) -> tuple[float, float, float]:
        attention, depends = synthetic_head(keys, dependency)
        sums, queries = attention_sums(attention, torch.tensor([keys - 1]), depends)
        mass, uniform, _, margin, spread = attention_means(sums[:, 0, 0], queries)
        return mass, uniform, margin, spread

    _, _, margin, spread = measured(8)
    assert margin == pytest.approx(MARGIN, abs=1e-5) and spread == 0.0
    for keys in (16, 50, 100, 400):
        mass, uniform, _, _ = measured(keys)
        assert uniform == len(dependency) / keys
        assert predicted_mass(margin, uniform) == pytest.approx(mass, abs=1e-6), keys
    assert predicted_mass(MARGIN, 1 / 400) == pytest.approx(1 / (1 + 399 * np.exp(-MARGIN)))  # the law's dilution


def attention_table(masses: dict[tuple[int, int], list[float]], lengths: list[int], uniform: list[float]):
    """An attention table of one model, k_test 2, one row per (layer, head) and length: ``masses`` by
    (layer, head), each head's margin at a length the log-odds of its mass against ``uniform``."""
    rows = []
    for (layer, head), curve in masses.items():
        for length, mass, u in zip(lengths, curve, uniform, strict=True):
            margin = float(np.log(mass / (1 - mass)) - np.log(u / (1 - u)))
            rows.append(("sparse_parity", "k2", "rope", 2, 0, 2, length, layer, head, 10, mass, u, 1.0, margin, 0.0))
    columns = ["task", "variant", "scheme", "k_train", "seed", "k", "length", "layer", "head", "queries",
               "dependency_mass", "uniform_mass", "entropy", "margin", "margin_sd"]
    return pl.DataFrame(rows, schema=columns, orient="row")


def test_the_forecast_takes_the_head_of_the_largest_margin_at_the_training_lengths_only():
    lengths, uniform = [10, 20, 40, 80], [0.1, 0.05, 0.025, 0.0125]
    follows_the_law = list(predicted_mass(3.0, uniform))
    # a head whose margin is larger only beyond the training lengths is not the one forecast
    late = [0.2, 0.3, 0.99, 0.99]
    table = attention_table({(0, 0): late, (1, 1): follows_the_law}, lengths, uniform)
    found = mass_forecast(table, train_lengths=[10, 20])
    assert found["layer"].to_list() == [1] * 4 and found["head"].to_list() == [1] * 4
    assert found["train_margin"].to_list() == pytest.approx([3.0] * 4)
    assert found["predicted"].to_list() == pytest.approx(found["measured"].to_list())
    assert found["length"].to_list() == lengths


def test_a_model_whose_mass_follows_the_forecast_reaches_where_the_forecast_does():
    """Reach: the longest length up to which a curve stays at a level, from the first length on."""
    lengths, uniform = [10, 20, 40, 80, 160], [0.2, 0.1, 0.05, 0.025, 0.0125]
    table = attention_table({(0, 0): list(predicted_mass(2.0, uniform))}, lengths, uniform)
    found = mass_forecast(table, train_lengths=[10])
    level = 0.5 * found["measured"][0]
    assert reach(lengths, found["predicted"], level) == reach(lengths, found["measured"], level) == 20
    assert reach([1, 2, 3], [0.9, 0.4, 0.9], 0.5) == 1  # it ends at the first length below
    assert reach([1, 2], [0.4, 0.9], 0.5) is None and reach([1, 2], [0.9, float("nan")], 0.5) == 1


def accuracy_table(curves: dict[tuple[int, int | None], list[float]], lengths: list[int]) -> pl.DataFrame:
    """Exact match of the model of :func:`attention_table` (seed 0) by (k_train, k): ``curves``."""
    rows = [("sparse_parity", "k2", "rope", k_train, 0, k, length, "exact_match", 20, None, value, None, None)
            for (k_train, k), curve in curves.items() for length, value in zip(lengths, curve, strict=True)]
    columns = ["task", "variant", "scheme", "k_train", "seed", "k", "length", "metric", "n", "correct",
               "accuracy", "ci_low", "ci_high"]
    return pl.DataFrame(rows, schema=columns, orient="row")


def test_a_models_reaches_are_where_its_forecast_mass_and_its_exact_match_fall():
    """Predicted reach: the forecast mass at half its own at the longest training length (10) or more;
    measured: exact match at 0.9 of its own there or more; both at k_test = K_train (2), not at k 3."""
    lengths, uniform = [5, 10, 20, 40, 80], [0.4, 0.2, 0.1, 0.05, 0.025]
    follows = list(predicted_mass(2.0, uniform))  # 0.83, 0.65, 0.45, 0.28, 0.16: above 0.325 up to 20
    forecast = mass_forecast(attention_table({(0, 0): follows}, lengths, uniform), train_lengths=[5, 10])
    accuracy = accuracy_table({(2, 2): [1.0, 1.0, 0.95, 0.5, 0.0], (2, 3): [1.0] * 5}, lengths)
    found = reaches(forecast, accuracy, train_lengths=[5, 10])
    assert found.select("k", "predicted_reach", "measured_reach").rows() == [(2, 20, 20)]
    assert found.select("predicted_far", "measured_far").row(0) == pytest.approx((follows[3], follows[3]))
    falls_at_once = accuracy_table({(2, 2): [0.5, 1.0, 0.2, 0.0, 0.0]}, lengths)  # below 0.9 at the first length
    assert reaches(forecast, falls_at_once, [5, 10])["measured_reach"].to_list() == [0]
    without_t = accuracy.filter(pl.col("length") != 10)
    assert reaches(forecast, without_t, [5, 10]).height == 0  # no exact match at T: no reach to compare


def reach_table(predicted: list[int], measured: list[int], far: list[tuple[float, float]] | None = None):
    far = far or [(None, None)] * len(predicted)
    return pl.DataFrame({"predicted_reach": predicted, "measured_reach": measured,
                         "predicted_far": [f[0] for f in far], "measured_far": [f[1] for f in far]},
                        schema={"predicted_reach": pl.Int64, "measured_reach": pl.Int64,
                                "predicted_far": pl.Float64, "measured_far": pl.Float64})


def test_the_forecast_criterion_needs_both_its_parts():
    near = [(0.5, 0.6), (0.4, 0.3), (0.2, 0.9), (0.1, 0.1), (0.3, 0.3)]  # 4 of 5 within 0.15
    ranked = judged(reach_table([20, 40, 80, 160, 320], [10, 40, 40, 80, 160], near))
    assert ranked.word == "reproduced" and ranked.rho > 0.9 and ranked.p < 0.05 and (ranked.close, ranked.far) == (4, 5)
    assert str(ranked).startswith("reproduced: (a) rho = 0.97") and "(b) 4 of 5 within 0.15 at 4x" in str(ranked)
    reversed_ = judged(reach_table([20, 40, 80, 160, 320], [160, 80, 40, 40, 10], near))
    assert reversed_.ranks is False and reversed_.word == "contradicted"
    far_off = [(0.9, 0.1)] * 3 + [(0.1, 0.1)] * 2  # 2 of 5 within: fewer than half
    masses_off = judged(reach_table([20, 40, 80, 160, 320], [10, 40, 40, 80, 160], far_off))
    assert masses_off.word == "contradicted" and masses_off.deciding == "(b) 2 of 5 within 0.15"  # the part that fails
    none_far = judged(reach_table([20, 40, 80, 160, 320], [10, 40, 40, 80, 160]))
    assert none_far.word == "undecided" and none_far.deciding == "(b) no model at 4x"
    few = judged(reach_table([20, 40, 80], [10, 40, 80], near[:3]))
    assert few.ranks is None and few.deciding == "(a) 3 models, fewer than 4"  # 3 models cannot rank
    tied = judged(reach_table([40] * 5, [10, 40, 40, 80, 160], near))
    assert tied.ranks is None and tied.word == "undecided" and "rho undefined" in str(tied)


def test_the_figure_forecasts_each_task_from_its_own_training_lengths():
    """Two tasks in one figure: each model's reach and mass from its task's evaluated lengths within its
    training range (the margin read there only), T beside it; a task with no attention rows is left out."""
    lengths, uniform = [5, 10, 20, 40, 80], [0.4, 0.2, 0.1, 0.05, 0.025]
    first = attention_table({(0, 0): list(predicted_mass(2.0, uniform))}, lengths, uniform)
    second = first.with_columns(task=pl.lit("parity_scratchpad"), k_train=None, k=None, variant=pl.lit("scratchpad"))
    accuracy = accuracy_table({(2, 2): [1.0, 1.0, 0.95, 0.5, 0.0]}, lengths)
    accuracy = pl.concat([accuracy, accuracy.with_columns(task=pl.lit("parity_scratchpad"), k_train=None, k=None,
                                                          variant=pl.lit("scratchpad"))])
    spec = {"tasks": {"sparse_parity": {"train_lengths": [5, 10], "lengths": lengths, "seeds": [0]},
                      "parity_scratchpad": {"train_lengths": [1, 20], "lengths": lengths, "seeds": [0]},
                      "addition": {"train_lengths": [1, 10], "lengths": lengths, "seeds": [0]}}}
    curves, found = forecast_of(spec, accuracy, pl.concat([first, second]))
    assert found.select("task", "T", "predicted_reach", "measured_reach").rows() == [
        ("sparse_parity", 10, 20, 20), ("parity_scratchpad", 20, 40, 20)]
    direct = reaches(mass_forecast(first, [5, 10]), accuracy.filter(pl.col("task") == "sparse_parity"), [5, 10])
    assert found.drop("T").head(1).equals(direct)
    assert curves.filter(pl.col("task") == "parity_scratchpad")["predicted"].to_list() == pytest.approx(
        curves.filter(pl.col("task") == "parity_scratchpad")["measured"].to_list())


def test_the_forecast_figure_is_planned_over_every_model_with_declared_dependency_sets():
    """The default run plans one forecast figure from each model's accuracy and attention tables, and
    everything they were made from; its spec passes the plot command's check."""
    from pipeline_src.planning import jobs, spec_check, studies
    from pipeline_src.planning.load_config import load_config

    config = load_config()
    study = studies.study_of("forecast")
    assert "forecast" in studies.figures(config)
    cells = [cell for task in jobs.mechanism_tasks(config) for cell in jobs.cells(config, task)]
    tables = study.figure_tables(config, "forecast")
    assert len(tables) == 2 * len(cells) and set(tables) <= set(study.made_from(config, "forecast"))
    spec = study.figure_spec(config, "forecast")
    spec_check.plot("forecast", spec, captioned=True)
    assert set(spec["tasks"]) == set(jobs.mechanism_tasks(config))
    with pytest.raises(spec_check.SpecError, match="tasks"):
        spec_check.plot("forecast", {"tasks": {"no_such_task": spec["tasks"]["sparse_parity"]}})


FORECAST_CLAIM = (REPO / "pipeline_src" / "findings" / "claims" / "forecast.yaml").read_text()


@pytest.mark.parametrize("edit, field", [
    (("tasks: [sparse_parity, parity_scratchpad, variable_assignment, addition]", "tasks: [sparse_parity, parity]"),
     "tasks[1]: 'parity' is no task with declared dependency sets"),
    (("figure: forecast", "figure: figure1"), "compare: only the forecast figure's claims"),
    (("  - test: forecast\n", "  - test: permutation\n"), "compare: a forecast claim has one test, forecast"),
])
def test_a_forecast_claim_that_cannot_be_judged_so_is_refused_naming_the_field(tmp_path, edit, field):
    from pipeline_src.findings.claim_file import ClaimError, load

    assert edit[0] in FORECAST_CLAIM
    (tmp_path / "mine.yaml").write_text(FORECAST_CLAIM.replace(*edit))
    with pytest.raises(ClaimError, match=rf"^{tmp_path / 'mine.yaml'}: field {re.escape(field)}"):
        load(tmp_path / "mine.yaml")


def test_the_forecast_claim_is_judged_over_its_tasks_models_of_its_seeds_only():
    """From the forecast figure's run-summary rows: the models of the claim's tasks with seeds from 2;
    a model of another task (sparse_parity_scratchpad) or of seed 0 or 1 takes no part; with no model of
    one of its tasks yet, the claim is withheld."""
    from pipeline_src.findings.claim_file import SHIPPED, load
    from pipeline_src.findings.figure_rows import FORECAST
    from pipeline_src.findings.judge import judge
    from pipeline_src.findings.run_summary import canonical

    claim = load(SHIPPED / "forecast.yaml")
    rows = []
    models = [("sparse_parity", 2, 30, 20), ("addition", 2, 20, 20), ("addition", 3, 40, 30),
              ("parity_scratchpad", 2, 60, 40),
              ("variable_assignment", 4, 80, 80), ("variable_assignment", 0, 80, 10),  # seed 0: left out
              ("sparse_parity_scratchpad", 2, 10, 90)]  # not among the claim's tasks
    for task, seed, predicted, measured in models:
        for metric, value in (("predicted_reach", predicted), ("measured_reach", measured),
                              ("predicted_far", 0.5), ("measured_far", 0.55)):
            rows.append((task, "scratchpad", "ppc", seed, None, 10, FORECAST + metric, float(value)))
    frame = canonical(pl.DataFrame(rows, schema=["task", "variant", "scheme", "seed", "k", "length", "metric", "value"],
                                   orient="row"))
    row = judge(claim, {"tasks": {}}, frame)
    assert row.numbers.startswith(
        "5 models (sparse_parity 1, parity_scratchpad 1, variable_assignment 1, addition 2): (a) rho = 0.97")
    assert row.word == "reproduced" and row.deciding == "(a) rho = 0.97, p = 0.0024; (b) 5 of 5 within 0.15"
    # weighed over its seeds 2 to 4, each left out of every task in turn: without seed 2 no sparse parity
    # model is left, without seed 4 no variable assignment one (withheld, so not reproduced)
    assert (row.stability.holds, row.stability.of, row.stability.undone_by) == (1, 3, (2, 4))
    assert row.cell.startswith("reproduced ((a) rho = 0.97, p = 0.0024; (b) 5 of 5 within 0.15, holds 1/3)")
    assert judge(claim, {"tasks": {}}, frame.filter(pl.col("seed") < 2)).verdict.startswith("undecided: no results")
    without_addition = judge(claim, {"tasks": {}}, frame.filter(pl.col("task") != "addition"))
    assert without_addition.verdict == ("undecided: withheld: 3 of 4 tasks in (sparse_parity 1, parity_scratchpad 1, "
                                        "variable_assignment 1; none yet of addition)")

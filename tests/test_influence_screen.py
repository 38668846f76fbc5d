"""Screen, then select (``InfluenceConfig.screen_gain``, the config's ``language.analysis.screen``):
every drawn target's L_long and L_short first, the greedy search and the nulls only for the targets
gaining more than the threshold. On those the table equals the unscreened one (within 1e-6 nats;
L_long and L_short bit for bit), the others keep their losses and are marked, the verdicts and
summaries the findings and figures compute are the same, and the screened run does fewer forwards."""

from __future__ import annotations

import copy

import numpy as np
import polars as pl
import pytest
import torch
from polars.testing import assert_frame_equal

from pipeline_src import datasets
from pipeline_src.config.influence_config import SCREENED_OUT, InfluenceConfig, InfluenceError
from pipeline_src.datasets import DataError, validate
from pipeline_src.figures import figure4
from pipeline_src.findings import figure_rows
from pipeline_src.findings import judge as judged
from pipeline_src.language import influence as inf
from pipeline_src.language.influence_summary import paired_fractions, recovered_gain, tokens_needed
from pipeline_src.language.influence_table import PER_K, influence_schema, read_influence
from pipeline_src.language.targets import select_targets
from pipeline_src.language.token_stream import build_corpus
from pipeline_src.language.tokenizer import read_tokens
from pipeline_src.planning import language_jobs
from pipeline_src.provenance.records import build_record
from pipeline_src.training.train import build_model
from tests.conftest import default_config
from tests.helpers import SMALL, claim, one_thread_per_module, random_model, small_targets

one_thread = pytest.fixture(autouse=True, scope="module")(one_thread_per_module)

BATCH = 5  # 24 targets: groups of 5 (the last of 4), so the gaining ones are regrouped


class Counted:
    """A logits function that counts its forwards."""

    def __init__(self, model):
        self.fn, self.forwards = inf.as_logits_fn(model), 0

    def __call__(self, tokens, position_ids):
        self.forwards += 1
        return self.fn(tokens, position_ids)


def run(cfg: InfluenceConfig, screen_gain: float | None = None, **options) -> tuple[pl.DataFrame, int]:
    """The analysis of the small targets with a random model (screened at ``screen_gain``), and its forwards."""
    cfg = InfluenceConfig(**{**cfg.to_dict(), "screen_gain": screen_gain})
    counted = Counted(random_model("rope"))
    frame = inf.influential_tokens(None, small_targets(cfg), cfg, logits_fn=counted, **{"progress": None, **options})
    return frame, counted.forwards


@pytest.fixture(scope="module", params=["greedy", "greedy_kl", "topk"])
def both(request):
    """(cfg, threshold, unscreened table and forwards, screened table and forwards): a threshold that
    screens out most targets of a random model, as the findings' 0.1 nats does on the default run's."""
    cfg = InfluenceConfig(**{**SMALL, "n_targets": 24}, selection=request.param, batch_size=BATCH)
    plain, plain_forwards = run(cfg)
    gain = (plain["short_loss"] - plain["long_loss"]).to_numpy()
    threshold = float(np.quantile(gain[gain > 0], 0.3))
    screened, screened_forwards = run(cfg, threshold)
    return cfg, threshold, (plain, plain_forwards), (screened, screened_forwards)


def test_gaining_targets_rows_are_those_of_the_unscreened_analysis(both):
    cfg, threshold, (plain, _), (screened, _) = both
    gaining = (plain["short_loss"] - plain["long_loss"] > threshold).to_numpy()
    assert 0 < gaining.sum() < len(gaining) / 2  # most targets screened out, some analysed
    check_rows(cfg, threshold, plain, screened)


def check_rows(cfg: InfluenceConfig, threshold: float, plain: pl.DataFrame, screened: pl.DataFrame) -> None:
    """Every drawn target's row of the screened table is the unscreened one's: its losses bit for bit,
    a gaining target's choices and losses at every k within 1e-6 nats; the others marked, nulls at k."""
    gaining = (plain["short_loss"] - plain["long_loss"] > threshold).to_numpy()
    assert screened[SCREENED_OUT].to_list() == (~gaining).tolist()
    # every drawn target's row: its losses from the very forwards of the unscreened analysis
    assert_frame_equal(screened.drop(SCREENED_OUT, *PER_K), plain.drop(*PER_K), check_exact=True)
    kept, analysed = screened.filter(pl.Series(gaining)), plain.filter(pl.Series(gaining))
    assert kept["chosen"].equals(analysed["chosen"])
    for column in ("sparse_loss", "random_loss", "other_loss"):
        np.testing.assert_allclose(np.array(kept[column].to_list()), np.array(analysed[column].to_list()),
                                   rtol=0, atol=1e-6)
    out = screened.filter(pl.col(SCREENED_OUT))
    assert (out["short_loss"] - out["long_loss"] <= threshold).all()
    for column in PER_K:  # k_max nulls: no loss at k, as the marker says
        assert out[column].to_list() == [[None] * cfg.k_max] * out.height
    validate(screened, influence_schema(InfluenceConfig(**{**cfg.to_dict(), "screen_gain": threshold})), "screened")
    validate(plain, influence_schema(cfg), "plain")


def test_verdicts_and_summaries_are_those_of_the_unscreened_table(both, tmp_path):
    """F4 and F4' (from the rows ``lengthgen findings`` and the figure job compute), Figure 4's curves
    and the PoSE figure's tokens needed, at the figure's threshold, the screening's."""
    cfg, threshold, (plain, _), (screened, _) = both
    check_verdicts(cfg, threshold, plain, screened, tmp_path)


def check_verdicts(cfg: InfluenceConfig, threshold: float, plain: pl.DataFrame, screened: pl.DataFrame,
                   tmp_path) -> None:
    """F4, F4', Figure 4's curves and the PoSE figure's tokens needed of both tables are the same."""
    spec = {"context": cfg.context, "local": cfg.local, "k_max": cfg.k_max, "gain_threshold": threshold,
            "n_boot": 200, "seed": 0}
    rows = {}
    screening = InfluenceConfig(**{**cfg.to_dict(), "screen_gain": threshold})
    for name, frame, schema_cfg in (("plain", plain, cfg), ("screened", screened, screening)):
        path = tmp_path / f"{name}.parquet"
        datasets.write(frame, path, influence_schema(schema_cfg), {"format": "test"})
        rows[name] = figure_rows.language_rows(spec, [path])
    assert_frame_equal(rows["screened"], rows["plain"], check_exact=False, rel_tol=0, abs_tol=1e-6)
    for name in ("F4", "F4'"):
        assert judged.judge(claim(name), spec, rows["screened"]) == judged.judge(claim(name), spec, rows["plain"])
    for column in ("sparse_loss", "random_loss", "other_loss"):
        assert_frame_equal(recovered_gain(screened, gain_threshold=threshold, n_boot=200, column=column),
                           recovered_gain(plain, gain_threshold=threshold, n_boot=200, column=column),
                           check_exact=False, rel_tol=0, abs_tol=1e-6)
    assert_frame_equal(paired_fractions(screened, gain_threshold=threshold, k=cfg.k_max),
                       paired_fractions(plain, gain_threshold=threshold, k=cfg.k_max), check_exact=False, abs_tol=1e-6)
    gaining = pl.col("short_loss") - pl.col("long_loss") > threshold
    assert tokens_needed(screened.filter(gaining), 0.5).tolist() == tokens_needed(plain.filter(gaining), 0.5).tolist()


def test_the_screened_run_does_fewer_forwards_two_per_group_to_screen(both):
    cfg, threshold, (plain, plain_forwards), (screened, screened_forwards) = both
    assert screened_forwards < plain_forwards / 2, (screened_forwards, plain_forwards)
    groups = -(-plain.height // BATCH)
    _, nothing_gains = run(cfg, 1e9)
    assert nothing_gains == 2 * groups  # L_long and L_short of every target, in full batches


def test_a_summary_below_the_screening_threshold_is_a_clear_error(both):
    """Targets the screening left out must never count as gaining: a figure threshold below the
    screening's would read nulls as losses."""
    _, threshold, _, (screened, _) = both
    with pytest.raises(InfluenceError, match="screened out by the analysis.*no lower than"):
        recovered_gain(screened, gain_threshold=0.0)


def test_the_screening_is_reported_and_a_table_with_nothing_left_to_analyse_is_whole(tmp_path):
    cfg = InfluenceConfig(**{**SMALL, "n_targets": 24}, batch_size=BATCH)
    seen = []
    frame, _ = run(cfg, 1e9, progress=lambda *report: seen.append(report))
    assert seen == [(0, 0, "screened 24 drawn targets: 24 (100%) gain at most 1e+09 nats and are screened out; "
                           "0 to analyse")]
    assert frame.height == 24 and frame[SCREENED_OUT].all()
    path = tmp_path / "nothing.parquet"
    datasets.write(frame, path, influence_schema(InfluenceConfig(**{**cfg.to_dict(), "screen_gain": 1e9})),
                   build_record("test", "language_eval", {}))
    spec = {"context": cfg.context, "local": cfg.local, "k_max": cfg.k_max, "gain_threshold": 1e9, "n_boot": 50,
            "seed": 0, "plot": "scatter"}
    figure4.plot(spec, [path], [tmp_path / "nothing.png"])  # no point to draw, no target above the threshold
    assert (figure_rows.language_rows(spec, [path]).filter(pl.col("metric") == "n_targets")["value"].to_list()
            == [0.0] * 6)


def test_schema_marks_screened_rows_and_reads_either_table(both, tmp_path):
    cfg, threshold, (plain, _), (screened, _) = both
    schema = influence_schema(InfluenceConfig(**{**cfg.to_dict(), "screen_gain": threshold}))
    first_out, first_in = (screened[SCREENED_OUT].arg_true()[0], (~screened[SCREENED_OUT]).arg_true()[0])
    with pytest.raises(DataError, match="screened_out_rows_hold_nulls"):  # a screened-out row with losses at k
        validate(screened.with_columns(pl.when(pl.int_range(pl.len()) == first_out).then(False)
                                       .otherwise(pl.col(SCREENED_OUT)).alias(SCREENED_OUT)), schema, "bad")
    with pytest.raises(DataError, match="screened_out_rows_hold_nulls"):  # an analysed row without
        validate(screened.with_columns(pl.when(pl.int_range(pl.len()) == first_in).then(True)
                                       .otherwise(pl.col(SCREENED_OUT)).alias(SCREENED_OUT)), schema, "bad")
    with pytest.raises(DataError, match="screened_out_rows_hold_nulls"):  # nulls in a table without screening
        validate(screened.drop(SCREENED_OUT), influence_schema(cfg), "bad")
    for name, frame, written in (("plain", plain, cfg), ("screened", screened, schema)):
        path = tmp_path / f"{name}.parquet"
        datasets.write(frame, path, written if isinstance(written, type) else influence_schema(written),
                       {"format": "test"})
        assert read_influence(path, cfg).equals(frame)


def test_figure4_draws_the_analysed_targets_and_says_how_many_were_screened_out(tmp_path, monkeypatch):
    cfg = InfluenceConfig(**{**SMALL, "n_targets": 24}, batch_size=BATCH)
    screened, _ = run(cfg, 0.05)
    titles = []
    monkeypatch.setattr(figure4, "suptitle", lambda fig, text: titles.append(text))
    path = tmp_path / "screened.parquet"
    datasets.write(screened, path, influence_schema(InfluenceConfig(**{**cfg.to_dict(), "screen_gain": 0.05})),
                   build_record("test", "language_eval", {"selection": cfg.selection}))
    spec = {"context": cfg.context, "local": cfg.local, "k_max": cfg.k_max, "gain_threshold": 0.05,
            "n_boot": 50, "seed": 0, "plot": "hexbin"}
    figure4.plot(spec, [path], [tmp_path / "figure4.png"])
    assert 0 < screened[SCREENED_OUT].sum() < screened.height
    assert f"({screened.height} held-out targets, {screened[SCREENED_OUT].sum()} screened out)" in titles[0]


def test_screening_enters_the_analysis_spec_only_where_it_is_switched_on():
    """Absent (every shipped config): the spec of before screening, so no job reruns; on: the figure's
    gain threshold, the one the findings count by, enters the analysis's spec."""
    config = default_config()
    assert "screen_gain" not in language_jobs.influence_spec(config)
    edited = copy.deepcopy(config)
    edited["language"]["analysis"]["screen"] = True
    spec = language_jobs.influence_spec(edited)
    threshold = config["language"]["figure"]["gain_threshold"]
    assert spec == {**language_jobs.influence_spec(config), "screen_gain": threshold} and threshold == 0.1
    analysed = {key: value for key, value in spec.items() if key not in ("hf_model", "device")}
    assert InfluenceConfig.from_dict(analysed).screen_gain == 0.1
    edited["language"]["analysis"]["screen"] = False
    assert language_jobs.influence_spec(edited) == language_jobs.influence_spec(config)


@pytest.mark.slow  # the default corpus's tokenizer and token stream first: 70 s on 2 cores shared with a training run
def test_a_slice_of_the_default_run_screens_to_its_rows_and_verdicts(tmp_path):
    """The default run's analysis (config/config.yaml: its corpus, tokenizer and draw of targets, Lbar 128,
    L 64, k 8, greedy, batch 64, the findings' 0.1 nats) on a slice of it, the first 16 of its 128
    targets, with a decoder of its main model's shape and random weights (the trained model is no file
    of the repository): screened at the figure's threshold, its rows and verdicts are the unscreened ones."""
    config = default_config()
    config["language"]["analysis"]["screen"] = True
    build_corpus(language_jobs.corpus_spec(config), tmp_path / "tokenizer.json", tmp_path / "tokens.parquet",
                 progress=lambda line: None)
    spec = language_jobs.influence_spec(config)
    screening = InfluenceConfig.from_dict({k: v for k, v in spec.items() if k not in ("hf_model", "device")})
    cfg = InfluenceConfig(**{**screening.to_dict(), "screen_gain": None})
    assert (cfg.context, cfg.local, cfg.k_max, cfg.selection, cfg.n_targets) == (128, 64, 8, "greedy", 128)
    vocab = config["language"]["tokenizer"]["vocab_size"]
    targets = select_targets(read_tokens(tmp_path / "tokens.parquet", vocab), cfg).head(16)
    torch.manual_seed(0)
    model = build_model(language_jobs.train_spec(config, "main"), vocab)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.5)  # as tests.helpers.random_model: 3 of the 16 gain more than 0.1 nats
    plain = inf.influential_tokens(model, targets, cfg, progress=None)
    screened = inf.influential_tokens(model, targets, screening, progress=None)
    threshold = screening.screen_gain
    gaining = (plain["short_loss"] - plain["long_loss"] > threshold).to_numpy()
    assert threshold == config["language"]["figure"]["gain_threshold"] and 0 < gaining.sum() < len(gaining), gaining
    check_rows(cfg, threshold, plain, screened)
    check_verdicts(cfg, threshold, plain, screened, tmp_path)

"""Figure 4 and our PoSE figure render from small hand-made tables, with provenance; the summary
statistics behind them (the recovered gain's median and bootstrap, the tokens-needed rule)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from pipeline_src import datasets
from pipeline_src.config.influence_config import InfluenceConfig, InfluenceError
from pipeline_src.figures import figure4, language_pose
from pipeline_src.language import influence
from pipeline_src.language.influence_summary import recovered_gain, tokens_needed
from pipeline_src.language.influence_table import influence_schema
from pipeline_src.language.schemas import LossByPositionSchema, TargetLossSchema
from pipeline_src.provenance.records import build_record
from pipeline_src.provenance.sidecars import read_record

PLOT_CONFIG = {"context": 16, "local": 8, "k_max": 3, "gain_threshold": 0.5, "n_boot": 50, "seed": 0}


def influence_frame(n: int = 40, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    long = rng.uniform(0.5, 4.0, n)
    short = long + rng.exponential(1.0, n)
    recovered = np.sort(rng.uniform(0, 1, (n, 3)), axis=1)  # more tokens recover more
    sparse = short[:, None] - recovered * (short - long)[:, None]
    random = short[:, None] - recovered / 4 * (short - long)[:, None]  # the baselines recover less
    other = short[:, None] - recovered / 2 * (short - long)[:, None]
    docs = np.arange(n) // 4
    return pl.DataFrame({
        "doc": pl.Series(np.arange(n) // 4, dtype=pl.Int64),
        "t": pl.Series(16 + np.arange(n) % 4, dtype=pl.Int32),
        "target": pl.Series(rng.integers(0, 50, n), dtype=pl.Int32),
        "long_loss": long, "short_loss": short,
        "sparse_loss": pl.Series(sparse.tolist(), dtype=pl.List(pl.Float64)),
        "chosen": pl.Series([rng.permutation(8)[:3].tolist() for _ in range(n)], dtype=pl.List(pl.Int32)),
        "key_token": pl.Series(influence.key_token(long, short), dtype=pl.Boolean),
        "random_loss": pl.Series(random.tolist(), dtype=pl.List(pl.Float64)),
        "other_loss": pl.Series(other.tolist(), dtype=pl.List(pl.Float64)),
        "other_doc": pl.Series((docs + 1) % (docs.max() + 1), dtype=pl.Int64),
        "other_t": pl.Series(16 + np.arange(n) % 4, dtype=pl.Int32),
    })


def write(frame, path, schema):
    datasets.write(frame, path, schema, build_record("test", "language_eval", {}))
    return path


@pytest.fixture
def tables(tmp_path):
    cfg = InfluenceConfig(context=16, local=8, k_max=3)
    analysed = influence_frame()
    paths = [write(analysed, tmp_path / "influence.parquet", influence_schema(cfg))]
    rng = np.random.default_rng(1)
    for model, scheme, context in (("main", "rope", 16), ("short_rope", "rope", 8), ("short_pose", "rope_pose", 8)):
        by_position = pl.DataFrame({
            "model": [model] * 32, "scheme": [scheme] * 32, "train_context": pl.Series([context] * 32, dtype=pl.Int64),
            "position": pl.Series(range(32), dtype=pl.Int32), "windows": pl.Series([5] * 32, dtype=pl.Int64),
            "loss": 4.0 - np.log1p(np.arange(32)) / 4 + rng.uniform(0, 0.1, 32),
            "loss_se": pl.Series([0.05] * 31 + [None], dtype=pl.Float64)})
        paths.append(write(by_position, tmp_path / f"{model}_p.parquet", LossByPositionSchema))
        targets = analysed.select("doc", "t", "long_loss", "short_loss").with_columns(
            model=pl.lit(model), long_loss=pl.col("long_loss") + rng.uniform(0, 0.5, analysed.height))
        paths.append(write(targets.select("model", "doc", "t", "long_loss", "short_loss"),
                           tmp_path / f"{model}_t.parquet", TargetLossSchema))
    return paths


@pytest.mark.parametrize("plot", ["hexbin", "scatter"])
def test_figure4_renders_with_provenance(tables, tmp_path, plot):
    outputs = [tmp_path / "figure4.png", tmp_path / "figure4.pdf"]
    figure4.plot({**PLOT_CONFIG, "plot": plot}, tables[:1], outputs)
    for path in outputs:
        assert path.stat().st_size > 1000
        record = read_record(path)
        assert record["code"]["stage"] == "language_figures" and record["seeds"] == {"seed": PLOT_CONFIG["seed"]}


def test_figure4_title_names_the_selection_its_table_was_made_with(tmp_path, monkeypatch):
    """Greedy and top-k selection draw the same kind of figure; its title says which, as the
    influence table's provenance record has it (and names none for a table without a record)."""
    titles = []
    monkeypatch.setattr(figure4, "suptitle", lambda fig, text: titles.append(text))
    frame = influence_frame(40)
    for selection in ("greedy", "topk"):
        table = tmp_path / f"{selection}.parquet"
        datasets.write(frame, table, influence_schema(InfluenceConfig(context=16, local=8, k_max=3)),
                       build_record("test", "language_eval", {"selection": selection}))
        figure4.plot({**PLOT_CONFIG, "plot": "scatter"}, [table], [tmp_path / f"{selection}.png"])
    bare = tmp_path / "bare.parquet"
    frame.write_parquet(bare)
    figure4.plot({**PLOT_CONFIG, "plot": "scatter"}, [bare], [tmp_path / "bare.png"])
    assert "greedy selection" in titles[0] and "top-k selection" in titles[1], titles
    assert "selection" not in titles[2], titles


def test_figure4_without_targets_above_the_threshold_still_renders(tables, tmp_path):
    figure4.plot({**PLOT_CONFIG, "plot": "scatter", "gain_threshold": 100.0}, tables[:1], [tmp_path / "f.png"])
    assert (tmp_path / "f.png").stat().st_size > 1000


def test_pose_figure_renders_from_inputs_in_any_order(tables, tmp_path):
    spec = {**PLOT_CONFIG, "recover_fraction": 0.8, "short_context": 8, "target_length": 16}
    outputs = [tmp_path / "pose.png", tmp_path / "pose.pdf"]
    language_pose.plot(spec, list(reversed(tables)), outputs)
    assert all(path.stat().st_size > 1000 for path in outputs)
    by_position, targets, analysed = language_pose.read_inputs(tables, spec)
    table = language_pose.pose_gain_by_tokens_needed(targets, analysed, spec)
    assert table.height == int(((analysed["short_loss"] - analysed["long_loss"]) > 0.5).sum())
    assert set(table["needed"].to_list()) <= {1, 2, 3, 4}


def test_pose_figure_needs_every_kind_of_table(tables, tmp_path):
    with pytest.raises(ValueError, match="needs loss-by-position"):
        language_pose.plot({**PLOT_CONFIG, "recover_fraction": 0.8, "short_context": 8, "target_length": 16},
                           tables[:1], [tmp_path / "x.png"])


def test_tokens_needed():
    frame = pl.DataFrame({"long_loss": [0.0, 0.0, 1.0], "short_loss": [4.0, 4.0, 1.0],
                          "sparse_loss": [[1.0, 0.5], [3.5, 3.0], [1.0, 1.0]]})
    # recovered fractions: [0.75, 0.875], [0.125, 0.25], zero gain (undefined)
    assert tokens_needed(frame, 0.8).tolist() == [2, 3, 3]
    assert tokens_needed(frame, 0.7).tolist() == [1, 3, 3]
    with pytest.raises(InfluenceError, match="fraction"):
        tokens_needed(frame, 0.0)


def test_recovered_gain_median_and_bootstrap():
    # Gains 4, 4, 4 (and one target with gain 1, below the threshold 2, left out).
    frame = pl.DataFrame({
        "long_loss": [0.0, 1.0, 2.0, 0.0],
        "short_loss": [4.0, 5.0, 6.0, 1.0],
        "sparse_loss": [[3.0, 2.0], [4.0, 1.0], [5.0, 3.0], [0.0, 0.0]],
        "random_loss": [[4.0, 4.0], [5.0, 5.0], [6.0, 3.0], [1.0, 1.0]],
    })  # fractions recovered: k=1 -> 0.25, 0.25, 0.25; k=2 -> 0.5, 1.0, 0.75 (random: 0, 0, 0; 0, 0, 0.75)
    summary = recovered_gain(frame, gain_threshold=2.0, n_boot=200, seed=3)
    assert summary["k"].to_list() == [1, 2] and summary["n_targets"].to_list() == [3, 3]
    assert summary["median"].to_list() == pytest.approx([0.25, 0.75])
    assert summary["ci_low"][0] == summary["ci_high"][0] == pytest.approx(0.25)
    assert 0.5 <= summary["ci_low"][1] <= 0.75 <= summary["ci_high"][1] <= 1.0
    assert summary.equals(recovered_gain(frame, gain_threshold=2.0, n_boot=200, seed=3))
    random = recovered_gain(frame, gain_threshold=2.0, n_boot=200, seed=3, column="random_loss")
    assert random["median"].to_list() == pytest.approx([0.0, 0.0]) and random["n_targets"].to_list() == [3, 3]
    with pytest.raises(InfluenceError, match="no loss column 'chosen'"):
        recovered_gain(frame, gain_threshold=2.0, column="chosen")
    none = recovered_gain(frame, gain_threshold=10.0)
    assert none["n_targets"].to_list() == [0, 0] and none["median"].is_nan().all()

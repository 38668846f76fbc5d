"""A draw analysed in parts (``language.analysis.parts``): each part a job of its own over consecutive
groups of ``batch_size`` targets, each target with the donor and random draws of its row in the whole
draw, so the parts end to end hold the whole draw's rows: bit for bit unscreened (the very forwards),
and screened L_long and L_short bit for bit, the searched targets' numbers within 1e-6 nats (their
groups are regrouped), as screening itself promises (tests/test_influence_screen.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from polars.testing import assert_frame_equal

from pipeline_src import datasets
from pipeline_src.cli import main
from pipeline_src.config.influence_config import SCREENED_OUT, InfluenceConfig, InfluenceError, part_span
from pipeline_src.figures import figure4
from pipeline_src.findings import figure_rows, run_summary, summary_parts
from pipeline_src.findings import judge as judged
from pipeline_src.language import influence as inf
from pipeline_src.language.influence_table import PER_K, influence_schema
from pipeline_src.planning import language_jobs, paths, spec_check
from pipeline_src.planning.spec_check import SpecError
from pipeline_src.provenance.records import build_record
from tests.conftest import default_config
from tests.helpers import REPO, SMALL, claim, one_thread_per_module, random_model, small_targets

one_thread = pytest.fixture(autouse=True, scope="module")(one_thread_per_module)

BATCH = 5  # 24 targets in 5 groups (the last of 4)


def analysed(cfg: InfluenceConfig, part: slice | None = None) -> pl.DataFrame:
    return inf.influential_tokens(random_model("rope"), small_targets(cfg), cfg, progress=None, part=part)


@pytest.mark.parametrize("of", [1, 2, 3, 5])
def test_part_spans_cover_the_draw_in_whole_groups(of):
    spans = [part_span(24, BATCH, index, of) for index in range(1, of + 1)]
    assert spans[0].start == 0 and spans[-1].stop == 24
    assert all(a.stop == b.start for a, b in zip(spans, spans[1:], strict=False))
    assert all(span.start % BATCH == 0 and span.stop > span.start for span in spans)
    sizes = [-(-(span.stop - span.start) // BATCH) for span in spans]  # groups per part
    assert max(sizes) - min(sizes) <= 1


@pytest.mark.parametrize("index, of, field", [(1, 6, "parts=6"), (0, 2, "index=0"), (3, 2, "index=3")])
def test_a_part_the_draw_cannot_have_is_refused_naming_it(index, of, field):
    with pytest.raises(InfluenceError, match=field):
        part_span(24, BATCH, index, of)


@pytest.fixture(scope="module", params=["greedy_kl", "topk"])
def whole(request):
    cfg = InfluenceConfig(**{**SMALL, "n_targets": 24}, selection=request.param, batch_size=BATCH)
    return cfg, analysed(cfg)


def test_unscreened_parts_end_to_end_are_the_whole_draw_bit_for_bit(whole):
    cfg, frame = whole
    parts = [analysed(cfg, part_span(24, BATCH, index, 3)) for index in (1, 2, 3)]
    assert [part.height for part in parts] == [5, 10, 9]
    assert_frame_equal(pl.concat(parts), frame, check_exact=True)


def test_screened_parts_end_to_end_are_the_whole_screened_draw(whole):
    cfg, plain = whole
    gain = (plain["short_loss"] - plain["long_loss"]).to_numpy()
    screening = InfluenceConfig(**{**cfg.to_dict(), "screen_gain": float(np.quantile(gain[gain > 0], 0.3))})
    frame = analysed(screening)
    joined = pl.concat([analysed(screening, part_span(24, BATCH, index, 2)) for index in (1, 2)])
    assert 0 < frame[SCREENED_OUT].sum() < frame.height
    assert_frame_equal(joined.drop(*PER_K[:1], *PER_K[2:]), frame.drop(*PER_K[:1], *PER_K[2:]), check_exact=True)
    for column in ("sparse_loss", "random_loss", "other_loss"):
        np.testing.assert_allclose(np.array(joined[column].to_list(), dtype=float),
                                   np.array(frame[column].to_list(), dtype=float), rtol=0, atol=1e-6)


def test_the_config_makes_a_job_per_part_with_its_part_in_the_spec():
    config = default_config()
    assert language_jobs.influence_parts(config) == [None]
    assert "part" not in language_jobs.influence_spec(config)  # one part: the spec of before the field
    config["language"]["analysis"].update(parts=3, batch_size=32)  # 128 targets: 4 groups
    language_jobs.check(config)
    specs = language_jobs.job_specs(config)["language_influence"]
    assert [spec["part"] for spec in specs] == [{"index": i, "of": 3} for i in (1, 2, 3)]
    for spec in specs:
        spec_check.influence(spec)
    assert [paths.influence_table(part) for part in language_jobs.influence_parts(config)] == [
        f"{paths.LANGUAGE}/influence.part{i}.parquet" for i in (1, 2, 3)]
    assert paths.part_of(".part3") == 3 and paths.part_of("") is None


def test_more_parts_than_groups_are_refused_naming_the_field():
    config = default_config()
    analysis = config["language"]["analysis"]
    analysis["parts"] = -(-analysis["n_targets"] // analysis["batch_size"]) + 1
    with pytest.raises(language_jobs.LanguageConfigError, match="language.analysis.parts="):
        language_jobs.check(config)
    spec = {**language_jobs.influence_spec({**config, "language": {**config["language"], "analysis": {
        **analysis, "parts": 2}}}, 1), "part": {"index": 3, "of": 2}}
    with pytest.raises(SpecError, match="spec field part: part index=3"):
        spec_check.influence(spec)


# --- the summary, sitting by sitting ----------------------------------------------------------------

def written_parts(cfg: InfluenceConfig, of: int, tmp_path) -> list:
    """Each part's table of the small draw (``of`` parts), written with the record its job gives it."""
    written = []
    for index in range(1, of + 1):
        span = part_span(cfg.n_targets, cfg.batch_size, index, of)
        path = tmp_path / f"influence.part{index}.parquet"
        record = build_record("language_influence", "language_eval", {"selection": cfg.selection})
        record["part"] = {"index": index, "of": of, "first_target": span.start, "stop_target": span.stop,
                          "drawn": cfg.n_targets}
        datasets.write(analysed(cfg, span), path, influence_schema(cfg), record)
        written.append(path)
    return written


def figure_spec(cfg: InfluenceConfig, threshold: float) -> dict:
    return {"context": cfg.context, "local": cfg.local, "k_max": cfg.k_max, "gain_threshold": threshold,
            "n_boot": 200, "seed": 0, "plot": "scatter"}


def numbers(rows: pl.DataFrame) -> pl.DataFrame:
    """Figure 4's numbers in ``rows``: every row but the parts' own."""
    return rows.filter(~pl.col("metric").str.starts_with("part.") & ~pl.col("metric").str.starts_with("target."))


@pytest.mark.parametrize("screen", [False, True])
def test_a_summary_of_the_parts_sitting_by_sitting_holds_the_whole_draws_numbers(whole, tmp_path, screen):
    """Exported a part at a time and merged (``--keep-others``), the summary withholds Figure 4's claims
    until the last part is in, then holds the whole draw's numbers: unscreened, value for value."""
    cfg, plain = whole
    gain = (plain["short_loss"] - plain["long_loss"]).to_numpy()
    threshold = float(np.quantile(gain[gain > 0], 0.3))
    if screen:
        cfg = InfluenceConfig(**{**cfg.to_dict(), "screen_gain": threshold})
    spec = figure_spec(cfg, threshold)
    tables = written_parts(cfg, 3, tmp_path)
    summary = run_summary.empty()
    for index, table in enumerate([tables[2], tables[0], tables[1]]):  # the sittings in any order
        fresh = figure_rows.language_rows(spec, [table])
        summary = summary_parts.completed(figure_rows.merged(summary, fresh), spec)
        partly = summary_parts.withheld(summary)
        if index < 2:
            assert (partly.startswith(f"parts of the draw not all there ({index + 1} of 3 in, part")
                    and numbers(summary).height == 0)
            assert "no results: parts of the draw not all there" in judged.judge(
                claim("F4"), spec, summary, "").verdict
    assert partly is None
    whole_rows = figure_rows.language_rows(spec, tables)  # all the parts at once, as the figure job reads them
    assert_frame_equal(summary, whole_rows, check_exact=True)
    if screen:
        whole_frame = analysed(cfg)
        assert numbers(summary)["metric"].to_list() == run_summary.frame_rows(spec, whole_frame)["metric"].to_list()
        np.testing.assert_allclose(numbers(summary)["value"].to_numpy(),
                                   run_summary.frame_rows(spec, whole_frame)["value"].to_numpy(), rtol=0, atol=1e-6)
    else:
        assert_frame_equal(numbers(summary), run_summary.frame_rows(spec, plain), check_exact=True)
    for written in (summary_parts.frame_of(summary, cfg.k_max),):
        assert written.height == cfg.n_targets


def test_the_figure_reads_the_parts_end_to_end_and_refuses_a_part_missing(whole, tmp_path):
    cfg, plain = whole
    tables = written_parts(cfg, 3, tmp_path)
    spec = figure_spec(cfg, 0.1)
    assert_frame_equal(figure4.read_influence(tables[::-1], spec), plain, check_exact=True)
    with pytest.raises(InfluenceError, match=r"the draw's part 2 of 3 not there \(there: parts 1 and 3 of 3\)"):
        figure4.read_influence([tables[0], tables[2]], spec)
    with pytest.raises(InfluenceError, match="part 1 again"):
        figure4.read_influence([tables[0], tables[0], tables[1], tables[2]], spec)


def test_parts_of_another_draw_or_a_whole_draw_are_not_merged_into_a_summary(whole, tmp_path):
    cfg, _ = whole
    spec = figure_spec(cfg, 0.1)
    three = figure_rows.language_rows(spec, written_parts(cfg, 3, tmp_path / "three")[:1])
    two = figure_rows.language_rows(spec, written_parts(cfg, 2, tmp_path / "two")[:1])
    with pytest.raises(run_summary.SummaryError, match="part.of = 3, these of one with 2"):
        figure_rows.merged(three, two, "summary.csv")
    whole_rows = run_summary.frame_rows(spec, analysed(cfg))
    with pytest.raises(run_summary.SummaryError, match="rows there are a whole draw's, these parts'"):
        figure_rows.merged(whole_rows.with_columns(task=pl.lit("language")), two, "summary.csv")


def test_figure4_drawn_from_a_summary_of_every_part_is_the_whole_draws(whole, tmp_path):
    """``language.figure.from_summary``: the committed summary of every part gives the figure the whole
    draw's loss columns value for value and its caption the whole draw's numbers; a summary with a part
    missing, or of a draw not in parts, stops naming the file."""
    cfg, plain = whole
    spec = figure_spec(cfg, 0.1)
    tables = written_parts(cfg, 3, tmp_path)
    summary = tmp_path / "summary.csv"
    run_summary.write(figure_rows.language_rows(spec, tables), summary)
    columns = [*summary_parts.ANCHORS, *summary_parts.PER_K]  # those the summary keeps
    rebuilt = figure4.read_influence([summary], spec)
    assert_frame_equal(rebuilt.select(columns), plain.select(columns), check_exact=True, check_dtypes=False)
    assert not rebuilt[SCREENED_OUT].any()  # an unscreened draw
    assert_frame_equal(figure_rows.language_rows(spec, [summary]), figure_rows.language_rows(spec, tables),
                       check_exact=True)
    drawn = CliRunner().invoke(main, [
        "plot", "figure4", "--rule", "plot_figure4", "--spec", json.dumps({**spec, "from_summary": str(summary)}),
        f"--out={tmp_path / 'figure4.png'}", "--caption", str(REPO / "workflow/report/figure4.rst"),
        str(tmp_path / "figure4.caption.rst"), "--claim", str(REPO / "pipeline_src/findings/claims/F4_paired.yaml"),
        str(summary)])
    assert drawn.exit_code == 0, drawn.output
    caption = (tmp_path / "figure4.caption.rst").read_text()
    assert f"drawn from the run summary ``{summary}``" in caption and "F4'" in caption
    some = tmp_path / "some.csv"
    run_summary.write(figure_rows.language_rows(spec, tables[:2]), some)
    with pytest.raises(run_summary.SummaryError, match=r"some.csv: Figure 4 waits for every part: parts of the "
                                                       r"draw not all there \(2 of 3 in"):
        figure4.read_influence([some], spec)
    whole_draw = tmp_path / "whole.csv"
    run_summary.write(run_summary.frame_rows(spec, plain), whole_draw)
    with pytest.raises(run_summary.SummaryError, match="whole.csv: no per-target losses"):
        figure4.read_influence([whole_draw], spec)


def test_from_summary_makes_figure4_read_the_summary_and_names_a_missing_file(tmp_path):
    from pipeline_src.planning.studies import figure_inputs, study_of

    config = default_config()
    assert "from_summary" not in language_jobs.figure_spec(config, "figure4")  # unset: the spec of before the field
    config["language"]["figure"]["from_summary"] = "docs/findings/smollm2_decide.csv"
    assert language_jobs.figure_spec(config, "figure4")["from_summary"] == "docs/findings/smollm2_decide.csv"
    assert study_of("figure4").figure_tables(config, "figure4") == ["docs/findings/smollm2_decide.csv"]
    assert study_of("figure4").made_from(config, "figure4") == ["docs/findings/smollm2_decide.csv"]
    # what `lengthgen findings RESULTS` judges it from: the summary where it is, not under RESULTS
    assert figure_inputs(config, "figure4", tmp_path / "results") == [Path("docs/findings/smollm2_decide.csv")]
    config["language"]["figure"]["from_summary"] = str(tmp_path / "nothing.csv")
    with pytest.raises(language_jobs.LanguageConfigError, match="language.figure.from_summary=.*nothing.csv.*: no "
                                                                "such run summary"):
        language_jobs.check(config)

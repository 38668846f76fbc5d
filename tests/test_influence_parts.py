"""A draw analysed in parts (``language.analysis.parts``): each part a job of its own over consecutive
groups of ``batch_size`` targets, each target with the donor and random draws of its row in the whole
draw, so the parts end to end hold the whole draw's rows: bit for bit unscreened (the very forwards),
and screened L_long and L_short bit for bit, the searched targets' numbers within 1e-6 nats (their
groups are regrouped), as screening itself promises (tests/test_influence_screen.py)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipeline_src.language import influence as inf
from pipeline_src.language import language_jobs
from pipeline_src.language.influence_config import SCREENED_OUT, InfluenceConfig, InfluenceError, part_span
from pipeline_src.language.influence_table import PER_K
from pipeline_src.planning import paths, spec_check
from pipeline_src.planning.spec_check import SpecError
from tests.conftest import default_config
from tests.helpers import SMALL, one_thread_per_module, random_model, small_targets

one_thread = pytest.fixture(autouse=True, scope="module")(one_thread_per_module)

BATCH = 5  # 24 targets in 5 groups (the last of 4)


def analysed(cfg: InfluenceConfig, part: slice | None = None) -> pl.DataFrame:
    return inf.influential_tokens(random_model("rope"), small_targets(cfg), cfg, progress=None, part=part)


@pytest.mark.parametrize("of", [1, 2, 3, 5])
def test_part_spans_cover_the_draw_in_whole_groups(of):
    spans = [part_span(24, BATCH, index, of) for index in range(1, of + 1)]
    assert spans[0].start == 0 and spans[-1].stop == 24
    assert all(a.stop == b.start for a, b in zip(spans, spans[1:]))
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

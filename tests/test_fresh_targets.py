"""The SmolLM2 runs' targets are fresh: the run that would decide F4' (``config/smollm2_decide.yaml``,
which the GPU window's part (f) layers under its own) draws no target of the greedy_kl pilot (the 32
of seed 0) nor of ``config/smollm2.yaml`` (the 56 that left the pilot's out). ``leave_out`` names
one earlier draw, so the deciding draw's other seed keeps it clear of the rest, checked here.

Whether two draws share a target depends on the number of candidate targets alone: ``select_targets``
draws flat indices into every held-out document's candidates in document order. So one held-out
document with as many candidates stands in for the SmolLM2 token stream (the default corpus through
SmolLM2's tokenizer: 126,497 tokens with Lbar = 128 before them; the slow test counts them in the
real stream where the model's package is installed)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pipeline_src.config.influence_config import InfluenceConfig
from pipeline_src.language.targets import select_targets
from pipeline_src.planning import language_jobs
from pipeline_src.planning.load_config import load_config

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "config"
SMOLLM2_CANDIDATES = 126_497


def draw(spec: dict, candidates: int = SMOLLM2_CANDIDATES) -> set[int]:
    """The flat indices of the candidates a spec's draw picks, among ``candidates`` of them."""
    cfg = InfluenceConfig.from_dict({k: v for k, v in spec.items() if k not in ("hf_model", "device", "screen_gain")})
    context = cfg.context
    stream = pl.DataFrame({"doc": [0], "split": ["heldout"], "tokens": [[0] * (context + candidates)]},
                          schema={"doc": pl.Int64, "split": pl.Utf8, "tokens": pl.List(pl.Int32)})
    return set((select_targets(stream, cfg)["t"] - context).to_list())


def spec(*layers: str) -> dict:
    """The analysis's spec of the config ``layers`` (of its first part, less the part, where it has parts)."""
    first = language_jobs.job_specs(load_config([CONFIG / name for name in layers]))["language_influence"][0]
    return {k: v for k, v in first.items() if k != "part"}


def test_the_deciding_draw_shares_no_target_with_the_pilot_or_the_hour_run():
    hour = spec("smollm2.yaml")
    pilot = {**hour, "n_targets": hour["leave_out"]["n_targets"], "seed": hour["leave_out"]["seed"]}
    del pilot["leave_out"]
    deciding = spec("smollm2.yaml", "smollm2_decide.yaml")
    assert deciding["screen_gain"] == 0.1 and deciding["selection"] == "greedy_kl"
    drawn = draw(deciding)
    assert len(drawn) == deciding["n_targets"] and len(draw(pilot)) == 32 and len(draw(hour)) == 56
    assert not drawn & draw(pilot) and not drawn & draw(hour)


def test_the_gpu_window_analyses_the_deciding_draw():
    """Part (f) changes where and how fast, not which targets."""
    deciding = spec("smollm2.yaml", "smollm2_decide.yaml")
    window = spec("smollm2.yaml", "smollm2_decide.yaml", "gpu_window_smollm2.yaml")
    assert {k: v for k, v in window.items() if k not in ("device", "hf_model", "batch_size")} == \
        {k: v for k, v in deciding.items() if k not in ("device", "hf_model", "batch_size")}


@pytest.mark.slow  # the default corpus through SmolLM2's tokenizer: about 20 s
def test_the_smollm2_stream_holds_the_candidates_counted_above(tmp_path):
    pytest.importorskip("gguf", reason="the pretrained extra: pip install -e '.[pretrained]'")
    from pipeline_src.language import pretrained
    from pipeline_src.language.token_stream import build_corpus

    try:
        pretrained.gguf_file("smollm2")
    except pretrained.PretrainedError as err:
        pytest.skip(str(err))
    config = load_config([CONFIG / "smollm2.yaml"])
    build_corpus(language_jobs.corpus_spec(config), tmp_path / "tokenizer.json", tmp_path / "tokens.parquet",
                 progress=lambda line: None)
    heldout = pl.read_parquet(tmp_path / "tokens.parquet").filter(pl.col("split") == "heldout")
    context = config["language"]["context"]
    lengths = heldout["tokens"].list.len()
    assert int((lengths - context).clip(lower_bound=0).sum()) == SMOLLM2_CANDIDATES

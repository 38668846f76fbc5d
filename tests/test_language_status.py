"""``lengthgen status`` on the natural-language analysis: each influence job (each part's, with
``language.analysis.parts``) done, stale, running with its progress and time left, or missing."""

from __future__ import annotations

import polars as pl

from pipeline_src.config.influence_config import InfluenceConfig
from pipeline_src.language.influence_log import progress, sequences_per_target
from pipeline_src.planning import language_jobs as lang
from pipeline_src.planning import paths
from pipeline_src.provenance.records import build_record
from pipeline_src.provenance.sidecars import write_sidecar
from pipeline_src.runs.language_status import language_status
from tests.conftest import default_config

PREFIX = "influential tokens (part 7 of 8: targets 577 to 672 of the 741 drawn)"
CFG = InfluenceConfig(context=128, local=64, k_max=4, selection="greedy_kl", n_targets=741, seed=3, batch_size=32)


def test_an_analysed_target_scores_the_sequences_of_both_searches_and_the_random_draws():
    assert sequences_per_target(CFG) == 2 * (64 + 63 + 62 + 61) + 4 * 4  # 516, and L_long and L_short: 518
    topk = InfluenceConfig(**{**CFG.to_dict(), "selection": "topk"})
    assert sequences_per_target(topk) == 2 * (64 + 3) + 16


def test_the_progress_of_a_running_analysis_and_its_time_left(tmp_path):
    log = tmp_path / "influence.part7.log"
    log.write_text(f"{PREFIX}: 0/96 after 10 s; screening 96 drawn targets: 64 sequences scored\n"
                   f"{PREFIX}: 0/39 after 26 s; screened 96 drawn targets: 57 (59%) gain at most 0.1 nats and are "
                   "screened out; 39 to analyse\n"
                   f"{PREFIX}: 32/39 after 1026 s\n"
                   f"{PREFIX}: 32/39 after 1086 s; targets 33 to 39: 516 sequences scored\n")
    work = 32 * 516 + 516  # sequences scored in the 1,060 s since the screening ended
    left = (39 * 516 - work) * 1060 / work
    assert progress(log, CFG) == (f"32 of 39 analysed after 1086 s (57 of 96 drawn screened out); "
                                  f"about {left:,.0f} s left")
    log.write_text(f"{PREFIX}: 0/96 after 10 s; screening 96 drawn targets: 64 sequences scored\n")
    assert progress(log, CFG) == "screening 96 drawn targets after 10 s"
    log.write_text("Traceback (most recent call last):\n")
    assert progress(log, CFG) == ""
    assert progress(tmp_path / "absent.log", CFG) == ""


def test_status_lists_each_part_done_running_stale_or_missing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = default_config()
    config["language"]["analysis"].update(parts=4, batch_size=32, screen=True)
    for part in (1, 2):
        table = tmp_path / paths.influence_table(part)
        table.parent.mkdir(parents=True, exist_ok=True)
        pl.DataFrame({"x": [1]}).write_parquet(table)
        spec = lang.influence_spec(config, part) if part == 1 else {**lang.influence_spec(config, part), "seed": 9}
        record = build_record("language_influence", "language_eval", spec)
        record["screening"] = {"screen_gain": 0.1, "drawn": 32, "screened_out": 20, "fraction_screened_out": 0.625}
        write_sidecar(table, record)
    log = tmp_path / paths.log(paths.influence_job(".part3"))
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(f"{PREFIX}: 0/12 after 20 s; screened 32 drawn targets: 20 (62%) gain at most 0.1 nats and "
                   "are screened out; 12 to analyse\n")
    lines = language_status(config).splitlines()
    assert lines[1].startswith("influence part 1 of 4") and "done" in lines[1]
    assert "32 drawn, 20 screened out, 12 analysed" in lines[1]
    assert "stale" in lines[2] and "made with another spec" in lines[2]
    assert "running" in lines[3] and "0 of 12 analysed after 20 s (20 of 32 drawn screened out)" in lines[3]
    assert "missing" in lines[4] and lines[-1] == "4 influence job(s): 1 done"
    config["language"]["enabled"] = False
    assert language_status(config) == ""

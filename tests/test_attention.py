"""Attention out of the decoder (``forward(attention_of=(rows, queries))``) and the ``attention_scale``
option (scalable softmax): agreement with the default path, hand computations, KV caches, the
unchanged ``none`` model, and the option's way from the config to a trained model."""

from __future__ import annotations

import copy
import math
import re

import pytest
import torch
import yaml

from pipeline_src import schemes
from pipeline_src.config.layers import ConfigError
from pipeline_src.config.model_config import model_config
from pipeline_src.evaluation.decoding import greedy_decode
from pipeline_src.model import Decoder, ModelConfig
from pipeline_src.planning import jobs
from pipeline_src.planning import language_jobs as language_config
from pipeline_src.planning.load_config import validate
from pipeline_src.training.checkpoints import load_model
from pipeline_src.training.train import train
from tests.conftest import REPO, default_config, tiny_train_spec

VOCAB = 11
ENCODINGS = sorted(schemes.ENCODINGS)
SCALES = ["none", "log_length"]


def make_model(seed: int = 0, **kw) -> Decoder:
    """A tiny decoder with sharp attention (large weights), so that wrong scores change the output;
    with log_length, distinct per-head factors."""
    torch.manual_seed(seed)
    cfg = ModelConfig(**{"vocab_size": VOCAB, "d_model": 32, "n_layer": 2, "n_head": 4, "max_positions": 64, **kw})
    model = Decoder(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("weight") and p.dim() == 2:
                p.normal_(0.0, 0.2)
        for block in model.blocks:
            if block.attn.length_scale is not None:
                block.attn.length_scale.copy_(torch.tensor([0.3, 0.6, 0.9, 1.5]))
    return model


def batch(B: int = 3, T: int = 9, seed: int = 1) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """tokens, position IDs (shifted) and a padding mask (row 0 right-padded, row 1 left-padded)."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, VOCAB, (B, T), generator=g)
    ids = torch.arange(T).repeat(B, 1) + 2
    mask = torch.ones(B, T, dtype=torch.bool)
    mask[0, T - 3:] = False
    mask[1, :2] = False
    return tokens, ids, mask


def every_query(model: Decoder, tokens, ids, mask=None, **kw):
    """The forward with ``attention_of`` asking for every query (row-major), its attention
    reshaped to [B, H, T, T_past + T] per layer."""
    B, T = tokens.shape
    rows, queries = torch.arange(B).repeat_interleave(T), torch.arange(T).repeat(B)
    out = model(tokens, ids, mask, attention_of=(rows, queries), **kw)
    for probs in out.attention:
        assert probs.shape[0] == B * T and probs.dtype == torch.float32 and probs.device.type == "cpu"
    out.attention = [probs.view(B, T, *probs.shape[1:]).transpose(1, 2) for probs in out.attention]
    return out


def allowed_keys(T: int, mask: torch.Tensor | None) -> torch.Tensor:
    """allowed[b, i, j] (B = 1 without a mask): key j <= i and real, or j == i; one loop per index."""
    rows = mask.tolist() if mask is not None else [[True] * T]
    return torch.tensor([[[j <= i and (row[j] or j == i) for j in range(T)] for i in range(T)] for row in rows])


def first_layer_by_hand(model: Decoder, tokens, ids, mask) -> torch.Tensor:
    """Layer 0's probabilities [B, H, T, T] written out: softmax(s_h ln(n_i) q.k / sqrt(d) + bias),
    n_i the number of keys query i may attend to (s_h ln(n_i) = 1 with attention_scale none)."""
    cfg, attn = model.cfg, model.blocks[0].attn
    B, T = tokens.shape
    H, d = cfg.n_head, cfg.head_dim
    x = model.embed(tokens)
    if model.pos_embed is not None:
        x = x + model.pos_embed(ids)
    q, k, _ = attn.qkv(model.blocks[0].ln1(x)).view(B, T, H, 3 * d).transpose(1, 2).chunk(3, dim=-1)
    rotate = model.encoding.rotation(cfg, ids)
    if rotate is not None:
        q, k = rotate(q), rotate(k)
    allowed = allowed_keys(T, mask)[:, None].expand(B, H, T, T)
    scores = q @ k.transpose(-1, -2) / math.sqrt(d)
    if attn.length_scale is not None:
        n = allowed.sum(-1, keepdim=True).double()
        scores = scores * (attn.length_scale[:, None, None].double() * n.log()).float()
    bias = model.encoding.attention_bias(cfg, ids, ids)
    if bias is not None:
        scores = scores + bias
    return scores.masked_fill(~allowed, float("-inf")).softmax(-1)


# ---------------------------------------------------------------- attention_of

@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("padded", [False, True])
def test_asking_for_attention_leaves_the_outputs_as_they_are(scale, encoding, padded):
    model = make_model(position_encoding=encoding, attention_scale=scale, parallel_residual=encoding != "rope")
    tokens, ids, mask = batch()
    mask = mask if padded else None
    with torch.no_grad():
        default = model(tokens, ids, mask)
        explicit = every_query(model, tokens, ids, mask)
    assert default.attention is None
    assert torch.equal(explicit.token_logits, default.token_logits)
    assert len(explicit.attention) == model.cfg.n_layer
    allowed = allowed_keys(9, mask)[:, None]
    for probs in explicit.attention:
        assert probs.shape == (3, 4, 9, 9)
        torch.testing.assert_close(probs.sum(-1), torch.ones(3, 4, 9), rtol=0, atol=1e-6)
        assert torch.all(probs.masked_select(~allowed.expand_as(probs)) == 0)  # future keys, padding keys
        assert torch.all(probs.masked_select(allowed.expand_as(probs)) > 0)


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("encoding", ["rope", "alibi", "abs"])
@pytest.mark.parametrize("padded", [False, True])
def test_attention_matches_a_hand_computation(scale, encoding, padded):
    model = make_model(position_encoding=encoding, attention_scale=scale)
    tokens, ids, mask = batch()
    mask = mask if padded else None
    with torch.no_grad():
        got = every_query(model, tokens, ids, mask).attention[0]
        want = first_layer_by_hand(model, tokens, ids, mask)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("encoding", ["rope", "alibi"])
def test_attention_with_a_kv_cache(scale, encoding):
    model = make_model(position_encoding=encoding, attention_scale=scale)
    tokens, ids, _ = batch()
    with torch.no_grad():
        full = every_query(model, tokens, ids)
        outputs = []  # a prefix of 4, then 4 tokens at once, then 1
        cache = None
        for start, end in ((0, 4), (4, 8), (8, 9)):
            default = model(tokens[:, start:end], ids[:, start:end], cache=cache, use_cache=True)
            explicit = every_query(model, tokens[:, start:end], ids[:, start:end], cache=cache, use_cache=True)
            assert torch.equal(explicit.token_logits, default.token_logits)
            for (k0, v0), (k1, v1) in zip(default.cache.layers, explicit.cache.layers, strict=False):
                assert torch.equal(k1, k0) and torch.equal(v1, v0)
            outputs.append(explicit)
            cache = default.cache
    for layer in range(model.cfg.n_layer):
        for out, (start, end) in zip(outputs, ((0, 4), (4, 8), (8, 9)), strict=False):
            probs = out.attention[layer]
            assert probs.shape == (3, 4, end - start, end)  # [B, H, T, T_past + T]
            torch.testing.assert_close(probs, full.attention[layer][:, :, start:end, :end], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(torch.cat([o.token_logits for o in outputs], 1), full.token_logits, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("scale", SCALES)
def test_bf16_autocast_with_explicit_attention(scale):
    model = make_model(attention_scale=scale)
    tokens, ids, mask = batch()
    with torch.no_grad():
        refs = [model(tokens, ids, m).token_logits for m in (None, None, mask, mask)]
        with torch.autocast("cpu", dtype=torch.bfloat16):
            outs = [every_query(model, tokens, ids, m) if asked else model(tokens, ids, m)
                    for m in (None, mask) for asked in (False, True)]
    for out, ref in zip(outs, refs, strict=False):
        assert (out.token_logits.float() - ref).abs().max() < 0.05 * ref.abs().max() + 2e-2
    assert outs[1].attention[0].dtype == torch.float32
    torch.testing.assert_close(outs[1].attention[0].sum(-1), torch.ones(3, 4, 9), rtol=0, atol=1e-5)


# ---------------------------------------------------------------- attention_scale: none changes nothing

@pytest.mark.parametrize("encoding", ENCODINGS)
def test_none_is_todays_model_bit_for_bit(encoding):
    """A config that does not name attention_scale and one with "none" build the same parameters
    from the same seed and give exactly the same outputs and gradients."""
    today = dict(vocab_size=VOCAB, d_model=32, n_layer=2, n_head=4, max_positions=64, position_encoding=encoding)
    assert ModelConfig(**today).attention_scale == "none"
    models = []
    for cfg in (ModelConfig(**today), ModelConfig(**today, attention_scale="none")):
        torch.manual_seed(3)
        models.append(Decoder(cfg))
    a, b = (m.state_dict() for m in models)
    assert list(a) == list(b) and not any("length_scale" in name for name in a)
    assert all(torch.equal(a[name], b[name]) for name in a)
    tokens, ids, mask = batch()
    for model in models:
        model(tokens, ids, mask).token_logits.pow(2).mean().backward()
    for (name, p), q in zip(models[0].named_parameters(), models[1].parameters(), strict=False):
        assert torch.equal(p.grad, q.grad), name
    outputs = []
    with torch.no_grad():
        for model in models:
            model.eval()
            cached = model(tokens[:, :5], ids[:, :5], use_cache=True)
            more = model(tokens[:, 5:8], ids[:, 5:8], cache=cached.cache, use_cache=True)
            outputs.append([model(tokens, ids).token_logits, model(tokens, ids, mask).token_logits,
                            cached.token_logits, more.token_logits,
                            model(tokens[:, 8:], ids[:, 8:], cache=more.cache).token_logits])
    assert all(torch.equal(x, y) for x, y in zip(*outputs, strict=False))


# ---------------------------------------------------------------- attention_scale: log_length

def test_log_length_adds_one_factor_per_head_and_nothing_else():
    plain, scaled = make_model(seed=4), make_model(seed=4, attention_scale="log_length")
    torch.manual_seed(4)
    fresh = Decoder(scaled.cfg)
    extra = set(scaled.state_dict()) - set(plain.state_dict())
    assert extra == {f"blocks.{i}.attn.length_scale" for i in range(2)}
    for block in fresh.blocks:
        assert block.attn.length_scale.shape == (4,)
        torch.testing.assert_close(block.attn.length_scale.detach(), torch.full((4,), 1 / math.log(10)))
    # The other parameters draw as without the factor (torch.full draws nothing).
    torch.manual_seed(4)
    unscaled = Decoder(plain.cfg).state_dict()
    assert all(torch.equal(value, fresh.state_dict()[name]) for name, value in unscaled.items())


def test_log_length_changes_the_output():
    plain, scaled = make_model(seed=4), make_model(seed=4, attention_scale="log_length")
    tokens, ids, _ = batch()
    with torch.no_grad():
        assert not torch.allclose(plain(tokens, ids).token_logits, scaled(tokens, ids).token_logits)


@pytest.mark.parametrize("encoding", ["rope", "alibi"])
def test_log_length_padding_changes_nothing(encoding):
    """Padding keys are not counted: a padded row scores its real tokens as the row alone does."""
    model = make_model(position_encoding=encoding, attention_scale="log_length")
    tokens, ids, mask = batch()
    with torch.no_grad():
        padded = model(tokens, ids, mask).token_logits
        right = model(tokens[:1, :6], ids[:1, :6]).token_logits
        left = model(tokens[1:2, 2:], ids[1:2, 2:]).token_logits
    torch.testing.assert_close(padded[0, :6], right[0], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(padded[1, 2:], left[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("encoding", ["rope", "alibi", "abs"])
def test_log_length_cached_decoding_matches_the_full_forward(encoding):
    model = make_model(seed=5, position_encoding=encoding, attention_scale="log_length")
    g = torch.Generator().manual_seed(6)
    prompt = torch.randint(0, VOCAB, (3, 5), generator=g)
    prompt_ids, response_ids = torch.arange(5).expand(3, 5), torch.arange(5, 17).expand(3, 12)
    cached = greedy_decode(model, prompt, prompt_ids, 12, response_positions=response_ids, use_cache=True)
    full = greedy_decode(model, prompt, prompt_ids, 12, response_positions=response_ids, use_cache=False)
    assert torch.equal(cached.tokens, full.tokens)
    assert len(cached.tokens.unique()) > 1
    tokens, ids = torch.cat((prompt, cached.tokens), 1), torch.cat((prompt_ids, response_ids), 1)
    with torch.no_grad():
        whole = model(tokens, ids).token_logits
        first = model(tokens[:, :5], ids[:, :5], use_cache=True)
        steps = [first.token_logits]
        cache = first.cache
        for t in range(5, 17):
            out = model(tokens[:, t:t + 1], ids[:, t:t + 1], cache=cache, use_cache=True)
            steps.append(out.token_logits)
            cache = out.cache
    torch.testing.assert_close(torch.cat(steps, 1), whole, rtol=1e-5, atol=1e-5)


def test_log_length_factor_gets_a_gradient():
    model = make_model(attention_scale="log_length").train()
    tokens, ids, mask = batch()
    for m in (None, mask):
        model.zero_grad()
        model(tokens, ids, m).token_logits.pow(2).mean().backward()
        for block in model.blocks:
            grad = block.attn.length_scale.grad
            assert grad is not None and torch.isfinite(grad).all() and (grad != 0).all()


# ---------------------------------------------------------------- config

def test_config_field_round_trip_and_old_model_json():
    cfg = ModelConfig(vocab_size=VOCAB, attention_scale="log_length")
    assert ModelConfig.from_dict(cfg.to_dict()) == cfg
    old = {k: v for k, v in ModelConfig(vocab_size=VOCAB).to_dict().items() if k != "attention_scale"}
    assert ModelConfig.from_dict(old).attention_scale == "none"  # model.json written before the field


def test_absent_in_the_config_means_none_and_no_default_is_filled_in():
    """A task that does not write the field gets none, and no default is written into its specs; a
    task that writes it (addition) gets what it wrote."""
    config = default_config()
    written = {task: section.get("model", {}).get("attention_scale")
               for task, section in yaml.safe_load((REPO / "config" / "config.yaml").read_text()).items()
               if isinstance(section, dict)}
    assert written["addition"] == "log_length"
    for task in jobs.tasks(config):
        for cell in jobs.cells(config, task)[:1]:
            spec = jobs.train_spec(config, task, cell["variant"], cell["scheme"], cell["seed"])
            if written.get(task) is None:
                assert "attention_scale" not in config[task]["model"] and "attention_scale" not in spec["model"]
                assert model_config(spec, VOCAB).attention_scale == "none"
            else:
                assert model_config(spec, VOCAB).attention_scale == written[task]
    if language_config.enabled(config):
        for spec in language_config.job_specs(config)["language_train"]:
            assert "attention_scale" not in spec["model"]


def _with_defaults_model(**model) -> dict:
    """config/config.yaml as read (not yet validated), with ``model`` in its defaults."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config.setdefault("defaults", {}).setdefault("model", {}).update(model)
    return config


def test_log_length_flows_from_the_config_to_the_model():
    config = _with_defaults_model(attention_scale="log_length")
    validate(config)
    task = jobs.tasks(config)[0]
    cell = jobs.cells(config, task)[0]
    spec = jobs.train_spec(config, task, cell["variant"], cell["scheme"], cell["seed"])
    assert spec["model"]["attention_scale"] == "log_length"
    assert model_config(spec, VOCAB).attention_scale == "log_length"


def test_bad_attention_scale_names_the_field():
    config = _with_defaults_model(attention_scale="sqrt")
    with pytest.raises(ConfigError, match=re.escape("model.attention_scale")):
        validate(config)
    spec = tiny_train_spec("rope")
    spec["model"]["attention_scale"] = "sqrt"
    with pytest.raises(ValueError, match=re.escape("model.attention_scale='sqrt'")):
        model_config(spec, VOCAB)


def test_training_and_loading_a_log_length_model(tmp_path, train_data):
    spec = tiny_train_spec("alibi")
    spec["model"] = {**copy.deepcopy(spec["model"]), "attention_scale": "log_length"}
    out = tmp_path / "scaled"
    train(spec, train_data, out, progress=lambda line: None)
    model, _ = load_model(out)
    assert model.cfg.attention_scale == "log_length"
    learned = model.blocks[0].attn.length_scale.detach()
    assert learned.shape == (2,) and not torch.allclose(learned, torch.full((2,), 1 / math.log(10)))

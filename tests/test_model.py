"""Tests for pipeline_src.model: rotary maths, causality, padding, config handling."""

import math

import numpy as np
import pytest
import torch

from pipeline_src import schemes
from pipeline_src.model import Decoder, ModelConfig
from pipeline_src.schemes.rope import apply_rotary, rotary_tables

ENCODINGS = sorted(schemes.ENCODINGS)  # every registered encoding


def tiny(**kw) -> ModelConfig:
    base = dict(vocab_size=11, d_model=32, n_layer=2, n_head=4, max_positions=64)
    base.update(kw)
    return ModelConfig(**base)


def make_model(seed: int = 0, **kw) -> Decoder:
    torch.manual_seed(seed)
    return Decoder(tiny(**kw)).eval()


def reference_rotary(x: np.ndarray, positions: np.ndarray, rotary_dim: int, base: float) -> np.ndarray:
    """Rotate pair (i, i + r/2) of each vector by angle pos * base^(-2i/r), as a complex product."""
    out = x.astype(np.float64).copy()
    half = rotary_dim // 2
    for b in range(x.shape[0]):
        for h in range(x.shape[1]):
            for t in range(x.shape[2]):
                for i in range(half):
                    theta = positions[b, t] * base ** (-2.0 * i / rotary_dim)
                    z = complex(x[b, h, t, i], x[b, h, t, i + half]) * complex(math.cos(theta), math.sin(theta))
                    out[b, h, t, i], out[b, h, t, i + half] = z.real, z.imag
    return out


def rotate(x: torch.Tensor, pos: torch.Tensor, rotary_dim: int, base: float = 10000.0) -> torch.Tensor:
    return apply_rotary(x, *rotary_tables(pos, rotary_dim, base))


# ---------------------------------------------------------------- rotary

@pytest.mark.parametrize("rotary_pct", [1.0, 0.25])
def test_rotary_matches_reference(rotary_pct):
    cfg = tiny(d_model=64, n_head=2, rotary_pct=rotary_pct)  # head_dim 32 -> rotary_dim 32 or 8
    torch.manual_seed(1)
    q = torch.randn(2, 3, 5, cfg.head_dim)
    pos = torch.tensor([[0, 3, 4, 17, 250], [9, 2, 1000, 5, 6]])  # arbitrary, non-contiguous
    got = rotate(q, pos, cfg.rotary_dim, cfg.rotary_base).numpy()
    want = reference_rotary(q.numpy(), pos.numpy(), cfg.rotary_dim, cfg.rotary_base)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(got[..., cfg.rotary_dim:], q.numpy()[..., cfg.rotary_dim:])


def test_rotary_scores_depend_only_on_offsets():
    torch.manual_seed(2)
    q, k = torch.randn(1, 2, 6, 16), torch.randn(1, 2, 6, 16)
    pos = torch.tensor([[0, 2, 3, 7, 8, 20]])

    def scores(p):
        return rotate(q, p, 16) @ rotate(k, p, 16).transpose(-1, -2)

    for shift in (1, 37, 500):
        torch.testing.assert_close(scores(pos + shift), scores(pos), rtol=1e-4, atol=1e-4)


def test_rotary_dim_rounds_down_to_even():
    assert tiny(d_model=24, n_head=2, rotary_pct=0.25).rotary_dim == 2  # 12 * 0.25 = 3 -> 2


# ---------------------------------------------------------------- causality and padding

@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("parallel", [True, False])
@pytest.mark.parametrize("use_mask", [False, True])
@pytest.mark.parametrize("scale", ["none", "log_length"])
def test_future_tokens_do_not_change_past_logits(encoding, parallel, use_mask, scale):
    model = make_model(position_encoding=encoding, parallel_residual=parallel, attention_scale=scale)
    tokens = torch.randint(0, 11, (2, 8))
    pos = torch.arange(8).repeat(2, 1) + 3
    mask = torch.ones(2, 8, dtype=torch.bool) if use_mask else None
    base = model(tokens, pos, mask).token_logits
    for j in (4, 7):
        t2, p2 = tokens.clone(), pos.clone()
        t2[:, j] = (t2[:, j] + 1) % 11
        p2[:, j] = 60
        changed = model(t2, p2, mask).token_logits
        torch.testing.assert_close(changed[:, :j], base[:, :j], rtol=0, atol=1e-6)
        assert not torch.allclose(changed[:, j], base[:, j])


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("scale", ["none", "log_length"])
def test_padding_with_attention_mask(encoding, scale):
    model = make_model(position_encoding=encoding, attention_scale=scale)
    torch.manual_seed(3)
    short = torch.randint(1, 11, (5,))
    long = torch.randint(1, 11, (8,))
    alone = model(short[None], torch.arange(5)[None] + 2).token_logits[0]

    # Right padding: row 0 is `short` followed by 3 pads; row 1 is full.
    tokens = torch.stack([torch.cat([short, torch.zeros(3, dtype=torch.long)]), long])
    pos = torch.stack([torch.cat([torch.arange(5) + 2, torch.zeros(3, dtype=torch.long)]), torch.arange(8)])
    mask = torch.tensor([[True] * 5 + [False] * 3, [True] * 8])
    out = model(tokens, pos, mask).token_logits
    torch.testing.assert_close(out[0, :5], alone, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(out[1], model(long[None], torch.arange(8)[None]).token_logits[0], rtol=1e-5, atol=1e-5)

    # Left padding: 3 pads then `short`, with the same position ids on the real tokens.
    tokens = torch.cat([torch.zeros(3, dtype=torch.long), short])[None]
    pos = torch.cat([torch.zeros(3, dtype=torch.long), torch.arange(5) + 2])[None]
    mask = torch.tensor([[False] * 3 + [True] * 5])
    out = model(tokens, pos, mask).token_logits[0]
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out[3:], alone, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- position handling

def test_abs_rejects_out_of_range_positions():
    model = make_model(position_encoding="abs")
    tokens = torch.zeros(1, 3, dtype=torch.long)
    model(tokens, torch.tensor([[0, 1, 63]]))
    with pytest.raises(ValueError, match="position id 64 >= max_positions 64"):
        model(tokens, torch.tensor([[0, 1, 64]]))
    with pytest.raises(ValueError, match="negative"):
        model(tokens, torch.tensor([[0, -1, 2]]))


def test_rope_accepts_positions_beyond_max_positions():
    model = make_model(position_encoding="rope")
    out = model(torch.zeros(1, 3, dtype=torch.long), torch.tensor([[5, 900, 100000]]))
    assert torch.isfinite(out.token_logits).all()


def test_none_ignores_position_ids():
    model = make_model(position_encoding="none")
    tokens = torch.randint(0, 11, (2, 6))
    a = model(tokens, torch.arange(6).repeat(2, 1)).token_logits
    b = model(tokens, torch.randint(0, 10**6, (2, 6))).token_logits
    assert torch.equal(a, b)


def test_position_changes_output_for_rope_and_abs():
    for encoding in ("rope", "abs"):
        model = make_model(position_encoding=encoding)
        tokens = torch.randint(0, 11, (1, 6))
        a = model(tokens, torch.arange(6)[None]).token_logits
        b = model(tokens, torch.tensor([[0, 1, 2, 10, 11, 12]])).token_logits
        assert not torch.allclose(a[:, 3:], b[:, 3:])


# ---------------------------------------------------------------- outputs, config, init, precision

def test_output_shapes_and_position_head():
    model = make_model(position_head=True)
    out = model(torch.zeros(3, 7, dtype=torch.long), torch.arange(7).repeat(3, 1))
    assert out.token_logits.shape == (3, 7, 11)
    assert out.position_logits.shape == (3, 7, 64)
    assert make_model()(torch.zeros(1, 2, dtype=torch.long),
                        torch.zeros(1, 2, dtype=torch.long)).position_logits is None


def test_config_round_trip():
    import json
    cfg = tiny(d_mlp=48, position_encoding="abs", rotary_pct=0.5, parallel_residual=False, position_head=True,
               attention_scale="log_length")
    assert ModelConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    assert tiny().mlp_dim == 128


@pytest.mark.parametrize("field, value", [
    ("d_model", 30),  # not divisible by n_head=4
    ("position_encoding", "bogus"),
    ("rotary_pct", 0.0),
    ("rotary_pct", 0.05),  # 8 * 0.05 -> 0 rotary dims
    ("n_layer", 0),
    ("d_mlp", -1),
    ("vocab_size", 2.5),
    ("attention_scale", "sqrt"),
])
def test_bad_config_names_field(field, value):
    with pytest.raises(ValueError, match=field):
        tiny(**{field: value})


def test_unknown_config_key():
    with pytest.raises(ValueError, match="dropout"):
        ModelConfig.from_dict({**tiny().to_dict(), "dropout": 0.1})


def test_init_is_deterministic_and_follows_scheme():
    a, b = make_model(seed=5), make_model(seed=5)
    for (name, p), q in zip(a.named_parameters(), b.parameters(), strict=False):
        assert torch.equal(p, q), name
    assert torch.all(a.blocks[0].attn.qkv.bias == 0)
    assert torch.all(a.blocks[0].ln1.weight == 1)
    assert abs(a.embed.weight.std().item() - 0.02) < 0.005
    assert a.num_parameters() == sum(p.numel() for p in a.parameters())


def test_bf16_autocast_close_to_fp32():
    model = make_model(position_encoding="rope", rotary_pct=0.25)
    tokens, pos = torch.randint(0, 11, (2, 8)), torch.arange(8).repeat(2, 1)
    mask = torch.ones(2, 8, dtype=torch.bool)
    ref = model(tokens, pos).token_logits
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low = model(tokens, pos).token_logits
        low_masked = model(tokens, pos, mask).token_logits
    assert torch.isfinite(low).all()
    for out in (low, low_masked):
        assert (out.float() - ref).abs().max() < 0.05 * ref.abs().max() + 1e-2


# ---------------------------------------------------------------- agreement with Hugging Face GPT-NeoX

@pytest.mark.parametrize("rotary_pct, parallel", [(1.0, True), (0.25, False)])
def test_matches_hf_gpt_neox(rotary_pct, parallel):
    transformers = pytest.importorskip("transformers")
    cfg = tiny(rotary_pct=rotary_pct, parallel_residual=parallel)
    model = make_model(rotary_pct=rotary_pct, parallel_residual=parallel)
    hf = transformers.GPTNeoXForCausalLM(transformers.GPTNeoXConfig(
        vocab_size=cfg.vocab_size, hidden_size=cfg.d_model, num_hidden_layers=cfg.n_layer,
        num_attention_heads=cfg.n_head, intermediate_size=cfg.mlp_dim, rotary_pct=rotary_pct,
        rotary_emb_base=cfg.rotary_base, max_position_embeddings=cfg.max_positions,
        use_parallel_residual=parallel, hidden_dropout=0.0, attention_dropout=0.0)).eval()
    names = {"embed_in": "embed", "final_layer_norm": "ln_f", "input_layernorm": "ln1",
             "post_attention_layernorm": "ln2", "attention.query_key_value": "attn.qkv",
             "attention.dense": "attn.out", "mlp.dense_h_to_4h": "mlp.up", "mlp.dense_4h_to_h": "mlp.down"}
    ours = model.state_dict()
    mapped = {}
    for key in hf.state_dict():
        new = key.replace("gpt_neox.", "").replace("layers.", "blocks.").replace("embed_out", "lm_head")
        for old, repl in names.items():
            new = new.replace(old, repl)
        mapped[key] = ours[new]
    hf.load_state_dict(mapped)
    tokens = torch.randint(0, 11, (2, 9))
    pos = torch.tensor([[0, 1, 2, 5, 6, 7, 30, 31, 32], list(range(9))])
    with torch.no_grad():
        want = hf(input_ids=tokens, position_ids=pos).logits
        got = model(tokens, pos).token_logits
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)

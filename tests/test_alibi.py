"""Scheme alibi (Press et al., 2021): head slopes, the bias, the decoder with it, cached decoding,
translation invariance, and training."""

from __future__ import annotations

import math

import polars as pl
import pytest
import torch

from pipeline_src.evaluation.decoding import greedy_decode
from pipeline_src.model import Decoder, ModelConfig
from pipeline_src.schemes import get_encoding, get_scheme
from pipeline_src.schemes.alibi import alibi_slopes
from pipeline_src.schemes.scheme import identity_ids
from pipeline_src.training.checkpoints import load_model
from pipeline_src.training.train import train
from tests.conftest import tiny_train_spec

VOCAB = 11
# The paper's slopes, written out: n = 4 is 2^-2, 2^-4, ...; n = 3 takes n = 2's slopes (2^-4, 2^-8)
# and the first of every other slope of n = 4 (2^-2); n = 6 takes n = 4's and two of n = 8's.
SLOPES = {
    1: [2 ** -8],
    3: [2 ** -4, 2 ** -8, 2 ** -2],
    4: [2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8],
    6: [2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8, 2 ** -1, 2 ** -3],
}


def make_model(n_head: int = 4, seed: int = 0, **kw) -> Decoder:
    torch.manual_seed(seed)
    cfg = ModelConfig(vocab_size=VOCAB, d_model=8 * n_head, n_layer=2, n_head=n_head, max_positions=64,
                      position_encoding="alibi", **kw)
    model = Decoder(cfg).eval()
    with torch.no_grad():  # sharp attention, so that a wrong bias changes the argmax
        for name, p in model.named_parameters():
            if name.endswith("weight") and p.dim() == 2:
                p.normal_(0.0, 0.3)
    return model


def direct_bias(n_head: int, query_ids: list[int], key_ids: list[int]) -> list[list[list[float]]]:
    """bias[h][i][j] = -m_h * (query_ids[i] - key_ids[j]), one loop per index."""
    return [[[-SLOPES[n_head][h] * (qi - kj) for kj in key_ids] for qi in query_ids] for h in range(n_head)]


def test_slopes_for_eight_heads_halve_from_one_half():
    assert alibi_slopes(8) == [1 / 2, 1 / 4, 1 / 8, 1 / 16, 1 / 32, 1 / 64, 1 / 128, 1 / 256]


@pytest.mark.parametrize("n_head", sorted(SLOPES))
def test_slopes_follow_the_paper(n_head):
    assert alibi_slopes(n_head) == pytest.approx(SLOPES[n_head], rel=1e-12)


@pytest.mark.parametrize("n_head", [3, 4])
def test_bias_matches_the_formula(n_head):
    cfg = ModelConfig(vocab_size=VOCAB, d_model=8 * n_head, n_head=n_head, position_encoding="alibi")
    query_ids = torch.tensor([[3, 4, 9], [0, 7, 2]])  # row 1: coupled-like, not increasing
    key_ids = torch.tensor([[0, 1, 2, 3, 4, 9], [5, 1, 1, 0, 7, 2]])
    bias = get_encoding("alibi").attention_bias(cfg, query_ids, key_ids)
    assert bias.shape == (2, n_head, 3, 6) and bias.dtype == torch.float32
    for b in range(2):
        want = torch.tensor(direct_bias(n_head, query_ids[b].tolist(), key_ids[b].tolist()))
        torch.testing.assert_close(bias[b], want, rtol=0, atol=1e-6)


def reference_forward(model: Decoder, tokens: torch.Tensor, position_ids: torch.Tensor) -> torch.Tensor:
    """The decoder written out with attention softmax(q k^T / sqrt(d) + bias, causal) v."""
    B, T = tokens.shape
    H, d = model.cfg.n_head, model.cfg.head_dim
    ids = position_ids.tolist()
    bias = torch.stack([torch.tensor(direct_bias(H, row, row)) for row in ids])  # [B, H, T, T]
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    x = model.embed(tokens)
    for block in model.blocks:
        q, k, v = block.attn.qkv(block.ln1(x)).view(B, T, H, 3 * d).transpose(1, 2).chunk(3, dim=-1)
        scores = (q @ k.transpose(-1, -2) / math.sqrt(d) + bias).masked_fill(~causal, float("-inf"))
        y = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, T, -1)
        x = x + block.attn.out(y) + block.mlp(block.ln2(x))  # parallel residual
    return model.lm_head(model.ln_f(x))


@pytest.mark.parametrize("n_head", [3, 4])
def test_decoder_attends_with_the_bias(n_head):
    model = make_model(n_head)
    tokens = torch.randint(0, VOCAB, (2, 7), generator=torch.Generator().manual_seed(1))
    ids = torch.tensor([[0, 1, 2, 3, 4, 5, 6], [0, 3, 4, 1, 2, 9, 9]])
    with torch.no_grad():
        torch.testing.assert_close(model(tokens, ids).token_logits, reference_forward(model, tokens, ids),
                                   rtol=1e-4, atol=1e-4)


def test_no_table_and_no_rotation():
    scheme = get_scheme("alibi")
    assert scheme.encoding.name == "alibi" and scheme.train_transform is identity_ids
    assert not scheme.coupled and not scheme.predicts_positions
    model = make_model()
    assert model.pos_embed is None and model.cfg.position_limit is None
    assert model.encoding.rotation(model.cfg, torch.arange(4)[None]) is None
    torch.manual_seed(0)
    nope = Decoder(ModelConfig(**{**model.cfg.to_dict(), "position_encoding": "none"}))
    assert list(model.state_dict()) == list(nope.state_dict())


@pytest.mark.parametrize("shift", [1, 37, 900])
def test_shifting_every_id_changes_nothing(shift):
    model = make_model()
    tokens = torch.randint(0, VOCAB, (3, 9), generator=torch.Generator().manual_seed(2))
    ids = torch.randint(0, 40, (3, 9), generator=torch.Generator().manual_seed(3))
    mask = torch.ones(3, 9, dtype=torch.bool)
    mask[0, 6:] = False
    with torch.no_grad():
        assert torch.equal(model(tokens, ids + shift).token_logits, model(tokens, ids).token_logits)
        assert torch.equal(model(tokens, ids + shift, mask).token_logits, model(tokens, ids, mask).token_logits)


def test_the_bias_changes_the_output():
    model = make_model()
    tokens = torch.randint(0, VOCAB, (1, 8), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        a = model(tokens, torch.arange(8)[None]).token_logits
        b = model(tokens, torch.tensor([[0, 1, 2, 3, 20, 21, 22, 23]])).token_logits
    torch.testing.assert_close(a[:, :4], b[:, :4], rtol=0, atol=0)
    assert not torch.allclose(a[:, 4:], b[:, 4:])


@pytest.mark.parametrize("n_head", [3, 4])
@pytest.mark.parametrize("coupled", [False, True])
def test_cached_greedy_decoding_matches_the_full_forward(n_head, coupled):
    model = make_model(n_head, seed=5)
    g = torch.Generator().manual_seed(6)
    prompt = torch.randint(0, VOCAB, (3, 5), generator=g)
    if coupled:  # IDs that jump around and repeat
        prompt_ids, response_ids = torch.randint(0, 30, (3, 5), generator=g), torch.randint(0, 30, (3, 12), generator=g)
    else:
        prompt_ids, response_ids = torch.arange(5).expand(3, 5), torch.arange(5, 17).expand(3, 12)
    cached = greedy_decode(model, prompt, prompt_ids, 12, response_positions=response_ids, use_cache=True)
    full = greedy_decode(model, prompt, prompt_ids, 12, response_positions=response_ids, use_cache=False)
    assert torch.equal(cached.tokens, full.tokens)
    assert len(cached.tokens.unique()) > 1


def test_cache_keeps_the_position_ids():
    model = make_model()
    tokens, ids = torch.randint(0, VOCAB, (2, 6)), torch.tensor([[0, 1, 2, 3, 4, 5], [4, 2, 7, 1, 1, 0]])
    with torch.no_grad():
        first = model(tokens[:, :4], ids[:, :4], use_cache=True).cache
        second = model(tokens[:, 4:], ids[:, 4:], cache=first, use_cache=True).cache
    assert torch.equal(first.position_ids, ids[:, :4]) and torch.equal(second.position_ids, ids)


def test_bf16_autocast_close_to_fp32():
    model = make_model()
    tokens, ids = torch.randint(0, VOCAB, (2, 8)), torch.arange(8).repeat(2, 1)
    with torch.no_grad():
        ref = model(tokens, ids).token_logits
        with torch.autocast("cpu", dtype=torch.bfloat16):
            low = model(tokens, ids).token_logits
    assert torch.isfinite(low).all()
    assert (low.float() - ref).abs().max() < 0.05 * ref.abs().max() + 1e-2


def test_training_a_tiny_model(tmp_path, train_data):
    out = tmp_path / "alibi"
    train(tiny_train_spec("alibi"), train_data, out, progress=lambda line: None)
    log = pl.read_parquet(out / "train_log.parquet")
    assert log["loss"].is_finite().all() and log["step"].max() == 12
    model, description = load_model(out)
    assert model.cfg.position_encoding == "alibi" and description["scheme"] == "alibi"
    tokens, ids = torch.randint(0, model.cfg.vocab_size, (2, 10)), torch.arange(10).repeat(2, 1)
    with torch.no_grad():
        assert torch.isfinite(model(tokens, ids).token_logits).all()

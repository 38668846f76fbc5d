"""Tests for the KV cache in pipeline_src.model and greedy decoding in pipeline_src.evaluation.decoding.

The reference everywhere is the cache-free path: a full forward over the whole
sequence. Tiny random models get larger-than-default weights so that attention
is sharp and a wrong cache (or wrong position ids) changes the argmax.
"""

import pytest
import torch

from pipeline_src import schemes
from pipeline_src.evaluation.decoding import PAD, greedy_decode
from pipeline_src.model import Decoder, KVCache, ModelConfig

ENCODINGS = sorted(schemes.ENCODINGS)  # every registered encoding
VOCAB, MAX_POS, B, P, N = 11, 64, 3, 5, 12


def make_model(seed: int = 0, **kw) -> Decoder:
    cfg = dict(vocab_size=VOCAB, d_model=32, n_layer=2, n_head=4, max_positions=MAX_POS)
    cfg.update(kw)
    torch.manual_seed(seed)
    model = Decoder(ModelConfig(**cfg)).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("weight") and p.dim() == 2:
                p.normal_(0.0, 0.3)
    return model


def coupled_ids(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Prompt ids [B, P] and response ids [B, N] that jump around (non-contiguous, repeating)."""
    g = torch.Generator().manual_seed(seed)
    prompt_pos = torch.randint(0, MAX_POS, (B, P), generator=g)
    response_pos = torch.randint(0, MAX_POS, (B, N), generator=g)
    return prompt_pos, response_pos


def random_prompt(seed: int) -> torch.Tensor:
    return torch.randint(0, VOCAB, (B, P), generator=torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------- cached forward vs full forward

@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("parallel", [True, False])
def test_cached_step_logits_match_full_forward(encoding, parallel):
    model = make_model(position_encoding=encoding, parallel_residual=parallel, position_head=True)
    tokens = torch.randint(0, VOCAB, (B, 9), generator=torch.Generator().manual_seed(1))
    pos = torch.randint(0, MAX_POS, (B, 9), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        full = model(tokens, pos)
        prefix = model(tokens[:, :-1], pos[:, :-1], use_cache=True)
        step = model(tokens[:, -1:], pos[:, -1:], cache=prefix.cache, use_cache=True)
    assert prefix.cache.length == 8 and step.cache.length == 9
    assert step.token_logits.shape == (B, 1, VOCAB)
    torch.testing.assert_close(step.token_logits[:, 0], full.token_logits[:, -1], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(step.position_logits[:, 0], full.position_logits[:, -1], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(prefix.token_logits, full.token_logits[:, :-1], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_cached_chunk_attends_causally_among_new_tokens(encoding):
    """Several new tokens after a cache: each sees the whole cache and the new tokens up to itself."""
    model = make_model(position_encoding=encoding, parallel_residual=False)
    tokens = torch.randint(0, VOCAB, (B, 10), generator=torch.Generator().manual_seed(3))
    pos = torch.randint(0, MAX_POS, (B, 10), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        full = model(tokens, pos).token_logits
        first = model(tokens[:, :6], pos[:, :6], use_cache=True)
        rest = model(tokens[:, 6:], pos[:, 6:], cache=first.cache, use_cache=True)
    torch.testing.assert_close(rest.token_logits, full[:, 6:], rtol=1e-5, atol=1e-5)
    assert rest.cache.length == 10


def test_cache_is_not_modified_and_is_off_by_default():
    model = make_model()
    tokens, pos = random_prompt(5), torch.arange(P).expand(B, P)
    with torch.no_grad():
        assert model(tokens, pos).cache is None
        cache = model(tokens, pos, use_cache=True).cache
        keys_before = [k.clone() for k, _ in cache.layers]
        model(tokens[:, :1], pos[:, :1] + P, cache=cache, use_cache=True)
    assert isinstance(cache, KVCache) and len(cache.layers) == 2 and cache.length == P
    assert all(torch.equal(k, k0) for (k, _), k0 in zip(cache.layers, keys_before, strict=False))
    assert KVCache([]).length == 0


def test_cache_errors():
    model = make_model()
    tokens, pos = random_prompt(6), torch.arange(P).expand(B, P)
    with torch.no_grad():
        cache = model(tokens, pos, use_cache=True).cache
        with pytest.raises(ValueError, match="attention_mask"):
            model(tokens[:, :1], pos[:, :1], attention_mask=torch.ones(B, 1, dtype=torch.bool), cache=cache)
        with pytest.raises(ValueError, match="batch size"):
            model(tokens[:1, :1], pos[:1, :1], cache=cache)


# ---------------------------------------------------------------- greedy decoding: cache vs reference

def decode_both(model, prompt, prompt_pos, n, **kw):
    cached = greedy_decode(model, prompt, prompt_pos, n, use_cache=True, **kw)
    reference = greedy_decode(model, prompt, prompt_pos, n, use_cache=False, **kw)
    torch.testing.assert_close(cached.tokens, reference.tokens, rtol=0, atol=0)
    torch.testing.assert_close(cached.positions, reference.positions, rtol=0, atol=0)
    return cached


def assert_teacher_forced_consistent(model, prompt, prompt_pos, out, check_positions: bool):
    """One full forward over prompt + generated tokens predicts every generated token (and id)."""
    seq = torch.cat((prompt, out.tokens[:, :-1]), dim=1)
    seq_pos = torch.cat((prompt_pos, out.positions[:, :-1]), dim=1)
    with torch.no_grad():
        full = model(seq, seq_pos)
    assert torch.equal(full.token_logits[:, P - 1:].argmax(-1), out.tokens)
    if check_positions:
        assert torch.equal(full.position_logits[:, P - 1:].argmax(-1), out.positions)


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("parallel", [True, False])
def test_cached_decoding_matches_reference_with_oracle_positions(encoding, parallel):
    model = make_model(seed=7, position_encoding=encoding, parallel_residual=parallel)
    prompt, (prompt_pos, response_pos) = random_prompt(8), coupled_ids(9)
    out = decode_both(model, prompt, prompt_pos, N, response_positions=response_pos)
    assert out.tokens.shape == out.positions.shape == (B, N)
    assert torch.equal(out.positions, response_pos)
    assert_teacher_forced_consistent(model, prompt, prompt_pos, out, check_positions=False)
    assert len(out.tokens.unique()) > 1  # not a degenerate constant output


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("parallel", [True, False])
def test_cached_decoding_matches_reference_with_predicted_positions(encoding, parallel):
    """PPC: ids come from the position head (always < max_positions, so abs never overflows)."""
    model = make_model(seed=10, position_encoding=encoding, parallel_residual=parallel, position_head=True)
    prompt, (prompt_pos, _) = random_prompt(11), coupled_ids(12)
    out = decode_both(model, prompt, prompt_pos, N)
    assert out.positions.shape == (B, N)
    assert int(out.positions.min()) >= 0 and int(out.positions.max()) < MAX_POS
    assert_teacher_forced_consistent(model, prompt, prompt_pos, out, check_positions=True)
    # The first id is the position head's argmax at the prompt's last token.
    with torch.no_grad():
        assert torch.equal(out.positions[:, 0], model(prompt, prompt_pos).position_logits[:, -1].argmax(-1))


def test_oracle_positions_win_over_position_head():
    model = make_model(seed=13, position_head=True)
    prompt, (prompt_pos, response_pos) = random_prompt(14), coupled_ids(15)
    out = decode_both(model, prompt, prompt_pos, N, response_positions=response_pos)
    assert torch.equal(out.positions, response_pos)


def test_sequential_positions_and_longer_response_positions():
    """Plain ids P, P+1, ...; extra columns of response_positions beyond max_new_tokens are unused."""
    model = make_model(seed=16, position_encoding="abs")
    prompt = random_prompt(17)
    seq = torch.arange(P + N + 4).expand(B, -1)
    out = decode_both(model, prompt, seq[:, :P], N, response_positions=seq[:, P:])
    assert torch.equal(out.positions, seq[:, P:P + N])


# ---------------------------------------------------------------- stop token

def expected_after_stop(tokens: torch.Tensor, stop: int) -> torch.Tensor:
    """PAD after the first stop token of each row; cut where every row has stopped."""
    want = tokens.clone()
    stop_steps = []
    for row in want:
        hits = (row == stop).nonzero()
        if len(hits):
            row[int(hits[0]) + 1:] = PAD
            stop_steps.append(int(hits[0]))
    if len(stop_steps) == len(want):
        want = want[:, :max(stop_steps) + 1]
    return want


@pytest.mark.parametrize("use_ppc", [False, True])
def test_stop_token_pads_finished_rows(use_ppc):
    model = make_model(seed=18, position_head=use_ppc)
    prompt, (prompt_pos, response_pos) = random_prompt(19), coupled_ids(20)
    kw = {} if use_ppc else dict(response_positions=response_pos)
    free = greedy_decode(model, prompt, prompt_pos, N, **kw)
    stop = int(free.tokens[0, 2])  # a token row 0 certainly emits
    out = decode_both(model, prompt, prompt_pos, N, stop_token=stop, **kw)
    want = expected_after_stop(free.tokens, stop)
    assert torch.equal(out.tokens, want)
    # Up to each row's stop, the run is the unstopped one (same ids fed so far).
    n = out.tokens.shape[1]
    for b in range(B):
        hits = (free.tokens[b] == stop).nonzero()
        upto = int(hits[0]) + 1 if len(hits) else n
        assert torch.equal(out.positions[b, :upto], free.positions[b, :upto])


def test_stop_token_ends_early_when_every_row_stops():
    model = make_model(seed=21)
    with torch.no_grad():  # make token 5 win at every position: its logit ~ sum of ln_f output
        model.ln_f.bias.fill_(1.0)
        model.lm_head.weight.zero_()
        model.lm_head.weight[5].fill_(1.0)
    prompt, (prompt_pos, response_pos) = random_prompt(22), coupled_ids(23)
    out = decode_both(model, prompt, prompt_pos, N, response_positions=response_pos, stop_token=5)
    assert out.tokens.tolist() == [[5]] * B
    assert torch.equal(out.positions, response_pos[:, :1])
    never = decode_both(model, prompt, prompt_pos, N, response_positions=response_pos, stop_token=6)
    assert never.tokens.shape == (B, N) and bool((never.tokens == 5).all())


# ---------------------------------------------------------------- errors and edge cases

def test_no_position_source_raises():
    model = make_model(position_head=False)
    prompt, (prompt_pos, _) = random_prompt(24), coupled_ids(25)
    with pytest.raises(ValueError, match="position"):
        greedy_decode(model, prompt, prompt_pos, 4)


def test_bad_shapes_raise():
    model = make_model(position_head=True)
    prompt, (prompt_pos, response_pos) = random_prompt(26), coupled_ids(27)
    with pytest.raises(ValueError, match="response_positions"):
        greedy_decode(model, prompt, prompt_pos, N + 1, response_positions=response_pos)
    with pytest.raises(ValueError, match="prompt"):
        greedy_decode(model, prompt, prompt_pos[:, 1:], 4)


def test_oracle_id_beyond_absolute_table_raises():
    model = make_model(position_encoding="abs")
    prompt, (prompt_pos, response_pos) = random_prompt(28), coupled_ids(29)
    response_pos[:, 1] = MAX_POS  # fed with generated token 1 -> the model must refuse it
    for use_cache in (True, False):
        with pytest.raises(ValueError, match="max_positions"):
            greedy_decode(model, prompt, prompt_pos, N, response_positions=response_pos, use_cache=use_cache)


def test_zero_new_tokens():
    model = make_model(position_head=True)
    prompt, (prompt_pos, _) = random_prompt(30), coupled_ids(31)
    out = greedy_decode(model, prompt, prompt_pos, 0)
    assert out.tokens.shape == out.positions.shape == (B, 0)


def test_decode_benchmark_tiny():
    from pipeline_src.runs.benchmarks.inference import decode_benchmark, format_decode_report

    result = decode_benchmark(length=6, batch_size=2, d_model=16, n_layer=1, n_head=2)
    assert result["identical"] and result["cached_tokens_per_s"] > 0 and result["full_tokens_per_s"] > 0
    assert "tokens/s" in format_decode_report(result)

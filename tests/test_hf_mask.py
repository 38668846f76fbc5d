"""hf_logits_fn passes an all-ones attention mask: with no mask and no cache, transformers
reads a jump in the position IDs as the start of a new packed sequence and hides the tokens before it,
so the far tokens the influential-token analysis keeps (IDs 0, 50, 51, ...) would not be seen."""

import pytest
import torch

from pipeline_src.language.logits import hf_logits_fn

transformers = pytest.importorskip("transformers")

LOCAL = torch.tensor([[5, 9, 3, 12], [7, 7, 1, 30]])  # two rows of a local window
FAR = torch.tensor([[40], [2]])  # one far token per row, kept at position ID 0


def ids(*values: int) -> torch.Tensor:
    return torch.tensor([values, values])


@pytest.fixture(scope="module", params=["sdpa", "eager"])
def model(request):
    """A tiny random Llama with its cache off (the packed-sequence reading needs no cache)."""
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=256,
                                      use_cache=False)
    return transformers.LlamaForCausalLM._from_config(config, attn_implementation=request.param).eval()


def last_logits(model, tokens, position_ids, **mask) -> torch.Tensor:
    """The model's own last-position logits, called directly."""
    with torch.inference_mode():
        return model(input_ids=tokens, position_ids=position_ids, logits_to_keep=1, **mask).logits


def adapter_logits(model, tokens, position_ids) -> torch.Tensor:
    with torch.inference_mode():
        return hf_logits_fn(model)(tokens, position_ids)


def test_a_kept_far_token_is_seen_across_the_jump_in_position_ids(model):
    tokens, positions = torch.cat([FAR, LOCAL], dim=1), ids(0, 50, 51, 52, 53)
    with_far = adapter_logits(model, tokens, positions)
    without_far = adapter_logits(model, LOCAL, positions[:, 1:])
    assert with_far.shape == (2, 1, 64)
    assert not torch.allclose(with_far, without_far, atol=1e-4)  # before the fix: equal, the far token unseen
    torch.testing.assert_close(with_far, last_logits(model, tokens, positions, attention_mask=torch.ones_like(tokens)))


def test_the_mask_changes_nothing_where_the_position_ids_do_not_jump(model):
    positions = ids(50, 51, 52, 53)
    torch.testing.assert_close(adapter_logits(model, LOCAL, positions), last_logits(model, LOCAL, positions))

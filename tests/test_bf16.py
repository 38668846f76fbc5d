"""bf16 autocast, checked on the CPU (where torch autocasts to bf16 as on a GPU): the loss and every
argmax read fp32 logits, and decoding with the KV cache gives what full decoding gives."""

from __future__ import annotations

import pytest
import torch
from torch.overrides import TorchFunctionMode

from pipeline_src.evaluation.decoding import greedy_decode
from pipeline_src.model import Decoder, ModelConfig
from pipeline_src.training import train as training
from tests.conftest import tiny_train_spec
from tests.helpers import a_batch


class DtypesOf(TorchFunctionMode):
    """Records the dtype of the first argument of every call to the functions named."""

    def __init__(self, *names: str):
        super().__init__()
        self.names, self.seen = set(names), []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in self.names:
            self.seen.append((func.__name__, args[0].dtype))
        return func(*args, **(kwargs or {}))


def tiny_model(encoding: str, position_head: bool, seed: int) -> Decoder:
    torch.manual_seed(seed)
    return Decoder(ModelConfig(vocab_size=12, d_model=32, n_layer=2, n_head=2, max_positions=64,
                               position_encoding=encoding, position_head=position_head)).eval()


@pytest.mark.parametrize("scheme", ["rope_pose", "ppc"])
def test_a_bf16_training_step_takes_its_loss_and_accuracy_from_fp32_logits(scheme):
    spec = tiny_train_spec(scheme, precision="bf16")
    model = training.build_model(spec, vocab_size=6)
    batch = a_batch(scheme)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert model(batch.inputs, batch.positions[:, :-1]).token_logits.dtype == torch.bfloat16  # autocast is on
    watch = DtypesOf("cross_entropy", "argmax")
    with watch:
        training.train_step(model, training.make_optimizer(model, spec["train"]), batch, batch.positions, spec["train"])
    assert len(watch.seen) == (4 if scheme == "ppc" else 2)
    assert {dtype for _, dtype in watch.seen} == {torch.float32}, watch.seen


@pytest.mark.parametrize("encoding, position_head", [("rope", False), ("rope", True), ("alibi", False), ("abs", False)])
def test_kv_cache_decoding_equals_full_decoding_under_bf16(encoding, position_head):
    for seed in range(5):
        model = tiny_model(encoding, position_head, seed)
        prompt, positions = torch.randint(1, 12, (6, 8)), torch.arange(8).expand(6, -1)
        response = None if position_head else torch.arange(8, 20).expand(6, -1)
        watch = DtypesOf("argmax")
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            with watch:
                cached = greedy_decode(model, prompt, positions, 10, response_positions=response, use_cache=True)
            full = greedy_decode(model, prompt, positions, 10, response_positions=response, use_cache=False)
        assert torch.equal(cached.tokens, full.tokens) and torch.equal(cached.positions, full.positions)
        assert watch.seen and {dtype for _, dtype in watch.seen} == {torch.float32}, watch.seen

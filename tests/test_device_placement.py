"""Every tensor the model side makes is made on the model's device: checked without a GPU, by
running a training step on the ``meta`` device (a tensor left on the CPU cannot meet a meta one),
and by running a KV-cache decode and the influence analysis under :class:`MadeWithoutDevice`, which
fails on any tensor factory called without ``device=`` (on a GPU such a tensor lands on the CPU)."""

from __future__ import annotations

import pytest
import torch
from torch.overrides import TorchFunctionMode

from pipeline_src.config.influence_config import InfluenceConfig
from pipeline_src.evaluation.decoding import greedy_decode
from pipeline_src.language import influence as inf
from pipeline_src.model import Decoder, ModelConfig
from pipeline_src.schemes import SCHEMES, get_scheme
from pipeline_src.training.train import build_model, make_optimizer, train_step
from tests.conftest import tiny_train_spec
from tests.helpers import SMALL, a_batch, random_model, small_targets

FACTORIES = {"arange", "zeros", "ones", "full", "empty", "eye", "tensor", "as_tensor", "scalar_tensor", "randn",
             "rand", "randint", "randperm", "linspace", "tril_indices", "triu_indices"}


class MadeWithoutDevice(TorchFunctionMode):
    """Fails on a tensor factory (``torch.arange``, ``torch.zeros``, ...) called without ``device``."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if getattr(func, "__name__", "") in FACTORIES and kwargs.get("device") is None:
            raise AssertionError(f"torch.{func.__name__} without device=: on a GPU this tensor stays on the CPU")
        return func(*args, **kwargs)


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
def test_a_training_step_runs_on_the_meta_device(scheme):
    spec = tiny_train_spec(scheme)
    meta = torch.device("meta")
    model = build_model(spec, vocab_size=6).to(meta)
    batch = a_batch(scheme)
    numbers = train_step(model, make_optimizer(model, spec["train"]), batch.to(meta), batch.positions.to(meta),
                         spec["train"])
    assert numbers.device == meta and numbers.shape == (4,)


@pytest.mark.parametrize("scheme", ["rope", "ppc", "alibi", "abs_shift"])
def test_a_kv_cache_decode_makes_every_tensor_on_the_models_device(scheme):
    torch.manual_seed(0)
    model = Decoder(ModelConfig(vocab_size=8, d_model=16, n_layer=2, n_head=2, max_positions=64,
                                position_encoding=get_scheme(scheme).encoding.name,
                                position_head=get_scheme(scheme).predicts_positions)).eval()
    prompt = torch.randint(1, 8, (3, 5))
    positions = torch.arange(5).expand(3, -1)
    response = None if get_scheme(scheme).predicts_positions else torch.arange(5, 11).expand(3, -1)
    with torch.no_grad(), MadeWithoutDevice():
        out = greedy_decode(model, prompt, positions, 6, response_positions=response, stop_token=7)
    assert out.tokens.shape[0] == 3


def test_the_influence_analysis_makes_every_tensor_on_the_models_device():
    cfg = InfluenceConfig(**SMALL, batch_size=7)
    model, targets = random_model("rope"), small_targets(cfg)
    with MadeWithoutDevice():
        out = inf.influential_tokens(model, targets, cfg, progress=None)
    assert out.height == targets.height


def test_the_guard_catches_a_tensor_made_without_a_device():
    with MadeWithoutDevice(), pytest.raises(AssertionError, match="torch.arange without device="):
        torch.arange(3)
    with MadeWithoutDevice():
        torch.arange(3, device="cpu")

"""The written-out AdamW: the same numbers as torch.optim.AdamW, a state that resumes, and a
state made for other parameters refused."""

from __future__ import annotations

import pytest
import torch

from pipeline_src.training.optimizer import AdamW


def two_groups(seed: int):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.LayerNorm(7), torch.nn.Linear(7, 3))
    decay = [p for p in model.parameters() if p.dim() >= 2]
    other = [p for p in model.parameters() if p.dim() < 2]
    return model, decay, other


def train(model, optimizer, set_lr, steps: int, start: int = 0):
    generator = torch.Generator().manual_seed(11)
    batches = [(torch.randn(4, 5, generator=generator), torch.randint(3, (4,), generator=generator))
               for _ in range(start + steps)]
    for step in range(start, start + steps):
        set_lr(1e-2 * (step + 1) / (start + steps))  # a changing learning rate, as the schedule gives
        x, y = batches[step]
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def test_same_numbers_as_torch_adamw():
    ours_model, decay, other = two_groups(0)
    ours = AdamW([(decay, 0.1), (other, 0.0)], lr=1e-2, betas=(0.9, 0.95), eps=1e-8)
    theirs_model, decay, other = two_groups(0)
    theirs = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": other, "weight_decay": 0.0}],
                               lr=1e-2, betas=(0.9, 0.95), eps=1e-8)

    def set_theirs(lr):
        for group in theirs.param_groups:
            group["lr"] = lr

    train(ours_model, ours, lambda lr: setattr(ours, "lr", lr), 25)
    train(theirs_model, theirs, set_theirs, 25)
    for (name, a), b in zip(ours_model.named_parameters(), theirs_model.parameters(), strict=False):
        assert torch.equal(a, b), name  # bit for bit: the same operations in the same order


def test_state_resumes_to_the_same_weights():
    """Stopped after 4 steps and restored from its state, a run ends where one that went on ends."""
    on, decay, other = two_groups(1)
    optimizer = AdamW([(decay, 0.1), (other, 0.0)], lr=1e-2)
    train(on, optimizer, lambda lr: setattr(optimizer, "lr", lr), 4)
    weights = {name: t.clone() for name, t in on.state_dict().items()}
    state = {key: value if key == "step" else [t.clone() for t in value]
             for key, value in optimizer.state_dict().items()}
    train(on, optimizer, lambda lr: setattr(optimizer, "lr", lr), 6, start=4)

    resumed, decay, other = two_groups(1)
    resumed.load_state_dict(weights)
    again = AdamW([(decay, 0.1), (other, 0.0)], lr=1e-2)
    again.load_state_dict(state)
    assert again.t == 4
    train(resumed, again, lambda lr: setattr(again, "lr", lr), 6, start=4)
    for a, b in zip(resumed.parameters(), on.parameters(), strict=False):
        assert torch.equal(a, b)


def test_state_of_other_parameters_is_refused():
    _, decay, other = two_groups(2)
    state = AdamW([(decay, 0.1), (other, 0.0)], lr=1e-2).state_dict()
    smaller = torch.nn.Linear(5, 2)
    with pytest.raises(ValueError, match="exp_avg"):
        AdamW([([smaller.weight], 0.1), ([smaller.bias], 0.0)], lr=1e-2).load_state_dict(state)
    with pytest.raises(ValueError, match="keys"):
        AdamW([(decay, 0.1), (other, 0.0)], lr=1e-2).load_state_dict({"step": 3})

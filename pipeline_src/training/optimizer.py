"""AdamW (Loshchilov & Hutter, "Decoupled Weight Decay Regularization"), written out.

For each parameter p with gradient g, at step t (counting from 1), with learning rate lr:

    p   <- p * (1 - lr * weight_decay)                 decoupled weight decay
    m   <- m + (1 - beta1) * (g - m)                   first moment (a lerp towards g)
    v   <- beta2 * v + (1 - beta2) * g * g             second moment
    p   <- p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)

The operations, their order and their scalars are those of ``torch.optim.AdamW``'s update, so a
run trains to the same numbers; each runs once over all parameters of a group (``torch._foreach_*``,
one kernel per operation on a GPU). It is written here because ``torch.optim``'s optimizers import
torch's compiler stack (``torch._dynamo``) when they are made and at every step, which costs a small
job more time than its training (docs/performance_log.md, "Before any start-up work"); this project
compiles only when ``train.compile`` asks (the model's forward, not the optimizer).
"""

from __future__ import annotations

import torch

STATE_KEYS = ("step", "exp_avg", "exp_avg_sq")


class AdamW:
    """AdamW over parameter groups, each a (parameters, weight decay) pair; ``lr`` is set by the
    caller before each :meth:`step` (the schedule lives in the training loop)."""

    def __init__(self, groups: list[tuple[list[torch.Tensor], float]], lr: float,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        self.groups = [(list(params), float(decay)) for params, decay in groups]
        self.lr, self.eps = float(lr), float(eps)
        self.beta1, self.beta2 = (float(b) for b in betas)
        self.t = 0  # steps taken (one count for all parameters: each is updated at every step)
        self.exp_avg = [[torch.zeros_like(p) for p in params] for params, _ in self.groups]
        self.exp_avg_sq = [[torch.zeros_like(p) for p in params] for params, _ in self.groups]

    def zero_grad(self) -> None:
        """Drop every gradient (the next backward pass allocates fresh ones)."""
        for params, _ in self.groups:
            for p in params:
                p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        """One update of every parameter that has a gradient."""
        self.t += 1
        beta1, beta2, lr = self.beta1, self.beta2, self.lr
        step_size = lr / (1 - beta1 ** self.t)
        bias_correction2_sqrt = (1 - beta2 ** self.t) ** 0.5
        for (params, decay), exp_avgs, exp_avg_sqs in zip(self.groups, self.exp_avg, self.exp_avg_sq, strict=False):
            have = [i for i, p in enumerate(params) if p.grad is not None]
            if not have:
                continue
            p, g = [params[i] for i in have], [params[i].grad for i in have]
            m, v = [exp_avgs[i] for i in have], [exp_avg_sqs[i] for i in have]
            if decay != 0:
                torch._foreach_mul_(p, 1 - lr * decay)
            torch._foreach_lerp_(m, g, 1 - beta1)
            torch._foreach_mul_(v, beta2)
            torch._foreach_addcmul_(v, g, g, 1 - beta2)
            denom = torch._foreach_sqrt(v)
            torch._foreach_div_(denom, bias_correction2_sqrt)
            torch._foreach_add_(denom, self.eps)
            torch._foreach_addcdiv_(p, m, denom, -step_size)

    def state_dict(self) -> dict:
        """The step count and both moments of every parameter (what a resumed run needs)."""
        return {"step": self.t, "exp_avg": [t for ts in self.exp_avg for t in ts],
                "exp_avg_sq": [t for ts in self.exp_avg_sq for t in ts]}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`'s output; a ValueError when it was made for other parameters."""
        if set(state) != set(STATE_KEYS):
            raise ValueError(f"optimizer state has keys {sorted(state)}, expected {list(STATE_KEYS)}")
        for key, moments in (("exp_avg", self.exp_avg), ("exp_avg_sq", self.exp_avg_sq)):
            saved, mine = state[key], [t for ts in moments for t in ts]
            if len(saved) != len(mine) or any(s.shape != t.shape for s, t in zip(saved, mine, strict=False)):
                raise ValueError(f"optimizer state {key!r} does not match the model's parameters")
            for s, t in zip(saved, mine, strict=False):
                t.copy_(s)
        self.t = int(state["step"])

"""The reference of the influential-token analysis (Figure 4): one candidate sequence per forward.

Written to be read, not to be fast: every loss is :func:`sequence_loss` of one sequence, every
greedy step tries the far tokens one by one. It defines what
:func:`pipeline_src.language.influence.influential_tokens` computes in batches;
``tests/test_influence.py`` checks the two agree and ``tests/bench_influence.py`` times them.
"""

import math
from typing import Callable

import numpy as np
import polars as pl
import torch
from torch import nn

from pipeline_src.config.influence_config import InfluenceConfig
from pipeline_src.language.influence import other_targets, random_draws, result_frame
from pipeline_src.language.logits import LogitsFn, as_logits_fn
from pipeline_src.language.targets import target_contexts


def next_token_log_probs(logits_fn: LogitsFn, context: np.ndarray, keep: list[int],
                         device: str | torch.device = "cpu") -> torch.Tensor:
    """Log-probabilities (float64 [V]) of the token after the context tokens at positions ``keep``
    (ascending), each fed with its own position as its position ID."""
    tokens = torch.as_tensor(np.asarray(context)[keep], dtype=torch.long, device=device)[None]
    positions = torch.as_tensor(keep, dtype=torch.long, device=device)[None]
    return torch.log_softmax(logits_fn(tokens, positions)[0, -1].double(), dim=-1)


def sequence_loss(logits_fn: LogitsFn, context: np.ndarray, target: int, keep: list[int],
                  device: str | torch.device = "cpu") -> float:
    """CE of ``target`` given the context tokens at positions ``keep`` (ascending), each fed with
    its own position as its position ID: the definition of every loss of the analysis."""
    return float(-next_token_log_probs(logits_fn, context, keep, device)[target])


def divergence(reference: torch.Tensor, log_probs: torch.Tensor) -> float:
    """KL(p || q) = sum over the vocabulary of p_v (log p_v - log q_v), written out term by term:
    log p = ``reference``, log q = ``log_probs``; tokens with p_v = 0 add nothing."""
    return math.fsum(math.exp(lp) * (lp - lq) for lp, lq in zip(reference.tolist(), log_probs.tolist(), strict=False)
                     if math.exp(lp) > 0)


def reference_influential_tokens(model: "nn.Module | Callable | None", targets: pl.DataFrame,
                                 cfg: InfluenceConfig, *, device: str | torch.device = "cpu",
                                 logits_fn: LogitsFn | None = None) -> pl.DataFrame:
    """What :func:`~pipeline_src.language.influence.influential_tokens` computes, one candidate
    sequence per forward (slow). Ties go to the smallest position, as there. Every reported loss is
    recomputed on the chosen set (the batched analysis takes it from the selection's own forward)."""
    contexts, target_tokens = target_contexts(targets, cfg)
    donors = other_targets(targets)
    draws = random_draws(len(target_tokens), cfg)
    fn = logits_fn if logits_fn is not None else as_logits_fn(model, device)
    far, window = cfg.far, list(range(cfg.far, cfg.context))
    rows = {"long": [], "short": [], "sparse": [], "chosen": [], "random": [], "other": []}

    def select(loss, criterion) -> tuple[list[int], list[float]]:
        """``loss(J)``: the target's loss given J; ``criterion(J)``: what the selection minimises."""
        single = {j: criterion([j]) for j in range(far)}
        if cfg.selection == "topk":
            chosen = sorted(range(far), key=lambda j: (single[j], j))[:cfg.k_max]
            return chosen, [loss(chosen[:k]) for k in range(1, cfg.k_max + 1)]
        chosen = []
        for _ in range(cfg.k_max):
            best_j, best = None, float("inf")
            for j in range(far):  # ascending, strict "<": ties keep the smallest position
                if j not in chosen:
                    value = single[j] if not chosen else criterion(chosen + [j])
                    if value < best:
                        best_j, best = j, value
            chosen.append(best_j)
        return chosen, [loss(chosen[:k]) for k in range(1, cfg.k_max + 1)]

    with torch.inference_mode():
        for i, (context, target) in enumerate(zip(contexts, target_tokens.tolist(), strict=False)):
            def loss(far_positions, context=context, target=target):
                return sequence_loss(fn, context, target, sorted(far_positions) + window, device)

            p_long = next_token_log_probs(fn, context, list(range(cfg.context)), device)

            def criterion(far_positions, context=context, p_long=p_long):
                """greedy_kl: KL from the target's own full context (also over another's far tokens)."""
                if cfg.selection != "greedy_kl":
                    return loss(far_positions, context=context)
                return divergence(p_long, next_token_log_probs(fn, context, sorted(far_positions) + window, device))

            other = np.concatenate([contexts[donors[i], :far], context[far:]])
            chosen, sparse = select(loss, criterion)
            rows["long"].append(loss(range(far)))
            rows["short"].append(loss([]))
            rows["sparse"].append(sparse)
            rows["chosen"].append(chosen)
            rows["random"].append([np.mean([loss(draw[:k].tolist()) for draw in draws[i]])
                                   for k in range(1, cfg.k_max + 1)])
            rows["other"].append(select(lambda js, other=other: loss(js, context=other),
                                        lambda js, other=other: criterion(js, context=other))[1])
    return result_frame(targets, donors, rows["long"], rows["short"], rows["sparse"], rows["chosen"],
                        rows["random"], rows["other"])

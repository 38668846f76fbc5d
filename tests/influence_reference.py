"""The reference of the influential-token analysis (Figure 4): one candidate sequence per forward.

Written to be read, not to be fast: every loss is :func:`sequence_loss` of one sequence, every
greedy step tries the far tokens one by one. It defines what
:func:`pipeline_src.language.influence.influential_tokens` computes in batches;
``tests/test_influence.py`` checks the two agree and ``tests/bench_influence.py`` times them.
"""

from typing import Callable

import numpy as np
import polars as pl
import torch
import torch.nn.functional as F
from torch import nn

from pipeline_src.language.influence import other_targets, random_draws, result_frame
from pipeline_src.language.influence_config import InfluenceConfig
from pipeline_src.language.logits import LogitsFn, as_logits_fn
from pipeline_src.language.targets import target_contexts


def sequence_loss(logits_fn: LogitsFn, context: np.ndarray, target: int, keep: list[int],
                  device: str | torch.device = "cpu") -> float:
    """CE of ``target`` given the context tokens at positions ``keep`` (ascending), each fed with
    its own position as its position ID: the definition of every loss of the analysis."""
    tokens = torch.as_tensor(np.asarray(context)[keep], dtype=torch.long, device=device)[None]
    positions = torch.as_tensor(keep, dtype=torch.long, device=device)[None]
    logits = logits_fn(tokens, positions)[0, -1].double()
    return float(F.cross_entropy(logits[None], torch.tensor([target], device=device)))


def reference_influential_tokens(model: "nn.Module | Callable | None", targets: pl.DataFrame,
                                 cfg: InfluenceConfig, *, device: str | torch.device = "cpu",
                                 logits_fn: LogitsFn | None = None) -> pl.DataFrame:
    """What :func:`~pipeline_src.language.influence.influential_tokens` computes, one candidate
    sequence per forward (slow). Ties go to the smallest position, as there."""
    contexts, target_tokens = target_contexts(targets, cfg)
    donors = other_targets(targets)
    draws = random_draws(len(target_tokens), cfg)
    fn = logits_fn if logits_fn is not None else as_logits_fn(model, device)
    far, window = cfg.far, list(range(cfg.far, cfg.context))
    rows = {"long": [], "short": [], "sparse": [], "chosen": [], "random": [], "other": []}

    def select(loss) -> tuple[list[int], list[float]]:
        single = {j: loss([j]) for j in range(far)}
        if cfg.selection == "topk":
            chosen = sorted(range(far), key=lambda j: (single[j], j))[:cfg.k_max]
            return chosen, [single[chosen[0]]] + [loss(chosen[:k]) for k in range(2, cfg.k_max + 1)]
        chosen, sparse = [], []
        for _ in range(cfg.k_max):
            best_j, best = None, float("inf")
            for j in range(far):  # ascending, strict "<": ties keep the smallest position
                if j not in chosen:
                    value = single[j] if not chosen else loss(chosen + [j])
                    if value < best:
                        best_j, best = j, value
            chosen.append(best_j)
            sparse.append(best)
        return chosen, sparse

    with torch.inference_mode():
        for i, (context, target) in enumerate(zip(contexts, target_tokens.tolist())):
            def loss(far_positions, context=context):
                return sequence_loss(fn, context, target, sorted(far_positions) + window, device)

            other = np.concatenate([contexts[donors[i], :far], context[far:]])
            chosen, sparse = select(loss)
            rows["long"].append(loss(range(far)))
            rows["short"].append(loss([]))
            rows["sparse"].append(sparse)
            rows["chosen"].append(chosen)
            rows["random"].append([np.mean([loss(draw[:k].tolist()) for draw in draws[i]])
                                   for k in range(1, cfg.k_max + 1)])
            rows["other"].append(select(lambda js: loss(js, context=other))[1])
    return result_frame(targets, donors, rows["long"], rows["short"], rows["sparse"], rows["chosen"],
                        rows["random"], rows["other"])

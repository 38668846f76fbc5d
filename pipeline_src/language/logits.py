"""Language models as logits functions, and the loss of the token after the last one kept.

A :data:`LogitsFn` maps ``(tokens, position_ids)`` (long [B, T]) to token logits: our
:class:`~pipeline_src.model.Decoder` (:func:`decoder_logits_fn`, or :func:`as_logits_fn` for any
module called as ``model(tokens, position_ids)``), or another causal LM through a small adapter
such as :func:`hf_logits_fn` for a Hugging Face model. :func:`last_token_losses` scores the token
after the last position of each sequence: the target losses of every language model and every loss
of the influential-token analysis (:mod:`.influence`). For the analysis' selection by divergence
(``selection="greedy_kl"``), :func:`last_token_log_probs` also keeps the next-token distributions
of a few rows (the full contexts'), and :func:`last_token_divergences` scores each row's distribution
against one of them (KL), from the same forwards as the losses.
"""

from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..config.influence_config import InfluenceError

LogitsFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
"""(tokens, position_ids), both long [B, T] -> token logits [B, T, V], or [B, 1, V] for the last
position only (every loss here scores the token after the last kept one)."""


def _logits_of(output) -> torch.Tensor:
    """Token logits from a model output: a tensor, our ModelOutput, or a Hugging Face output."""
    if isinstance(output, torch.Tensor):
        return output
    for name in ("token_logits", "logits"):
        if isinstance(getattr(output, name, None), torch.Tensor):
            return getattr(output, name)
    raise InfluenceError(f"the model returned {type(output).__name__}, not logits "
                         "(a tensor, or an object with .token_logits or .logits)")


def as_logits_fn(model: "nn.Module | Callable", device: str | torch.device = "cpu") -> LogitsFn:
    """Wrap ``model`` as a :data:`LogitsFn` called as ``model(tokens, position_ids)``.

    An ``nn.Module`` (such as our Decoder) is moved to ``device`` and put in eval mode (in place);
    any other callable is used as it is and must accept tensors on ``device``.
    """
    if isinstance(model, nn.Module):
        model.to(device).eval()
    if not callable(model):
        raise InfluenceError("the model must be callable as model(tokens, position_ids), "
                             f"got {type(model).__name__}")
    return lambda tokens, position_ids: _logits_of(model(tokens, position_ids))


def decoder_logits_fn(model) -> LogitsFn:
    """Our Decoder as a :data:`LogitsFn`: logits of the last position only."""
    return lambda tokens, position_ids: model(tokens, position_ids, last_only=True).token_logits


def hf_logits_fn(model) -> LogitsFn:
    """Adapter for a Hugging Face causal LM (already on its device, in eval mode).

    Hugging Face models take keyword arguments (their second positional argument is the
    attention mask, not the position IDs), hence this adapter. Where the model can, it computes the
    last position's logits only (``logits_to_keep``): every loss here scores the token after the
    last one, and a pretrained model's vocabulary makes its output layer a fifth of its work.

    It passes an all-ones attention mask (where the model takes one). Without a mask and without a
    cache (``use_cache=False``), transformers reads every step in the position IDs other than +1 as
    the start of a new packed sequence and masks attention across it, so the far tokens kept before
    the local window (IDs such as 0, 1, 2, 60, 61, ...) would not be seen. All ones is right here:
    the rows of a batch have equal length and no padding (:func:`last_token_losses` feeds the
    sequences of ``influence._kept_sequences``, which keep equally many far positions per row).
    """
    import inspect

    forward = inspect.signature(getattr(model, "forward", model)).parameters
    last_only = {"logits_to_keep": 1} if "logits_to_keep" in forward else {}
    masked = "attention_mask" in forward

    def logits(tokens: torch.Tensor, position_ids: torch.Tensor) -> torch.Tensor:
        mask = {"attention_mask": torch.ones_like(tokens)} if masked else {}
        return model(input_ids=tokens, position_ids=position_ids, **mask, **last_only).logits

    return logits


def _last_logits(logits_fn: LogitsFn, tokens: np.ndarray, positions: np.ndarray, device) -> torch.Tensor:
    """The logits of the last position (float64 [rows, V]) of one forward of ``tokens`` at ``positions``."""
    tok = torch.as_tensor(tokens, dtype=torch.long, device=device)
    pos = torch.as_tensor(positions, dtype=torch.long, device=device)
    logits = logits_fn(tok, pos)
    if logits.dim() != 3 or logits.shape[0] != tok.shape[0] or logits.shape[1] not in (1, tok.shape[1]):
        raise InfluenceError(f"the model gave logits of shape {tuple(logits.shape)} for tokens of "
                             f"shape {tuple(tok.shape)}; expected [B, T, vocab] (or [B, 1, vocab]: "
                             "the last position only)")
    return logits[:, -1].double()


def last_token_losses(logits_fn: LogitsFn, tokens: np.ndarray, positions: np.ndarray,
                      targets: np.ndarray, batch_size: int, device) -> np.ndarray:
    """Cross-entropy (float64 [rows]) of ``targets[r]`` predicted at the last position of row r of
    ``tokens`` fed at position IDs ``positions`` (both [rows, T]), in forwards of at most
    ``batch_size`` rows on ``device`` (where the model is)."""
    losses = np.empty(len(tokens), dtype=np.float64)
    with torch.inference_mode():
        for start in range(0, len(tokens), batch_size):
            stop = start + batch_size
            logits = _last_logits(logits_fn, tokens[start:stop], positions[start:stop], device)
            y = torch.as_tensor(targets[start:stop], dtype=torch.long, device=device)
            loss = F.cross_entropy(logits, y, reduction="none")
            losses[start:start + len(logits)] = loss.cpu().numpy()
    return losses


def last_token_log_probs(logits_fn: LogitsFn, tokens: np.ndarray, positions: np.ndarray,
                         targets: np.ndarray, batch_size: int, device) -> tuple[np.ndarray, torch.Tensor]:
    """:func:`last_token_losses`, and from the same forwards the next-token log-probabilities of
    every row (float64 [rows, V], on ``device``): the reference distributions of the selection by
    divergence (``selection="greedy_kl"``, :mod:`.influence`). Meant for a few rows (one per target)."""
    losses = np.empty(len(tokens), dtype=np.float64)
    parts = []
    with torch.inference_mode():
        for start in range(0, len(tokens), batch_size):
            stop = start + batch_size
            logits = _last_logits(logits_fn, tokens[start:stop], positions[start:stop], device)
            y = torch.as_tensor(targets[start:stop], dtype=torch.long, device=device)
            losses[start:start + len(logits)] = F.cross_entropy(logits, y, reduction="none").cpu().numpy()
            parts.append(torch.log_softmax(logits, dim=-1))
    return losses, torch.cat(parts)


def last_token_divergences(logits_fn: LogitsFn, tokens: np.ndarray, positions: np.ndarray, targets: np.ndarray,
                           reference: torch.Tensor, reference_rows: np.ndarray, batch_size: int,
                           device) -> tuple[np.ndarray, np.ndarray]:
    """(losses, divergences), both float64 [rows]: the losses of :func:`last_token_losses` and, from
    the same forwards, KL(p || q_r) = sum_v p_v (log p_v - log q_v) between the reference
    distribution p = exp(reference[reference_rows[r]]) and the next-token distribution q_r at the
    last position of row r (``reference``: log-probabilities [n, V] on ``device``, as
    :func:`last_token_log_probs` gives them). The divergences never read ``targets``.

    Computed as sum_v p_v log p_v (once per reference) minus p . log q_r: per forward, the
    log-softmax the loss needs anyway and one row-wise product with the rows' own references (a
    [batch, V] product, whatever n: the analysis holds a whole group's references), so no [rows, V]
    tensor is formed and only one forward's distributions are held at a time. Tokens with p_v = 0 add nothing,
    even where q_v = 0 (a product that meets 0 * -inf is redone with -inf read as the lowest float64);
    p_v > 0 where q_v = 0 gives an infinite (or astronomically large) divergence."""
    losses = np.empty(len(tokens), dtype=np.float64)
    divergences = np.empty(len(tokens), dtype=np.float64)
    with torch.inference_mode():
        p = reference.exp()
        neg_entropy = torch.where(p > 0, p * reference, 0.0).sum(dim=-1)  # sum_v p_v log p_v, [n]
        for start in range(0, len(tokens), batch_size):
            stop = start + batch_size
            log_q = torch.log_softmax(_last_logits(logits_fn, tokens[start:stop], positions[start:stop], device), -1)
            y = torch.as_tensor(targets[start:stop], dtype=torch.long, device=device)
            rows = torch.as_tensor(reference_rows[start:stop], dtype=torch.long, device=reference.device)
            done = slice(start, start + len(log_q))
            losses[done] = F.nll_loss(log_q, y, reduction="none").cpu().numpy()  # = F.cross_entropy of the logits
            p_rows = p[rows]  # [batch, V]: each row's own reference
            cross = (log_q * p_rows).sum(dim=-1)  # sum_v p_v log q_v
            if torch.isnan(cross).any():
                cross = (log_q.clamp_min(torch.finfo(torch.float64).min) * p_rows).sum(dim=-1)
            divergences[done] = (neg_entropy[rows] - cross).cpu().numpy()
    return losses, divergences

"""Greedy autoregressive decoding, shared by every positional scheme.

Positions are data (see :mod:`pipeline_src.model`), so generation must also say
which position id each generated token is fed with. Two sources are supported:

* ``response_positions`` given by the caller: the task's oracle ids (position
  coupling) or plain sequential ids ``P, P+1, ...``;
* the model's own position head (PPC, Predictive Position Coupling): the step
  that predicts token ``j`` also predicts its position id, both from the same
  last hidden state, and that id is fed back together with the token.

With ``use_cache=True`` the prompt is processed once and every later step
forwards only the newest token against a :class:`~pipeline_src.model.KVCache`.
``use_cache=False`` is the reference implementation: a full forward over the
prompt and everything generated so far at every step. Both give the same output.

Decoding runs where the model is: the prompt (and any given response IDs) must be on the model's
device, and the generated tokens and IDs stay there (the caller moves them to the CPU).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from pipeline_src.model import Decoder

PAD = 0  # token emitted by a row after it has emitted the stop token


@dataclass
class Decoded:
    tokens: torch.Tensor  # [B, N] generated tokens; PAD after a row's stop token
    positions: torch.Tensor  # [B, N] position id each generated token was assigned (and fed with)


def _validate(model: Decoder, prompt: torch.Tensor, prompt_positions: torch.Tensor, max_new_tokens: int,
              response_positions: torch.Tensor | None) -> None:
    if prompt.dim() != 2 or prompt.shape != prompt_positions.shape:
        raise ValueError(f"prompt {tuple(prompt.shape)} and prompt_positions {tuple(prompt_positions.shape)} "
                         "must both be [B, P]")
    if prompt.shape[1] == 0:
        raise ValueError("the prompt must hold at least one token")
    device = next(model.parameters()).device
    given = {"prompt": prompt, "prompt_positions": prompt_positions, "response_positions": response_positions}
    elsewhere = [f"{name} on {t.device}" for name, t in given.items() if t is not None and t.device != device]
    if elsewhere:
        raise ValueError(f"the model is on {device} but {', '.join(elsewhere)}: move them to the model's device")
    if not isinstance(max_new_tokens, int) or max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be a non-negative int, got {max_new_tokens!r}")
    if response_positions is None:
        if not model.cfg.position_head:
            raise ValueError("no source of response position ids: pass response_positions "
                             "or use a model with a position head (PPC)")
    elif response_positions.dim() != 2 or response_positions.shape[0] != prompt.shape[0] \
            or response_positions.shape[1] < max_new_tokens:
        raise ValueError(f"response_positions {tuple(response_positions.shape)} must be "
                         f"[{prompt.shape[0]}, >= {max_new_tokens}]")


@torch.inference_mode()
def greedy_decode(model: Decoder, prompt: torch.Tensor, prompt_positions: torch.Tensor, max_new_tokens: int, *,
                  response_positions: torch.Tensor | None = None, stop_token: int | None = None,
                  use_cache: bool = True) -> Decoded:
    """Generate up to ``max_new_tokens`` tokens after ``prompt`` by greedy (argmax) decoding.

    prompt, prompt_positions: long [B, P], equal-length rows without padding.
    response_positions: optional long [B, >= max_new_tokens]; column ``j`` is the id of
        generated token ``j``. If None, the model's position head predicts it (PPC).
    stop_token: once a row emits it, the row emits PAD from then on; decoding ends
        early when every row has emitted it, so N may be smaller than max_new_tokens.

    Every generated token is fed back with its position id, including PAD tokens of
    finished rows (rows never attend to each other, so those do not affect the others).
    """
    _validate(model, prompt, prompt_positions, max_new_tokens, response_positions)
    B = prompt.shape[0]
    tokens, positions = prompt, prompt_positions  # the whole sequence so far
    new_tokens, new_positions = prompt, prompt_positions  # not yet seen by the model
    cache = None
    finished = torch.zeros(B, dtype=torch.bool, device=prompt.device)
    generated, generated_positions = [], []

    for j in range(max_new_tokens):
        if use_cache:
            out = model(new_tokens, new_positions, cache=cache, use_cache=True)
            cache = out.cache
        else:
            out = model(tokens, positions)
        next_token = out.token_logits[:, -1].float().argmax(dim=-1)  # in fp32 (under bf16 autocast too)
        if response_positions is not None:
            next_position = response_positions[:, j].to(prompt_positions.dtype)
        else:
            next_position = out.position_logits[:, -1].float().argmax(dim=-1)
        next_token = torch.where(finished, torch.full_like(next_token, PAD), next_token)
        generated.append(next_token)
        generated_positions.append(next_position)
        if stop_token is not None:
            finished |= next_token == stop_token
            if bool(finished.all()):
                break

        new_tokens, new_positions = next_token[:, None], next_position[:, None]
        if not use_cache:
            tokens = torch.cat((tokens, new_tokens), dim=1)
            positions = torch.cat((positions, new_positions), dim=1)

    if not generated:
        empty = prompt.new_zeros(B, 0)
        return Decoded(tokens=empty, positions=empty.clone())
    return Decoded(tokens=torch.stack(generated, dim=1), positions=torch.stack(generated_positions, dim=1))

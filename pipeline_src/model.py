"""A small GPT-NeoX-style decoder-only transformer in plain PyTorch.

The model is a stack of pre-LayerNorm blocks (attention + MLP) between a token
embedding and a linear LM head. Its one unusual trait is that **positions are
data**: the caller passes ``position_ids`` next to ``tokens`` and the model only
consumes them. It never derives positions from sequence order, so experiments
can feed shifted or non-contiguous ids (as in position coupling / PPC).

The model sees positions only through its *encoding* (``ModelConfig.position_encoding``, a name
in the registry of :mod:`pipeline_src.schemes`), which may use three hooks: a learned table added
to the token embedding, a rotation of queries and keys, and an additive attention bias from the
query and key IDs (see :class:`pipeline_src.schemes.scheme.Encoding`).

For generation, :meth:`Decoder.forward` can return and consume a :class:`KVCache`
(the keys, values and position ids of the tokens seen so far), so each new token costs one
single-position forward instead of a forward over the whole sequence.

For analysis, ``Decoder.forward(..., attention_of=(rows, queries))`` also returns every layer's
attention probabilities of the queries asked for, written out (:func:`attention_probabilities`);
attention itself is left to ``F.scaled_dot_product_attention``, which never materialises them.

``ModelConfig.attention_scale="log_length"`` makes the softmax *scalable* (Nakanishi, 2025; cf.
Chiang and Cholak, 2022): each query's content logits are multiplied by ``s_h * ln(n)``, where ``n``
is the number of keys it may attend to and ``s_h`` a learned factor of head ``h``, so that attention
need not flatten as the context grows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from .config.model_config import ModelConfig
from .schemes import get_encoding


@dataclass
class KVCache:
    """What attention needs of the tokens processed so far: keys and values of every layer, and
    the tokens' position ids.

    ``layers[i]`` is ``(keys, values)`` of layer ``i``, each [B, n_head, T_past, head_dim].
    Keys are stored *after* rotary, each rotated by its own token's position id,
    so cached entries never need to know the positions of later tokens.
    ``position_ids`` [B, T_past] are the keys' ids, for an attention bias that depends on them
    (None in an empty cache).
    """

    layers: list[tuple[torch.Tensor, torch.Tensor]]
    position_ids: torch.Tensor | None = None

    @property
    def length(self) -> int:
        """Number of cached time steps (T_past)."""
        return self.layers[0][0].shape[2] if self.layers else 0


@dataclass
class ModelOutput:
    token_logits: torch.Tensor  # [B, T, vocab_size]
    position_logits: torch.Tensor | None  # [B, T, max_positions] when cfg.position_head
    cache: KVCache | None = None  # past + new keys/values, when forward(use_cache=True)
    # Per layer, the attention probabilities [Q, n_head, T_past + T] (float32, on the CPU) of the Q
    # queries of forward(attention_of=(rows, queries)).
    attention: list[torch.Tensor] | None = None


Rotation = Callable[[torch.Tensor], torch.Tensor]  # queries or keys [B, H, T, head_dim] -> rotated
KeysValues = tuple[torch.Tensor, torch.Tensor]  # keys, values [B, H, T_keys, head_dim]


def attention_probabilities(q: torch.Tensor, k: torch.Tensor, attn_mask: torch.Tensor) -> torch.Tensor:
    """softmax(q k^T / sqrt(head_dim) + attn_mask) over the keys, written out: what
    ``F.scaled_dot_product_attention`` computes before it weights the values.

    q [B, H, T, head_dim], k [B, H, S, head_dim] -> float32 probabilities [B, H, T, S], each row
    summing to 1.
    attn_mask: bool (True = may attend; the other keys get probability 0) or a float bias added to
    the scores (-inf = may not attend), broadcastable to [B, H, T, S].
    """
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if attn_mask.dtype == torch.bool:
        scores = scores.masked_fill(~attn_mask, float("-inf"))
    else:
        scores = scores + attn_mask
    return scores.softmax(dim=-1, dtype=torch.float32)  # in float32 (as fused kernels do) whatever q's dtype


def probabilities_of(q: torch.Tensor, k: torch.Tensor, attn_mask: torch.Tensor | None, rows: torch.Tensor,
                     queries: torch.Tensor) -> torch.Tensor:
    """The attention probabilities of the queries ``(rows[i], queries[i])`` only, float32 [Q, H, S]:
    rows i of :func:`attention_probabilities` without computing the others. ``attn_mask`` as in
    :meth:`SelfAttention.forward` (None: causal after ``S - T`` earlier keys)."""
    T, S = q.shape[2], k.shape[2]
    if attn_mask is None:
        mask = torch.arange(S, device=q.device) <= S - T + queries[:, None]  # [Q, S]
        mask = mask[:, None]
    else:
        mask = attn_mask.expand(q.shape[0], -1, -1, -1)[rows, :, queries]  # [Q, 1 or H, S]
    asked = q[rows, :, queries]  # [Q, H, head_dim]
    return attention_probabilities(asked[:, :, None], k[rows], mask[:, :, None])[:, :, 0]


def key_counts(attn_mask: torch.Tensor | None, T: int, S: int, device: torch.device) -> torch.Tensor:
    """How many of the ``S`` keys each of the ``T`` queries may attend to, itself included, as a
    float32 column broadcastable to [B, H, T, 1]; ``attn_mask`` as in :meth:`SelfAttention.forward`.

    Without a mask attention is causal after ``S - T`` earlier keys, so query ``i`` sees ``S - T + i + 1``.
    """
    if attn_mask is None:
        return torch.arange(S - T + 1, S + 1, dtype=torch.float32, device=device)[:, None]
    allowed = attn_mask if attn_mask.dtype == torch.bool else attn_mask != float("-inf")
    return allowed.sum(dim=-1, keepdim=True, dtype=torch.float32)


class SelfAttention(nn.Module):
    """Multi-head causal self-attention with a fused qkv projection.

    The qkv output is laid out per head as [q | k | v] (the GPT-NeoX layout).
    With a KV cache, the cached keys/values (already rotated) are prepended
    along the time axis after the new ``k`` is rotated; the new
    queries then attend to every cached key and causally among themselves.

    With ``attention_scale="log_length"``, ``length_scale`` [n_head] is a learned factor per head:
    a query that may attend to ``n`` keys is multiplied by ``length_scale[h] * ln(n)`` before the
    scores are taken, which scales its content logits q.k / sqrt(head_dim) and leaves an encoding's
    attention bias (in ``attn_mask``) as it is. It starts at 1 / ln(10), a factor of 1 for a query
    that sees 10 keys (our choice). Cached keys are unscaled, so the cache is the same either way.
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.n_head, self.head_dim = cfg.n_head, cfg.head_dim
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.out = nn.Linear(cfg.d_model, cfg.d_model)
        self.length_scale = None
        if cfg.attention_scale == "log_length":
            self.length_scale = nn.Parameter(torch.full((cfg.n_head,), 1 / math.log(10)))

    def forward(self, x: torch.Tensor, rotate: Rotation | None, attn_mask: torch.Tensor | None,
                past: KeysValues | None = None, attention_of: tuple[torch.Tensor, torch.Tensor] | None = None,
                ) -> tuple[torch.Tensor, KeysValues, torch.Tensor | None]:
        """x [B, T, d_model] -> (output [B, T, d_model], (keys, values) including ``past``,
        the attention probabilities [Q, H, T_past + T] of the queries ``attention_of`` or None).

        rotate: the encoding's rotation of queries and keys, or None.
        attn_mask: None (causal), bool [B, 1, T, T_past + T] (True = may attend), or the
            encoding's float attention bias [B, n_head, T, T_past + T] (-inf = may not attend).
        past: cached (keys, values) [B, H, T_past, head_dim] of earlier tokens, or None.
        attention_of: (rows, queries), long [Q] each: the queries (query ``queries[i]`` of the new
            tokens of row ``rows[i]``) whose probabilities to write out (:func:`probabilities_of`).
        """
        B, T, _ = x.shape
        qkv = self.qkv(x).view(B, T, self.n_head, 3 * self.head_dim).transpose(1, 2)
        q, k, v = qkv.chunk(3, dim=-1)  # each [B, H, T, head_dim]
        if rotate is not None:
            q, k = rotate(q), rotate(k)
        if past is not None:
            k, v = torch.cat((past[0], k), dim=2), torch.cat((past[1], v), dim=2)
        if self.length_scale is not None:
            n = key_counts(attn_mask, T, k.shape[2], x.device)  # [.., T, 1]
            q = q * (self.length_scale[:, None, None] * n.log()).to(q.dtype)
        probs = None if attention_of is None else probabilities_of(q, k, attn_mask, *attention_of)
        if attn_mask is not None:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        elif past is None or T == 1:
            # Square causal, or a single new query that may see every key.
            y = F.scaled_dot_product_attention(q, k, v, is_causal=past is None)
        else:
            raise ValueError("several new tokens with a cache need an explicit attn_mask")
        return self.out(y.transpose(1, 2).reshape(B, T, -1)), (k, v), probs


class MLP(nn.Module):
    """Position-wise feed-forward network: Linear -> GELU -> Linear."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.up = nn.Linear(cfg.d_model, cfg.mlp_dim)
        self.down = nn.Linear(cfg.mlp_dim, cfg.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.gelu(self.up(x)))


class Block(nn.Module):
    """One transformer layer with pre-LayerNorm attention and MLP.

    Parallel (NeoX): ``x + attn(ln1(x)) + mlp(ln2(x))``.
    Sequential: ``h = x + attn(ln1(x))`` then ``h + mlp(ln2(h))``.
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.parallel = cfg.parallel_residual
        self.ln1 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.attn = SelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.mlp = MLP(cfg)

    def forward(self, x, rotate, attn_mask, past=None, attention_of=None):
        """Returns (new x, this layer's (keys, values), its attention probabilities or None); see
        :meth:`SelfAttention.forward`."""
        if self.parallel:
            attn, kv, probs = self.attn(self.ln1(x), rotate, attn_mask, past, attention_of)
            return x + attn + self.mlp(self.ln2(x)), kv, probs
        attn, kv, probs = self.attn(self.ln1(x), rotate, attn_mask, past, attention_of)
        x = x + attn
        return x + self.mlp(self.ln2(x)), kv, probs


class Decoder(nn.Module):
    """Token embedding -> ``n_layer`` blocks -> final LayerNorm -> LM head (+ optional position head).

    The encoding's learned table, if it has one, is ``pos_embed``. The position head is a
    bias-free ``Linear(d_model, max_positions)`` that predicts the position id of the next token.
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.encoding = get_encoding(cfg.position_encoding)
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos_embed = self.encoding.input_table(cfg)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.position_head = nn.Linear(cfg.d_model, cfg.max_positions, bias=False) if cfg.position_head else None
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        """N(0, 0.02) weights and zero biases for Linear/Embedding; LayerNorm starts as identity."""
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if getattr(module, "bias", None) is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)

    def check_positions(self, position_ids: torch.Tensor) -> None:
        """Reject ids the model cannot represent (see :attr:`ModelConfig.position_limit`; never clamp
        silently). It reads the ids' smallest and largest value on the host: the training loop calls
        it on the CPU, before the ids move to the model's device, and tells :meth:`forward`."""
        if not self.encoding.reads_positions or position_ids.numel() == 0:
            return
        lo, hi = int(position_ids.min()), int(position_ids.max())
        if lo < 0:
            raise ValueError(f"position id {lo} is negative; position ids must be >= 0")
        limit = self.cfg.position_limit
        if limit is not None and hi >= limit:
            raise ValueError(f"position id {hi} >= max_positions {limit} of the model's position table "
                             "or head; raise max_positions in ModelConfig")

    @staticmethod
    def _build_mask(attention_mask: torch.Tensor) -> torch.Tensor:
        """Causal mask AND key-padding mask, as bool [B, 1, T, T] (True = may attend).

        Every query may also attend to itself, so no row is fully masked (which
        would give NaN); outputs at padding positions are meaningless anyway.
        """
        T = attention_mask.shape[1]
        causal = torch.ones(T, T, dtype=torch.bool, device=attention_mask.device).tril()
        allowed = causal & attention_mask[:, None, None, :]
        return allowed | torch.eye(T, dtype=torch.bool, device=attention_mask.device)

    @staticmethod
    def _build_cached_mask(T_past: int, T: int, device: torch.device) -> torch.Tensor:
        """Mask for T new queries after T_past cached keys, bool [1, 1, T, T_past + T].

        New token ``i`` (at overall step ``T_past + i``) may attend to every key
        up to and including its own step: all of the cache, causally among the new.
        """
        query_step = torch.arange(T, device=device)[:, None] + T_past
        key_step = torch.arange(T_past + T, device=device)[None, :]
        return (key_step <= query_step)[None, None]

    def _attention_mask(self, attention_mask: torch.Tensor | None, T_past: int, T: int,
                        bias: torch.Tensor | None, device: torch.device) -> torch.Tensor | None:
        """The ``attn_mask`` of every layer: which keys each query may attend to, and the encoding's
        attention bias if it has one (then -inf wherever attending is not allowed).

        None means plain causal attention, or one new token, which sees every cached key.
        """
        if attention_mask is not None:
            allowed = self._build_mask(attention_mask)
        elif (T_past > 0 and T > 1) or bias is not None:
            allowed = self._build_cached_mask(T_past, T, device)
        else:
            return None
        return allowed if bias is None else bias.masked_fill(~allowed, float("-inf"))

    def forward(self, tokens: torch.Tensor, position_ids: torch.Tensor,
                attention_mask: torch.Tensor | None = None,
                cache: KVCache | None = None, use_cache: bool = False, last_only: bool = False,
                attention_of: tuple[torch.Tensor, torch.Tensor] | None = None,
                positions_checked: bool = False) -> ModelOutput:
        """tokens, position_ids: long [B, T]; attention_mask: optional bool [B, T], True = real token.

        With ``cache`` (from an earlier call with ``use_cache=True``), ``tokens`` and
        ``position_ids`` are only the *new* tokens, which follow the cached ones;
        each new token still carries its own position id. ``use_cache=True``
        returns the cache extended by the new tokens in ``ModelOutput.cache``
        (the given cache is not modified). Padding masks cannot be combined
        with a cache: decoding batches have equal-length prompts.
        ``last_only=True`` computes the heads at the last position only (logits [B, 1, ...]):
        scoring one next token per row skips the LM head at every other position.
        ``attention_of=(rows, queries)`` (long [Q] each; a query indexes the new tokens) also returns
        every layer's attention probabilities of those queries in ``ModelOutput.attention``.
        ``positions_checked=True``: the caller ran :meth:`check_positions` on these ids already.
        """
        if tokens.shape != position_ids.shape:
            raise ValueError(f"tokens {tuple(tokens.shape)} and position_ids {tuple(position_ids.shape)} "
                             "differ in shape")
        if attention_mask is not None and (attention_mask.shape != tokens.shape or attention_mask.dtype != torch.bool):
            raise ValueError("attention_mask must be a bool tensor shaped like tokens")
        if cache is not None:
            if attention_mask is not None:
                raise ValueError("attention_mask cannot be combined with a KV cache (pass unpadded, equal-length rows)")
            if cache.layers and len(cache.layers) != len(self.blocks):
                raise ValueError(f"cache has {len(cache.layers)} layers, the model {len(self.blocks)}")
            if cache.layers and cache.layers[0][0].shape[0] != tokens.shape[0]:
                raise ValueError(f"cache batch size {cache.layers[0][0].shape[0]} != tokens batch size "
                                 f"{tokens.shape[0]}")
        if not positions_checked:
            self.check_positions(position_ids)
        T_past = cache.length if cache is not None else 0
        key_ids = torch.cat((cache.position_ids, position_ids), dim=1) if T_past > 0 else position_ids

        # The encoding's three hooks: input table, rotation of q and k, attention bias.
        x = self.embed(tokens)
        if self.pos_embed is not None:
            x = x + self.pos_embed(position_ids)
        rotate = self.encoding.rotation(self.cfg, position_ids)
        bias = self.encoding.attention_bias(self.cfg, position_ids, key_ids)
        mask = self._attention_mask(attention_mask, T_past, tokens.shape[1], bias, tokens.device)

        pasts = cache.layers if T_past > 0 else [None] * len(self.blocks)
        new_layers, attention = [], []
        for block, past in zip(self.blocks, pasts, strict=False):
            x, kv, probs = block(x, rotate, mask, past, attention_of)
            new_layers.append(kv)
            if attention_of is not None:
                attention.append(probs.cpu())
        x = self.ln_f(x[:, -1:] if last_only else x)
        position_logits = self.position_head(x) if self.position_head is not None else None
        return ModelOutput(token_logits=self.lm_head(x), position_logits=position_logits,
                           cache=KVCache(new_layers, key_ids) if use_cache else None,
                           attention=attention if attention_of is not None else None)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

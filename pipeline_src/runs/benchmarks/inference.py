"""Inference benchmarks: greedy decoding with the KV cache against a full forward per step
(:func:`decode_benchmark`), and the batched influential-token analysis (:func:`influence_benchmark`;
its comparison with the one-candidate-at-a-time reference is ``tests/bench_influence.py``, beside
that reference). Both run on ``device`` and wait for it before reading a clock."""

from __future__ import annotations

import time

import torch

from pipeline_src.devices.placement import describe_device, resolve_device
from pipeline_src.model import Decoder, ModelConfig
from pipeline_src.runs.benchmarks.sizes import SIZE
from pipeline_src.runs.benchmarks.training_step import VOCAB_SIZE, wait_for


def decode_benchmark(length: int = 500, batch_size: int = 16, d_model: int = SIZE["d_model"],
                     n_layer: int = SIZE["n_layer"], n_head: int = SIZE["n_head"], threads: int | None = None,
                     prompt_len: int = 8, device: str = "auto") -> dict:
    """Time greedy decoding of ``length`` new tokens after a ``prompt_len``-token prompt,
    with the KV cache and with the cache-free reference (a full forward per step).

    Rotary model, sequential position ids; tokens/s counts generated tokens of the
    whole batch. Also checks that both modes produced the same tokens. Runs on ``device`` (auto, cpu
    or cuda; the model is made on the CPU and moved, so every device decodes the same model).
    """
    from pipeline_src.evaluation.decoding import greedy_decode

    if threads is not None:
        torch.set_num_threads(threads)
    device = resolve_device(device)
    total = prompt_len + length
    cfg = ModelConfig(vocab_size=VOCAB_SIZE, d_model=d_model, n_layer=n_layer, n_head=n_head,
                      position_encoding="rope", max_positions=max(total, 1024))
    torch.manual_seed(0)
    model = Decoder(cfg).eval().to(device)
    prompt = torch.randint(0, VOCAB_SIZE, (batch_size, prompt_len)).to(device)
    ids = torch.arange(total).expand(batch_size, total).to(device)

    def timed(use_cache: bool, n: int):
        wait_for(device)
        start = time.perf_counter()
        with torch.no_grad():
            out = greedy_decode(model, prompt, ids[:, :prompt_len], n,
                                response_positions=ids[:, prompt_len:], use_cache=use_cache)
        wait_for(device)
        return time.perf_counter() - start, out

    for use_cache in (True, False):  # untimed warm-up
        timed(use_cache, min(length, 8))
    cached_s, cached = timed(True, length)
    full_s, full = timed(False, length)
    generated = batch_size * length
    return {
        "config": dict(length=length, batch_size=batch_size, d_model=d_model, n_layer=n_layer,
                       n_head=n_head, prompt_len=prompt_len),
        "torch_version": torch.__version__,
        "threads": torch.get_num_threads(),
        "device": describe_device(device),
        "n_params": model.num_parameters(),
        "cached_seconds": cached_s,
        "full_seconds": full_s,
        "cached_tokens_per_s": generated / cached_s,
        "full_tokens_per_s": generated / full_s,
        "speedup": full_s / cached_s,
        "identical": torch.equal(cached.tokens, full.tokens) and torch.equal(cached.positions, full.positions),
    }


def format_decode_report(result: dict) -> str:
    """Readable multi-line summary of a :func:`decode_benchmark` result."""
    c = result["config"]
    return "\n".join([
        f"Greedy decoding benchmark (fp32, torch {result['torch_version']}, {result['device']}, "
        f"{result['threads']} threads)",
        f"  model: d_model={c['d_model']} n_layer={c['n_layer']} n_head={c['n_head']} vocab={VOCAB_SIZE}, "
        f"{result['n_params']:,} params, rope",
        f"  batch {c['batch_size']}, prompt {c['prompt_len']} tokens, {c['length']} new tokens per row",
        f"  KV cache:        {result['cached_tokens_per_s']:,.0f} tokens/s ({result['cached_seconds']:.2f} s)",
        f"  full re-forward: {result['full_tokens_per_s']:,.0f} tokens/s ({result['full_seconds']:.2f} s)",
        f"  speed-up (cache / re-forward): {result['speedup']:.1f}x; identical outputs: {result['identical']}",
    ])


def influence_case(n_targets: int = 4, context: int = 128, local: int = 64, k_max: int = 4, d_model: int = 64,
                   n_layer: int = 2, n_head: int = 4, batch_size: int = 64):
    """The influence benchmark's analysis: (cfg, targets, model). Greedy selection over ``n_targets``
    targets, one from each of as many random documents, and a randomly initialised rotary Decoder
    (seeded: the same arguments give the same case)."""
    import numpy as np
    import polars as pl

    from pipeline_src.config.influence_config import InfluenceConfig
    from pipeline_src.language.targets import select_targets

    cfg = InfluenceConfig(context=context, local=local, k_max=k_max, n_targets=n_targets, batch_size=batch_size)
    rng = np.random.default_rng(0)
    stream = pl.DataFrame({
        "doc": pl.Series(range(n_targets), dtype=pl.Int64),
        "split": pl.Series(["heldout"] * n_targets, dtype=pl.String),
        # context + 1 tokens: one target per document (the other-document baseline needs 2)
        "tokens": pl.Series([rng.integers(0, VOCAB_SIZE, context + 1).tolist() for _ in range(n_targets)],
                            dtype=pl.List(pl.Int32)),
    })
    torch.manual_seed(0)
    model = Decoder(ModelConfig(vocab_size=VOCAB_SIZE, d_model=d_model, n_layer=n_layer, n_head=n_head,
                                position_encoding="rope", max_positions=max(context, 1024))).eval()
    return cfg, select_targets(stream, cfg), model


def influence_benchmark(n_targets: int = 4, context: int = 128, local: int = 64, k_max: int = 4,
                        d_model: int = 64, n_layer: int = 2, n_head: int = 4, batch_size: int = 64,
                        threads: int | None = None, device: str = "auto") -> dict:
    """Time the batched influential-token analysis (Figure 4) of :func:`influence_case` on ``device``,
    after an untimed warm-up on two targets; ``chosen`` holds the far tokens it chose."""
    from pipeline_src.language.influence import influential_tokens

    if threads is not None:
        torch.set_num_threads(threads)
    device = resolve_device(device)
    cfg, targets, model = influence_case(n_targets, context, local, k_max, d_model, n_layer, n_head, batch_size)
    influential_tokens(model, targets.head(2), cfg, device=device, progress=None)  # untimed warm-up
    start = time.perf_counter()
    batched = influential_tokens(model, targets, cfg, device=device, progress=None)
    batched_s = time.perf_counter() - start  # its losses come back to the host: nothing left queued
    return {
        "config": dict(n_targets=n_targets, context=context, local=local, k_max=k_max, d_model=d_model,
                       n_layer=n_layer, n_head=n_head, batch_size=batch_size),
        "threads": torch.get_num_threads(),
        "device": describe_device(device),
        "batched_seconds": batched_s,
        "targets_per_s": n_targets / batched_s,
        "chosen": batched["chosen"].to_list(),
    }


def format_influence_report(result: dict) -> str:
    """Readable multi-line summary of an :func:`influence_benchmark` result."""
    c = result["config"]
    return "\n".join([
        f"Influential-token analysis benchmark (greedy, torch {torch.__version__}, {result['device']}, "
        f"{result['threads']} threads)",
        f"  model: d_model={c['d_model']} n_layer={c['n_layer']} n_head={c['n_head']} vocab={VOCAB_SIZE}, rope",
        f"  {c['n_targets']} targets, Lbar={c['context']}, L={c['local']}, k_max={c['k_max']}, "
        f"batch {c['batch_size']}",
        f"  batched: {result['batched_seconds']:.2f} s ({result['targets_per_s']:.2f} targets/s)",
    ])

"""Training-throughput benchmark for :class:`pipeline_src.model.Decoder`.

Three measurements on the current machine:

1. the matmul rate in the precision in use: the best FLOP/s of square ``torch.matmul`` products of
   growing size (128, 256, ... up to a bound), each size timed for a bounded time, and no larger
   size tried once a product would take too long (bf16 is emulated, and slow, on CPUs without
   bf16 instructions);
2. training tokens/s of our Decoder (forward + backward + AdamW step, cross-entropy
   on every token), and the fraction of the matmul rate this reaches, using

       FLOPs/token ~= 6 * N_nonembedding + 6 * n_layer * seq_len * d_model

   (Kaplan et al. 2020: 2 FLOPs per parameter per token forward, twice that
   backward; the second term is the attention score/value products.
   N_nonembedding counts all parameters except the token and absolute
   position embedding tables; the LM head is included since it is a matmul);
3. if ``transformers`` is installed, the same loop on an equivalently shaped
   ``GPTNeoXForCausalLM``, reported as the ratio ours / HF.

All three run on ``device`` (``auto``: CUDA when present, as the pipeline's ``device`` setting), with
training's bf16 autocast there (:func:`pipeline_src.devices.placement.autocast`); timings wait for the GPU.

With ``compile``, our step runs through ``torch.compile`` as the training loop runs it on a GPU
unless ``train.compile`` is false (:func:`pipeline_src.training.train.compiled`: CUDA graphs there);
the warm-up steps then include the compilation. Without it both steps are eager. The inference
benchmarks (KV-cache decoding, the influential-token analysis) are
:mod:`pipeline_src.runs.benchmarks.inference`.
"""

from __future__ import annotations

import time
from typing import Callable

import torch
import torch.nn.functional as F

from pipeline_src.devices.placement import autocast, describe_device, resolve_device
from pipeline_src.model import Decoder, ModelConfig
from pipeline_src.runs.benchmarks.host_reads import step_profile
from pipeline_src.runs.benchmarks.sizes import SIZE
from pipeline_src.training.batches import TrainingBatch
from pipeline_src.training.optimizer import AdamW
from pipeline_src.training.train import compiled, make_optimizer, train_step

VOCAB_SIZE = 16


def wait_for(device: torch.device) -> None:
    """Wait for the work queued on ``device`` (CUDA runs asynchronously), so timings are honest."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
CPU = torch.device("cpu")  # matmul_rate's default device


def _quiet(line: str) -> None:
    pass


def matmul_rate(precision: str = "fp32", device: torch.device = CPU, max_n: int = 2048,
                budget_s: float = 1.0, say: Callable[[str], None] = _quiet) -> tuple[float, int]:
    """(best FLOP/s, its size n) of n x n by n x n products (2 n^3 FLOPs each) in ``precision`` on
    ``device``, for n = 128, 256, ... up to ``max_n``. Each size is timed for about ``budget_s`` / 4
    after one warm-up product; no larger size is tried once one product would take more than
    ``budget_s`` (a product at 2n costs 8 times one at n), so the whole measurement stays within a
    few times ``budget_s``."""
    best, best_n, n = 0.0, 0, min(128, max_n)
    while n <= max_n:
        a = torch.randn(n, n, dtype=DTYPES[precision], device=device)
        b = torch.randn(n, n, dtype=DTYPES[precision], device=device)
        torch.matmul(a, b)
        wait_for(device)
        reps, start = 0, time.perf_counter()
        while True:
            torch.matmul(a, b)
            wait_for(device)
            reps += 1
            elapsed = time.perf_counter() - start
            if elapsed >= budget_s / 4 or reps >= 100:
                break
        rate = 2 * n**3 * reps / elapsed
        say(f"matmul {precision} {n}^3: {rate / 1e9:.1f} GFLOP/s "
            f"({reps} product{'s' if reps > 1 else ''} in {elapsed:.2f} s)")
        if rate > best:
            best, best_n = rate, n
        if 8 * elapsed / reps > budget_s:
            break
        n *= 2
    return best, best_n


def flops_per_token(cfg: ModelConfig, seq_len: int) -> tuple[int, int]:
    """(N_nonembedding, training FLOPs per token) for ``cfg`` at context ``seq_len``."""
    model = Decoder(cfg)
    n = model.num_parameters() - model.embed.weight.numel()
    if model.pos_embed is not None:
        n -= model.pos_embed.weight.numel()
    return n, 6 * n + 6 * cfg.n_layer * seq_len * cfg.d_model


def _generic_step(logits_fn, params, tokens, positions, targets, precision) -> Callable[[], None]:
    """One AdamW training step of any model given as ``logits_fn`` (cross-entropy on every token)."""
    optimizer = AdamW([(list(params), 0.01)], lr=1e-3)  # the training loop's optimizer
    device = tokens.device

    def step():
        with autocast(device, precision):
            logits = logits_fn(tokens, positions)
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return step


def _our_step(model: Decoder, tokens, positions, targets, precision, compile: bool) -> Callable[[], None]:
    """The training loop's own step (:func:`pipeline_src.training.train.train_step`: loss, accuracy,
    gradient clipping, AdamW) on a batch of full windows, compiled as ``train.compile`` compiles it;
    its numbers stay on the device."""
    opt = {"precision": precision, "grad_clip": 1.0, "lr": 1e-3, "betas": (0.9, 0.999), "weight_decay": 0.01}
    optimizer = make_optimizer(model, opt)
    ids = torch.cat((positions, positions[:, -1:] + 1), dim=1)  # the inputs' IDs, then the last target's
    batch = TrainingBatch.full_windows(tokens, ids, targets)
    forward = compiled(model, tokens.device) if compile else None
    return lambda: train_step(model, optimizer, batch, ids, opt, forward)


def _tokens_per_s(step: Callable[[], None], tokens_per_step: int, steps: int, warmup: int,
                  device: torch.device) -> tuple[float, dict]:
    """(tokens/s over ``steps`` timed calls of ``step`` after ``warmup`` untimed ones, and one more
    step's aten operations and host reads (:func:`pipeline_src.runs.benchmarks.host_reads.step_profile`))."""
    for _ in range(warmup):
        step()
    wait_for(device)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    wait_for(device)
    rate = tokens_per_step * steps / (time.perf_counter() - start)
    return rate, step_profile(step)


def _build_hf(cfg: ModelConfig, seq_len: int):
    """An equivalently shaped GPTNeoXForCausalLM (no dropout, SDPA attention if supported)."""
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    kwargs = dict(vocab_size=cfg.vocab_size, hidden_size=cfg.d_model, num_hidden_layers=cfg.n_layer,
                  num_attention_heads=cfg.n_head, intermediate_size=cfg.mlp_dim, hidden_act="gelu",
                  rotary_pct=cfg.rotary_pct, rotary_emb_base=cfg.rotary_base,
                  max_position_embeddings=max(seq_len, cfg.max_positions),
                  use_parallel_residual=cfg.parallel_residual, layer_norm_eps=cfg.layer_norm_eps,
                  hidden_dropout=0.0, attention_dropout=0.0, tie_word_embeddings=False)
    try:
        hf_cfg = GPTNeoXConfig(**kwargs, attn_implementation="sdpa")
    except (TypeError, ValueError):
        hf_cfg = GPTNeoXConfig(**kwargs)
    model = GPTNeoXForCausalLM(hf_cfg).train()
    return model, getattr(model.config, "_attn_implementation", "unknown")


def run_benchmark(d_model: int = SIZE["d_model"], n_layer: int = SIZE["n_layer"], n_head: int = SIZE["n_head"],
                  seq_len: int = SIZE["seq_len"], batch_size: int = SIZE["batch_size"], steps: int = 20,
                  warmup: int = 3, threads: int | None = None,
                  precision: str = "fp32", matmul_size: int = 2048, device: str = "auto", compile: bool = False,
                  say: Callable[[str], None] = _quiet) -> dict:
    """Measure the matmul rate in ``precision`` (square sizes up to ``matmul_size``) and training
    tokens/s (ours and, if available, Hugging Face's) on ``device`` (auto, cpu or cuda); ``say``
    gets a line per step of the measurement."""
    if precision not in DTYPES:
        raise ValueError(f"precision must be one of {sorted(DTYPES)}, got {precision!r}")
    if threads is not None:
        torch.set_num_threads(threads)
    device = resolve_device(device)

    rate, rate_n = matmul_rate(precision, device, max_n=matmul_size, say=say)
    cfg = ModelConfig(vocab_size=VOCAB_SIZE, d_model=d_model, n_layer=n_layer, n_head=n_head,
                      position_encoding="rope", max_positions=max(seq_len, 1024))
    n_nonembed, fpt = flops_per_token(cfg, seq_len)

    torch.manual_seed(0)
    tokens = torch.randint(0, VOCAB_SIZE, (batch_size, seq_len)).to(device)
    targets = torch.randint(0, VOCAB_SIZE, (batch_size, seq_len)).to(device)
    positions = torch.arange(seq_len).expand(batch_size, seq_len).to(device)

    model = Decoder(cfg).train().to(device)
    say(f"ours{' compiled' if compile else ''}: {warmup} warm-up and {steps} timed training steps")
    ours, our_profile = _tokens_per_s(_our_step(model, tokens, positions, targets, precision, compile),
                                      tokens.numel(), steps, warmup, device)
    result = {
        "config": dict(d_model=d_model, n_layer=n_layer, n_head=n_head, seq_len=seq_len, batch_size=batch_size,
                       steps=steps, warmup=warmup, precision=precision, matmul_size=matmul_size, compile=compile),
        "torch_version": torch.__version__,
        "threads": torch.get_num_threads(),
        "device": describe_device(device),
        "n_params": model.num_parameters(),
        "n_params_nonembedding": n_nonembed,
        "flops_per_token": fpt,
        "flops_per_step": fpt * batch_size * seq_len,
        "matmul_flops_per_s": rate,
        "matmul_size": rate_n,
        "tokens_per_s": ours,
        "aten_ops_per_step": our_profile["aten_ops"],
        "host_reads_per_step": our_profile["host_reads"],
        "model_flops_per_s": ours * fpt,
        "fraction_of_matmul": ours * fpt / rate,
        "hf_status": "not run",
        "hf_tokens_per_s": None,
        "hf_fraction_of_matmul": None,
        "ratio_ours_over_hf": None,
        "hf_aten_ops_per_step": None,
        "hf_host_reads_per_step": None,
    }

    try:
        hf, attn_impl = _build_hf(cfg, seq_len)
    except ImportError as err:
        result["hf_status"] = f"transformers not installed ({err})"
        return result
    hf = hf.to(device)
    say(f"HF GPTNeoX: {warmup} warm-up and {steps} timed training steps")
    hf_tps, hf_profile = _tokens_per_s(_generic_step(lambda t, p: hf(input_ids=t, position_ids=p).logits,
                                                     hf.parameters(), tokens, positions, targets, precision),
                                       tokens.numel(), steps, warmup, device)
    import transformers

    result.update(hf_status=f"ok (transformers {transformers.__version__}, attention {attn_impl})",
                  hf_tokens_per_s=hf_tps, hf_fraction_of_matmul=hf_tps * fpt / rate,
                  ratio_ours_over_hf=ours / hf_tps, hf_aten_ops_per_step=hf_profile["aten_ops"],
                  hf_host_reads_per_step=hf_profile["host_reads"])
    return result


def _of_matmul(fraction: float, precision: str) -> str:
    """A model's FLOP/s as a share of the best matmul rate measured; above it, said as such."""
    if fraction <= 1:
        return f"{fraction:.1%} of the best {precision} matmul rate measured"
    return (f"{fraction:.2f}x the best {precision} matmul rate measured (its products ran faster than any "
            "square product timed here: a bounded measurement, not the machine's peak)")


def format_report(result: dict) -> str:
    """Readable multi-line summary of a :func:`run_benchmark` result."""
    c = result["config"]
    lines = [
        f"Decoder training benchmark ({c['precision']}, torch {result['torch_version']}, {result['device']}, "
        f"{result['threads']} threads)",
        f"  model: d_model={c['d_model']} n_layer={c['n_layer']} n_head={c['n_head']} vocab={VOCAB_SIZE}, "
        f"{result['n_params']:,} params ({result['n_params_nonembedding']:,} non-embedding)",
        f"  batch: {c['batch_size']} x {c['seq_len']} tokens, {c['steps']} timed steps after {c['warmup']} warm-up",
        f"  best {c['precision']} matmul: {result['matmul_flops_per_s'] / 1e9:.1f} GFLOP/s at "
        f"{result['matmul_size']}^3 (square sizes from 128 up to at most {c['matmul_size']})",
        f"  FLOPs/token (6*N_nonembed + 6*n_layer*seq_len*d_model): {result['flops_per_token']:,}; "
        f"per step: {result['flops_per_step']:,}",
        f"  ours{' (torch.compile)' if c['compile'] else ''}: {result['tokens_per_s']:,.0f} tokens/s = "
        f"{result['model_flops_per_s'] / 1e9:.2f} GFLOP/s "
        f"= {_of_matmul(result['fraction_of_matmul'], c['precision'])}; per step "
        f"{result['aten_ops_per_step']:,} aten operations, {result['host_reads_per_step']} host reads "
        "(the training loop reads its numbers once per log_every steps besides)",
    ]
    if result["hf_tokens_per_s"] is None:
        lines.append(f"  HF GPTNeoX: {result['hf_status']}")
    else:
        lines += [
            f"  HF GPTNeoX: {result['hf_tokens_per_s']:,.0f} tokens/s "
            f"= {_of_matmul(result['hf_fraction_of_matmul'], c['precision'])} [{result['hf_status']}]; per step "
            f"{result['hf_aten_ops_per_step']:,} aten operations, {result['hf_host_reads_per_step']} host reads",
            f"  ratio ours/HF: {result['ratio_ours_over_hf']:.2f}x",
        ]
    return "\n".join(lines)

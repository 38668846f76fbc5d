"""The influential-token analysis batched against one candidate at a time: a benchmark, not a test.

Run from the repository root (the checkout: the installed package has no ``tests``)::

    python -m tests.bench_influence --targets N [--d-model D --n-layer 2 --threads T --batch-size B]

It times the batched analysis as ``lengthgen benchmark --influence N`` does (the same case, the same
defaults), then :func:`tests.influence_reference.reference_influential_tokens` on the same case,
and prints both times, their ratio and whether both chose the same far tokens.

``--selections greedy greedy_kl [topk]`` instead times the batched analysis under each selection on
one case (a random rotary Decoder, last position's logits only, as the analysis runs ours; ``--vocab``
sets its vocabulary, 49152 for SmolLM2's), interleaved over ``--repeats`` rounds (the fastest round
counts), and counts the forwards and the sequences they score: the cost of choosing by KL against
choosing by loss.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import torch

from pipeline_src.config.influence_config import SELECTIONS
from pipeline_src.devices.placement import describe_device, resolve_device
from pipeline_src.language.influence import influential_tokens
from pipeline_src.language.logits import decoder_logits_fn
from pipeline_src.model import Decoder, ModelConfig
from pipeline_src.runs.benchmarks.inference import format_influence_report, influence_benchmark, influence_case
from tests.influence_reference import reference_influential_tokens


def compare(n_targets: int = 4, d_model: int = 128, n_layer: int = 4, n_head: int = 4, batch_size: int = 64,
            threads: int | None = None, device: str = "auto") -> dict:
    """:func:`~pipeline_src.runs.benchmarks.inference.influence_benchmark`'s result, plus ``reference_seconds``
    (the reference on the same case), ``speedup`` (reference / batched) and ``same_choices``."""
    sizes = dict(n_targets=n_targets, d_model=d_model, n_layer=n_layer, n_head=n_head, batch_size=batch_size)
    result = influence_benchmark(**sizes, threads=threads, device=device)
    cfg, targets, model = influence_case(**sizes)
    start = time.perf_counter()
    reference = reference_influential_tokens(model, targets, cfg, device=resolve_device(device))
    reference_s = time.perf_counter() - start
    return {**result, "reference_seconds": reference_s, "speedup": reference_s / result["batched_seconds"],
            "same_choices": reference["chosen"].to_list() == result["chosen"]}


def format_comparison(result: dict) -> str:
    return "\n".join([
        format_influence_report(result),
        f"  one candidate a time: {result['reference_seconds']:.2f} s",
        f"  speed-up (batched / one at a time): {result['speedup']:.1f}x; same choices: {result['same_choices']}",
    ])


def selection_costs(selections: list[str], n_targets: int = 4, d_model: int = 128, n_layer: int = 4,
                    n_head: int = 4, batch_size: int = 64, vocab: int = 4096, repeats: int = 3,
                    threads: int | None = None, device: str = "auto") -> dict:
    """Per selection: the fastest of ``repeats`` timed runs of the batched analysis (seconds), its
    forwards and the sequences (rows) they scored, and its picks, on :func:`influence_case`'s
    targets and a random rotary Decoder of vocabulary ``vocab`` (seeded)."""
    if threads is not None:
        torch.set_num_threads(threads)
    device = resolve_device(device)
    cfg, targets, _ = influence_case(n_targets=n_targets, batch_size=batch_size)
    torch.manual_seed(0)
    model = Decoder(ModelConfig(vocab_size=vocab, d_model=d_model, n_layer=n_layer, n_head=n_head,
                                position_encoding="rope", max_positions=1024)).to(device).eval()
    logits_fn = decoder_logits_fn(model)
    counts = {"forwards": 0, "rows": 0}

    def counted(tokens, positions):
        counts["forwards"] += 1
        counts["rows"] += len(tokens)
        return logits_fn(tokens, positions)

    def run(selection: str):
        return influential_tokens(None, targets, dataclasses.replace(cfg, selection=selection), logits_fn=counted,
                                  device=device, progress=None)

    for selection in selections:  # untimed warm-up
        run(selection)
    result = {name: {"seconds": float("inf")} for name in selections}
    for _ in range(repeats):
        for selection in selections:  # interleaved: a slow spell of a shared machine hits every selection
            counts.update(forwards=0, rows=0)
            start = time.perf_counter()
            table = run(selection)  # its losses come back to the host: nothing left queued
            seconds = time.perf_counter() - start
            result[selection] = {**counts, "seconds": min(seconds, result[selection]["seconds"]),
                                 "chosen": table["chosen"].to_list()}
    return {"config": dict(n_targets=n_targets, context=cfg.context, local=cfg.local, k_max=cfg.k_max,
                           d_model=d_model, n_layer=n_layer, n_head=n_head, vocab=vocab, batch_size=batch_size),
            "device": describe_device(device), "threads": torch.get_num_threads(), "selections": result}


def format_selection_costs(result: dict) -> str:
    c, rows = result["config"], result["selections"]
    first = next(iter(rows))
    return "\n".join([
        f"Influential-token analysis by selection (torch {torch.__version__}, {result['device']}, "
        f"{result['threads']} threads): {c['n_targets']} targets, Lbar={c['context']}, L={c['local']}, "
        f"k_max={c['k_max']}, batch {c['batch_size']}; Decoder d_model={c['d_model']} n_layer={c['n_layer']} "
        f"n_head={c['n_head']} vocab={c['vocab']}",
        *(f"  {name}: {r['seconds']:.3f} s ({r['seconds'] / rows[first]['seconds']:.3f}x {first}), "
          f"{r['forwards']} forwards, {r['rows']} sequences; {c['n_targets'] / r['seconds']:.2f} targets/s, "
          f"{r['rows'] / r['seconds']:.0f} sequences/s, {r['rows'] / r['forwards']:.1f} sequences per forward"
          for name, r in rows.items()),
    ])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.bench_influence", description=__doc__.split("\n")[0])
    parser.add_argument("--targets", type=int, default=4, help="targets analysed (at least 2; default 4)")
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--n-layer", type=int, default=4)
    parser.add_argument("--n-head", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=None, help="torch threads")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    parser.add_argument("--selections", nargs="+", choices=list(SELECTIONS), default=None,
                        help="instead: time the batched analysis under each selection (the first is the baseline)")
    parser.add_argument("--vocab", type=int, default=4096, help="with --selections: the Decoder's vocabulary")
    parser.add_argument("--repeats", type=int, default=3, help="with --selections: timed rounds (the fastest counts)")
    args = parser.parse_args(argv)
    if args.targets < 2:
        parser.error("--targets must be at least 2 (a baseline takes another document's tokens)")
    if args.selections:
        print(format_selection_costs(selection_costs(args.selections, args.targets, args.d_model, args.n_layer,
                                                     args.n_head, args.batch_size, args.vocab, args.repeats,
                                                     args.threads, args.device)))
        return
    print(format_comparison(compare(args.targets, args.d_model, args.n_layer, args.n_head, args.batch_size,
                                    args.threads, args.device)))


if __name__ == "__main__":
    main()

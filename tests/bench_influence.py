"""The influential-token analysis batched against one candidate at a time: a benchmark, not a test.

Run from the repository root (the checkout: the installed package has no ``tests``)::

    python -m tests.bench_influence --targets N [--d-model D --n-layer 2 --threads T --batch-size B]

It times the batched analysis as ``lengthgen benchmark --influence N`` does (the same case, the same
defaults), then :func:`tests.influence_reference.reference_influential_tokens` on the same case,
and prints both times, their ratio and whether both chose the same far tokens.
"""

from __future__ import annotations

import argparse
import time

from pipeline_src.benchmarks.inference import format_influence_report, influence_benchmark, influence_case
from pipeline_src.device import resolve_device
from tests.influence_reference import reference_influential_tokens


def compare(n_targets: int = 4, d_model: int = 128, n_layer: int = 4, n_head: int = 4, batch_size: int = 64,
            threads: int | None = None, device: str = "auto") -> dict:
    """:func:`~pipeline_src.benchmarks.inference.influence_benchmark`'s result, plus ``reference_seconds``
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.bench_influence", description=__doc__.split("\n")[0])
    parser.add_argument("--targets", type=int, default=4, help="targets analysed (at least 2; default 4)")
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--n-layer", type=int, default=4)
    parser.add_argument("--n-head", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=None, help="torch threads")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    args = parser.parse_args(argv)
    if args.targets < 2:
        parser.error("--targets must be at least 2 (a baseline takes another document's tokens)")
    print(format_comparison(compare(args.targets, args.d_model, args.n_layer, args.n_head, args.batch_size,
                                    args.threads, args.device)))


if __name__ == "__main__":
    main()

"""Where a trained addition model fails: teacher-forced accuracy per response token, with the coupled
IDs shifted as the training offset shifts them.

    python tools/addition_positions.py results/train/addition/coupled/direct/seed0 \
        [--lengths 10 15 20] [--shifts 0 5 10 16] [--samples 200] [--seed 0] [--attention] [--pad-operands]

For each operand length n and shift s it prints the accuracy of each response token c_1 .. c_{n+1},
<eos> (every ID after <bos> plus s; s = 0 is the evaluation's r = 1) and the fraction of sums right
in full. Teacher forcing, so an error at one token does not spill into the next; the evaluation
job's greedy decoding and first_errors.parquet give the decoded view. With ``--attention`` it
prints instead, for the queries that predict c_1, the carry out and <eos> (at =, c_n and c_{n+1}; shift 0),
where each head of the first layer puts its attention: the six largest shares by the key's kind
(a, b, c digit, +, =, <bos>) and its ID minus the query's ID, averaged over the samples.
``--pad-operands`` writes the sums as a model trained with ``addition.data.pad_operands`` saw them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from pipeline_src.tasks import addition
from pipeline_src.training.checkpoints import load_model


def token_accuracy(model, n: int, shift: int, samples: int, seed: int, pad: bool) -> tuple[np.ndarray, float]:
    """(accuracy of each of the n + 2 response tokens, exact match) on ``samples`` fresh sums."""
    drawn = addition.sample(np.random.default_rng([seed, n]), np.full(samples, n), pad)
    tokens = torch.tensor(np.concatenate([drawn["prompt"], drawn["response"]], axis=1))
    positions = torch.tensor(np.concatenate([drawn["prompt_pos"], drawn["response_pos"]], axis=1))
    positions[:, 1:] += shift  # <bos> keeps ID 0, as in training
    prompt = int(drawn["prompt_len"][0])
    with torch.no_grad():
        predicted = model(tokens[:, :-1], positions[:, :-1]).token_logits.argmax(-1)
    right = predicted[:, prompt - 1:prompt + n + 1] == tokens[:, prompt:prompt + n + 2]
    return right.float().mean(0).numpy(), float(right.all(1).float().mean())


def attention_shares(model, n: int, samples: int, seed: int, pad: bool) -> list[str]:
    """One line per (query, head): the largest attention shares by key kind and ID distance."""
    drawn = addition.sample(np.random.default_rng([seed, n]), np.full(samples, n), pad)
    tokens = torch.tensor(np.concatenate([drawn["prompt"], drawn["response"]], axis=1))[:, :-1]
    positions = torch.tensor(np.concatenate([drawn["prompt_pos"], drawn["response_pos"]], axis=1))[:, :-1]
    prompt = int(drawn["prompt_len"][0])
    names = {addition.PLUS: "+", addition.EQUALS: "=", addition.BOS: "<bos>"}
    plus = int((tokens[0] == addition.PLUS).nonzero()[0])
    kinds = [names.get(int(t), "a" if j < plus else "b" if j < prompt else "c") for j, t in enumerate(tokens[0])]
    lines = []
    for label, query in (("= -> c_1", prompt - 1), ("c_n -> carry out", prompt + n - 1),
                         ("c_n+1 -> <eos>", prompt + n)):
        with torch.no_grad():
            shares = model(tokens, positions, attention_of=(torch.arange(samples), torch.full((samples,), query))
                           ).attention[0].mean(0)  # [heads, keys]
        for head, row in enumerate(shares):
            grouped: dict[str, float] = {}
            for key in range(query + 1):
                name = f"{kinds[key]}{int(positions[0, key]) - int(positions[0, query]):+d}"
                grouped[name] = grouped.get(name, 0.0) + float(row[key])
            top = sorted(grouped.items(), key=lambda kv: -kv[1])[:6]
            lines.append(f"n {n:3d}  {label}  head {head}: " + ", ".join(f"{k} {v:.2f}" for k, v in top))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("--lengths", type=int, nargs="+", default=[10, 15, 20])
    parser.add_argument("--shifts", type=int, nargs="+", default=[0, 5, 10])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--attention", action="store_true", help="where the first layer attends instead")
    parser.add_argument("--pad-operands", action="store_true", help="the format of addition.data.pad_operands")
    args = parser.parse_args()
    model, _ = load_model(args.model_dir)
    model.eval()
    if args.attention:
        for n in args.lengths:
            print("\n".join(attention_shares(model, n, args.samples, args.seed, args.pad_operands)))
        return
    for n in args.lengths:
        for shift in args.shifts:
            per_token, exact = token_accuracy(model, n, shift, args.samples, args.seed, args.pad_operands)
            print(f"n {n:3d}  shift {shift:3d}  exact {exact:.2f}  c_1..c_n+1, <eos>: "
                  + " ".join(f"{a:.2f}" for a in per_token))


if __name__ == "__main__":
    main()

"""Length-sweep evaluation of one trained model: accuracy with a 95% Wilson interval per cell.

For tasks whose response is a single token (sparse parity) the prediction is the argmax of the
next-token logits after the prompt. Every cell of the grid holds prompts of one length, so each
forward pass is unpadded. The model is always the last checkpoint of training.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

import polars as pl
import torch

from . import datasets
from .accuracy_schema import AccuracySchema
from .batches import SequenceTable
from .checkpoints import load_model
from .positions import eval_position_ids, get_scheme
from .provenance import build_record
from .stats import wilson_interval
from .tasks import get_task


@torch.inference_mode()
def next_token(model, tokens: torch.Tensor, positions: torch.Tensor, batch_size: int) -> torch.Tensor:
    """Greedy next token after each (unpadded, equal-length) row of ``tokens``."""
    out = [model(tokens[i:i + batch_size], positions[i:i + batch_size]).token_logits[:, -1].argmax(-1)
           for i in range(0, len(tokens), batch_size)]
    return torch.cat(out)


def evaluate(spec: dict, model_dir: Path, eval_data: Path, out_path: Path, *, rule: str = "evaluate",
             threads: int | None = None, progress: Callable[[str], None] | None = None) -> pl.DataFrame:
    say = progress or (lambda line: print(line, file=sys.stderr, flush=True))
    if threads:
        torch.set_num_threads(threads)
    model, description = load_model(model_dir)
    task, scheme = get_task(description["task"]), get_scheme(description["scheme"])
    frame = datasets.read(eval_data, task.schema)
    rows = []
    cells = frame.group_by("k", "length", maintain_order=True).agg(pl.len()).sort("k", "length")
    for i, (k, length, _) in enumerate(cells.iter_rows()):
        cell = frame.filter((pl.col("k") == k) & (pl.col("length") == length))
        table = SequenceTable.from_frame(cell)
        prompt_len = int(table.prompt_lengths[0])
        tokens = table.tokens[:, :prompt_len]
        positions = eval_position_ids(scheme, table.positions[:, :prompt_len])
        predicted = next_token(model, tokens, positions, spec["batch_size"])
        correct = int((predicted == table.tokens[:, prompt_len]).sum())
        rows.append((k, length, len(cell), correct))
        say(f"[{i + 1}/{len(cells)}] k={k} length={length}: {correct}/{len(cell)} correct")
    result = _accuracy_frame(rows, description)
    record = build_record(rule, "evaluate", spec, inputs={"model": Path(model_dir) / "model.safetensors",
                                                          "eval_data": eval_data},
                          seeds={"train_seed": description["seed"], "eval_seed": spec["seed"]})
    datasets.write(result, out_path, AccuracySchema, record)
    return result


def _accuracy_frame(rows: list[tuple], description: dict) -> pl.DataFrame:
    frame = pl.DataFrame(rows, schema={"k": pl.Int32, "length": pl.Int32, "n": pl.Int64, "correct": pl.Int64},
                         orient="row")
    low, high = wilson_interval(frame["correct"].to_numpy(), frame["n"].to_numpy())
    return frame.select(
        task=pl.lit(description["task"]), scheme=pl.lit(description["scheme"]),
        k_train=pl.lit(description["k_train"], dtype=pl.Int32), seed=pl.lit(description["seed"], dtype=pl.Int64),
        k="k", length="length", n="n", correct="correct",
        accuracy=pl.col("correct") / pl.col("n"), ci_low=pl.Series(low), ci_high=pl.Series(high))

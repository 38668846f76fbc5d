"""Length-sweep evaluation of one trained model: per-cell metrics with a 95% Wilson interval.

The model is always the last checkpoint of training. Each cell of the evaluation grid (the task's
``cell_columns``, e.g. (k, length) or length) is decoded greedily with a KV cache in chunks of
``batch_size`` samples. The prompts of a chunk have one length, so prompts are unpadded: a cell
whose prompts differ (variable assignment with multi-token names) is decoded in groups of equal
prompt length, and its counts are their sums. Responses may differ in length (variable
assignment: the chain depth varies), so a chunk decodes as many tokens as its longest response and
stops early once every row has emitted ``<eos>``. Teacher forcing runs first and only the rows it
gets wrong are decoded (:func:`score_cell`): greedy decoding of a row teacher forcing gets all right
would generate its response.

Position IDs follow the scheme: the prompt gets the base IDs (the task's coupled IDs for
coupled and ppc, 0..T-1 otherwise); each response token gets the task's oracle coupled ID
(coupled), the next sequential ID (every other scheme but ppc), or, under ppc, the ID the model's
position head predicts, fed back. A model with a learned absolute table or a position head cannot
represent an ID >= ``max_positions``: such an ID is an error naming the file, cell and row.

Metrics, counted over the n samples of a cell (``token_accuracy``: over its response tokens) and
compared over each sample's own response length R (a generation that stopped early counts its
missing tokens as wrong):

* ``exact_match``: the generated tokens 0..R-1 equal the whole response (``<eos>`` included);
* ``answer``: the generated token at R + ``task.answer_index`` equals the answer token;
* ``position_match`` (schemes that predict positions): the predicted IDs equal the oracle IDs;
* ``token_accuracy``: under teacher forcing (the true response fed, with the oracle IDs of the
  table), the fraction of response tokens whose greedy prediction is right, counted over the cell's
  response tokens (its ``n``). Next to ``exact_match`` it tells a few slips in long responses (high)
  from a collapse (near chance) apart.

Results are written in long format, one row per (cell, metric), keyed by the task's cell columns:
see :mod:`.accuracy_schema`. A model whose training diverged (see :mod:`pipeline_src.training.train`)
is not decoded: its table has every row of the grid with ``n`` samples and no ``correct``,
``accuracy`` or interval (null), so figures name the cell and leave it out of the means.

Decoding runs on the device of ``spec["device"]`` (see :mod:`pipeline_src.devices.placement`), in bf16
autocast on CUDA when ``spec["precision"]`` (the task's ``train.precision``) is ``bf16``; on the
CPU always in fp32. Scoring and the written table use CPU tensors; the resolved device is recorded
in the table's provenance.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np
import polars as pl
import torch

from .. import datasets
from ..devices.placement import describe_device, inference_autocast, resolve_device
from ..provenance.records import build_record
from ..schemes import get_scheme
from ..storage.atomic import check_writable
from ..tasks import get_task
from ..training.batches import SequenceTable
from ..training.checkpoints import load_model, read_description
from . import mechanism, mechanism_schema
from .accuracy_schema import accuracy_schema, run_columns, table_cell_columns
from .decoding import greedy_decode
from .metrics import METRICS, PER_TOKEN
from .stats import wilson_interval

MISSING = -1  # stands in for tokens and IDs a row did not generate


def evaluate(spec: dict, model_dir: Path, eval_data: Path, out_path: Path, *, rule: str = "evaluate",
             threads: int | None = None, progress: Callable[[str], None] | None = None,
             device: str | torch.device | None = None, mechanism_dir: Path | None = None) -> pl.DataFrame:
    """Score the model of ``model_dir`` on every cell of ``eval_data``; write and return the table.
    ``device`` overrides ``spec["device"]`` (``auto`` when absent). With ``mechanism_dir``, then
    analyse the model's mechanism there (:mod:`.mechanism`), in the same job: the model and the
    evaluation set are loaded once, and the analysis of a small model takes less time than starting
    a job of its own would."""
    say = progress or (lambda line: print(line, file=sys.stderr, flush=True))
    if threads:
        torch.set_num_threads(threads)
    device = resolve_device(spec.get("device") if device is None else device)
    outputs = [out_path, *(mechanism_schema.table_paths(mechanism_dir).values() if mechanism_dir is not None else [])]
    for path in outputs:  # a folder that cannot take a table is found before the evaluation runs
        check_writable(path)
    started = time.perf_counter()
    description = read_description(model_dir)
    diverged = description.get("diverged")
    model = None if diverged else load_model(model_dir, description)[0].to(device)
    task, scheme = get_task(description["task"]), get_scheme(description["scheme"])
    frame = datasets.read(eval_data, lambda: task.schema, checked_when_written=True).with_row_index("row")
    columns, table_columns = list(task.cell_columns), table_cell_columns(task.cell_columns)
    cells = sorted(frame.partition_by(columns, as_dict=True, maintain_order=True).items())
    results = []
    if diverged:
        say(f"{model_dir}: training diverged at step {diverged['step']} ({diverged['reason']}); "
            f"{len(cells)} cells recorded without accuracy")
    for i, (key, cell) in enumerate(cells):
        keys = dict(zip(columns, key, strict=False))
        sizes = {metric: int(cell["response"].list.len().sum()) if metric in PER_TOKEN else len(cell)
                 for metric in scored_metrics(scheme.predicts_positions)}
        if diverged:  # nothing to decode: every metric without a count
            counts = dict.fromkeys(sizes)
        else:
            name = ", ".join(f"{column}={value}" for column, value in keys.items())
            counts = dict.fromkeys(sizes, 0)
            for part in equal_prompts(cell):
                table = SequenceTable.from_frame(part, coupled=scheme.coupled)
                table.positions = scheme.eval_ids(table.positions)
                check_cell(model, table, part["row"], f"{eval_data}, cell {name}")
                scored = score_cell(model, table, spec["batch_size"], answer_index=task.answer_index,
                                    stop_token=task.vocab.id("<eos>"), predict_positions=scheme.predicts_positions,
                                    device=device, precision=spec.get("precision", "fp32"))
                counts = {metric: counts[metric] + scored[metric] for metric in counts}
            summary = ", ".join(f"{metric} {correct}/{sizes[metric]}" for metric, correct in counts.items())
            say(f"[{i + 1}/{len(cells)}] {name}: {summary}")
        key_values = tuple(keys.get(column) for column in table_columns)
        results += [(*key_values, metric, sizes[metric], correct) for metric, correct in counts.items()]
    result = _accuracy_frame(results, table_columns, description)
    record = build_record(rule, "evaluate", spec, inputs={"model": Path(model_dir) / "model.safetensors",
                                                          "eval_data": eval_data},
                          seeds={"train_seed": description["seed"], "eval_seed": spec["seed"]},
                          task=description["task"], scheme=description["scheme"])
    record["device"] = describe_device(device)
    datasets.write(result, out_path, accuracy_schema(task.cell_columns), record)
    if mechanism_dir is not None:
        scored = time.perf_counter()
        mechanism.analyse(spec, model, description, frame, record, mechanism_dir, device=device, say=say)
        say(f"mechanism analysis {time.perf_counter() - scored:.2f} s, evaluation {scored - started:.2f} s")
    return result


def equal_prompts(cell: pl.DataFrame) -> list[pl.DataFrame]:
    """The rows of a cell grouped by prompt length, shortest first, each in file order: a decoding
    batch needs prompts of one length, and a cell's prompts may differ (variable assignment with
    multi-token names: a statement whose right side is a digit is shorter than one naming a
    variable). A cell of one prompt length is one group, as it is."""
    lengths = cell["prompt"].list.len().alias("prompt_length")
    groups = cell.with_columns(lengths).partition_by("prompt_length", as_dict=True, maintain_order=True)
    return [groups[key].drop("prompt_length") for key in sorted(groups)]


def scored_metrics(predict_positions: bool) -> list[str]:
    """The metrics of a model: ``position_match`` only where the scheme predicts positions."""
    return [m for m in METRICS if m != "position_match" or predict_positions]


def score_cell(model, table: SequenceTable, batch_size: int, *, answer_index: int, stop_token: int | None,
               predict_positions: bool, device: str | torch.device = "cpu", precision: str = "fp32") -> dict[str, int]:
    """Greedy-decode every row of ``table`` (one cell, checked by :func:`check_cell`) and count the
    rows right under each metric (``token_accuracy``: the response tokens right under teacher
    forcing). Response IDs come from ``table`` unless ``predict_positions``. ``device``: where
    ``model`` is; decoding runs there (see :func:`_decode`), scoring on the CPU.

    Teacher forcing runs first, and only the rows it gets wrong are decoded: greedy decoding feeds
    back what it predicts, so while its predictions are right it is fed the true response (and, with
    a position head, the oracle IDs) and predicts what teacher forcing predicts. A row whose tokens
    (and predicted IDs) teacher forcing gets all right is therefore generated as its response."""
    prompt_len = int(table.prompt_lengths[0])
    metrics = scored_metrics(predict_positions)
    counts = dict.fromkeys(metrics, 0)
    for start in range(0, len(table), batch_size):
        part = slice(start, start + batch_size)
        lengths = table.lengths[part] - prompt_len
        width = int(lengths.max())
        response = table.tokens[part, prompt_len:prompt_len + width]
        oracle = table.positions[part, prompt_len:prompt_len + width]
        inside = torch.arange(width)[None, :] < lengths[:, None]
        predicted, predicted_ids = _teacher_forced(model, table.tokens[part, :prompt_len + width - 1],
                                                   table.positions[part, :prompt_len + width - 1], prompt_len,
                                                   torch.device(device), precision)
        right = _agree(predicted, response, inside)
        if predict_positions:
            right &= _agree(predicted_ids, oracle, inside)
        tokens, positions = response.masked_fill(~inside, MISSING), oracle.masked_fill(~inside, MISSING)
        wrong = (~right).nonzero().flatten()
        if len(wrong):
            rows = wrong + start
            decoded, decoded_ids = _decode(model, table.tokens[rows, :prompt_len], table.positions[rows, :prompt_len],
                                           width, None if predict_positions else oracle[wrong], stop_token,
                                           torch.device(device), precision)
            if stop_token is not None:  # a row's IDs after its stop token belong to no token of it
                stops = (decoded == stop_token).long()
                decoded_ids = decoded_ids.masked_fill(stops.cumsum(dim=1) - stops > 0, MISSING)
            tokens[wrong], positions[wrong] = decoded, decoded_ids
        answer = (lengths + answer_index)[:, None]
        hits = {"exact_match": _agree(tokens, response, inside),
                "answer": (tokens.gather(1, answer) == response.gather(1, answer)).squeeze(1)}
        if predict_positions:
            hits["position_match"] = _agree(positions, oracle, inside)
        hits["token_accuracy"] = ((predicted == response) & inside).sum()
        for metric in metrics:
            counts[metric] += int(hits[metric].sum())
    return counts


def _decode(model, prompt: torch.Tensor, prompt_positions: torch.Tensor, width: int,
            response_positions: torch.Tensor | None, stop_token: int | None, device: torch.device,
            precision: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Greedy decoding of one chunk on ``device`` (inputs moved there, bf16 autocast on CUDA when
    ``precision`` says so); the generated tokens and IDs come back to the CPU, padded to ``width``."""
    with inference_autocast(device, precision):
        out = greedy_decode(model, prompt.to(device), prompt_positions.to(device), width, stop_token=stop_token,
                            response_positions=None if response_positions is None else response_positions.to(device))
    return _pad(out.tokens.cpu(), width), _pad(out.positions.cpu(), width)


def _teacher_forced(model, tokens: torch.Tensor, positions: torch.Tensor, prompt_len: int, device: torch.device,
                    precision: str) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The greedy next-token prediction, and with a position head the next ID's, at every response
    position of right-padded sequences fed whole (causal attention: the padding after a row's end
    changes none of its predictions), back on the CPU [B, width]."""
    with torch.inference_mode(), inference_autocast(device, precision):
        out = model(tokens.to(device), positions.to(device))
    ids = None if out.position_logits is None else out.position_logits[:, prompt_len - 1:].float().argmax(-1).cpu()
    return out.token_logits[:, prompt_len - 1:].float().argmax(-1).cpu(), ids  # fp32 under bf16 autocast


def _agree(generated: torch.Tensor, reference: torch.Tensor, inside: torch.Tensor) -> torch.Tensor:
    """Per row: ``generated`` equals ``reference`` wherever ``inside`` (the row's response)."""
    return ((generated == reference) | ~inside).all(dim=1)


def _pad(matrix: torch.Tensor, width: int) -> torch.Tensor:
    """Right-pad a [B, N] generation (N <= width after an early stop) with MISSING."""
    return torch.nn.functional.pad(matrix, (0, width - matrix.shape[1]), value=MISSING)


def check_cell(model, table: SequenceTable, rows: pl.Series, where: str) -> None:
    """Raise ValueError unless the prompts of ``table`` (a cell, or one group of :func:`equal_prompts`)
    share one length and no ID is beyond the model's
    :attr:`~pipeline_src.config.model_config.ModelConfig.position_limit` (its learned table or position
    head; never clamped). ``rows``: each sample's row in the file."""
    prompt_lengths = table.prompt_lengths.unique().tolist()
    if len(prompt_lengths) != 1:
        raise ValueError(f"{where}: prompts of different lengths {prompt_lengths} in one cell")
    limit = model.cfg.position_limit
    if limit is None:
        return
    real = torch.arange(table.tokens.shape[1])[None, :] < table.lengths[:, None]
    beyond = (table.positions >= limit) & real
    if beyond.any():
        index, column = (int(i) for i in beyond.nonzero()[0])
        raise ValueError(f"{where}, row {rows[index]}: position ID {int(table.positions[index, column])} >= "
                         f"model max_positions={limit}; train with a larger max_positions")


def _accuracy_frame(rows: list[tuple], key_columns: tuple[str, ...], description: dict) -> pl.DataFrame:
    """The table of ``rows`` (the values of ``key_columns``, then metric, n, correct); ``correct`` None
    (a diverged model) leaves the accuracy and its interval null."""
    frame = pl.DataFrame(rows, schema={**dict.fromkeys(key_columns, pl.Int32), "metric": pl.String, "n": pl.Int64,
                                       "correct": pl.Int64}, orient="row")
    scored = frame["correct"].is_not_null().to_numpy()
    low, high = np.full(len(frame), np.nan), np.full(len(frame), np.nan)
    low[scored], high[scored] = wilson_interval(frame["correct"].to_numpy()[scored], frame["n"].to_numpy()[scored])
    return frame.select(
        *run_columns(description), *key_columns, "metric", "n", "correct",
        accuracy=pl.col("correct") / pl.col("n"),
        ci_low=pl.Series(low, nan_to_null=True), ci_high=pl.Series(high, nan_to_null=True))

"""Why a model generalizes in length, or stops: the paper's mechanism measured in one trained model.

The paper explains length generalization by sparse dependencies: each response token depends on a
few input tokens (its *dependency set*, declared by the task: :mod:`pipeline_src.tasks.dependency`),
and a model generalizes when its attention finds them whatever the context length. Run by each
model's evaluation job (:func:`.evaluate.evaluate`) on the first ``mechanism_samples`` rows of every
evaluation cell, fed teacher-forced (the true response, with the IDs the evaluation feeds: the
scheme's, the oracle coupled IDs for coupled and ppc), this module records:

* ``attention.parquet``, per (cell, layer, head): over every response token with a non-empty
  dependency set, the mean attention mass that the query predicting it puts on the set
  (``dependency_mass``), the mass uniform attention over the keys that query sees would put there
  (``uniform_mass``: set size / keys), the mean entropy of that query's attention (nats), and the
  mean and spread over those queries of the *margin*: the log-odds of the mass on the set against
  the log-odds of the uniform mass, logit(mass) - logit(uniform), each clamped to
  [:data:`CLAMP`, 1 - :data:`CLAMP`]. A softmax head whose logits on the set beat the other keys' by
  a margin that does not grow with length keeps that margin at every length, so the margin measured
  at the training lengths forecasts the mass beyond them (:mod:`.forecast`);
* ``flips.parquet``, per cell: a causal check that does not trust attention. Each sample's
  :class:`~pipeline_src.tasks.dependency.Probe` watches one response token and changes one prompt
  token the task calls relevant to it (a bit, a digit, a value), then one it calls irrelevant; the
  rates are how often the model's prediction of the watched token changes (an exact predictor: 1
  and 0);
* ``first_errors.parquet``, per sample: the first response token the model gets wrong (null when
  it gets all right). Greedy decoding feeds the true tokens until its first mistake, so the first
  token it gets wrong is the first one teacher forcing predicts wrong; for ppc a wrongly predicted
  position ID counts as an error too (decoding feeds it back). The table also keeps the first wrong
  token and the first wrong position ID apart, each under teacher forcing (the earlier of the two is
  the first error), so that it tells whether a ppc model's token or its ID fails first, and the
  sample's ``depth`` where the task's frames have one (variable assignment: the hops its query
  chain needs), so that accuracy can be read against hops as well as length.

A model whose training diverged has nothing to analyse, nor has a task that declares no dependency
sets: their tables have no rows, and the job's log says why.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable

import numpy as np
import polars as pl
import torch

from .. import datasets
from ..devices.placement import inference_autocast
from ..schemes import get_scheme
from ..tasks import get_task
from ..tasks.dependency import Dependencies
from ..training.batches import SequenceTable
from .accuracy_schema import run_columns, table_cell_columns
from .mechanism_schema import COLUMNS, TABLES, mechanism_schema, table_paths


def analyse(spec: dict, model, description: dict, frame: pl.DataFrame, record: dict, out_dir: Path, *,
            device: torch.device, say: Callable[[str], None]) -> dict[str, pl.DataFrame]:
    """Write the three tables of ``model`` (None: its training diverged) on the evaluation set
    ``frame`` (with its ``row`` index) into ``out_dir`` (:func:`table_paths`); returns them by
    name. ``description``: the model's ``model.json``; ``record``: the provenance of the tables,
    the evaluation's own (the same job, spec and inputs); ``spec``: the evaluation's
    (``mechanism_samples`` per cell, ``seed`` for the probes' random choices, ``batch_size``,
    ``precision``)."""
    task, scheme = get_task(description["task"]), get_scheme(description["scheme"])
    keys = table_cell_columns(task.cell_columns)
    rows = {name: [] for name in TABLES}
    if task.dependencies is None:
        say(f"task {task.name} declares no dependency sets: no mechanism analysis, empty tables written")
    elif model is None:
        say("training diverged: no mechanism to analyse, empty tables written")
    else:
        columns = list(task.cell_columns)
        cells = sorted(frame.partition_by(columns, as_dict=True, maintain_order=True).items())
        for key, cell in cells:
            rng = np.random.default_rng([spec["seed"], *key])
            found = analyse_cell(model, cell.head(spec["mechanism_samples"]), task.dependencies, scheme,
                                 batch_size=spec["batch_size"], rng=rng, device=device,
                                 precision=spec.get("precision", "fp32"))
            values = tuple(dict(zip(columns, key, strict=False)).get(column) for column in keys)
            for name, table_rows in found.items():
                rows[name] += [(*values, *row) for row in table_rows]
    tables = {}
    for name, path in table_paths(out_dir).items():
        tables[name] = _table(name, rows[name], keys, description)
        datasets.write(tables[name], path, mechanism_schema(name, task.cell_columns), record)
    flips = tables["flips"]
    if len(flips):
        say(f"mechanism: flip rate relevant {flips['relevant_flips'].sum()}/{flips['samples'].sum()}, irrelevant "
            f"{flips['irrelevant_flips'].sum()}/{flips['irrelevant_samples'].sum()} over {len(flips)} cells")
    return tables


def analyse_cell(model, cell: pl.DataFrame, dependencies: Dependencies, scheme, *, batch_size: int,
                 rng: np.random.Generator, device: torch.device, precision: str) -> dict[str, list[tuple]]:
    """The rows of the three tables for the samples of ``cell`` (a frame of one evaluation cell, with
    its ``row`` index), without the cell's keys: ``attention`` (layer, head, queries, dependency_mass,
    uniform_mass, entropy, margin, margin_sd), ``flips`` (samples, relevant_flips, irrelevant_samples,
    irrelevant_flips), ``first_errors`` (row, response_length, first_error, first_token_error,
    first_position_error, depth)."""
    samples = [(np.asarray(p), np.asarray(r))
               for p, r in zip(cell["prompt"].to_list(), cell["response"].to_list(), strict=False)]
    sets = [dependencies.sets(prompt, response) for prompt, response in samples]
    probes = [dependencies.probe(prompt, response, rng) for prompt, response in samples]
    table = SequenceTable.from_frame(cell, coupled=scheme.coupled)
    table.positions = scheme.eval_ids(table.positions)
    n_layer, n_head = model.cfg.n_layer, model.cfg.n_head
    sums = torch.zeros(len(SUMS), n_layer, n_head, dtype=torch.float64)  # SUMS, per (layer, head)
    queries = 0
    flips = [0, 0, 0, 0]
    first_errors = []
    for start in range(0, len(samples), batch_size):
        part = slice(start, start + batch_size)
        tokens, positions = table.tokens[part], table.positions[part]
        prompt_lengths, lengths = table.prompt_lengths[part], table.lengths[part]
        rows, asked, depends = dependency_masks(sets[part], prompt_lengths, tokens.shape[1])
        out = _forward(model, tokens, positions, device, precision, attention_of=(rows, asked))
        batch_sums, count = attention_sums(out["attention"], asked, depends)
        sums, queries = sums + batch_sums, queries + count
        flips = [a + b for a, b in zip(flips, flip_counts(model, tokens, positions, probes[part], prompt_lengths,
                                                          out["tokens"], device, precision), strict=False)]
        first_errors += _first_errors(out, tokens, positions, prompt_lengths, lengths, scheme.predicts_positions)
    rows = [(layer, head, queries, *attention_means(sums[:, layer, head], queries))
            for layer in range(n_layer) for head in range(n_head)]
    depths = cell["depth"].to_list() if "depth" in cell.columns else [None] * len(cell)
    first = [(int(row), length, min((e for e in (token, position) if e is not None), default=None), token, position,
              depth) for row, (length, token, position), depth in zip(cell["row"], first_errors, depths, strict=False)]
    return {"attention": rows, "flips": [tuple(flips)], "first_errors": first}


def _forward(model, tokens: torch.Tensor, positions: torch.Tensor, device: torch.device, precision: str,
             attention_of: tuple[torch.Tensor, torch.Tensor] | None = None) -> dict:
    """One teacher-forced forward of right-padded rows: the greedy token (and, with a position head,
    position ID) predicted at every position, and with ``attention_of`` (rows, queries) each layer's
    attention probabilities of those queries [Q, H, T], all on the CPU."""
    if attention_of is not None:
        attention_of = tuple(index.to(device) for index in attention_of)
    with torch.inference_mode(), inference_autocast(device, precision):
        out = model(tokens.to(device), positions.to(device), attention_of=attention_of)
    found = {"tokens": out.token_logits.float().argmax(-1).cpu()}  # fp32 under bf16 autocast
    if out.position_logits is not None:
        found["positions"] = out.position_logits.float().argmax(-1).cpu()
    if attention_of is not None:
        found["attention"] = out.attention  # float32, on the CPU
    return found


def dependency_masks(sets: list[list[np.ndarray]], prompt_lengths: torch.Tensor, width: int
                     ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The queries that predict a response token with a non-empty dependency set, as ``rows`` [Q]
    and ``queries`` [Q] (the query predicting response token j of row b sits at its prompt length
    + j - 1), and ``depends`` [Q, width]: 1 at the keys of the token's dependency set."""
    sizes = [np.array([len(members) for members in token_sets], dtype=np.int64) for token_sets in sets]
    rows = np.concatenate([np.full(int((size > 0).sum()), b) for b, size in enumerate(sizes)])
    queries = np.concatenate([int(prompt_lengths[b]) - 1 + np.flatnonzero(size) for b, size in enumerate(sizes)])
    members = [np.asarray(keys, dtype=np.int64) for token_sets in sets for keys in token_sets if len(keys)]
    depends = torch.zeros(len(rows), width)
    if members:
        which = np.repeat(np.arange(len(members)), [len(keys) for keys in members])
        depends[torch.from_numpy(which), torch.from_numpy(np.concatenate(members))] = 1.0
    return torch.from_numpy(rows.astype(np.int64)), torch.from_numpy(queries.astype(np.int64)), depends


CLAMP = 1e-6  # masses are clamped to [CLAMP, 1 - CLAMP] before their log-odds (float32 attention reaches 1.0)
SUMS = ("mass", "uniform", "entropy", "margin", "margin_squared")  # what attention_sums adds up over queries


def attention_sums(attention: list[torch.Tensor], queries: torch.Tensor, depends: torch.Tensor
                   ) -> tuple[torch.Tensor, int]:
    """Sums over the queries of :func:`dependency_masks`, [len(SUMS), L, H] (float64, in the order of
    :data:`SUMS`): attention mass on the dependency set, the mass uniform attention over the query's
    keys would give it, the attention entropy, the margin logit(mass) - logit(uniform) and its square;
    and the number of queries. ``attention``: per layer, the probabilities of those queries [Q, H, T].
    Query t sees keys 0..t (causal), so uniform attention puts |set| / (t + 1) on the set."""
    uniform = depends.sum(-1).double() / (queries + 1).double()  # [Q]
    uniform_odds = torch.logit(uniform, eps=CLAMP)[:, None]  # [Q, 1]: the same for every layer
    sums = []
    for asked in attention:  # [Q, H, T]
        mass = (asked * depends[:, None]).sum(-1).double()  # [Q, H]
        margin = torch.logit(mass, eps=CLAMP) - uniform_odds
        sums.append(torch.stack([mass.sum(0), uniform.sum().expand(asked.shape[1]),
                                 torch.special.entr(asked).sum(-1).double().sum(0),
                                 margin.sum(0), margin.square().sum(0)]))
    return torch.stack(sums, dim=1), len(queries)


def attention_means(sums: torch.Tensor, queries: int) -> tuple[float | None, ...]:
    """The attention table's means of one (layer, head) from its :data:`SUMS` over ``queries``:
    dependency_mass, uniform_mass, entropy, margin and margin_sd (the margins' standard deviation over
    the queries); all None without a query."""
    if not queries:
        return (None,) * 5
    mass, uniform, entropy, margin, squared = (float(total) / queries for total in sums)
    return mass, uniform, entropy, margin, math.sqrt(max(squared - margin * margin, 0.0))


def flip_counts(model, tokens: torch.Tensor, positions: torch.Tensor, probes: list, prompt_lengths: torch.Tensor,
                predicted: torch.Tensor, device: torch.device, precision: str) -> tuple[int, int, int, int]:
    """(samples, relevant flips, samples with an irrelevant change, irrelevant flips): each probe's
    changes applied to a copy of its row, fed teacher-forced in one batch, and the watched token's
    prediction compared with ``predicted`` (the unchanged rows' greedy tokens [B, T])."""
    rows, changed, watched = [], [], []
    for b, probe in enumerate(probes):
        for kind, change in (("relevant", probe.relevant), ("irrelevant", probe.irrelevant)):
            if change is not None:
                row = tokens[b].clone()
                row[change.index] = change.token
                rows.append(b)
                changed.append((kind, row))
                watched.append(int(prompt_lengths[b]) + probe.token - 1)
    counts = {"relevant": [0, 0], "irrelevant": [0, 0]}
    if rows:
        index = torch.as_tensor(rows)
        out = _forward(model, torch.stack([row for _, row in changed]), positions[index], device, precision)
        query = torch.as_tensor(watched)
        flipped = out["tokens"][torch.arange(len(rows)), query] != predicted[index, query]
        for (kind, _), flip in zip(changed, flipped.tolist(), strict=False):
            counts[kind][0] += 1
            counts[kind][1] += int(flip)
    return (*counts["relevant"], *counts["irrelevant"])


def _first_errors(out: dict, tokens: torch.Tensor, positions: torch.Tensor, prompt_lengths: torch.Tensor,
                  lengths: torch.Tensor, predicts_positions: bool) -> list[tuple[int, int | None, int | None]]:
    """Per row: (response length, index of the first response token predicted wrong, index of the
    first position ID predicted wrong); None where there is none, or no position head."""
    found = []
    for b in range(len(tokens)):
        start, end = int(prompt_lengths[b]), int(lengths[b])
        wrong_token = out["tokens"][b, start - 1:end - 1] != tokens[b, start:end]
        wrong_position = (out["positions"][b, start - 1:end - 1] != positions[b, start:end] if predicts_positions
                          else torch.zeros_like(wrong_token))
        found.append((end - start, *(int(wrong.nonzero()[0]) if wrong.any() else None
                                     for wrong in (wrong_token, wrong_position))))
    return found


def _table(name: str, rows: list[tuple], keys: tuple[str, ...], description: dict) -> pl.DataFrame:
    """A table of ``rows`` (cell keys, then the table's own columns), led by the run's columns."""
    own = COLUMNS[name]
    frame = pl.DataFrame(rows, schema={**dict.fromkeys(keys, pl.Int32), **own}, orient="row")
    derived = []
    if name == "flips":
        derived = [_share("relevant_flips", "samples").alias("relevant_flip_rate"),
                   _share("irrelevant_flips", "irrelevant_samples").alias("irrelevant_flip_rate")]
    return frame.select(*run_columns(description), *keys, *own, *derived)


def _share(part: str, whole: str) -> pl.Expr:
    """``part`` / ``whole``, null where ``whole`` is 0."""
    return pl.when(pl.col(whole) > 0).then(pl.col(part) / pl.col(whole))

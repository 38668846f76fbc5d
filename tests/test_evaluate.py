"""Evaluation: Wilson intervals; per-cell metrics against an independent per-sample decoding for
every kind of response position source (sequential, oracle coupled, predicted) and against a
decoder that knows the answers; errors that name the cell and the row."""

from __future__ import annotations

import polars as pl
import pytest
import torch

from pipeline_src import datasets
from pipeline_src.evaluation import evaluate as evaluate_module
from pipeline_src.evaluation.accuracy_schema import AccuracySchema
from pipeline_src.evaluation.decoding import PAD, Decoded, greedy_decode
from pipeline_src.evaluation.evaluate import check_cell, evaluate
from pipeline_src.evaluation.stats import wilson_interval
from pipeline_src.schemes import get_scheme
from pipeline_src.tasks import get_task
from pipeline_src.training.batches import SequenceTable
from pipeline_src.training.checkpoints import load_model
from pipeline_src.training.train import train
from tests.conftest import tiny_train_spec
from tests.helpers import DATASETS, generate, quiet, train_task_model, write_data


def as_dict(result: pl.DataFrame, keys=("length", "metric")) -> dict:
    return {tuple(row[k] for k in keys): (row["correct"], row["n"]) for row in result.iter_rows(named=True)}


def test_wilson_interval_known_values():
    # Reference values of the Wilson score interval (z = 1.96): 8/10 -> (0.4902, 0.9433).
    low, high = wilson_interval([8, 0, 10], [10, 10, 10])
    assert low[0] == pytest.approx(0.4902, abs=1e-4) and high[0] == pytest.approx(0.9433, abs=1e-4)
    assert low[1] == 0.0 and high[1] == pytest.approx(0.2775, abs=1e-4)
    assert high[2] == pytest.approx(1.0) and low[2] == pytest.approx(0.7225, abs=1e-4)
    with pytest.raises(ValueError):
        wilson_interval([3], [0])


def test_sparse_parity_counts_match_a_direct_forward(tmp_path, train_data, eval_data):
    train(tiny_train_spec(), train_data, tmp_path / "m", **quiet)
    out = tmp_path / "acc.parquet"
    result = evaluate({"batch_size": 4, "seed": 2}, tmp_path / "m", eval_data, out, **quiet)
    stored = datasets.read(out, AccuracySchema)
    assert stored.equals(result)
    cells = [(1, 20), (1, 60), (2, 20), (2, 60)]
    assert sorted(zip(stored["k"], stored["length"], stored["metric"], strict=False)) == \
        [(*cell, metric) for cell in cells for metric in ("answer", "exact_match", "token_accuracy")]
    model, _ = load_model(tmp_path / "m")
    frame = pl.read_parquet(eval_data)
    for row in stored.iter_rows(named=True):
        cell = frame.filter((pl.col("k") == row["k"]) & (pl.col("length") == row["length"]))
        correct = 0
        for prompt, pos, response in cell.select("prompt", "prompt_pos", "response").iter_rows():
            with torch.no_grad():
                logits = model(torch.tensor([prompt]), torch.tensor([pos])).token_logits
            correct += int(logits[0, -1].argmax()) == response[0]
        # a one-token response: the answer, the whole response and its only token are the same
        assert row["correct"] == correct and row["n"] == len(cell)
        assert row["ci_low"] <= row["accuracy"] <= row["ci_high"]
    assert set(stored["scheme"]) == {"rope_pose"} and set(stored["variant"]) == {"k2"}
    assert set(stored["k_train"]) == {2}


def reference_counts(model, name: str, scheme_name: str, frame: pl.DataFrame) -> dict:
    """Per-sample greedy decoding without a KV cache, one sample at a time, and a teacher-forced
    forward of each whole sample: {(length, metric): correct}."""
    task, scheme = get_task(name), get_scheme(scheme_name)
    eos = task.vocab.id("<eos>")
    counts = {}
    for row in frame.iter_rows(named=True):
        prompt, response = torch.tensor([row["prompt"]]), row["response"]
        P, R = len(row["prompt"]), len(response)
        sequential = torch.arange(P + R)[None, :]
        prompt_pos = torch.tensor([row["prompt_pos"]]) if scheme.coupled else sequential[:, :P]
        oracle = torch.tensor([row["response_pos"]]) if scheme.coupled else sequential[:, P:]
        out = greedy_decode(model, prompt, prompt_pos, R, stop_token=eos, use_cache=False,
                            response_positions=None if scheme.predicts_positions else oracle)
        tokens, positions = out.tokens[0].tolist(), out.positions[0].tolist()
        right = {"exact_match": tokens == response,
                 "answer": len(tokens) > R + task.answer_index
                 and tokens[R + task.answer_index] == response[task.answer_index]}
        if scheme.predicts_positions:
            right["position_match"] = positions == row["response_pos"]
        with torch.no_grad():
            logits = model(torch.tensor([row["prompt"] + response[:-1]]),
                           torch.cat([prompt_pos, oracle], dim=1)[:, :-1]).token_logits
        right["token_accuracy"] = sum(int(logits[0, P - 1 + i].argmax()) == token for i, token in enumerate(response))
        for metric, ok in right.items():
            counts[row["length"], metric] = counts.get((row["length"], metric), 0) + int(ok)
    return counts


@pytest.mark.parametrize("label,scheme", [("parity_scratchpad", "coupled"), ("parity_scratchpad", "ppc"),
                                          ("parity_scratchpad", "rope"), ("variable_assignment", "ppc"),
                                          ("variable_assignment:2", "ppc"), ("variable_assignment:2", "abs_shift")])
def test_metrics_match_per_sample_decoding(tmp_path, models, eval_sets, label, scheme):
    name, model_dir, eval_data = DATASETS[label][0], models(label, scheme), eval_sets[label]
    lines = []
    result = evaluate({"batch_size": 3, "seed": 5}, model_dir, eval_data, tmp_path / "acc.parquet",
                      progress=lines.append)
    frame = pl.read_parquet(eval_data)
    model, _ = load_model(model_dir)
    counts = as_dict(result)
    assert {key: correct for key, (correct, _) in counts.items()} == reference_counts(model, name, scheme, frame)
    tokens = dict(frame.group_by("length").agg(pl.col("response").list.len().sum()).iter_rows())
    assert all(n == (tokens[length] if metric == "token_accuracy" else 12)
               for (length, metric), (_, n) in counts.items())
    assert 0 < sum(correct for (_, metric), (correct, _) in counts.items() if metric == "token_accuracy")
    metrics = {"exact_match", "answer", "token_accuracy"} | ({"position_match"} if scheme == "ppc" else set())
    assert set(result["metric"]) == metrics and len(result) == 2 * len(metrics)
    assert result["k"].null_count() == len(result) and result["k_train"].null_count() == len(result)
    assert set(result["variant"]) == {"scratchpad"} and set(result["task"]) == {name}
    assert len(lines) == 2 and f"length={max(frame['length'])}:" in lines[1]
    if name == "variable_assignment":  # responses of several lengths share a cell, and so do prompts
        assert frame.group_by("length").agg(pl.col("response").list.len().n_unique())["response"].min() > 1
        prompt_lengths = frame.group_by("length").agg(pl.col("prompt").list.len().n_unique())["prompt"].max()
        assert prompt_lengths > 1 if label.endswith(":2") else prompt_lengths == 1


def oracle_decode(frame: pl.DataFrame, corrupt):
    """A stand-in for greedy_decode that knows every answer: it returns each prompt's true response
    and its oracle position IDs, then applies ``corrupt(tokens, positions, lengths)``."""
    truth = {tuple(r["prompt"]): (r["response"], r["response_pos"]) for r in frame.iter_rows(named=True)}

    def decode(model, prompt, prompt_positions, max_new_tokens, *, response_positions=None, stop_token=None):
        found = [truth[tuple(p)] for p in prompt.tolist()]
        tokens = torch.zeros(len(found), max_new_tokens, dtype=torch.long)
        positions = torch.zeros_like(tokens)
        for i, (response, ids) in enumerate(found):
            tokens[i, :len(response)], positions[i, :len(ids)] = torch.tensor(response), torch.tensor(ids)
        lengths = torch.tensor([len(response) for response, _ in found])
        return Decoded(*corrupt(tokens, positions, lengths))

    return decode


def _flip_first(tokens, positions, lengths):
    tokens[:, 0] = -5
    return tokens, positions


def _shift_last_id_and_cut(tokens, positions, lengths):
    positions[torch.arange(len(lengths)), lengths - 1] += 1
    return tokens[:, :-1], positions[:, :-1]


def _stop_before_the_answer(tokens, positions, lengths):
    rows = torch.arange(len(lengths))
    tokens[rows, lengths - 2] = get_task("variable_assignment").vocab.id("<eos>")
    tokens[rows, lengths - 1] = PAD
    return tokens, positions


@pytest.mark.parametrize("corrupt,expected", [
    # the exact answers: every metric is right
    (lambda t, p, lengths: (t, p), lambda R, width: {"exact_match": 1, "answer": 1, "position_match": 1}),
    # a wrong first token: only rows whose answer is not their first token keep the answer
    (_flip_first, lambda R, width: {"exact_match": 0, "answer": int(R > 2), "position_match": 1}),
    # the last column missing (an early stop) and the <eos> ID off by one: the longest rows lose <eos>
    (_shift_last_id_and_cut, lambda R, width: {"exact_match": int(R < width), "answer": 1, "position_match": 0}),
    # <eos> in place of the answer: the ID after it belongs to no generated token
    (_stop_before_the_answer, lambda R, width: {"exact_match": 0, "answer": 0, "position_match": 0}),
])
@pytest.mark.parametrize("label", ["variable_assignment", "variable_assignment:2"])
def test_counts_of_a_decoder_that_knows_the_answers(tmp_path, models, eval_sets, monkeypatch, corrupt, expected, label):
    frame = pl.read_parquet(eval_sets[label])
    monkeypatch.setattr(evaluate_module, "greedy_decode", oracle_decode(frame, corrupt))
    monkeypatch.setattr(evaluate_module, "_teacher_forced", teacher_forcing(frame, wrong=lambda row: True))
    result = evaluate({"batch_size": 100, "seed": 5}, models(label, "ppc"), eval_sets[label],
                      tmp_path / "acc.parquet", **quiet)
    want = {}  # a decoding batch holds the rows of one cell with one prompt length
    for (length, _), batch in frame.group_by("length", pl.col("prompt").list.len()):
        R = batch["response"].list.len().to_numpy()
        for r in R:
            for metric, ok in expected(r, R.max()).items():
                want[length, metric] = want.get((length, metric), 0) + ok
    assert {key: correct for key, (correct, _) in as_dict(result).items() if key[1] != "token_accuracy"} == want


def teacher_forcing(frame: pl.DataFrame, wrong):
    """A stand-in for teacher forcing that predicts every response right (tokens and IDs) except in
    the rows where ``wrong(prompt)`` holds, whose first token it gets wrong."""
    truth = {tuple(r["prompt"]): (r["response"], r["response_pos"]) for r in frame.iter_rows(named=True)}

    def predict(model, tokens, positions, prompt_len, device, precision):
        width = tokens.shape[1] - prompt_len + 1
        predicted, ids = (torch.zeros(len(tokens), width, dtype=torch.long),
                          torch.zeros(len(tokens), width, dtype=torch.long))
        for i, prompt in enumerate(tokens[:, :prompt_len].tolist()):
            response, response_ids = truth[tuple(prompt)]
            predicted[i, :len(response)], ids[i, :len(response)] = torch.tensor(response), torch.tensor(response_ids)
            if wrong(prompt):
                predicted[i, 0] = -5
        return predicted, ids

    return predict


@pytest.mark.parametrize("label", ["variable_assignment", "variable_assignment:2"])
def test_only_the_rows_teacher_forcing_gets_wrong_are_decoded(tmp_path, models, eval_sets, monkeypatch, label):
    """Greedy decoding predicts what teacher forcing does until its first mistake, so a row teacher
    forcing gets all right is generated as its response and is not decoded; the rows it gets wrong
    are decoded, and what decoding gives counts."""
    frame = pl.read_parquet(eval_sets[label])
    wrong = lambda prompt: sum(prompt) % 3 == 0  # noqa: E731  (a third of the rows, or so)
    decoded = []

    def decode(model, prompt, *args, **kwargs):
        decoded.extend(tuple(p) for p in prompt.tolist())
        return oracle_decode(frame, _flip_first)(model, prompt, *args, **kwargs)

    monkeypatch.setattr(evaluate_module, "greedy_decode", decode)
    monkeypatch.setattr(evaluate_module, "_teacher_forced", teacher_forcing(frame, wrong))
    result = evaluate({"batch_size": 5, "seed": 5}, models(label, "ppc"), eval_sets[label], tmp_path / "acc.parquet",
                      **quiet)
    prompts = [tuple(p) for p in frame["prompt"].to_list()]
    assert sorted(decoded) == sorted(p for p in prompts if wrong(list(p))) and 0 < len(decoded) < len(prompts)
    counts = as_dict(result)
    for length, cell in frame.group_by("length"):
        right = sum(not wrong(p) for p in cell["prompt"].to_list())  # the decoded rows: first token wrong
        assert counts[length[0], "exact_match"][0] == right and counts[length[0], "position_match"][0] == len(cell)
        assert counts[length[0], "token_accuracy"][0] == cell["response"].list.len().sum() - (len(cell) - right)


def test_position_id_beyond_the_table_names_the_row(tmp_path):
    model_dir = train_task_model(tmp_path / "m", tmp_path, "parity_scratchpad", "coupled", steps=2,
                                 max_positions=24)
    eval_data = write_data(tmp_path / "long.parquet", "parity_scratchpad", "eval",
                           {"lengths": [5, 30], "scratchpad": True, "n_per_cell": 3}, 5)
    # length 30: b_23 has ID 24; the first sample of that cell is row 3 of the file
    with pytest.raises(ValueError, match=r"long\.parquet, cell length=30, row 3: position ID 24 >= .*24"):
        evaluate({"batch_size": 4, "seed": 5}, model_dir, eval_data, tmp_path / "acc.parquet", **quiet)
    assert not (tmp_path / "acc.parquet").exists()


def test_prompts_of_different_lengths_in_one_cell_raise(models):
    mixed = generate("parity_scratchpad", "eval", {"lengths": [3, 4], "scratchpad": True, "n_per_cell": 2}, 5)
    model, _ = load_model(models("parity_scratchpad", "coupled"))
    table = SequenceTable.from_frame(mixed)
    with pytest.raises(ValueError, match=r"e\.parquet, cell length=3: prompts of different lengths \[5, 6\]"):
        check_cell(model, table, pl.Series([0, 1, 2, 3]), "e.parquet, cell length=3")
    check_cell(model, SequenceTable.from_frame(mixed.head(2)), pl.Series([0, 1]), "e.parquet, cell length=3")


def test_cli_names_a_truncated_model_file_without_a_traceback(tmp_path, train_data, eval_data):
    from click.testing import CliRunner

    from pipeline_src.cli import main

    train(tiny_train_spec(), train_data, tmp_path / "m", **quiet)
    weights = tmp_path / "m" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    command = ["evaluate", "--spec", '{"batch_size": 4, "seed": 2}', "--model-dir", str(tmp_path / "m"),
               "--eval-data", str(eval_data), "--out", str(tmp_path / "acc.parquet")]
    done = CliRunner().invoke(main, command)
    assert done.exit_code == 1 and f"{weights}: changed since it was written" in done.output
    (tmp_path / "m" / "model.safetensors.prov.json").unlink()  # nothing to check it against: safetensors fails
    again = CliRunner().invoke(main, command)
    assert again.exit_code == 1 and f"{tmp_path / 'm'}: cannot load the model" in again.output
    assert "Traceback" not in done.output + again.output and not (tmp_path / "acc.parquet").exists()

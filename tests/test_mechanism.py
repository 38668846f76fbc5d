"""The mechanism analysis (pipeline_src/evaluation/mechanism.py) on models whose mechanism is known:
attention built to sit on the dependency sets, uniform attention, an exact parity oracle, and a
model that ignores its input."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
import torch
from torch import nn

from pipeline_src.evaluation.mechanism import analyse_cell, attention_sums, dependency_masks
from pipeline_src.model import ModelOutput
from pipeline_src.schemes import get_scheme
from pipeline_src.tasks import get_task, parity_scratchpad, sparse_parity
from tests.helpers import DATASETS  # the tiny trained models: the fixtures models and eval_sets (conftest.py)

N_LAYER, N_HEAD = 2, 3


class Config:
    n_layer, n_head = N_LAYER, N_HEAD


class Stub(nn.Module):
    """A stand-in for the decoder: ``predict(tokens)`` gives the token each position predicts
    [B, T], ``attend(tokens)`` the attention of every query [B, T, T] (every layer and head alike)."""

    def __init__(self, vocab_size: int, predict, attend):
        super().__init__()
        self.cfg, self.vocab_size, self.predict, self.attend = Config(), vocab_size, predict, attend
        self.anchor = nn.Parameter(torch.zeros(1))  # a parameter, so the model has a device

    def forward(self, tokens, positions, attention_of=None):
        logits = nn.functional.one_hot(self.predict(tokens), self.vocab_size).float()
        attention = None
        if attention_of is not None:
            rows, queries = attention_of
            probs = self.attend(tokens)[rows, queries][:, None].expand(-1, N_HEAD, -1)  # [Q, H, T]
            attention = [probs] * N_LAYER
        return ModelOutput(token_logits=logits, position_logits=None, attention=attention)


def uniform(tokens):
    """Causal uniform attention: query t spreads its mass over keys 0..t."""
    T = tokens.shape[1]
    causal = torch.ones(T, T).tril()
    return (causal / causal.sum(-1, keepdim=True)).expand(len(tokens), -1, -1)


def parity_oracle(tokens):
    """Sparse parity solved exactly: at every position, the XOR of the marked bits seen so far (the
    answer at '=')."""
    marked = torch.zeros_like(tokens, dtype=torch.bool)
    marked[:, 2:] = tokens[:, 1:-1] == sparse_parity.MARK
    ones = ((tokens == sparse_parity.ONE) & marked).long().cumsum(1) % 2
    return torch.where(ones == 1, sparse_parity.ONE, sparse_parity.ZERO)


def on_marked_bits(tokens):
    """Every query puts all its mass, evenly, on the marked bits before it (uniform where there are
    none yet)."""
    marked = torch.zeros(tokens.shape, dtype=torch.float)
    marked[:, 2:] = (tokens[:, 1:-1] == sparse_parity.MARK).float()
    T = tokens.shape[1]
    keys = marked[:, None, :] * torch.ones(T, T).tril()
    seen = keys.sum(-1, keepdim=True)
    return torch.where(seen > 0, keys / seen.clamp_min(1), uniform(tokens))


def cell(task_name: str, **params):
    task = get_task(task_name)
    frame = task.generate_eval(params, seed=3).with_row_index("row")
    return task, frame


def run(model, task, frame, scheme="rope"):
    return analyse_cell(model, frame, task.dependencies, get_scheme(scheme), batch_size=16,
                        rng=np.random.default_rng(0), device=torch.device("cpu"), precision="fp32")


@pytest.fixture(scope="module")
def parity():
    return cell("sparse_parity", k_test=[3], lengths=[20], n_per_cell=40)


def test_attention_on_the_dependency_set_reports_mass_one(parity):
    task, frame = parity
    found = run(Stub(len(task.vocab), parity_oracle, on_marked_bits), task, frame)
    masses = [row[3] for row in found["attention"]]
    assert len(masses) == N_LAYER * N_HEAD and all(row[2] == 40 for row in found["attention"])
    assert masses == pytest.approx([1.0] * len(masses))
    # the clamped log-odds of mass 1 against 3 of 22 keys: the largest margin the table can hold there
    largest = np.log((1 - 1e-6) / 1e-6) - np.log(3 / 19)
    assert [row[6] for row in found["attention"]] == pytest.approx([largest] * len(masses))


def test_uniform_attention_reports_the_uniform_mass(parity):
    task, frame = parity
    found = run(Stub(len(task.vocab), parity_oracle, uniform), task, frame)
    # the answer is predicted at '=' (index 2l+1), which sees 2l+2 keys, 3 of them marked bits
    for _layer, _head, _queries, mass, uniform_mass, entropy, margin, margin_sd in found["attention"]:
        assert mass == pytest.approx(3 / 22) and uniform_mass == pytest.approx(3 / 22)
        assert entropy == pytest.approx(np.log(22))
        assert margin == pytest.approx(0.0, abs=1e-5) and margin_sd == pytest.approx(0.0, abs=1e-5)  # no odds gained


def test_an_exact_oracle_flips_on_every_relevant_change_and_on_no_irrelevant_one(parity):
    task, frame = parity
    samples, relevant, irrelevant_samples, irrelevant = run(Stub(len(task.vocab), parity_oracle, uniform),
                                                            task, frame)["flips"][0]
    assert samples == irrelevant_samples == 40
    assert relevant == 40 and irrelevant == 0


def test_a_model_blind_to_its_input_flips_on_nothing_and_errs_at_its_first_token(parity):
    task, frame = parity
    constant = Stub(len(task.vocab), lambda tokens: torch.full_like(tokens, sparse_parity.ONE), uniform)
    found = run(constant, task, frame)
    assert found["flips"][0][1] == 0 and found["flips"][0][3] == 0
    wrong = [row for row, answer in zip(found["first_errors"], frame["answer"], strict=False) if answer == 0]
    assert wrong and all(error == token == 0 and position is None and depth is None
                      for _, length, error, token, position, depth in wrong)
    right = [row for row, answer in zip(found["first_errors"], frame["answer"], strict=False) if answer == 1]
    assert right and all(error is None for _, length, error, *_ in right)


def test_first_errors_of_a_scratchpad_oracle_that_slips_after_three_tokens():
    """A running-parity oracle that answers 0 from the fourth scratchpad token on: its first error is
    the first scratchpad token >= 3 whose parity is 1 (None when there is none)."""
    task, frame = cell("parity_scratchpad", lengths=[12], n_per_cell=30, scratchpad=True)
    prompt_length = 12 + 2

    def predict(tokens):
        bits = (tokens[:, 1:prompt_length - 1] == parity_scratchpad.ONE).long()
        running = torch.where(bits.cumsum(1) % 2 == 1, parity_scratchpad.ONE, parity_scratchpad.ZERO)
        out = torch.full_like(tokens, parity_scratchpad.EOS)
        out[:, prompt_length - 1:prompt_length - 1 + 12] = running
        out[:, prompt_length - 1 + 3:prompt_length - 1 + 12] = parity_scratchpad.ZERO
        return out

    found = run(Stub(len(task.vocab), predict, uniform), task, frame)
    for (_row, length, error, *_), response in zip(found["first_errors"], frame["response"], strict=False):
        ones = [j for j in range(3, 12) if response[j] == parity_scratchpad.ONE]
        assert length == 13 and error == (ones[0] if ones else None)


def test_dependency_masks_mark_the_query_before_each_response_token():
    sets = [[np.array([1, 3]), np.array([], dtype=np.int64)], [np.array([2])]]
    rows, queries, depends = dependency_masks(sets, torch.tensor([5, 4]), 7)
    assert rows.tolist() == [0, 1] and queries.tolist() == [4, 3]
    assert depends[0].nonzero().flatten().tolist() == [1, 3] and depends[1].nonzero().flatten().tolist() == [2]


def test_attention_sums_average_only_over_asking_queries():
    probs = torch.tensor([[[0.5, 0.25, 0.25]]])  # [Q, H, T]: the one query, at position 2
    depends = torch.tensor([[1.0, 0.0, 0.0]], dtype=torch.float64)
    sums, count = attention_sums([probs], torch.tensor([2]), depends)
    mass, uniform_mass, entropy, margin, squared = sums[:, 0, 0].tolist()
    assert count == 1 and mass == pytest.approx(0.5) and uniform_mass == pytest.approx(1 / 3)
    assert entropy == pytest.approx(-(0.5 * np.log(0.5) + 2 * 0.25 * np.log(0.25)))
    assert margin == pytest.approx(np.log(2)) and squared == pytest.approx(np.log(2) ** 2)  # odds 1 against 1/2


def test_every_synthetic_task_declares_its_dependencies():
    from pipeline_src.tasks import TASKS

    assert all(task.dependencies is not None for task in TASKS.values())



@pytest.mark.parametrize("label,scheme", [("parity_scratchpad", "coupled"), ("parity_scratchpad", "ppc"),
                                          ("variable_assignment:2", "ppc"), ("variable_assignment", "rope")])
def test_first_errors_are_where_greedy_decoding_first_goes_wrong(tmp_path, models, eval_sets, label, scheme):
    """On tiny trained models (some samples right, some wrong): the first error found under teacher
    forcing is the first token (or, for ppc, position ID) that greedy decoding, one sample at a time
    without a cache, gets wrong; and the evaluation job writes every table, keyed by its cells."""
    from pipeline_src.evaluation.decoding import greedy_decode
    from pipeline_src.evaluation.evaluate import evaluate
    from pipeline_src.evaluation.mechanism_schema import read
    from pipeline_src.training.checkpoints import load_model

    name, model_dir, eval_data = DATASETS[label][0], models(label, scheme), eval_sets[label]
    spec = {"batch_size": 5, "seed": 5, "mechanism_samples": 8}
    evaluate(spec, model_dir, eval_data, tmp_path / "acc.parquet", mechanism_dir=tmp_path / "m",
             progress=lambda _: None)
    cells = get_task(name).cell_columns
    errors = read(tmp_path / "m" / "first_errors.parquet", "first_errors", cells)
    attention, flips = (read(tmp_path / "m" / f"{table}.parquet", table, cells) for table in ("attention", "flips"))
    frame = pl.read_parquet(eval_data).with_row_index("row")
    assert len(errors) == 8 * frame["length"].n_unique() and set(flips["length"]) == set(frame["length"])
    assert len(attention) == 2 * len(flips) * 1  # tiny models: 1 layer, 2 heads
    model, _ = load_model(model_dir)
    wrong = 0
    for row, first_error, first_position_error, depth in errors.select(
            "row", "first_error", "first_position_error", "depth").iter_rows():
        sample = frame.row(row, named=True)
        assert depth == sample.get("depth")  # variable assignment's hops; null for parity
        response, P = sample["response"], len(sample["prompt"])
        sequential = torch.arange(P + len(response))[None, :]
        coupled = get_scheme(scheme).coupled
        prompt_pos = torch.tensor([sample["prompt_pos"]]) if coupled else sequential[:, :P]
        oracle = torch.tensor([sample["response_pos"]]) if coupled else sequential[:, P:]
        ppc = get_scheme(scheme).predicts_positions
        out = greedy_decode(model, torch.tensor([sample["prompt"]]), prompt_pos, len(response), use_cache=False,
                            response_positions=None if ppc else oracle)
        tokens, positions = out.tokens[0].tolist(), out.positions[0].tolist()
        slips = [j for j in range(len(response))
                 if tokens[j] != response[j] or (ppc and positions[j] != sample["response_pos"][j])]
        assert first_error == (slips[0] if slips else None), (row, tokens, response)
        if ppc and slips and first_position_error == first_error:  # the ID went wrong at the first slip
            assert positions[first_error] != sample["response_pos"][first_error]
        if not ppc:
            assert first_position_error is None
        wrong += first_error is not None
    assert wrong > 0 and (name != "parity_scratchpad" or wrong < len(errors))  # parity: some right too
    if name == "variable_assignment":  # by depth: every analysed sample once, its errors sorted by kind
        from pipeline_src.evaluation.mechanism_summary import depth_summary

        by_depth = depth_summary([tmp_path / "m"])
        assert by_depth["samples"].sum() == len(errors)
        exact = (by_depth["exact"] * by_depth["samples"]).sum()
        assert exact == pytest.approx(len(errors) - wrong, abs=0.01 * len(by_depth) * 8)
        kinds = by_depth.select(pl.sum_horizontal("id first", "token first", "both")).to_series().drop_nulls()
        assert ((kinds - 1).abs() < 0.02).all()  # every wrong sample of exactly one kind
        if scheme != "ppc":
            assert (by_depth["id first"].drop_nulls() == 0).all()


def test_mechanism_table_summarises_seeds_and_names_a_folder_without_tables(tmp_path, models, eval_sets):
    """``lengthgen mechanism-table``'s summary: one row per run and length, the mean of two seeds'
    best-head mass with their range; a folder without tables is a one-line error naming it."""
    from click.testing import CliRunner

    from pipeline_src.cli import main
    from pipeline_src.evaluation.evaluate import evaluate
    from pipeline_src.evaluation.mechanism_summary import mechanism_summary

    model_dir, eval_data = models("parity_scratchpad", "coupled"), eval_sets["parity_scratchpad"]
    spec = {"batch_size": 6, "seed": 5, "mechanism_samples": 4}
    folders = []
    for seed in (0, 1):  # the same model twice, recorded as two seeds
        copy = tmp_path / f"seed{seed}"
        copy.mkdir()
        for name in ("model.safetensors", "model.json"):
            (copy / name).write_bytes((model_dir / name).read_bytes())
        description = json.loads((copy / "model.json").read_text())
        (copy / "model.json").write_text(json.dumps({**description, "seed": seed}))
        evaluate(spec, copy, eval_data, copy / "acc.parquet", mechanism_dir=copy / "m", progress=lambda _: None)
        folders.append(copy / "m")
    summary = mechanism_summary(folders)
    assert summary["length"].to_list() == [2, 6] and set(summary["seeds"]) == {2}
    one = mechanism_summary(folders[:1])
    mass = one["layer 0"][0]
    assert summary["layer 0"][0] == f"{round(mass, 2)} ({round(mass, 2)}-{round(mass, 2)})"
    done = CliRunner().invoke(main, ["mechanism-table", str(tmp_path)])
    assert done.exit_code == 1 and f"{tmp_path}: no attention.parquet" in done.output


def test_exact_match_against_depth_pools_lengths_and_shades_the_trained_depths():
    """The mechanism figure's depth panel: per run and depth, the share of samples with no first
    error, each seed over every length, then the mean and extremes over seeds; the shaded depths are
    those the training lengths show."""
    from pipeline_src.figures.mechanism_figure import by_depth

    rows = [  # seed, length, depth, first_error
        (0, 4, 2, None), (0, 4, 3, None), (0, 9, 3, 1), (0, 9, 5, 2),
        (1, 4, 2, None), (1, 4, 3, 0), (1, 9, 3, None), (1, 9, 5, None),
    ]
    frame = pl.DataFrame([("scratchpad", "ppc", seed, length, depth, error) for seed, length, depth, error in rows],
                         schema={"variant": pl.String, "scheme": pl.String, "seed": pl.Int64, "length": pl.Int32,
                                 "depth": pl.Int64, "first_error": pl.Int64}, orient="row")
    summary, shown = by_depth(frame, train_max=6)
    assert shown == (2, 3)
    by = {row["length"]: row for row in summary.iter_rows(named=True)}  # the depth, in the column drawn
    assert by[2]["mean"] == 1.0 and by[5]["mean"] == 0.5 and (by[5]["low"], by[5]["high"]) == (0.0, 1.0)
    assert by[3]["mean"] == pytest.approx((0.5 + 0.5) / 2)
    assert by_depth(frame.with_columns(depth=pl.lit(None, pl.Int64)), train_max=6) is None

"""Tests for the influential-token analysis (pipeline_src.language: influence, targets, logits): target
draw, losses at original positions, greedy, top-k and greedy-by-KL selection (batched == one at a
time), the null baselines, the key-token flag and the schema. The selection by KL's own tests:
tests/test_influence_kl.py."""

import math

import numpy as np
import polars as pl
import pytest
import torch

from pipeline_src.config.influence_config import InfluenceConfig, InfluenceError
from pipeline_src.datasets import DataError, validate
from pipeline_src.language import influence as inf
from pipeline_src.language.influence_table import influence_schema
from pipeline_src.language.logits import hf_logits_fn, last_token_losses
from pipeline_src.language.targets import select_targets
from tests.helpers import INFLUENCE_VOCAB as VOCAB
from tests.helpers import (
    SMALL,
    influence_frame,
    key_token_targets,
    one_thread_per_module,
    random_model,
    small_targets,
    token_stream,
)
from tests.influence_reference import reference_influential_tokens

one_thread = pytest.fixture(autouse=True, scope="module")(one_thread_per_module)


# ---------------------------------------------------------------- configuration

@pytest.mark.parametrize("change, field", [
    (dict(local=16), "local"),  # L >= Lbar
    (dict(k_max=9), "k_max"),  # more than Lbar - L = 8 far tokens
    (dict(selection="random"), "selection"),
    (dict(n_targets=0), "n_targets"),
    (dict(batch_size=1.5), "batch_size"),
])
def test_bad_config_names_field(change, field):
    with pytest.raises(InfluenceError, match=f"InfluenceConfig.{field}"):
        InfluenceConfig(**{**SMALL, **change})


def test_config_round_trip_and_unknown_key():
    cfg = InfluenceConfig(**SMALL, selection="topk")
    assert InfluenceConfig.from_dict(cfg.to_dict()) == cfg and cfg.far == 8
    with pytest.raises(InfluenceError, match="lbar"):
        InfluenceConfig.from_dict({"lbar": 16})


# ---------------------------------------------------------------- target selection

def test_target_selection_is_a_pure_seeded_rule():
    cfg = InfluenceConfig(**SMALL)
    stream = token_stream([40, 10, 25, 60], ["heldout", "heldout", "train", "heldout"])
    targets = select_targets(stream, cfg)
    assert targets.equals(select_targets(stream.reverse(), cfg))  # row order does not matter
    assert not targets.equals(select_targets(stream, InfluenceConfig(**{**SMALL, "seed": 2})))
    assert targets.height == 5 and set(targets["doc"]) <= {0, 3}  # held-out docs with > 16 tokens
    assert targets.select(["doc", "t"]).is_unique().all()
    tokens = stream["tokens"].to_list()
    for doc, t, target, context in targets.iter_rows():
        assert t >= 16 and context == tokens[doc][t - 16:t] and target == tokens[doc][t]


def test_target_selection_errors():
    cfg = InfluenceConfig(**SMALL)
    with pytest.raises(InfluenceError, match=r"Lbar\+1 = 17 tokens.*longest: 16"):
        select_targets(token_stream([16, 5]), cfg)
    with pytest.raises(InfluenceError, match="no 'heldout' documents"):
        select_targets(token_stream([40], ["train"]), cfg)
    with pytest.raises(InfluenceError, match="only 3 targets"):
        select_targets(token_stream([19]), cfg)
    with pytest.raises(InfluenceError, match=r"InfluenceConfig.n_targets=5: only 2 targets are left after leave_out"):
        select_targets(token_stream([23]), InfluenceConfig(**SMALL, leave_out={"seed": 0, "n_targets": 5}))  # 7 - 5
    with pytest.raises(InfluenceError, match=r"InfluenceConfig.leave_out=.*hold only 7 targets"):
        select_targets(token_stream([23]), InfluenceConfig(**SMALL, leave_out={"seed": 0, "n_targets": 8}))
    with pytest.raises(InfluenceError, match=r"InfluenceConfig.leave_out=.*'n_targets' is a required property"):
        InfluenceConfig(**SMALL, leave_out={"seed": 0})


def test_a_draw_that_leaves_out_a_pilots_targets_draws_fresh_ones():
    stream = token_stream([60, 10, 45, 80], ["heldout", "heldout", "train", "heldout"])  # 44 + 64 candidates
    pilot = select_targets(stream, InfluenceConfig(**{**SMALL, "n_targets": 40, "seed": 0}))
    fresh_cfg = InfluenceConfig(**{**SMALL, "n_targets": 60, "seed": 0}, leave_out={"seed": 0, "n_targets": 40})
    fresh = select_targets(stream, fresh_cfg)
    both = fresh.select(["doc", "t"]).join(pilot.select(["doc", "t"]), on=["doc", "t"])
    assert fresh.height == 60 and both.height == 0  # the same seed, yet no target of the pilot again
    assert fresh.equals(select_targets(stream.reverse(), fresh_cfg))  # still a pure function of the documents
    # Without leave_out the draw is the one of before the field: sorted picks of rng(seed).choice(total, n).
    flat = np.sort(np.random.default_rng(0).choice(108, size=40, replace=False))
    assert pilot["t"].to_list() == [int(i) + 16 if i < 44 else int(i) - 44 + 16 for i in flat]


# ---------------------------------------------------------------- losses keep original position IDs

def test_dropped_tokens_keep_their_position_ids():
    cfg = InfluenceConfig(**SMALL)
    model = random_model("abs")  # absolute positions: a shift changes the output
    targets = small_targets(cfg)
    out = inf.influential_tokens(model, targets, cfg, progress=None)
    context = np.array(targets["context"][0].to_list())
    target = torch.tensor([targets["target"][0]])

    def direct(keep, ids):
        logits = model(torch.tensor(context[keep])[None], torch.tensor(ids)[None]).token_logits[0, -1]
        return torch.nn.functional.cross_entropy(logits[None].double(), target).item()

    local = list(range(8, 16))
    with torch.no_grad():
        assert out["short_loss"][0] == pytest.approx(direct(local, local), abs=1e-5)
        assert abs(out["short_loss"][0] - direct(local, list(range(8)))) > 1e-3  # renumbered: differs
        assert out["long_loss"][0] == pytest.approx(direct(list(range(16)), list(range(16))), abs=1e-5)
        j = out["chosen"][0][0]
        assert out["sparse_loss"][0][0] == pytest.approx(direct([j] + local, [j] + local), abs=1e-5)


# ---------------------------------------------------------------- batched == one at a time

@pytest.mark.parametrize("selection", ["greedy", "topk", "greedy_kl"])
# 2: groups of 2 targets (the last of 1); 7: one group, a step's rows (targets x candidates) split across
# forwards mid-target; 64: one group, one forward per step
@pytest.mark.parametrize("batch_size", [2, 7, 64])
def test_batched_equals_reference(selection, batch_size):
    cfg = InfluenceConfig(**SMALL, selection=selection, batch_size=batch_size)
    model, targets = random_model("rope"), small_targets(cfg)
    fast = inf.influential_tokens(model, targets, cfg, progress=None)
    slow = reference_influential_tokens(model, targets, cfg)
    assert fast.select(["doc", "t", "target", "chosen", "key_token"]).equals(
        slow.select(["doc", "t", "target", "chosen", "key_token"]))
    for column in ("long_loss", "short_loss"):
        np.testing.assert_allclose(fast[column].to_numpy(), slow[column].to_numpy(), rtol=0, atol=1e-5)
    for column in ("sparse_loss", "random_loss", "other_loss"):
        np.testing.assert_allclose(np.array(fast[column].to_list()), np.array(slow[column].to_list()),
                                   rtol=0, atol=1e-5)
    assert fast.select(["other_doc", "other_t"]).equals(slow.select(["other_doc", "other_t"]))
    assert len(set(fast["long_loss"].to_list())) == targets.height  # a model whose losses do differ
    validate(fast, influence_schema(cfg), "batched")


# ---------------------------------------------------------------- an oracle model

class OneTokenOracle:
    """A "model" whose prediction of ``target`` is sure exactly when position ``key`` is present;
    uniform over the vocabulary otherwise."""

    def __init__(self, key: int, target: int):
        self.key, self.target = key, target

    def sees_key(self, tokens, position_ids):
        return (position_ids == self.key).any(dim=1)

    def __call__(self, tokens, position_ids):
        logits = torch.zeros(*tokens.shape, VOCAB)
        logits[:, -1, self.target] = 20.0 * self.sees_key(tokens, position_ids)
        return logits


@pytest.mark.parametrize("selection", ["greedy", "topk", "greedy_kl"])
def test_greedy_finds_the_one_influential_token(selection):
    cfg = InfluenceConfig(**SMALL, selection=selection)
    targets = small_targets(cfg).with_columns(target=pl.lit(7, dtype=pl.Int32))
    out = inf.influential_tokens(OneTokenOracle(key=5, target=7), targets, cfg, progress=None)
    # Then every other far token is useless: ties go to the smallest positions.
    assert out["chosen"].to_list() == [[5, 0, 1]] * targets.height
    assert out["short_loss"].to_list() == pytest.approx([math.log(VOCAB)] * targets.height)
    sure = math.log1p((VOCAB - 1) * math.exp(-20.0))
    assert out["long_loss"].to_list() == pytest.approx([sure] * targets.height)
    assert np.allclose(np.array(out["sparse_loss"].to_list()), sure)
    assert out["key_token"].all()  # gain log(32) = 3.47 > 2 and L_long < 2


class TokenOracle(OneTokenOracle):
    """A "model" sure of ``target`` exactly when token ``key`` is among the tokens it sees, wherever."""

    def sees_key(self, tokens, position_ids):
        return (tokens == self.key).any(dim=1)


def test_null_baselines_random_draws_and_another_documents_far_tokens():
    """Target A's far context holds the key token (at far position 3), B's does not. Selection
    over A's own far tokens recovers everything; over B's (A's donor), nothing; B, given A's far
    tokens, finds the key there. The random baseline recovers it in exactly the draws that hold
    position 3 among their first k."""
    cfg = InfluenceConfig(**{**SMALL, "n_targets": 2, "null_draws": 5})
    targets = key_token_targets()
    out = inf.influential_tokens(TokenOracle(key=31, target=7), targets, cfg, progress=None)
    sure, unsure = math.log1p((VOCAB - 1) * math.exp(-20.0)), math.log(VOCAB)
    assert out["other_doc"].to_list() == [9, 4] and out["other_t"].to_list() == [30, 20]
    def matrix(column):
        return np.array(out[column].to_list())

    np.testing.assert_allclose(matrix("sparse_loss"), [[sure] * 3, [unsure] * 3], atol=1e-9)
    np.testing.assert_allclose(matrix("other_loss"), [[unsure] * 3, [sure] * 3], atol=1e-9)
    draws = inf.random_draws(2, cfg)
    expected = [[np.mean([sure if 3 in draw[:k] else unsure for draw in draws[0]]) for k in (1, 2, 3)],
                [unsure] * 3]
    np.testing.assert_allclose(matrix("random_loss"), expected, atol=1e-9)
    assert sure < expected[0][2] < unsure  # some draws hold position 3, some do not
    assert sorted(draws[0, 0].tolist()) == list(range(cfg.far))  # each draw is a permutation
    assert np.array_equal(draws, inf.random_draws(2, cfg)) and not np.array_equal(draws[0], draws[1])
    with pytest.raises(InfluenceError, match="at least 2 documents"):
        inf.influential_tokens(TokenOracle(31, 7), targets.with_columns(doc=pl.lit(4, dtype=pl.Int64)), cfg,
                               progress=None)


def test_progress_reports_and_errors():
    cfg = InfluenceConfig(**SMALL, batch_size=1)  # a group holds batch_size targets: one target per group
    targets = small_targets(cfg)
    seen = []
    inf.influential_tokens(OneTokenOracle(0, 1), targets, cfg, progress=lambda d, n, detail: seen.append((d, n)),
                           report_every=2)
    assert seen == [(2, 5), (4, 5), (5, 5)]
    slow = []  # a slow model: a report after every forward and every group that ends the given seconds after the last
    inf.influential_tokens(OneTokenOracle(0, 1), targets, cfg, progress=lambda *report: slow.append(report),
                           report_every=100, report_seconds=0.0)
    assert [done for done, _, detail in slow if not detail] == [1, 2, 3, 4, 5]
    within = [report for report in slow if report[2]]  # within a group: the sequences it has scored so far
    assert within[:3] == [(0, 5, "targets 1 to 1: 1 sequences scored"), (0, 5, "targets 1 to 1: 2 sequences scored"),
                          (0, 5, "targets 1 to 1: 3 sequences scored")]
    assert within[-1][:2] == (4, 5) and within[-1][2].startswith("targets 5 to 5: ")
    with pytest.raises(InfluenceError, match="contexts have \\[16\\] tokens.*context is 20"):
        inf.influential_tokens(OneTokenOracle(0, 1), targets, InfluenceConfig(**{**SMALL, "context": 20}))
    with pytest.raises(InfluenceError, match="logits of shape"):
        inf.influential_tokens(lambda t, p: torch.zeros(t.shape[0], VOCAB), targets, cfg, progress=None)


def test_default_progress_prints_to_stderr(capsys):
    cfg = InfluenceConfig(**SMALL)
    inf.influential_tokens(OneTokenOracle(0, 1), small_targets(cfg), cfg)
    assert "influential tokens: 5/5 targets" in capsys.readouterr().err


def test_hf_adapter_passes_keywords():
    calls = []

    class FakeHF:
        def __call__(self, input_ids, position_ids, attention_mask=None):
            calls.append(position_ids.tolist())
            return type("Out", (), {"logits": torch.zeros(*input_ids.shape, VOCAB)})()

    cfg = InfluenceConfig(**SMALL)  # 5 targets from 2 documents (the baseline needs 2)
    out = inf.influential_tokens(None, small_targets(cfg), cfg, logits_fn=hf_logits_fn(FakeHF()), progress=None)
    assert out.height == 5 and any(list(range(16)) in call for call in calls)  # the long context, IDs 0..15


def test_hf_adapter_asks_for_the_last_positions_logits_only_where_the_model_can():
    """A model that takes ``logits_to_keep`` gets 1 (its output layer runs on the last position only)
    and the same losses as computing every position's logits."""
    full = torch.randn(2, 6, VOCAB)
    asked = []

    class KeepsLast:
        def __call__(self, input_ids, position_ids, logits_to_keep=0):
            asked.append(logits_to_keep)
            return type("Out", (), {"logits": full[:, -logits_to_keep:] if logits_to_keep else full})()

    tokens = np.zeros((2, 6), dtype=np.int64)
    positions = np.tile(np.arange(6), (2, 1))
    targets = np.array([1, 2])
    kept = last_token_losses(hf_logits_fn(KeepsLast()), tokens, positions, targets, 2, "cpu")
    every = last_token_losses(lambda t, p: full, tokens, positions, targets, 2, "cpu")
    assert asked == [1] and np.array_equal(kept, every)


# ---------------------------------------------------------------- schema

@pytest.mark.parametrize("column, value, check", [
    ("chosen", [5, 5, 7], "chosen_are_distinct_far_positions"),
    ("chosen", [5, 0, 8], "chosen_are_distinct_far_positions"),  # far positions are 0..7
    ("chosen", [5, 0], "k_max_losses_and_picks"),
    ("sparse_loss", [2.0, float("nan"), 0.7], "losses_are_finite"),
    ("sparse_loss", [2.0, 1.0, 0.7, 0.6], "k_max_losses_and_picks"),
    ("key_token", False, "key_token_follows_losses"),
    ("t", 15, "target_has_full_context"),
    ("random_loss", [2.0, float("inf"), 0.7], "losses_are_finite"),
    ("other_loss", [2.0, 1.0], "k_max_losses_and_picks"),
    ("other_doc", 0, "other_target_is_from_another_document"),
])
def test_schema_rejects_bad_frames(column, value, check):
    schema = influence_schema(InfluenceConfig(**SMALL))
    frame = influence_frame()
    validate(frame, schema, "ok.parquet")
    bad = frame.with_columns(pl.Series(column, [value, frame[column][1]], dtype=frame[column].dtype))
    with pytest.raises(DataError, match=check):
        validate(bad, schema, "bad.parquet")
    with pytest.raises(DataError, match="not unique"):  # (doc, t) is a key
        validate(pl.concat([frame, frame.head(1)]), schema, "bad.parquet")
    with pytest.raises(DataError, match="extra"):
        validate(frame.with_columns(extra=pl.lit(1)), schema, "bad.parquet")
    with pytest.raises(DataError):
        validate(frame.with_columns(pl.col("t").cast(pl.Int64)), schema, "bad.parquet")

"""Tests for the influential-token analysis' selection by divergence (``selection="greedy_kl"``,
issue 57 item 1): far tokens chosen by KL(p_long || p_local+J) at the last position, never by the
loss of the target x_t, for the target's own far tokens and for another document's (the null).
Batched == one at a time, for every selection: tests/test_influence.py."""

import math

import numpy as np
import polars as pl
import pytest
import torch
import torch.nn.functional as F

from pipeline_src.config.influence_config import InfluenceConfig, InfluenceError
from pipeline_src.language import influence as inf
from pipeline_src.language.logits import last_token_divergences, last_token_log_probs
from pipeline_src.language.targets import target_contexts
from tests.helpers import INFLUENCE_VOCAB as VOCAB
from tests.helpers import SMALL, key_token_targets, one_thread_per_module, random_model, small_targets

KEY, LUCKY = 5, 2  # far positions (SMALL: 8 far positions, 0..7)
A, B = 7, 11  # token IDs: the one KEY makes likely, the one LUCKY nudges


one_thread = pytest.fixture(autouse=True, scope="module")(one_thread_per_module)


class KeyAndLuckyToken:
    """A "model" whose next-token distribution is set by whether far position KEY is kept (it puts
    logit +6 on token A), apart from a small nudge, +1 on token B, when position LUCKY is kept. With
    x_t = B, LUCKY lowers the loss of x_t and KEY raises it: the loss picks LUCKY, by luck."""

    def __call__(self, tokens, position_ids):
        logits = torch.zeros(*tokens.shape, VOCAB)
        logits[:, -1, A] = 6.0 * (position_ids == KEY).any(dim=1)
        logits[:, -1, B] = 1.0 * (position_ids == LUCKY).any(dim=1)
        return logits


def analyse(model, target: int, selection: str, cfg_changes: dict | None = None) -> pl.DataFrame:
    cfg = InfluenceConfig(**{**SMALL, **(cfg_changes or {})}, selection=selection)
    targets = small_targets(cfg).with_columns(target=pl.lit(target, dtype=pl.Int32))
    return inf.influential_tokens(model, targets, cfg, progress=None)


def test_kl_picks_the_token_the_distribution_depends_on_where_the_loss_picks_the_lucky_one():
    by_loss = analyse(KeyAndLuckyToken(), B, "greedy")
    by_kl = analyse(KeyAndLuckyToken(), B, "greedy_kl")
    assert by_loss["chosen"].to_list() == [[LUCKY, 0, 1]] * 5  # the winner's curse: KEY raises x_t's loss
    assert by_kl["chosen"].to_list() == [[KEY, LUCKY, 0]] * 5  # then ties: the smallest position
    # The reported losses are x_t's on the chosen sets, as for every selection: KEY alone costs x_t.
    short, lucky_only = math.log(VOCAB), math.log(VOCAB - 1 + math.e) - 1.0
    key_only, both = math.log(VOCAB - 1 + math.exp(6.0)), math.log(VOCAB - 2 + math.exp(6.0) + math.e) - 1.0
    assert by_kl["short_loss"].to_list() == pytest.approx([short] * 5)
    assert by_kl["long_loss"].to_list() == pytest.approx([both] * 5)
    np.testing.assert_allclose(np.array(by_kl["sparse_loss"].to_list()), [[key_only, both, both]] * 5, atol=1e-9)
    np.testing.assert_allclose(np.array(by_loss["sparse_loss"].to_list()), [[lucky_only] * 3] * 5, atol=1e-9)
    assert by_kl["sparse_loss"].list.first().min() > short > by_loss["sparse_loss"].list.first().max()
    # Both selections see the same long and short losses: only the choice differs.
    assert by_kl.select(["long_loss", "short_loss"]).equals(by_loss.select(["long_loss", "short_loss"]))


def test_kl_choices_do_not_depend_on_the_target_token():
    """Label-free: the same contexts with different x_t give the same picks (own and null); the
    loss-greedy picks do change, so the comparison can tell."""
    for target in (A, B, 3):
        assert analyse(KeyAndLuckyToken(), target, "greedy_kl")["chosen"].to_list() == [[KEY, LUCKY, 0]] * 5
    # By loss the picks follow x_t: KEY first for A (LUCKY, which nudges B, now costs x_t), LUCKY first for B.
    assert analyse(KeyAndLuckyToken(), A, "greedy")["chosen"].to_list() == [[KEY, 0, 1]] * 5
    model = random_model("rope")
    cfg = InfluenceConfig(**SMALL, selection="greedy_kl")
    targets = small_targets(cfg)
    shifted = targets.with_columns(target=(pl.col("target") + 5) % VOCAB)
    assert inf.influential_tokens(model, targets, cfg, progress=None)["chosen"].to_list() \
        == inf.influential_tokens(model, shifted, cfg, progress=None)["chosen"].to_list()
    assert null_choices(model, targets, cfg).tolist() == null_choices(model, shifted, cfg).tolist()
    by_loss = InfluenceConfig(**SMALL, selection="greedy")
    assert inf.influential_tokens(model, targets, by_loss, progress=None)["chosen"].to_list() \
        != inf.influential_tokens(model, shifted, by_loss, progress=None)["chosen"].to_list()
    assert null_choices(model, targets, by_loss).tolist() != null_choices(model, shifted, by_loss).tolist()


def null_choices(model, targets: pl.DataFrame, cfg: InfluenceConfig) -> np.ndarray:
    """The far positions the other-document null chooses (not in the table), for all targets at once."""
    contexts, answers = target_contexts(targets, cfg)
    others = inf.with_other_far_tokens(contexts, inf.other_targets(targets), cfg.far)
    fn = inf.as_logits_fn(model)
    reference = inf._anchors(fn, contexts, answers, cfg, "cpu").reference
    scores = inf._selection_scores(fn, others, answers, cfg, "cpu", reference)
    return inf._select(scores, len(answers), cfg)["chosen"]


class TokenOracle:
    """Sure of token 7 exactly when token 31 is among the tokens seen; uniform otherwise."""

    def __call__(self, tokens, position_ids):
        logits = torch.zeros(*tokens.shape, VOCAB)
        logits[:, -1, 7] = 20.0 * (tokens == 31).any(dim=1)
        return logits


def test_the_other_document_null_is_chosen_towards_the_targets_own_full_context():
    """A's far context holds the key token 31 (far position 3), B's does not; both targets are 7.
    Own: A finds the key, B (whose full context says nothing) does not. The null: B given A's far
    tokens is steered towards B's own full-context distribution (uniform), so it leaves the key out
    and recovers nothing, where the loss-greedy null picks it for the label's sake."""
    targets = key_token_targets()
    sure, unsure = math.log1p((VOCAB - 1) * math.exp(-20.0)), math.log(VOCAB)
    cfg = {**SMALL, "n_targets": 2}
    by_kl = inf.influential_tokens(TokenOracle(), targets, InfluenceConfig(**cfg, selection="greedy_kl"), progress=None)
    by_loss = inf.influential_tokens(TokenOracle(), targets, InfluenceConfig(**cfg, selection="greedy"), progress=None)
    assert by_kl["chosen"].to_list() == [[3, 0, 1], [0, 1, 2]]
    np.testing.assert_allclose(np.array(by_kl["sparse_loss"].to_list()), [[sure] * 3, [unsure] * 3], atol=1e-9)
    np.testing.assert_allclose(np.array(by_kl["other_loss"].to_list()), [[unsure] * 3, [unsure] * 3], atol=1e-9)
    np.testing.assert_allclose(np.array(by_loss["other_loss"].to_list()), [[unsure] * 3, [sure] * 3], atol=1e-9)
    assert by_kl["random_loss"].to_list() == by_loss["random_loss"].to_list()  # random sets stay random


def direct_kl(reference: torch.Tensor, log_probs: torch.Tensor) -> float:
    """KL(p || q) term by term, skipping p_v = 0."""
    return math.fsum(math.exp(lp) * (lp - lq) for lp, lq in zip(reference.tolist(), log_probs.tolist(), strict=False)
                     if math.exp(lp) > 0)


class RowsInOrder:
    """Logits of fixed rows, handed out in order, one forward's rows at a time (any batch size)."""

    def __init__(self, logits: torch.Tensor):
        self.logits, self.next = logits, 0

    def __call__(self, tokens, position_ids):
        start, self.next = self.next, self.next + len(tokens)
        return self.logits[start:self.next]


def test_divergences_match_a_direct_computation_in_any_batch_size():
    torch.manual_seed(0)
    logits = torch.randn(6, 4, VOCAB)
    logits[0, -1, 20:25] = -math.inf  # tokens row 0 cannot predict ...
    reference_logits = torch.randn(2, VOCAB)
    reference_logits[1, 10:] = -math.inf  # ... and its reference does not either (0 * inf must not be nan)
    reference = torch.log_softmax(reference_logits.double(), dim=-1)
    rows = np.array([1, 0, 1, 0, 1, 0])
    tokens, positions = np.zeros((6, 4), dtype=np.int64), np.tile(np.arange(4), (6, 1))
    targets = np.array([5, 1, 2, 3, 4, 6])
    log_q = torch.log_softmax(logits[:, -1].double(), dim=-1)
    expected = [direct_kl(reference[rows[r]], log_q[r]) for r in range(6)]
    for batch_size in (6, 4, 1):
        losses, divergences = last_token_divergences(RowsInOrder(logits), tokens, positions, targets, reference,
                                                     rows, batch_size, "cpu")
        assert np.all(np.isfinite(divergences)) and np.all(divergences > 0)
        np.testing.assert_allclose(divergences, expected, rtol=1e-9, atol=1e-12)
        np.testing.assert_array_equal(losses, F.cross_entropy(logits[:, -1].double(), torch.as_tensor(targets),
                                                              reduction="none").numpy())
    same, kept = last_token_log_probs(RowsInOrder(logits), tokens, positions, targets, 4, "cpu")
    assert torch.equal(kept, log_q) and np.array_equal(same, losses)
    _, to_itself = last_token_divergences(RowsInOrder(logits[1:]), tokens[1:], positions[1:], targets[1:], kept[1:],
                                          np.arange(5), 2, "cpu")
    np.testing.assert_allclose(to_itself, 0.0, atol=1e-12)  # each row against its own distribution
    impossible = last_token_divergences(RowsInOrder(logits[:1]), tokens[:1], positions[:1], targets[:1],
                                        reference[:1], np.array([0]), 1, "cpu")[1]
    assert impossible[0] > 1e300  # p > 0 where q = 0: no finite KL


def test_selection_and_reference_must_agree():
    cfg = InfluenceConfig(**SMALL, selection="greedy_kl")
    contexts, answers = np.zeros((1, 16), dtype=np.int64), np.zeros(1, dtype=np.int64)
    with pytest.raises(InfluenceError, match="greedy_kl needs them"):
        inf._selection_scores(TokenOracle(), contexts, answers, cfg, "cpu", None)
    with pytest.raises(InfluenceError, match="greedy_kl needs them"):
        inf._selection_scores(TokenOracle(), contexts, answers, InfluenceConfig(**SMALL), "cpu",
                              torch.zeros(1, VOCAB))

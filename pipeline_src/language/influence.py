"""Influential tokens in real text (Figure 4): how few far-away tokens recover the long-context gain.

A *target* is one token ``x_t`` of a held-out document with at least ``Lbar`` tokens before it
(``Lbar`` = ``context``; the draw: :mod:`.targets`). Its context is those ``Lbar`` tokens, numbered
0..Lbar-1 (the position IDs the language model was trained with); the *far* context is the first
``Lbar - L`` of them and the *local window* the last ``L`` (``L`` = ``local``). The model predicts ``x_t`` from the last
kept token. Three kinds of loss (cross-entropy of ``x_t``, in nats):

* ``long_loss``   L_long: given all ``Lbar`` tokens, position IDs 0..Lbar-1;
* ``short_loss``  L_short: given the local window only, which *keeps its position IDs*
  Lbar-L..Lbar-1 (masking = dropping tokens; the kept ones are never renumbered);
* ``sparse_loss`` L_short,sparse(J): given the local window plus the far tokens ``J``, each with
  its original position ID, in their original order.

Influential tokens are chosen greedily: J_1 = argmin over far ``j`` of L_short,sparse({j}); each
next pick minimises the loss given the picks so far, up to ``k_max``. With
``selection="topk"`` the far tokens are ranked once by their single-token loss and J_k is the
top k. With ``selection="greedy_kl"`` the search never looks at ``x_t``: each next pick is the far
token that brings the next-token distribution given the local window plus the picks closest to the
full context's, by KL(p_long || p_local+J) over the vocabulary at the last position (p_long from
L_long's forward; the candidates' distributions from the very forwards that give their losses, one
forward's at a time); ``sparse_loss`` is then the loss of ``x_t`` on the sets so chosen. The same
forwards as greedy, so about the same cost. Ties always go to the smallest position. The "key token"
flag of Fang et al. (2024) marks targets with L_short - L_long > 2 and L_long < 2.

Choosing J to minimise the target's own loss selects, so part of the gain J recovers may be
selection alone. Two null baselines measure how much, on the same targets and local windows:

* ``random_loss``: L_short,sparse of k far tokens drawn at random (the first k of a random
  permutation of the far positions), averaged over ``null_draws`` draws per target;
* ``other_loss``: the same selection as ``sparse_loss``, but over the far tokens of another
  target's context (the next target in the frame from another document: ``other_doc``,
  ``other_t``), each at the same position ID, before the target's own local window. These tokens
  carry no information about the target; whatever they win back is what selection alone achieves.
  With ``greedy_kl`` the divergence is to the *target's own* p_long (the reference the target's own
  far tokens are chosen towards), so the null asks how close uninformative tokens get to it.

Selecting by the loss of ``x_t`` and reporting that loss is a winner's curse: the null recovers about
as much as the own far tokens (SmolLM2, docs/language.md). ``greedy_kl`` chooses without the label,
so the loss it reports is an honest estimate for the sets it chose.

Speed: every candidate of one greedy step is a sequence of the same length (|J| + 1 + L tokens,
sorted by position), so the candidates of one step, for all the targets of a group at once, go
through the model as padding-free batches of ``batch_size`` rows. A group holds ``batch_size``
targets, so every forward is full (but the last group's): the forwards with one row per target
(L_long, L_short, topk's sets) have ``batch_size`` rows, the random baseline's ``null_draws`` times
as many, and a step's ``batch_size * n`` candidates (n far positions not yet chosen) fill exactly n
forwards, whatever ``far``. ``batch_size`` bounds the device memory of one forward (and the
selection by KL holds the group's ``batch_size`` reference distributions besides; screened, those of
every analysed target); progress is reported per group. A reference
implementation that runs one candidate at a time (``tests/influence_reference.py``) defines the
result; the tests check the two agree.

Screen, then select (``screen_gain``, the config's ``analysis.screen``): only targets that gain
from their far context (L_short - L_long above the findings' threshold) enter Figure 4's curves, F4
and F4', so a screened analysis first computes every target's L_long and L_short, in the groups and
so the very forwards of the unscreened analysis (the same numbers, bit for bit: two forwards per
group, against hundreds for a group's search), and runs the search and the nulls only for the
targets gaining more than ``screen_gain``, in groups of ``batch_size`` of them (other forwards' rows:
the same numbers within float noise; a target's random draws and donor are those of its row in the
whole draw). Every drawn target keeps its row; the others are marked ``screened_out``, with nulls at
every k.

The model is anything that maps ``(tokens, position_ids)`` (long [B, T]) to token logits
[B, T, V]: our :class:`~pipeline_src.model.Decoder`, or any other causal LM through a small adapter
such as :func:`.logits.hf_logits_fn` for a Hugging Face model (see :mod:`.logits`).

The analysis's parameters and the schema of its table live in :mod:`.influence_table` (no torch);
the statistics the figures compute from the table, in :mod:`pipeline_src.language.influence_summary`.
"""

from typing import Callable, NamedTuple

import numpy as np
import polars as pl
import torch
from torch import nn

from ..config.influence_config import InfluenceConfig, InfluenceError
from .influence_progress import ProgressFn, Reports, print_progress
from .influence_table import KEY_TOKEN_GAIN, KEY_TOKEN_LONG_LOSS, PER_K
from .logits import LogitsFn, as_logits_fn, last_token_divergences, last_token_log_probs, last_token_losses
from .targets import target_contexts

# --- losses -------------------------------------------------------------------------------------


def _kept_sequences(contexts: np.ndarray, owner: np.ndarray, far_kept: np.ndarray,
                    local: int) -> tuple[np.ndarray, np.ndarray]:
    """Tokens and position IDs of one sequence per row of ``far_kept``.

    Row r keeps the far positions where ``far_kept[r]`` is True (every row keeps equally many)
    followed by the whole local window, all at their original positions, from the context of
    target ``owner[r]`` (a row of ``contexts``, [n_targets, Lbar]). Returns (tokens, positions),
    both int64 [rows, kept + local].
    """
    rows, far = far_kept.shape
    far_positions = np.nonzero(far_kept)[1].reshape(rows, -1)  # row-major: ascending within a row
    local_positions = np.broadcast_to(np.arange(far, far + local), (rows, local))
    positions = np.concatenate([far_positions, local_positions], axis=1)
    return contexts[owner[:, None], positions], positions


Losses = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""(owner [rows], far_kept bool [rows, far]) -> the loss of each row's sequence, float64 [rows]."""

Scores = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
"""(owner [rows], far_kept bool [rows, far]) -> (criterion, loss), both float64 [rows]: what the
selection minimises for each row's sequence, and the loss of the row's target given it."""


def _scorer(logits_fn: LogitsFn, contexts: np.ndarray, targets: np.ndarray, cfg: InfluenceConfig, device) -> Losses:
    """Losses of sequences cut from ``contexts`` [G, Lbar]: row r keeps the far positions
    ``far_kept[r]`` and the local window of context ``owner[r]`` and scores ``targets[owner[r]]``."""
    def losses(owner: np.ndarray, far_kept: np.ndarray) -> np.ndarray:
        tokens, positions = _kept_sequences(contexts, owner, far_kept, cfg.local)
        return last_token_losses(logits_fn, tokens, positions, targets[owner], cfg.batch_size, device)
    return losses


def _selection_scores(logits_fn: LogitsFn, contexts: np.ndarray, targets: np.ndarray, cfg: InfluenceConfig,
                      device, reference: torch.Tensor | None) -> Scores:
    """What the selection of ``cfg.selection`` minimises over sequences cut from ``contexts`` (as
    :func:`_scorer`), with the loss of the target: by loss (``greedy``, ``topk``; ``reference`` None)
    the loss itself; by divergence (``greedy_kl``) KL(reference[owner[r]] || p_r), ``reference``
    the log-probabilities of the G targets' full contexts [G, V], from the same forwards."""
    if (cfg.selection == "greedy_kl") != (reference is not None):
        raise InfluenceError(f"selection {cfg.selection!r} with{'' if reference is not None else 'out'} "
                             "reference distributions (greedy_kl needs them, the others take none)")
    if reference is None:
        losses = _scorer(logits_fn, contexts, targets, cfg, device)

        def by_loss(owner: np.ndarray, far_kept: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            loss = losses(owner, far_kept)
            return loss, loss
        return by_loss

    def by_divergence(owner: np.ndarray, far_kept: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        tokens, positions = _kept_sequences(contexts, owner, far_kept, cfg.local)
        loss, divergence = last_token_divergences(logits_fn, tokens, positions, targets[owner], reference, owner,
                                                  cfg.batch_size, device)
        return divergence, loss
    return by_divergence


class Anchors(NamedTuple):
    """L_long and L_short of some targets (float64 [n] each) and, for the selection by divergence, the
    full contexts' next-token log-probabilities (float64 [n, V] on the device, from L_long's forwards;
    None for the selections by loss): what the selection of those targets starts from."""

    long_loss: np.ndarray
    short_loss: np.ndarray
    reference: torch.Tensor | None


def _anchors(logits_fn: LogitsFn, contexts: np.ndarray, targets: np.ndarray, cfg: InfluenceConfig,
             device) -> Anchors:
    """The :class:`Anchors` of a group of targets (contexts [G, Lbar], targets [G]): two forwards of G rows."""
    G, far = len(targets), cfg.far
    everyone = np.arange(G)
    losses = _scorer(logits_fn, contexts, targets, cfg, device)
    reference = None
    if cfg.selection == "greedy_kl":
        tokens, positions = _kept_sequences(contexts, everyone, np.ones((G, far), dtype=bool), cfg.local)
        long_loss, reference = last_token_log_probs(logits_fn, tokens, positions, targets, cfg.batch_size, device)
    else:
        long_loss = losses(everyone, np.ones((G, far), dtype=bool))
    return Anchors(long_loss, losses(everyone, np.zeros((G, far), dtype=bool)), reference)


def _group_influence(logits_fn: LogitsFn, contexts: np.ndarray, others: np.ndarray, targets: np.ndarray,
                     draws: np.ndarray, cfg: InfluenceConfig, device, reference: torch.Tensor | None
                     ) -> dict[str, np.ndarray]:
    """The influential far tokens of a group of targets and their null baselines (the per-k columns),
    ``reference`` their :class:`Anchors`' (the selection by divergence's; None for the others)."""
    scores = _selection_scores(logits_fn, contexts, targets, cfg, device, reference)
    return {**_select(scores, len(targets), cfg),
            **_null_baselines(logits_fn, contexts, others, targets, draws, cfg, device, reference)}


def _select(scores: Scores, G: int, cfg: InfluenceConfig) -> dict[str, np.ndarray]:
    """The influential far tokens of G targets (``chosen`` [G, k_max]) and their losses
    (``sparse_loss`` [G, k_max]: the loss of the target given the local window and the first k
    chosen), by ``cfg.selection``; ``scores(owner, far_kept)`` scores one sequence per row
    (criterion, loss)."""
    far, everyone = cfg.far, np.arange(G)
    chosen = np.zeros((G, cfg.k_max), dtype=np.int64)
    sparse = np.zeros((G, cfg.k_max), dtype=np.float64)

    def single_token_step(kept: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Try every far position not yet kept, one at a time, on top of ``kept`` [G, far]:
        returns (candidates [G, n], criteria [G, n], losses [G, n]), candidates ascending in each row."""
        n = far - int(kept[0].sum())
        candidates = np.nonzero(~kept)[1].reshape(G, n)
        trial = np.repeat(kept, n, axis=0)  # row g * n + i: target g with candidate i added
        trial[np.arange(G * n), candidates.ravel()] = True
        criterion, loss = scores(np.repeat(everyone, n), trial)
        return candidates, criterion.reshape(G, n), loss.reshape(G, n)

    kept = np.zeros((G, far), dtype=bool)
    if cfg.selection in ("greedy", "greedy_kl"):  # by the loss itself, or by KL to the full context's
        for k in range(cfg.k_max):
            candidates, criterion, tried = single_token_step(kept)
            best = criterion.argmin(axis=1)  # the first minimum: ties go to the smallest position
            chosen[:, k] = candidates[everyone, best]
            sparse[:, k] = tried[everyone, best]
            kept[everyone, chosen[:, k]] = True
    else:  # topk: rank once by the single-token loss (a stable sort keeps ties in position order)
        candidates, _, tried = single_token_step(kept)
        order = np.argsort(tried, axis=1, kind="stable")[:, :cfg.k_max]
        chosen[:] = np.take_along_axis(candidates, order, axis=1)
        sparse[:, 0] = tried[everyone, order[:, 0]]
        kept[everyone, chosen[:, 0]] = True
        for k in range(1, cfg.k_max):  # J_k = the k best single tokens, together
            kept[everyone, chosen[:, k]] = True
            sparse[:, k] = scores(everyone, kept)[1]
    return {"sparse_loss": sparse, "chosen": chosen}


def _null_baselines(logits_fn: LogitsFn, contexts: np.ndarray, others: np.ndarray, targets: np.ndarray,
                    draws: np.ndarray, cfg: InfluenceConfig, device,
                    reference: torch.Tensor | None = None) -> dict[str, np.ndarray]:
    """The two baselines of a group of targets: ``random_loss`` (the mean loss over the random
    draws ``draws`` [G, null_draws, far] of the first k of each permutation) and ``other_loss`` (the
    selection run over ``others`` [G, Lbar], the contexts with another target's far tokens; by
    divergence, towards ``reference``: the *target's own* full-context distributions, as for its
    own far tokens)."""
    G, far = len(targets), cfg.far
    own = _scorer(logits_fn, contexts, targets, cfg, device)
    owner = np.repeat(np.arange(G), cfg.null_draws)  # row (g, draw)
    random = np.zeros((G, cfg.k_max), dtype=np.float64)
    for k in range(1, cfg.k_max + 1):  # J_k: the first k far positions of each draw's permutation
        kept = np.zeros((G, cfg.null_draws, far), dtype=bool)
        np.put_along_axis(kept, draws[:, :, :k], True, axis=2)
        random[:, k - 1] = own(owner, kept.reshape(-1, far)).reshape(G, cfg.null_draws).mean(axis=1)
    other = _select(_selection_scores(logits_fn, others, targets, cfg, device, reference), G, cfg)
    return {"random_loss": random, "other_loss": other["sparse_loss"]}


def random_draws(n_targets: int, cfg: InfluenceConfig) -> np.ndarray:
    """The random baseline's draws: ``cfg.null_draws`` random permutations of the far positions per
    target (int64 [n_targets, null_draws, far]), from ``cfg.seed``; target i's draws depend only on
    i, the seed and the sizes."""
    rng = np.random.default_rng([cfg.seed, 1])  # apart from the target draw's stream
    return np.argsort(rng.random((n_targets, cfg.null_draws, cfg.far)), axis=2, kind="stable")


def other_targets(targets: pl.DataFrame) -> np.ndarray:
    """For each target, the row of the next target in the frame (cyclically) from another document:
    the donor of the other-context baseline's far tokens."""
    docs = targets["doc"].to_numpy()
    if len(set(docs.tolist())) < 2:
        raise InfluenceError("the other-context baseline needs targets from at least 2 documents; "
                             f"all {len(docs)} targets are in document {docs[0]} (draw more targets)")
    n = len(docs)
    donors = np.empty(n, dtype=np.int64)
    for i in range(n):
        j = (i + 1) % n
        while docs[j] == docs[i]:
            j = (j + 1) % n
        donors[i] = j
    return donors


def with_other_far_tokens(contexts: np.ndarray, donors: np.ndarray, far: int) -> np.ndarray:
    """Each context with its far part replaced by its donor's (the local windows kept)."""
    return np.concatenate([contexts[donors, :far], contexts[:, far:]], axis=1)


def _lists(matrix, cast, dtype, n: int, analysed: np.ndarray | None) -> pl.Series:
    """One list per row of ``matrix`` [rows, k_max]: every target's (``analysed`` None), or those of the
    targets ``analysed`` (the rows of the n targets they belong to), k_max nulls for the others."""
    rows = [list(map(cast, row)) for row in matrix]
    if analysed is not None:
        placed = [[None] * np.shape(matrix)[1] for _ in range(n)]
        for i, row in zip(analysed.tolist(), rows, strict=False):
            placed[i] = row
        rows = placed
    return pl.Series(rows, dtype=dtype)


def result_frame(targets: pl.DataFrame, donors: np.ndarray, long_loss, short_loss, sparse, chosen,
                 random_loss, other_loss, analysed: np.ndarray | None = None,
                 drawn: pl.DataFrame | None = None) -> pl.DataFrame:
    """The analysis' table (:func:`.influence_table.influence_schema`): per target of ``targets``
    its losses, picks and null baselines (``donors``: the rows of the other-context donors in
    ``drawn``, the whole draw, by default ``targets``). With ``analysed`` (a screened analysis: the rows
    of the targets the per-k matrices belong to), the column ``screened_out`` marks the other targets,
    whose per-k lists hold nulls."""
    drawn = targets if drawn is None else drawn
    long_loss, short_loss = np.asarray(long_loss, dtype=np.float64), np.asarray(short_loss, dtype=np.float64)
    n = targets.height

    def losses(matrix):
        return _lists(matrix, float, pl.List(pl.Float64), n, analysed)
    frame = pl.DataFrame({
        "doc": targets["doc"].cast(pl.Int64),
        "t": targets["t"].cast(pl.Int32),
        "target": targets["target"].cast(pl.Int32),
        "long_loss": pl.Series(long_loss, dtype=pl.Float64),
        "short_loss": pl.Series(short_loss, dtype=pl.Float64),
        "sparse_loss": losses(sparse),
        "chosen": _lists(chosen, int, pl.List(pl.Int32), n, analysed),
        "key_token": pl.Series(key_token(long_loss, short_loss), dtype=pl.Boolean),
        "random_loss": losses(random_loss),
        "other_loss": losses(other_loss),
        "other_doc": drawn["doc"].cast(pl.Int64).gather(donors),
        "other_t": drawn["t"].cast(pl.Int32).gather(donors),
    })
    if analysed is None:
        return frame
    return frame.with_columns(screened_out=~pl.Series(np.isin(np.arange(n), analysed), dtype=pl.Boolean))


def key_token(long_loss, short_loss) -> np.ndarray:
    """Fang et al. (2024) key tokens: L_short - L_long > 2 and L_long < 2 (vectorised)."""
    long_loss, short_loss = np.asarray(long_loss), np.asarray(short_loss)
    return (short_loss - long_loss > KEY_TOKEN_GAIN) & (long_loss < KEY_TOKEN_LONG_LOSS)


def _groups(n: int, size: int) -> list[slice]:
    """The groups of ``size`` consecutive targets (the last may hold fewer) of n."""
    return [slice(start, min(start + size, n)) for start in range(0, n, size)]


class Screen(NamedTuple):
    """What the screening found: every drawn target's :class:`Anchors` (``reference``: the analysed
    targets' only, in their order) and ``analysed``, the rows of the targets it keeps (ascending)."""

    anchors: Anchors
    analysed: np.ndarray

    def group(self, span: slice) -> Anchors:
        """The anchors of the analysed targets ``analysed[span]``."""
        rows, reference = self.analysed[span], self.anchors.reference
        return Anchors(self.anchors.long_loss[rows], self.anchors.short_loss[rows],
                       None if reference is None else reference[span])

    def summary(self, gain: float) -> str:
        drawn, kept = len(self.anchors.long_loss), len(self.analysed)
        return (f"screened {drawn} drawn targets: {drawn - kept} ({(drawn - kept) / drawn:.0%}) gain at most "
                f"{gain:g} nats and are screened out; {kept} to analyse")


def screen_targets(logits_fn: LogitsFn, contexts: np.ndarray, targets: np.ndarray, cfg: InfluenceConfig,
                   device) -> Screen:
    """L_long and L_short of every target, in the groups of ``batch_size`` targets the analysis
    without screening works in (so from the very same forwards), and the targets that gain more than
    ``cfg.screen_gain``; the selection by divergence's references are kept for those only."""
    parts = []
    for span in _groups(len(targets), cfg.batch_size):
        part = _anchors(logits_fn, contexts[span], targets[span], cfg, device)
        if part.reference is not None:
            kept = torch.as_tensor(part.short_loss - part.long_loss > cfg.screen_gain, device=part.reference.device)
            part = part._replace(reference=part.reference[kept])
        parts.append(part)
    every = _joined(parts)
    return Screen(every, np.flatnonzero(every.short_loss - every.long_loss > cfg.screen_gain))


def _joined(parts: list[Anchors]) -> Anchors:
    """The :class:`Anchors` of groups of targets, end to end."""
    references = [part.reference for part in parts if part.reference is not None]
    long_loss, short_loss = (np.concatenate([getattr(part, key) for part in parts])
                             for key in ("long_loss", "short_loss"))
    return Anchors(long_loss, short_loss, torch.cat(references) if references else None)


def influential_tokens(model: "nn.Module | Callable | None", targets: pl.DataFrame, cfg: InfluenceConfig,
                       *, device: str | torch.device = "cpu", logits_fn: LogitsFn | None = None,
                       progress: ProgressFn | None = print_progress, report_every: int = 100,
                       report_seconds: float = 60.0, part: slice | None = None) -> pl.DataFrame:
    """Losses and influential far tokens of every target (batched); see the module docstring.

    ``model``: our Decoder or any module/callable ``model(tokens, position_ids) -> logits``
    (wrapped with :func:`as_logits_fn`, which moves a module to ``device`` and sets eval mode);
    or pass ``logits_fn`` instead (then ``model`` is ignored), e.g. :func:`.logits.hf_logits_fn`.
    ``targets``: a frame from :func:`.targets.select_targets`. ``progress`` is called
    with (done, total, detail) after every ``report_every`` targets, after a group of targets that
    ends ``report_seconds`` or more after the last call, at the end, and within a group every
    ``report_seconds`` (a pretrained model takes seconds a target; None: silent). With
    ``cfg.screen_gain`` set, every target's L_long and L_short come first, and only the targets gaining
    more than it are analysed (:func:`screen_targets`). ``part``: the rows of ``targets`` to analyse (a
    part of the draw, :func:`.influence_config.part_span`), each with the donor and random draws of its
    row in the whole draw; None: every row. Returns a frame matching
    :func:`.influence_table.influence_schema`, one row per target (of ``part``) in the order of ``targets``.
    """
    if report_every < 1:
        raise InfluenceError(f"report_every must be >= 1, got {report_every}")
    drawn, part = targets, slice(None) if part is None else part
    contexts, target_tokens = target_contexts(targets, cfg)
    donors = other_targets(targets)
    others = with_other_far_tokens(contexts, donors, cfg.far)
    draws = random_draws(len(target_tokens), cfg)
    targets, contexts, target_tokens, donors, others, draws = (
        whole[part] for whole in (targets, contexts, target_tokens, donors, others, draws))
    reports = Reports(progress, len(target_tokens), report_every, report_seconds)
    fn = reports.counting(logits_fn if logits_fn is not None else as_logits_fn(model, device))
    screen = None
    if cfg.screen_gain is not None:
        reports.screening()
        screen = screen_targets(fn, contexts, target_tokens, cfg, device)
        reports.screened(len(screen.analysed), screen.summary(cfg.screen_gain))
    analysed = np.arange(len(target_tokens)) if screen is None else screen.analysed
    anchors, parts = [], []
    # a group holds batch_size targets: one row per target fills a forward; a step's rows, group * n, fill n forwards
    for span in _groups(len(analysed), cfg.batch_size):
        rows = analysed[span]
        reports.group(span.start, span.stop)
        group = _anchors(fn, contexts[rows], target_tokens[rows], cfg, device) if screen is None else screen.group(span)
        anchors.append(group._replace(reference=None))  # its losses, for the table (its references are done with)
        parts.append(_group_influence(fn, contexts[rows], others[rows], target_tokens[rows], draws[rows], cfg, device,
                                      group.reference))
        reports.group_done()
    every = screen.anchors if screen is not None else _joined(anchors)
    per_k = {key: np.concatenate([part[key] for part in parts]) if parts else np.zeros((0, cfg.k_max))
             for key in PER_K}
    return result_frame(targets, donors, every.long_loss, every.short_loss, *(per_k[key] for key in PER_K),
                        analysed=None if screen is None else analysed, drawn=drawn)

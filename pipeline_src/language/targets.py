"""The targets of the influential-token analysis and of the language models' target losses.

A *target* is one token ``x_t`` of a held-out document with at least ``Lbar`` tokens before it
(``Lbar`` = ``InfluenceConfig.context``); its *context* is those ``Lbar`` tokens. The draw is a pure
function of the held-out documents and the config (its seed, ``n_targets`` and ``Lbar``), so the
analysis and every model's evaluation score the same targets.
"""

import numpy as np
import polars as pl

from ..config.influence_config import InfluenceConfig, InfluenceError
from ..storage.ragged import padded
from .corpus import HELDOUT


def select_targets(stream: pl.DataFrame, cfg: InfluenceConfig) -> pl.DataFrame:
    """Draw ``cfg.n_targets`` targets from the held-out documents of a token stream.

    ``stream`` has the token-stream columns ``doc``, ``split``, ``tokens`` (see
    :mod:`pipeline_src.language.tokenizer`). Every token with at least ``cfg.context`` tokens before it in
    its document is a candidate (the end-of-document token included: the model was trained to
    predict it); ``cfg.n_targets`` of them are drawn uniformly without replacement with
    ``cfg.seed``; with ``cfg.leave_out`` ({seed, n_targets} of an earlier draw, a pilot's) the
    targets that draw picked are no candidates, so none is drawn again. The result is a pure
    function of the held-out documents and ``cfg``: it does not
    depend on the order of the rows. Returns one row per target, sorted by (doc, t): ``doc``,
    ``t`` (the target's index in its document), ``target`` (its token) and ``context`` (the
    ``cfg.context`` tokens before it).
    """
    for column in ("doc", "split", "tokens"):
        if column not in stream.columns:
            raise InfluenceError(f"token stream has no column {column!r} (columns: {stream.columns})")
    heldout = stream.filter(pl.col("split") == HELDOUT).sort("doc")
    if heldout.height == 0:
        raise InfluenceError(f"the token stream has no {HELDOUT!r} documents to draw targets from")
    lengths = heldout["tokens"].list.len().to_numpy().astype(np.int64)
    per_doc = np.maximum(lengths - cfg.context, 0)  # candidate targets t = context..len-1 of each doc
    total = int(per_doc.sum())
    if total == 0:
        raise InfluenceError(
            f"no held-out document has the Lbar+1 = {cfg.context + 1} tokens a target needs "
            f"(longest: {int(lengths.max())} tokens in {heldout.height} documents); "
            "lower InfluenceConfig.context or use a corpus with longer documents")
    if total < cfg.n_targets:
        raise InfluenceError(
            f"the held-out documents hold only {total} targets with {cfg.context} tokens before them, "
            f"fewer than InfluenceConfig.n_targets={cfg.n_targets}; lower n_targets or hold out more text")

    candidates = _not_left_out(total, cfg)
    picks = np.sort(candidates[np.random.default_rng(cfg.seed).choice(len(candidates), size=cfg.n_targets,
                                                                       replace=False)])
    ends = np.cumsum(per_doc)  # candidates of row r are the flat indices ends[r]-per_doc[r] .. ends[r]-1
    rows = np.searchsorted(ends, picks, side="right")
    ts = cfg.context + picks - (ends[rows] - per_doc[rows])

    docs = heldout["doc"].to_numpy()
    token_lists = heldout["tokens"]
    contexts, targets = [], []
    for row, t in zip(rows.tolist(), ts.tolist(), strict=False):
        tokens = token_lists[row].to_numpy()
        contexts.append(tokens[t - cfg.context:t])
        targets.append(int(tokens[t]))
    return pl.DataFrame({
        "doc": pl.Series(docs[rows], dtype=pl.Int64),
        "t": pl.Series(ts, dtype=pl.Int32),
        "target": pl.Series(targets, dtype=pl.Int32),
        "context": pl.Series([c.tolist() for c in contexts], dtype=pl.List(pl.Int32)),
    })


def _not_left_out(total: int, cfg: InfluenceConfig) -> np.ndarray:
    """The flat indices of the candidate targets (0..total-1), less those of the draw ``cfg.leave_out``."""
    candidates = np.arange(total)
    if cfg.leave_out is None:
        return candidates
    earlier = cfg.leave_out
    if earlier["n_targets"] > total:
        raise InfluenceError(f"InfluenceConfig.leave_out={earlier}: the held-out documents hold only {total} targets")
    left_out = np.random.default_rng(earlier["seed"]).choice(total, size=earlier["n_targets"], replace=False)
    candidates = np.setdiff1d(candidates, left_out)
    if len(candidates) < cfg.n_targets:
        raise InfluenceError(f"InfluenceConfig.n_targets={cfg.n_targets}: only {len(candidates)} targets are left "
                             f"after leave_out={earlier}; lower n_targets or hold out more text")
    return candidates


def target_contexts(targets: pl.DataFrame, cfg: InfluenceConfig) -> tuple[np.ndarray, np.ndarray]:
    """The context matrix [n, Lbar] and target tokens [n] of a target frame, checked."""
    for column in ("doc", "t", "target", "context"):
        if column not in targets.columns:
            raise InfluenceError(f"target frame has no column {column!r}; make it with select_targets")
    if targets.height == 0:
        raise InfluenceError("no targets to analyse")
    contexts, lengths = padded(targets["context"])
    if np.any(lengths != cfg.context):
        raise InfluenceError(f"target contexts have {sorted(set(lengths.tolist()))} tokens, "
                             f"InfluenceConfig.context is {cfg.context}")
    return contexts, targets["target"].to_numpy().astype(np.int64)

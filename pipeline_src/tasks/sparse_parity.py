"""Sparse parity, D^sp(l, k) (paper, Figure 1).

A sample shows l bits, each preceded by a marker: ``*`` if the bit belongs to the hidden set S
(|S| = k, uniform over k-subsets of {1..l}), ``-`` otherwise. The response is the single token
XOR(b_i, i in S). The prompt is ``<bos> m_1 b_1 ... m_l b_l =``; the task's length measure is 2l.

Everything is vectorised over samples with NumPy and is a pure function of (params, seed).
"""

from __future__ import annotations

import numpy as np

from .vocab import Vocab

VOCAB = Vocab.with_specials("0", "1", "*", "-", "=")
BOS, ZERO, ONE, MARK, SKIP, EQUALS = (VOCAB.id(t) for t in ("<bos>", "0", "1", "*", "-", "="))


def sample(rng: np.random.Generator, k: np.ndarray, l: np.ndarray) -> dict[str, np.ndarray]:
    """Draw one sample per entry of ``k`` and ``l`` (int arrays of equal shape, 1 <= k <= l).

    Returns padded arrays: ``prompt`` [n, 2*max(l)+2] (right-padded with <pad>), ``prompt_len``,
    ``bits`` [n, max(l)], ``marked`` [n, max(l)] (bool) and ``answer`` (0/1).
    """
    k = np.asarray(k, dtype=np.int64)
    l = np.asarray(l, dtype=np.int64)
    if np.any(k < 1) or np.any(k > l):
        raise ValueError("sparse_parity needs 1 <= k <= l for every sample")
    n, width = len(k), int(l.max())
    column = np.arange(width)[None, :]
    inside = column < l[:, None]
    bits = rng.integers(0, 2, size=(n, width), dtype=np.int64) * inside
    # A uniform k-subset of the first l slots: the k smallest of l i.i.d. uniform keys.
    keys = np.where(inside, rng.random((n, width)), np.inf)
    rank = np.argsort(np.argsort(keys, axis=1), axis=1)
    marked = rank < k[:, None]
    answer = (bits * marked).sum(axis=1) % 2

    prompt = np.zeros((n, 2 * width + 2), dtype=np.int64)
    prompt[:, 0] = BOS
    prompt[:, 1::2][:, :width] = np.where(marked, MARK, SKIP) * inside
    prompt[:, 2::2][:, :width] = np.where(bits == 1, ONE, ZERO) * inside
    prompt[np.arange(n), 2 * l + 1] = EQUALS
    return {"prompt": prompt, "prompt_len": 2 * l + 2, "bits": bits, "marked": marked,
            "answer": answer}


def train_k_l(rng: np.random.Generator, n: int, k_train: int, l_min: int, l_max: int):
    """The training law: k ~ Unif{1..K_train}, then l ~ Unif{max(k, l_min)..l_max}."""
    if l_min > l_max:
        raise ValueError(f"l_min={l_min} exceeds l_max={l_max}")
    if k_train > l_max:
        raise ValueError(f"K_train={k_train} exceeds l_max={l_max}: no sample can have k <= l")
    k = rng.integers(1, k_train + 1, size=n)
    low = np.maximum(k, l_min)
    l = low + (rng.random(n) * (l_max - low + 1)).astype(np.int64)
    return k, l


def frame_columns(drawn: dict[str, np.ndarray], k: np.ndarray, l: np.ndarray) -> dict:
    """Per-sample columns (as arrays and ragged lists) of the common task layout."""
    from ..datasets import ragged

    n = len(k)
    prompt_len = drawn["prompt_len"]
    positions = np.broadcast_to(np.arange(drawn["prompt"].shape[1]), drawn["prompt"].shape)
    answer_token = np.where(drawn["answer"] == 1, ONE, ZERO)
    return {
        "k": k.astype(np.int32),
        "l": l.astype(np.int32),
        "length": (2 * l).astype(np.int32),
        "prompt": ragged(drawn["prompt"], prompt_len),
        "response": ragged(answer_token[:, None], np.ones(n, dtype=np.int64)),
        "prompt_pos": ragged(positions, prompt_len),
        "response_pos": ragged(prompt_len[:, None], np.ones(n, dtype=np.int64)),
        "answer": drawn["answer"].astype(np.int32),
    }


def sequence_tokens(length: int) -> int:
    """Tokens fed to the model for a sample of length measure ``length`` (= 2l): prompt plus answer."""
    return length + 3


def generate_train(params: dict, seed: int):
    """Training set for one K_train: ``params`` = {k_train, l_min, l_max, n_samples}."""
    import polars as pl

    rng = np.random.default_rng([seed, params["k_train"]])
    k, l = train_k_l(rng, params["n_samples"], params["k_train"], params["l_min"], params["l_max"])
    return pl.DataFrame(frame_columns(sample(rng, k, l), k, l))


def eval_cells(params: dict) -> list[tuple[int, int]]:
    """The (k_test, length) cells of the evaluation grid; cells with k > l (= length/2) are skipped."""
    return [(k, length) for k in params["k_test"] for length in params["lengths"] if k <= length // 2]


def generate_eval(params: dict, seed: int):
    """Evaluation grid: ``n_per_cell`` samples per (k_test, length). Each cell has its own stream
    seeded by (seed, k, length), so adding or removing a cell leaves the others unchanged."""
    import polars as pl

    for length in params["lengths"]:
        if length % 2:
            raise ValueError(f"sparse_parity eval lengths are 2l and must be even; got {length}")
    frames = []
    for k_test, length in eval_cells(params):
        rng = np.random.default_rng([seed, k_test, length])
        n = params["n_per_cell"]
        k = np.full(n, k_test, dtype=np.int64)
        l = np.full(n, length // 2, dtype=np.int64)
        frames.append(pl.DataFrame(frame_columns(sample(rng, k, l), k, l)))
    if not frames:
        raise ValueError(f"the evaluation grid is empty: every k_test {params['k_test']} exceeds "
                         f"l = length/2 for every length {params['lengths']}")
    return pl.concat(frames)


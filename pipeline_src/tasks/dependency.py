"""What each response token truly depends on: a task's declaration of its sparse planted correlations.

The paper explains length generalization by sparsity: each output token depends on a few input
tokens, and a transformer generalizes in length when its attention finds those tokens whatever the
context length. A task that declares :class:`Dependencies` lets the mechanism analysis
(:mod:`pipeline_src.mechanism`) measure that in a trained model: how much attention the query
predicting a response token puts on the token's dependency set, and whether changing a token the
task calls relevant (or irrelevant) changes the model's prediction.

Indices are *sequence indices*: into the sample's tokens as the model is fed them, the prompt then
the response, so response token ``j`` sits at index ``len(prompt) + j`` and is predicted by the
query at index ``len(prompt) + j - 1``. They are never position IDs (a scheme may give two tokens
one ID). A dependency set holds the tokens a response token depends on *under teacher forcing*:
the earlier response tokens are given, so a scratchpad token depends on the previous scratchpad
token (a carry), not on everything before it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class Change:
    """One token of a sample replaced, keeping the sample valid (a bit by the other bit, a digit by
    another digit): ``index`` in the sequence (always in the prompt), ``token`` the new token id."""

    index: int
    token: int


@dataclass(frozen=True)
class Probe:
    """The causal check of one sample: the response token ``token`` (its index in the response)
    whose teacher-forced prediction is watched; ``relevant``, a change of a token in its dependency
    set that changes what the token must be; ``irrelevant``, a change of a token outside its
    dependency set, which leaves the right token as it is (None where the sample has no such token,
    e.g. parity without a scratchpad, whose answer depends on every bit)."""

    token: int
    relevant: Change
    irrelevant: Change | None


@dataclass(frozen=True)
class Dependencies:
    """A task's dependency sets and causal probes, pure functions of one sample's token ids.

    ``sets(prompt, response)``: per response token, the sorted sequence indices of the tokens it
    depends on (int arrays; empty for a token that depends on no particular token, e.g. ``<eos>``).
    ``probe(prompt, response, rng)``: the sample's :class:`Probe`, its random choices drawn from
    ``rng``.
    """

    sets: Callable[[np.ndarray, np.ndarray], list[np.ndarray]]
    probe: Callable[[np.ndarray, np.ndarray, np.random.Generator], Probe]


def other(token: int, choices: range | tuple[int, ...], rng: np.random.Generator) -> int:
    """A token of ``choices`` other than ``token``, uniformly (``choices`` holds at least two)."""
    rest = [c for c in choices if c != token]
    return int(rest[rng.integers(len(rest))])


def pick(indices, rng: np.random.Generator) -> int | None:
    """One of ``indices`` uniformly, or None when there is none."""
    indices = list(indices)
    return int(indices[rng.integers(len(indices))]) if indices else None


def response_sets(reads, prompt_len: int, carry: bool) -> list[np.ndarray]:
    """The dependency sets of a response of ``len(reads)`` tokens and ``<eos>``: token j (0-based)
    depends on the sequence indices ``reads[j]`` and, with ``carry`` and j >= 1, on the token before
    it (at ``prompt_len + j - 1``); ``<eos>`` on none."""
    sets = [np.sort(np.asarray([*read, *([prompt_len + j - 1] if carry and j else [])], dtype=np.int64))
            for j, read in enumerate(reads)]
    return [*sets, np.zeros(0, dtype=np.int64)]


def change_probe(token: int, relevant, irrelevant, prompt: np.ndarray, choices, rng: np.random.Generator) -> Probe:
    """The :class:`Probe` of response token ``token``: a random one of the prompt indices ``relevant``
    changed, and a random one of ``irrelevant`` (None when empty), each to another token of
    ``choices`` (:func:`other`)."""
    relevant, irrelevant = pick(relevant, rng), pick(irrelevant, rng)

    def change(index: int) -> Change:
        return Change(index, other(int(prompt[index]), choices, rng))

    return Probe(int(token), change(relevant), None if irrelevant is None else change(irrelevant))


def parity_probe(sets: list[np.ndarray], bits: np.ndarray, prompt: np.ndarray, choices: tuple[int, int],
                 rng: np.random.Generator) -> Probe:
    """The probe of a response each of whose tokens is the XOR of the prompt bits in its dependency
    set (and of the previous scratchpad token, if there), as in the parity tasks: a random token
    with a non-empty set (not ``<eos>``), a random prompt bit of its set flipped (relevant: that
    always flips the token), a random one of the other ``bits`` (sequence indices) flipped
    (irrelevant); ``choices``: the ids of ``0`` and ``1``."""
    token = pick((j for j, depends in enumerate(sets) if len(depends)), rng)
    depends = sets[token]
    return change_probe(token, depends[depends < len(prompt)], np.setdiff1d(bits, depends), prompt, choices, rng)

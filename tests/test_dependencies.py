"""Dependency sets and causal probes of the tasks (pipeline_src.tasks.dependency).

The declared sets are checked against derivations that share no code with the declarations: the
generators' own arrays (the marked bits, the coupled position IDs, the variable-assignment slots),
and a functional check on the true responses: the tokens of a set determine the token (no two
samples with equal tokens there disagree on it), and no member can be dropped. Probes are checked
by recomputing the right value of the watched token of the changed sample under teacher forcing,
with plain Python on decoded tokens.
"""

from __future__ import annotations

import functools

import numpy as np
import polars as pl
import pytest

from pipeline_src.tasks import (
    addition,
    get_task,
    parity_scratchpad,
    sparse_parity,
    sparse_parity_scratchpad,
    variable_assignment,
)

from .helpers import TASK_PARAMS

NAMES = ("sparse_parity", "sparse_parity_scratchpad", "parity_scratchpad", "addition", "variable_assignment")
BITS = ("0", "1")
DIGITS = tuple(str(c) for c in range(10))


def samples(drawn: dict) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """(row, prompt, response) of each sample of a generator's right-padded arrays."""
    return [(row, drawn["prompt"][row, :p], drawn["response"][row, :r])
            for row, (p, r) in enumerate(zip(drawn["prompt_len"], drawn["response_len"], strict=False))]


def assert_well_formed(sets: list[np.ndarray], prompt: np.ndarray, response: np.ndarray) -> None:
    """One sorted int64 array per response token, each index before the token's own."""
    assert len(sets) == len(response)
    for j, depends in enumerate(sets):
        assert depends.dtype == np.int64 and depends.ndim == 1
        assert np.all(np.diff(depends) > 0), depends
        assert np.all((depends >= 0) & (depends < len(prompt) + j)), (j, depends)


def assert_declared(dependencies, drawn: dict, expected) -> int:
    """The declared sets of every sample of ``drawn`` equal ``expected(row, prompt, response)``;
    returns the number of samples."""
    rows = samples(drawn)
    for row, prompt, response in rows:
        sets = dependencies.sets(prompt, response)
        assert_well_formed(sets, prompt, response)
        want = expected(row, prompt, response)
        assert [s.tolist() for s in sets] == [sorted(w) for w in want], (row, prompt, response)
    return len(rows)


def assert_functional(dependencies, drawn: dict) -> None:
    """Each response token is a function of the tokens at its set (grouped by its role: first, last
    before ``<eos>``, set size), and dropping any member of a set breaks that (two samples then
    agree on the rest and disagree on the token). Tokens with an empty set (``<eos>``) are left out."""
    entries = []
    for _, prompt, response in samples(drawn):
        sequence = np.concatenate([prompt, response])
        for j, depends in enumerate(dependencies.sets(prompt, response)):
            if len(depends):
                role = (j == 0, j == len(response) - 2, len(depends))
                entries.append((role, tuple(sequence[depends].tolist()), int(response[j])))

    def conflicting_roles(drop: int | None) -> set:
        seen, bad = {}, set()
        for role, key, value in entries:
            if drop is not None:
                if drop >= len(key):
                    continue
                key = key[:drop] + key[drop + 1:]
            if seen.setdefault((role, key), value) != value:
                bad.add(role)
        return bad

    roles = {role for role, _, _ in entries}
    assert not conflicting_roles(None)
    for drop in range(max(size for _, _, size in roles)):
        missing = {role for role in roles if drop < role[2]} - conflicting_roles(drop)
        assert not missing, f"member {drop} of the sets of {missing} can be dropped"


def assert_probes(dependencies, rows, right, kind: tuple[str, ...], vocab, expect_irrelevant, tokens) -> None:
    """For each (row, prompt, response): the probe is reproducible, watches one of ``tokens(prompt,
    response)``, changes prompt tokens of ``kind`` to others of that kind, in and outside the set;
    ``right(prompt, response, token)`` (the teacher-forced right value, a string) changes under the
    relevant change and not under the irrelevant one, which is there exactly when
    ``expect_irrelevant(prompt, response, token)``."""
    for row, prompt, response in rows:
        probe = dependencies.probe(prompt, response, np.random.default_rng(row))
        assert probe == dependencies.probe(prompt, response, np.random.default_rng(row))
        assert probe.token in tokens(prompt, response)
        depends = dependencies.sets(prompt, response)[probe.token]
        watched = vocab.decode(response)[probe.token]
        assert right(prompt, response, probe.token) == watched  # the oracle agrees with the sample
        assert (probe.irrelevant is not None) == expect_irrelevant(prompt, response, probe.token), row
        for change, inside in ((probe.relevant, True), (probe.irrelevant, False)):
            if change is None:
                continue
            assert 0 <= change.index < len(prompt)
            old, new = vocab.decode([prompt[change.index], change.token])
            assert old in kind and new in kind and old != new, (old, new)
            assert (change.index in depends) == inside
            changed = prompt.copy()
            changed[change.index] = change.token
            assert (right(changed, response, probe.token) != watched) == inside, (row, change)


# --- sparse parity ------------------------------------------------------------------------------

def sparse_draw(seed: int, draw, count: int = 1200, k_max: int = 4, l_max: int = 10) -> dict:
    rng = np.random.default_rng(seed)
    n_bits = rng.integers(1, l_max + 1, size=count)
    k = 1 + (rng.random(count) * np.minimum(n_bits, k_max)).astype(np.int64)
    return {**draw(rng, k, n_bits), "k": k, "l": n_bits}


@functools.cache
def sparse() -> dict:
    return sparse_draw(1, sparse_parity.sample_layout)


@functools.cache
def sparse_scratch() -> dict:
    return sparse_draw(2, sparse_parity_scratchpad.sample)


def sparse_decode(prompt) -> tuple[list[str], list[int]]:
    """(markers, bits) of ``<bos> m_1 b_1 ... m_l b_l =``."""
    tokens = sparse_parity.VOCAB.decode(prompt)[1:-1]
    return tokens[0::2], [int(b) for b in tokens[1::2]]


def sparse_right(prompt, response, token) -> str:
    """The answer: the XOR of the marked bits."""
    markers, bits = sparse_decode(prompt)
    return str(sum(b for m, b in zip(markers, bits, strict=False) if m == "*") % 2)


def sparse_scratch_right(prompt, response, token) -> str:
    """s_j given s_{j-1}: s_{j-1} XOR the j-th marked bit."""
    markers, bits = sparse_decode(prompt)
    previous = int(sparse_parity.VOCAB.decode(response)[token - 1]) if token else 0
    return str(previous ^ [b for m, b in zip(markers, bits, strict=False) if m == "*"][token])


def test_sparse_parity_sets_are_the_marked_bits():
    drawn = sparse()
    count = assert_declared(sparse_parity.DEPENDENCIES, drawn,
                            lambda row, p, r: [2 * (1 + np.flatnonzero(drawn["marked"][row]))])
    assert count >= 1000
    assert_functional(sparse_parity.DEPENDENCIES, drawn)


def test_sparse_parity_scratchpad_sets_are_one_marked_bit_and_the_previous_step():
    drawn = sparse_scratch()

    def expected(row, prompt, response):
        k = drawn["k"][row]
        # s_j carries the ID 2 i_j of its marked bit, which is that bit's sequence index
        assert np.array_equal(drawn["response_pos"][row, :k], 2 * drawn["marked_index"][row, :k])
        return [[2 * drawn["marked_index"][row, j]] + ([len(prompt) + j - 1] if j else []) for j in range(k)] + [[]]

    assert assert_declared(sparse_parity_scratchpad.DEPENDENCIES, drawn, expected) >= 1000
    assert_functional(sparse_parity_scratchpad.DEPENDENCIES, drawn)


def test_sparse_parity_probes():
    drawn = sparse()
    assert_probes(sparse_parity.DEPENDENCIES, samples(drawn), sparse_right, BITS, sparse_parity.VOCAB,
                  lambda p, r, t: "-" in sparse_decode(p)[0], lambda p, r: {0})


def test_sparse_parity_scratchpad_probes():
    drawn = sparse_scratch()
    assert_probes(sparse_parity_scratchpad.DEPENDENCIES, samples(drawn), sparse_scratch_right, BITS,
                  sparse_parity.VOCAB, lambda p, r, t: len(p) > 4, lambda p, r: range(len(r) - 1))
    watched = {sparse_parity_scratchpad.probe(p, r, np.random.default_rng(row)).token
               for row, p, r in samples(drawn) if len(r) == 5}
    assert watched == {0, 1, 2, 3}  # every step of k = 4 gets watched


# --- parity with a scratchpad ----------------------------------------------------------------------

@functools.cache
def parity(scratchpad: bool) -> dict:
    rng = np.random.default_rng(3 + scratchpad)
    n = rng.integers(1, 13 if scratchpad else 7, size=1000)
    return {**parity_scratchpad.sample(rng, n, scratchpad), "n": n}


def parity_right(prompt, response, token) -> str:
    """s_i given s_{i-1} (s_{i-1} XOR b_i) with the scratchpad, the XOR of every bit without."""
    bits = [int(b) for b in parity_scratchpad.VOCAB.decode(prompt)[1:-1]]
    if len(response) == 2 and len(bits) > 1:
        return str(sum(bits) % 2)
    previous = int(parity_scratchpad.VOCAB.decode(response)[token - 1]) if token else 0
    return str(previous ^ bits[token])


@pytest.mark.parametrize("scratchpad", [True, False])
def test_parity_scratchpad_sets(scratchpad):
    drawn = parity(scratchpad)

    def expected(row, prompt, response):
        n = drawn["n"][row]
        if not scratchpad:
            return [range(1, n + 1), []]
        # s_i shares its coupled ID with b_i
        same_id = [np.flatnonzero(drawn["prompt_pos"][row, :n + 2] == drawn["response_pos"][row, i]) for i in range(n)]
        assert all(len(index) == 1 for index in same_id)
        return [[index[0]] + ([len(prompt) + i - 1] if i else []) for i, index in enumerate(same_id)] + [[]]

    assert assert_declared(parity_scratchpad.DEPENDENCIES, drawn, expected) >= 1000
    assert_functional(parity_scratchpad.DEPENDENCIES, drawn)


@pytest.mark.parametrize("scratchpad", [True, False])
def test_parity_scratchpad_probes(scratchpad):
    assert_probes(parity_scratchpad.DEPENDENCIES, samples(parity(scratchpad)), parity_right, BITS,
                  parity_scratchpad.VOCAB, lambda p, r, t: scratchpad and len(p) > 3,
                  lambda p, r: range(len(r) - 1))


# --- addition -------------------------------------------------------------------------------------

@functools.cache
def sums(pad_operands: bool = False) -> dict:
    rng = np.random.default_rng(5)
    n = rng.integers(1, 9, size=1200)
    return {**addition.sample(rng, n, pad_operands), "n": n}


def addition_right(prompt, response, token) -> str:
    """c_i under teacher forcing: (a_i + b_i + carry) mod 10, the carry into digit i implied by the
    given c_{i-1}: carry_{i-1} = (c_{i-1} - a_{i-1} - b_{i-1}) mod 10, carry = (a_{i-1} + b_{i-1} +
    carry_{i-1}) // 10."""
    text = "".join(addition.VOCAB.decode(prompt)[1:-1])
    a, b = (operand[::-1] for operand in text.split("+"))  # a[s]: significance s + 1

    def digit(operand: str, s: int) -> int:
        return int(operand[s]) if s < len(operand) else 0

    carry = 0
    if token:
        previous = int(addition.VOCAB.decode(response)[token - 1])
        low = digit(a, token - 1) + digit(b, token - 1)
        carry = (low + (previous - low) % 10) // 10
    return str((digit(a, token) + digit(b, token) + carry) % 10)


@pytest.mark.parametrize("pad_operands", [False, True])
def test_addition_sets_follow_the_coupled_ids(pad_operands):
    drawn = sums(pad_operands)

    def expected(row, prompt, response):
        n = drawn["n"][row]
        ids, digits = drawn["prompt_pos"][row, :len(prompt)], np.isin(prompt, addition.DIGIT0 + np.arange(10))
        # c_i (ID r+i) depends on the digits with IDs r+i and r+i-1 (not the constant leading zeros
        # of pad_operands, at ID r+n+1), and on c_{i-1}
        digits &= ids <= addition.OFFSET + n
        return [np.flatnonzero(digits & np.isin(ids, [i_id, i_id - 1])).tolist() + ([len(prompt) + j - 1] if j else [])
                for j, i_id in enumerate(drawn["response_pos"][row, :n + 1])] + [[]]

    assert assert_declared(addition.DEPENDENCIES, drawn, expected) >= 1000
    assert_functional(addition.DEPENDENCIES, drawn)


@pytest.mark.parametrize("pad_operands", [False, True])
def test_addition_probes(pad_operands):
    rows = samples(sums(pad_operands))
    assert_probes(addition.DEPENDENCIES, rows, addition_right, DIGITS, addition.VOCAB,
                  lambda p, r, t: len(r) - 2 > len({t + 1, t} & set(range(1, len(r) - 1))),
                  lambda p, r: range(len(r) - 2))
    # a_i and b_i are both chosen
    sides = {addition.probe(p, r, np.random.default_rng(row)).relevant.index > (len(p) - 1) // 2 for row, p, r in rows}
    assert sides == {False, True}


# --- variable assignment -------------------------------------------------------------------------

@functools.cache
def statements(scratchpad: bool, name_tokens: int) -> dict:
    rng = np.random.default_rng(7 + 2 * scratchpad + name_tokens)
    n = rng.integers(1, 13, size=300)
    d = variable_assignment.depth_law(rng, n, 4)
    return {**variable_assignment.sample(rng, n, d, 16, 4, scratchpad, name_tokens), "n": n, "d": d}


def variable_right(prompt, response, token) -> str:
    """The answer under teacher forcing: the digit reached from the last hop of the response (or from
    the query, without hops), following the decoded statements."""
    tokens = variable_assignment.VOCAB.decode(prompt)
    query = tokens.index("?")
    name_tokens = len(tokens) - query - 2
    defined, start = {}, 1
    for end in [i for i in range(query) if tokens[i] == ";"]:
        statement = tokens[start:end]
        defined[tuple(statement[:name_tokens])] = tuple(statement[name_tokens + 1:])
        start = end + 1
    hops = variable_assignment.VOCAB.decode(response)[:token]
    name = tuple(hops[-name_tokens:]) if hops else tuple(tokens[query + 1:-1])
    while name not in {(c,) for c in DIGITS}:
        name = defined[name]
    return name[0]


@pytest.mark.parametrize("scratchpad", [True, False])
@pytest.mark.parametrize("name_tokens", [1, 2])
def test_variable_assignment_sets_follow_the_chain_slots(scratchpad, name_tokens):
    drawn = statements(scratchpad, name_tokens)

    def expected(row, prompt, response):
        ids = drawn["prompt_pos"][row, :len(prompt)]

        def right_side(slot):  # the tokens of a statement share its ID r + p (p its prompt order)
            statement = np.flatnonzero(ids == variable_assignment.OFFSET + drawn["order_of"][row, slot])
            return [i for i in statement if i > statement[name_tokens] and prompt[i] != variable_assignment.SEMI]

        chain = [i for slot in range(drawn["d"][row]) for i in right_side(slot)]  # slots 0..d-1: the query chain
        return ([[i] for i in chain] if scratchpad else [chain]) + [[]]

    assert assert_declared(variable_assignment.DEPENDENCIES, drawn, expected) == 300
    if scratchpad:
        assert_functional(variable_assignment.DEPENDENCIES, drawn)


@pytest.mark.parametrize("scratchpad", [True, False])
@pytest.mark.parametrize("name_tokens", [1, 2])
def test_variable_assignment_probes(scratchpad, name_tokens):
    drawn = statements(scratchpad, name_tokens)
    vocab = variable_assignment.VOCAB

    def off_chain_digit(prompt, response, token):  # another chain than the query's: a second digit
        tokens = vocab.decode(prompt)
        return sum(tokens[i - 1] == "=" and tokens[i] in DIGITS for i in range(len(tokens))) > 1

    rows = samples(drawn)
    assert_probes(variable_assignment.DEPENDENCIES, rows, variable_right, DIGITS, vocab, off_chain_digit,
                  lambda p, r: {len(r) - 2})
    for row, prompt, response in rows:  # the relevant change is the chain's digit, the answer itself
        probe = variable_assignment.probe(prompt, response, np.random.default_rng(row))
        assert vocab.decode([prompt[probe.relevant.index]])[0] == str(drawn["answer"][row])


# --- every task, through the registry ------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_registered_tasks_declare_dependencies_on_their_frames(name):
    task = get_task(name)
    assert task.dependencies is not None
    params = {**TASK_PARAMS[name]["eval"], "n_per_cell": 4}
    frame = task.generate_eval(params, 11)
    if "scratchpad" in params:
        frame = pl.concat([frame, task.generate_eval({**params, "scratchpad": False}, 11)])
    for prompt, response in zip(frame["prompt"].to_list(), frame["response"].to_list(), strict=False):
        prompt, response = np.asarray(prompt), np.asarray(response)
        sets = task.dependencies.sets(prompt, response)
        assert_well_formed(sets, prompt, response)
        assert len(sets[task.answer_index]) > 0  # the answer depends on something
        if response[-1] == task.vocab.id("<eos>"):
            assert len(sets[-1]) == 0
        probe = task.dependencies.probe(prompt, response, np.random.default_rng(0))
        assert 0 <= probe.token < len(response) and probe.relevant.index in sets[probe.token]

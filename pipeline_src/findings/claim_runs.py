"""The runs and cells a claim's comparisons name in a figure's spec (:mod:`.claim_file`): each side's
runs among those the spec trains, made once or for each K_train, neighbouring pair of K_train or k_test
(``each``), and named as the claim names them. A side that names its config files (``config``) takes its
runs from that config's spec (``specs``): the same run of two configs is then two runs compared."""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import pairwise

from .claim_file import Claim, Rule, Side

TREND_GROUPS = 3  # the fewest groups a trend compares (Page's test needs three columns)
RUN_NAME = "{scheme} ({variant})"  # a run's name where its side gives none


@dataclass(frozen=True)
class Cell:
    """One side of a comparison: a run's cell (``k`` None: a task without k_test), called ``name``; of the
    runs made with the config files ``config`` (None: the config judged)."""

    name: str
    variant: str
    scheme: str
    k: int | None = None
    config: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Pair:
    """One comparison of two sides; ``cell`` names where, a format of the {length} still to choose."""

    better: Cell
    worse: Cell
    cell: str
    paired: bool
    part: str = ""  # the claim's part its rule belongs to ("": the claim names none)


@dataclass(frozen=True)
class Groups:
    """One trend: ``cells`` in the predicted order of rising accuracy, called ``name`` in a verdict."""

    name: str
    cells: tuple[Cell, ...]
    cell: str
    test: str
    part: str = ""  # the claim's part its rule belongs to ("": the claim names none)


def configured(spec: dict) -> list[tuple[str, str]]:
    """Every run (variant, scheme) the figure ``spec`` trains, in the config's order."""
    return [(variant, scheme) for variant, schemes in spec["runs"].items() for scheme in schemes]


def named(side: Side, variant: str, scheme: str, K: int | None = None, k: int | None = None) -> Cell:
    return Cell((side.name or RUN_NAME).format(scheme=scheme, variant=variant, K_train=K, k_test=k), variant, scheme, k,
                side.config)


def k_runs(spec: dict, side: Side) -> list[tuple[int, str, str]]:
    """The runs of ``side`` in a K_train task's ``spec`` as (K_train, variant, scheme), smallest K_train first."""
    from ..tasks import get_task

    layout = get_task(spec["task"]).layout
    return sorted((layout.k_train(variant), variant, scheme) for variant, scheme in configured(spec)
                  if side.selects(variant, scheme))


def k_of(symbol, among: list[int]) -> int | None:
    """The k_test a side names among the candidates ``among`` (ascending): a number, or its smallest or largest."""
    if isinstance(symbol, int):
        return symbol
    if not among:
        return None
    return among[0] if symbol == "smallest" else among[-1]


def cell_name(rule: Rule, **fields) -> str:
    return rule.cell.format(length="{length}", **fields)


def side_runs(side: Side, spec: dict, specs: dict | None = None) -> list[tuple[str, str]]:
    """The runs (variant, scheme) ``side`` selects in ``spec``, or in its own config's spec (``specs``:
    a side's ``config`` -> the figure spec of that config) where it names one."""
    return [run for run in configured((specs or {}).get(side.config, spec)) if side.selects(*run)]


def pairs(rule: Rule, spec: dict, specs: dict | None = None) -> list[Pair]:
    """The comparisons ``rule`` makes in ``spec`` (each side in its own config's spec, ``specs``, where it
    names one), in the order a verdict lists them, each with the rule's part."""
    return [replace(pair, part=rule.part or "") for pair in _pairs(rule, spec, specs)]


def _pairs(rule: Rule, spec: dict, specs: dict | None = None) -> list[Pair]:
    if rule.each is None:
        apart = rule.better.config != rule.worse.config  # the same run of two configs: two models
        return [Pair(named(rule.better, *b, k=rule.better.k_test), named(rule.worse, *w, k=rule.worse.k_test),
                     cell_name(rule), rule.paired)
                for b in side_runs(rule.better, spec, specs) for w in side_runs(rule.worse, spec, specs)
                if b != w or apart]
    k_test = sorted(spec["k_test"])
    found = []
    if rule.each == "K_train":
        for K, variant, scheme in k_runs(spec, rule.better):
            trained = [k for k in k_test if k <= K]
            high, low = k_of(rule.better.k_test, trained), k_of(rule.worse.k_test, trained)
            if high is None or low is None or high == low:
                continue
            found.append(Pair(named(rule.better, variant, scheme, K, high),
                              named(rule.worse, variant, rule.worse.scheme or scheme, K, low),
                              cell_name(rule, K_train=K), rule.paired))
    elif rule.each == "neighbouring K_train":
        for small, large in pairwise(k_runs(spec, rule.better)):
            between = [k for k in k_test if small[0] < k <= large[0]]
            if not between:
                continue
            sides = {"larger": large, "smaller": small}
            (bK, bv, bs), (wK, wv, ws) = sides[rule.better.K_train], sides[rule.worse.K_train]
            k = between[-1]
            found.append(Pair(named(rule.better, bv, bs, bK, k), named(rule.worse, wv, ws, wK, k),
                              cell_name(rule, K_train=large[0], k_test=k), rule.paired))
    return found


def trends(rule: Rule, spec: dict) -> list[Groups]:
    """The trends ``rule`` tests in ``spec``: per K_train over its k_test <= K_train, or per k_test (in
    the rule's range) over the K_train >= k_test; each with at least :data:`TREND_GROUPS` groups."""
    side, k_test = rule.rising, sorted(spec["k_test"])
    trained = k_runs(spec, side)
    found = []
    if rule.each == "K_train":
        for K, variant, scheme in trained:
            ks = [k for k in k_test if k <= K]
            cells = tuple(named(side, variant, scheme, K, k) for k in ks)
            found.append(Groups(rule.name.format(K_train=K), ordered(cells, side), cell_name(rule, K_train=K),
                                rule.test))
    else:
        low, high = rule.k_test
        for k in k_test:
            cells = tuple(named(side, variant, scheme, K, k) for K, variant, scheme in trained if K >= k)
            if low <= k <= high:
                found.append(Groups(rule.name.format(k_test=k), ordered(cells, side), cell_name(rule, k_test=k),
                                    rule.test))
    return [replace(groups, part=rule.part or "") for groups in found if len(groups.cells) >= TREND_GROUPS]


def ordered(cells: tuple[Cell, ...], side: Side) -> tuple[Cell, ...]:
    return cells[::-1] if side.order == "descending" else cells


def selected(claim: Claim, spec: dict) -> bool:
    """Whether ``spec`` trains any run a side of ``claim`` names."""
    return any(side.selects(*run) for side in claim.sides for run in configured(spec))


def empty_side(claim: Claim, spec: dict, specs: dict | None = None) -> str:
    """A side of a comparison made once that selects no run of ``spec`` (of its own config's, ``specs``,
    where it names one), described ("" for none)."""
    for rule in claim.compare:
        for side in (rule.better, rule.worse) if rule.each is None and rule.rising is None else ():
            if not side_runs(side, spec, specs):
                return described(side)
    return ""


def described(side: Side) -> str:
    """``side``'s runs in words: "coupled scratchpad runs", "ppc runs"."""
    words = [f"{'' if value else 'non-'}{label}" for label, value in
             (("coupled", side.coupled), ("position-predicting", side.predicts_positions)) if value is not None]
    words += [name for name in (side.scheme, side.variant) if name]
    return " ".join(words + ["runs"])


def not_configured(claim: Claim, task: str) -> str:
    """Why a config gives ``claim`` no results: it trains none of the runs its sides name."""
    if claim.kind == "targets":
        return "the config runs no natural-language analysis"
    schemes = {side.scheme for side in claim.sides}
    variants = {side.variant for side in claim.sides}
    if len(schemes) == 1 and None not in schemes:
        return f"the config trains no {schemes.pop()} model of {task}"
    if len(variants) == 1 and None not in variants:
        return f"the config trains no {task} model with a {variants.pop()}"
    return f"the config trains no {task} model"


def shown(claim: Claim, spec: dict) -> list[Cell]:
    """The runs a claim shows beside its verdict (each side's of a comparison made once), each once."""
    found: dict[tuple[str, str], Cell] = {}
    for rule in claim.compare:
        for side in (rule.better, rule.worse) if rule.each is None and rule.rising is None else ():
            for run in configured(spec):
                if side.selects(*run):
                    found.setdefault(run, named(side, *run))
    return list(found.values())

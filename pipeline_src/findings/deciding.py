"""The number that decided a verdict, or what it lacks, in a few words for a table read at a glance
(the README's findings table, the report's landing page): reproduced or contradicted, the p that did it;
undecided, the seeds (or targets) that would decide where the verdict plans them, else the p that fell
short, or "no results" / "not learned"."""

from __future__ import annotations

import re

from .claim_file import Claim
from .finding import Finding
from .verdicts import CONTRADICTED, REPRODUCED

PLANNED = (r"about ([\d,]+) seeds per run", "~{} seeds"), (r"about ([\d,]+) analysed targets", "~{} targets")


def group(test, claim: Claim) -> str:
    """The comparison a test belongs to: itself under Holm, its comparison over the lengths otherwise."""
    if claim.correction == "holm":
        return f"{test.cell}: {getattr(test, 'better', '')} vs {getattr(test, 'worse', '')}"
    return f"{test.better} vs {test.worse}" if hasattr(test, "better") else test.cell.rsplit(" at ", 1)[0]


def claimed_p(row: Finding, claim: Claim) -> float | None:
    """The p that decides whether the claimed direction holds: over each comparison its best p (over the
    lengths, where the claim bounds them), the largest of those (None: no test)."""
    best: dict[str, float] = {}
    for test in row.comparisons:
        key = group(test, claim)
        best[key] = min(best.get(key, 1.0), test.p)
    return max(best.values()) if best else None


def deciding(row: Finding, claim: Claim) -> str:
    """``row``'s deciding number in a few words ("" where the verdict states none)."""
    stated = re.search(r"p = ([\d.e-]+)", row.verdict)
    if row.word == CONTRADICTED:
        reverse = min(row.comparisons, key=lambda test: test.p_reverse, default=None)
        return with_error(reverse.p_reverse, getattr(reverse, "draws", (0, 0))[1]) if reverse is not None else (
            f"p = {stated[1]}" if stated else "intervals apart")
    if row.word == REPRODUCED:
        p = claimed_p(row, claim)
        return f"p <= {p:.2g}" if p is not None else (f"p = {stated[1]}" if stated else "intervals apart")
    if withheld := re.search(r"parts of the draw not all there \((\d+ of \d+) in", row.verdict):
        return f"withheld: {withheld[1]} parts in"
    if "no results" in row.verdict:
        return "no results"
    if "not learned" in row.verdict or "nothing learned" in row.verdict:
        return "not learned"
    planned = [words.format(found[1]) for pattern, words in PLANNED if (found := re.search(pattern, row.verdict))]
    test, reverse = named(row)
    if test is not None:  # the p and the seeds of the one comparison the verdict names (the verdict names it)
        if reverse:  # "K_train 6 below 4 with ~54 seeds" (the seeds that would show it), or its reverse p
            below = f"{test.better} below {_after_common(test.worse, test.better)}"
            return f"{below} with {planned[0]}" if planned else f"{below}, p = {test.p_reverse:.2g}"
        return f"p = {test.p:.2g}, " + (planned[0] if planned else "no count decides")
    p = claimed_p(row, claim)
    shown = [f"p = {p:.2g}"] if p is not None else [f"p = {stated[1]}"] if stated else []
    return ", ".join(shown + planned)


def with_error(p: float, draws: int) -> str:
    """``p = 0.0008 ± 0.0001``: a p and, where it was drawn anew near a threshold, its Monte Carlo error."""
    from .monte_carlo import monte_carlo_error

    return f"p = {p:.2g}" + (f" ± {monte_carlo_error(p, draws):.1g}" if draws else "")


def _after_common(name: str, other: str) -> str:
    """``name`` less the words it shares with ``other`` at the start: "K_train 4" beside "K_train 6" is "4"."""
    words, others = name.split(), other.split()
    common = next((i for i, (a, b) in enumerate(zip(words, others, strict=False)) if a != b),
                  min(len(words), len(others)))
    return " ".join(words[common:]) or name


def named(row: Finding) -> tuple[object | None, bool]:
    """The comparison of runs an undecided verdict names (None: it names none, e.g. a trend's), and
    whether it names it the other way round ("A below B at ..., not significantly")."""
    for test in row.comparisons:
        if not hasattr(test, "better"):
            continue
        if f"{test.better} below {test.worse} at {test.cell}, not significantly" in row.verdict:
            return test, True
        if (f"{test.better} vs {test.worse} at {test.cell}" in row.verdict
                or f"{test.better} vs {test.worse}: smallest p {test.p:.3g} (at {test.cell})" in row.verdict):
            return test, False
    return None, False

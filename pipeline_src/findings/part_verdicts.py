"""Each named part of a claim ((a), (b): its file's ``parts``) judged apart, for the tables: what its
own comparisons say under the claim's registered rule, with the number that decides it. The claim's
verdict is decided as before, over every comparison; this shows which part carries it.

A part is ``contradicted`` where one of its tests is significant the other way at the claim's own
threshold (alpha over every test the claim made, as the claim's verdict reads it), ``reproduced`` where
each of its comparisons holds as the claim's correction says (each test significant under ``holm``;
its best p over the lengths at most alpha / lengths ``over lengths``), else ``undecided``. The deciding
number: the smallest reverse p of a contradicted part, the largest of its comparisons' best p of a
reproduced one (``p <=``), and of an undecided one the best p of its weakest comparison.
"""

from __future__ import annotations

from dataclasses import dataclass

from .claim_file import Claim
from .deciding import group, with_error
from .significance import ALPHA
from .verdicts import CONTRADICTED, REPRODUCED, UNDECIDED


@dataclass(frozen=True)
class PartVerdict:
    """One part's verdict: its label, who states it (``paper`` or ``reconstruction``), its word and number."""

    part: str
    stated: str
    word: str
    deciding: str

    @property
    def cell(self) -> str:
        return f"{self.word} ({self.deciding})" if self.deciding else self.word


def part_verdicts(claim: Claim, tests: tuple) -> tuple[PartVerdict, ...]:
    """The verdict of each of ``claim``'s parts from the claim's ``tests`` (a Finding's comparisons, each
    naming its part); () for a claim that names no parts or made no test."""
    if not claim.parts or not tests:
        return ()
    threshold = ALPHA / len(tests)
    found = []
    for part in claim.parts:
        mine = [test for test in tests if test.part == part.part]
        found.append(PartVerdict(part.part, part.stated, *judged(claim, mine, threshold)))
    return tuple(found)


def judged(claim: Claim, tests: list, threshold: float) -> tuple[str, str]:
    """(word, deciding number) of one part's ``tests``."""
    if not tests:
        return UNDECIDED, "no results"
    reverse = min(tests, key=lambda test: test.p_reverse)
    if reverse.p_reverse <= threshold:
        return CONTRADICTED, with_error(reverse.p_reverse, getattr(reverse, "draws", (0, 0))[1])
    families: dict[str, list] = {}
    for test in tests:
        families.setdefault(group(test, claim), []).append(test)
    best = [min(family, key=lambda test: test.p) for family in families.values()]
    held = [holds(claim, family) for family in families.values()]
    if all(held):
        return REPRODUCED, f"p <= {max(test.p for test in best):.2g}"
    weakest = max((test for test, ok in zip(best, held, strict=False) if not ok), key=lambda test: test.p)
    return UNDECIDED, f"p = {weakest.p:.2g}"


def holds(claim: Claim, family: list) -> bool:
    """Whether one comparison (its tests over the judged lengths) holds as the claim's correction says."""
    if claim.correction == "holm":
        return all(test.significant for test in family)
    return min(test.p for test in family) <= ALPHA / len(family)

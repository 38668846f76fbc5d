"""One row of the findings table: a claim judged, with the comparisons it was judged by."""

from __future__ import annotations

from dataclasses import dataclass, field

from .significance import UNDECIDED

COLUMNS = ("finding", "claim", "criterion", "numbers", "verdict")
NOT_CONFIGURED_CRITERION = "-"  # the criterion column of a claim the config runs nothing for


@dataclass(frozen=True)
class Finding:
    """One row of the findings table, with the comparisons it was judged by (none for a test over targets)."""

    finding: str
    claim: str
    criterion: str
    numbers: str
    verdict: str
    comparisons: tuple = field(default=(), compare=False)


def undecided(why: str) -> str:
    return f"{UNDECIDED}: {why}"


def not_judged(name: str, claim: str, why: str) -> Finding:
    """The row of a claim the config runs nothing for (``why``)."""
    return Finding(name, claim, NOT_CONFIGURED_CRITERION, why, undecided(f"no results: {why}"))

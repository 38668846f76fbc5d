"""One row of the findings table: a claim judged, with the comparisons it was judged by."""

from __future__ import annotations

from dataclasses import dataclass, field

from .verdicts import UNDECIDED

COLUMNS = ("finding", "claim", "criterion", "numbers", "verdict")
NO_RESULTS = "no results: "  # after "undecided: ", the verdict of a claim its runs give nothing to judge
NOT_CONFIGURED_CRITERION = "-"  # the criterion column of a claim the config runs nothing for
POST_HOC = "†"  # after a cell whose claim was committed after the results it judges, and under its table:
POST_HOC_NOTE = f"{POST_HOC} post hoc: the criterion was committed after the results it judges (shown, not a verdict)."
READING = "‡"  # after a part that is the reconstruction's reading of the paper, and under its table:
READING_NOTE = f"{READING} the reconstruction's reading of the paper, not a claim it states (docs/reconstruction.md)."
FRAGILE = "◊"  # after a cell whose verdict holds in fewer than all but one leave-one-seed-out (.stability)
REHEARSAL = "rehearsal, not evidence"  # a verdict of a config whose runs rehearse the code path (its ``rehearsal``)


@dataclass(frozen=True)
class Finding:
    """One row of the findings table, with the comparisons it was judged by (none for a test over targets)."""

    finding: str
    claim: str
    criterion: str
    numbers: str
    verdict: str
    comparisons: tuple = field(default=(), compare=False)
    deciding: str = field(default="", compare=False)  # the number that decided it, or what is missing
    written: str = field(default="", compare=False)  # whether its claim predates its results (.preregistration)
    post_hoc: bool = field(default=False, compare=False)  # its claim does not: shown, not a verdict
    rehearsal: bool = field(default=False, compare=False)  # its runs rehearse the code path (:func:`rehearsed`)
    parts: tuple = field(default=(), compare=False)  # each named part's verdict (.part_verdicts.PartVerdict)
    stability: object = field(default=None, compare=False)  # a decided verdict's leave-one-seed-out (.stability)

    @property
    def word(self) -> str:
        """reproduced, contradicted or undecided (a rehearsal's: what the code path gives)."""
        return self.verdict.removeprefix(f"{REHEARSAL}: the code path gives ").split(":", 1)[0]

    @property
    def cell(self) -> str:
        """The verdict and its deciding number, for a table at a glance: "undecided (~10 seeds per run)";
        :data:`POST_HOC` after it where its claim was written after its results; a rehearsal's
        "rehearsal, not evidence (the code path: reproduced, p = 0.049)"."""
        weight = f", {self.stability}" if self.stability is not None else ""
        shown = f"{self.word} ({self.deciding}{weight})" if self.deciding else self.word
        if self.stability is not None and self.stability.fragile:
            shown += f" {FRAGILE}"
        if self.rehearsal:
            shown = f"{REHEARSAL} (the code path: {self.word}{f', {self.deciding}' if self.deciding else ''})"
        return f"{shown} {POST_HOC}" if self.post_hoc else shown


def part_rows(row: Finding) -> list[tuple[str, str]]:
    """(the part's row name, its cell) for each named part of ``row``: ``F1r (b) ‡``, ``contradicted (p =
    0.0008 ± 0.0001)``."""
    return [(f"{row.finding} {part.part}" + (f" {READING}" if part.stated == "reconstruction" else ""), part.cell)
            for part in row.parts]


def rehearsed(row: Finding) -> Finding:
    """``row`` as a rehearsal's (the config's ``rehearsal``): its verdict labelled "rehearsal, not
    evidence", what the code path gives after it, so that it never reads reproduced or contradicted alone."""
    from dataclasses import replace

    if row.rehearsal:
        return row
    return replace(row, verdict=f"{REHEARSAL}: the code path gives {row.verdict}", rehearsal=True)


def undecided(why: str) -> str:
    return f"{UNDECIDED}: {why}"


def not_judged(name: str, claim: str, why: str) -> Finding:
    """The row of a claim the config runs nothing for (``why``)."""
    return Finding(name, claim, NOT_CONFIGURED_CRITERION, why, undecided(f"{NO_RESULTS}{why}"))

"""The parameters of the influential-token analysis (Figure 4), :class:`InfluenceConfig`, each field's
default and rule declared once (the config's ``language.analysis`` block is generated from them),
and the analysis' error. Torch- and pandera-free: the config check reads it."""

from dataclasses import dataclass

from .model_config import POSITIVE_INT, Declared, check_declared, declared

SELECTIONS = ("greedy", "topk", "greedy_kl")
SCREENED_OUT = "screened_out"  # the column of a screened analysis's table marking the targets it did not analyse


class InfluenceError(ValueError):
    """Targets or inputs the influential-token analysis cannot work with."""


@dataclass(frozen=True)
class InfluenceConfig(Declared):
    """Parameters of the analysis; validated on construction (errors name the field)."""

    unknown_key_error = InfluenceError

    context: int = declared(POSITIVE_INT, "Lbar: tokens before each target (the language section's context)",
                            config=False)
    local: int = declared(POSITIVE_INT, "L: the local window, the last L of those tokens (the section's local)",
                          config=False)
    k_max: int = declared(POSITIVE_INT, "influential tokens chosen per target", 8)
    selection: str = declared({"enum": list(SELECTIONS)}, "greedy: each next token the one that lowers the loss "
                              "most given those chosen; topk: the k tokens with the largest single-token gains; "
                              "greedy_kl: each next token the one that brings the next-token distribution closest "
                              "to the full context's (KL over the vocabulary), never looking at the target token, "
                              "so no winner's curse; the same forwards as greedy", "greedy")
    n_targets: int = declared(POSITIVE_INT, "targets drawn from the held-out documents", 128)
    seed: int = declared({"type": "integer", "minimum": 0}, "seed of the target draw", 0)
    leave_out: dict | None = declared(
        {"type": ["object", "null"], "additionalProperties": False, "required": ["seed", "n_targets"],
         "properties": {"seed": {"type": "integer", "minimum": 0}, "n_targets": POSITIVE_INT}},
        "an earlier draw, {seed, n_targets} (a pilot's), whose targets this draw leaves out, so that its "
        "targets are fresh; null: none", None, written=False)
    batch_size: int = declared(POSITIVE_INT, "sequences per forward pass (speed and memory only)", 64)
    null_draws: int = declared(POSITIVE_INT, "random draws of k far tokens per target (Figure 4's random baseline)",
                               4)
    screen_gain: float | None = declared(
        {"type": ["number", "null"], "minimum": 0},
        "screening: only the targets whose gain L_short - L_long exceeds this (nats) are analysed (the greedy "
        "search and the nulls); the others keep their L_long and L_short, marked screened out. Set from the "
        "figure's gain threshold where the config's analysis.screen is true; null: every target analysed",
        None, config=False)

    def __post_init__(self) -> None:
        check_declared(self, lambda field, value, why: InfluenceError(f"InfluenceConfig.{field}={value!r}: {why}"))
        if self.local >= self.context:
            raise InfluenceError(f"InfluenceConfig.local={self.local!r}: the local window L must be shorter than the "
                                 f"context Lbar={self.context} (there must be far tokens to choose from)")
        if self.k_max > self.far:
            raise InfluenceError(f"InfluenceConfig.k_max={self.k_max!r}: cannot choose more than the {self.far} far "
                                 f"tokens (Lbar - L = {self.context} - {self.local})")

    @property
    def far(self) -> int:
        """Number of far tokens, Lbar - L: the positions 0..far-1 that can be chosen."""
        return self.context - self.local


def part_span(n_targets: int, batch_size: int, index: int, of: int) -> slice:
    """The targets (rows of the whole draw) of part ``index`` (1..``of``) of a draw of ``n_targets``
    analysed in ``of`` parts: consecutive groups of ``batch_size`` targets (the groups the analysis of
    the whole draw works in, so a part's L_long and L_short come from the very forwards of the whole),
    as evenly shared as whole groups allow. The parts, in order, cover the draw end to end."""
    groups = -(-n_targets // batch_size)
    if not 1 <= of <= groups:
        raise InfluenceError(f"parts={of}: a draw of {n_targets} targets in groups of batch_size={batch_size} has "
                             f"{groups} group(s), and each part needs one at least (1 to {groups} parts)")
    if not 1 <= index <= of:
        raise InfluenceError(f"part index={index}: the parts of this draw are 1 to {of}")
    start, stop = ((i * groups // of) * batch_size for i in (index - 1, index))
    return slice(start, min(stop, n_targets))


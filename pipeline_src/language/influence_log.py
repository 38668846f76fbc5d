"""The influence analysis's log, read back: the analysis prints a progress line at least once a minute
(``influential tokens (part 7 of 8: ...): 12/39 after 900 s; targets 13 to 24: 1,536 sequences scored``,
:func:`pipeline_src.language.analysis.analyse`), and, screened, a line when the screening ends (``...
screened 96 drawn targets: 57 (59%) gain at most 0.1 nats and are screened out; 39 to analyse``).
``lengthgen status`` reads the last of them to say how far a running analysis has got and how long it
has left. Torch-free; not imported by the analysis, so no job's code digest holds it."""

from __future__ import annotations

import re
from pathlib import Path

from ..config.influence_config import InfluenceConfig

LINE = re.compile(r"^influential tokens(?: \(part [^)]*\))?: (\d+)/(\d+) after (\d+) s(?:; (.*))?$")
SCREENED = re.compile(r"screened (\d+) drawn targets: (\d+) \(")
SCORED = re.compile(r"targets \d+ to \d+: ([\d,]+) sequences scored")


def sequences_per_target(cfg: InfluenceConfig) -> int:
    """The sequences the search and the nulls score for one analysed target (its L_long and L_short
    aside): the own far tokens' and another document's, each by ``cfg.selection``, and the random
    draws at every k."""
    far, k_max = cfg.far, cfg.k_max
    search = sum(far - k for k in range(k_max)) if cfg.selection != "topk" else far + k_max - 1
    return 2 * search + cfg.null_draws * k_max


def progress(log: Path, cfg: InfluenceConfig) -> str:
    """How far the analysis writing ``log`` got, from its last progress line: ``12 of 39 analysed after
    900 s (57 of 96 drawn screened out); about 1,300 s left`` ("" without a progress line)."""
    try:
        lines = Path(log).read_text(errors="replace").splitlines()  # a line a minute: small
    except OSError:
        return ""
    found = [match for text in lines if (match := LINE.match(text.strip()))]
    if not found:
        return ""
    screen = next((SCREENED.search(match.group(4) or "") for match in reversed(found)
                   if SCREENED.search(match.group(4) or "")), None)
    last = found[-1]
    done, total, seconds = (int(value) for value in last.groups()[:3])
    detail = last.group(4) or ""
    if detail.startswith("screening"):
        return f"screening {total} drawn targets after {seconds} s"
    screened = f" ({screen.group(2)} of {screen.group(1)} drawn screened out)" if screen else ""
    text = f"{done} of {total} analysed after {seconds} s{screened}"
    scored = SCORED.search(detail)
    per_target = sequences_per_target(cfg)
    work = done * per_target + (int(scored.group(1).replace(",", "")) if scored else 0)
    start = _screening_seconds(found) if screen else 0
    if work and seconds > start:
        left = (total * per_target - work) * (seconds - start) / work
        text += f"; about {max(left, 0):,.0f} s left"
    return text


def _screening_seconds(found: list[re.Match]) -> int:
    """When the screening ended (the seconds of the line that says so)."""
    return next(int(match.group(3)) for match in found if SCREENED.search(match.group(4) or ""))

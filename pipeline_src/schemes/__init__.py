"""The registry of positional schemes (SPEC 3): what each one means, without the tensor code.

Kept free of torch so that the workflow can validate a config cheaply; the transforms that produce
the position IDs live in :mod:`pipeline_src.schemes.transforms`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scheme:
    name: str
    encoding: str  # the model's ModelConfig.position_encoding: "rope", "abs" or "none"
    train_transform: str  # "identity", "pose", "shift" or "offset"
    summary: str
    coupled: bool = False  # base IDs: the task's coupled IDs (True) or 0..T-1 (False)
    predicts_positions: bool = False  # a position head learns the next ID; decoding feeds it back


SCHEMES = {
    s.name: s
    for s in (
        Scheme("nope", "none", "identity", "no positional information (causal mask only)"),
        Scheme("rope", "rope", "identity", "rotary embedding on the task's IDs"),
        Scheme("abs", "abs", "identity", "learned absolute table on the task's IDs"),
        Scheme("rope_pose", "rope", "pose", "rotary; training IDs skip ahead in chunks (PoSE)"),
        Scheme("abs_shift", "abs", "shift", "learned absolute table; training IDs shifted by a random offset"),
        Scheme("coupled", "abs", "offset", "learned absolute table on the task's coupled IDs (oracle IDs "
               "at evaluation); training IDs after <bos> offset at random", coupled=True),
        Scheme("coupled_rope", "rope", "identity", "rotary on the task's coupled IDs (oracle IDs at "
               "evaluation): only ID differences matter, so no training offset", coupled=True),
        Scheme("ppc", "abs", "offset", "as coupled, plus a position head predicting the next token's ID; "
               "evaluation feeds back the predicted IDs of the response", coupled=True,
               predicts_positions=True),
    )
}


def get_scheme(name: str) -> Scheme:
    if name not in SCHEMES:
        raise KeyError(f"unknown positional scheme {name!r}; known: {sorted(SCHEMES)}")
    return SCHEMES[name]



"""Scheme ``nope``: no positional information; the decoder sees only the causal mask."""

from __future__ import annotations

from .scheme import Encoding, Scheme, identity_ids


class NoPositions(Encoding):
    """No hook: position IDs are ignored (not even checked)."""

    reads_positions = False


ENCODING = NoPositions("none", "no positional signal; position IDs are ignored")

SCHEME = Scheme(name="nope", summary="no positional information (causal mask only)", encoding=ENCODING,
                train_transform=identity_ids, module=__name__, colour="tab:gray")

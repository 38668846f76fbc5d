"""Scheme ``ppc``: Predictive Position Coupling. As ``coupled``, plus a position head that learns the
next token's ID; evaluation feeds the response's predicted IDs back instead of the oracle's."""

from __future__ import annotations

from . import abs as absolute
from .coupled import offset_ids
from .scheme import Scheme

SCHEME = Scheme(name="ppc", summary="as coupled, plus a position head predicting the next token's ID; "
                "evaluation feeds back the predicted IDs of the response", encoding=absolute.ENCODING,
                train_transform=offset_ids, module=__name__, coupled=True, predicts_positions=True, colour="tab:red")

"""Scheme ``coupled_rope``: rotary on the task's coupled IDs (oracle IDs at evaluation). Rotary sees
only ID differences, so training needs no random offset."""

from __future__ import annotations

from . import rope
from .scheme import Scheme, identity_ids

SCHEME = Scheme(name="coupled_rope", summary="rotary on the task's coupled IDs (oracle IDs at evaluation): "
                "only ID differences matter, so no training offset", encoding=rope.ENCODING,
                train_transform=identity_ids, module=__name__, coupled=True, colour="tab:olive")

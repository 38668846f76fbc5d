"""What a positional scheme is (docs/tasks.md): a :class:`Scheme` pairs an :class:`Encoding` (how the
decoder sees position IDs) with a training transform (how the IDs it trains on differ from the
base IDs).

This module, like every module of :mod:`pipeline_src.schemes`, imports no torch at import time:
the workflow imports the registry while it parses the Snakefile and checks a config, and importing
torch would cost it more than a second for code it never runs there. Tensor code imports torch
inside the functions and methods that run it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, ClassVar, Protocol

if TYPE_CHECKING:
    import torch
    from torch import nn


class ModelParams(Protocol):
    """What an encoding reads of the decoder's hyper-parameters. They are a
    :class:`pipeline_src.config.model_config.ModelConfig`, which stands above the schemes: it checks its
    fields through their registry."""

    @property
    def d_model(self) -> int: ...

    @property
    def n_head(self) -> int: ...

    @property
    def head_dim(self) -> int: ...

    @property
    def max_positions(self) -> int: ...

    @property
    def rotary_dim(self) -> int: ...

    @property
    def rotary_base(self) -> float: ...

    def require(self, ok: bool, field: str, why: str) -> None:
        """Raise the config's error naming ``field`` and its value unless ``ok``."""


@dataclass(frozen=True)
class Encoding:
    """How the decoder sees position IDs, through three hooks; the base class uses none of them.

    * :meth:`input_table`: a learned table of position vectors, added to the token embedding;
    * :meth:`rotation`: a rotation of the queries and keys of every attention layer;
    * :meth:`attention_bias`: an additive attention bias from the query and key position IDs.

    ``name`` is the value of ``ModelConfig.position_encoding`` (saved in ``model.json``).
    Subclasses set the class attributes and override the hooks they use.
    """

    name: str
    summary: str
    reads_positions: ClassVar[bool] = True  # False: position IDs are ignored, not even checked
    learned_table: ClassVar[bool] = False  # True: IDs index a table of ModelConfig.max_positions rows

    def check(self, cfg: ModelParams) -> None:
        """Reject a config this encoding cannot work with, via ``cfg.require``."""

    def input_table(self, cfg: ModelParams) -> nn.Embedding | None:
        """The table whose row ``id`` is added to the embedding of a token at ``id``, or None."""
        return None

    def rotation(self, cfg: ModelParams,
                 position_ids: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor] | None:
        """A function rotating queries or keys [B, H, T, head_dim] of tokens at ``position_ids``
        [B, T], or None."""
        return None

    def attention_bias(self, cfg: ModelParams, query_ids: torch.Tensor,
                       key_ids: torch.Tensor) -> torch.Tensor | None:
        """An additive bias [B, n_head, T_query, T_key] on the attention scores of queries at
        ``query_ids`` [B, T_query] for keys at ``key_ids`` [B, T_key], or None."""
        return None


# A training transform: ``transform(base, lengths, target_length=..., pose_chunks=..., generator=...)``
# -> IDs [B, T]. ``base`` [B, T] holds the base IDs of a batch, of which only the first
# ``lengths[b]`` of row b are real; the keywords are the task's ``positions`` options and the training
# generator (every random draw comes from it). A transform names the options it uses and takes
# the rest as ``**options``.
Transform = Callable[..., "torch.Tensor"]


def check_below_target(largest_id: int, target_length: int) -> None:
    """Every training ID is below ``target_length``: raise ValueError if ``largest_id`` (the largest
    ID of a training sequence before a transform adds its offsets) is not. The transforms that
    draw offsets up to the target length check each batch with it; the config check checks the
    longest training sample of the config with it."""
    if largest_id >= target_length:
        raise ValueError(f"a training sequence has a position ID {largest_id} >= the target length {target_length}")


def identity_ids(base: torch.Tensor, lengths: torch.Tensor, **options) -> torch.Tensor:
    """Train on the base IDs unchanged."""
    return base


@dataclass(frozen=True)
class Scheme:
    """One positional scheme, declared as ``SCHEME`` by the module ``module`` (its dotted name).

    ``coupled``: the base IDs are the task's coupled IDs (else 0..T-1).
    ``predicts_positions``: a position head learns the next token's ID, and decoding feeds the
    predicted IDs of the response back (Predictive Position Coupling).
    ``colour``: its lines in the figures (a matplotlib colour; None: one from a cycle).
    Evaluation uses the base IDs unchanged.
    """

    name: str
    summary: str
    encoding: Encoding
    train_transform: Transform
    module: str
    coupled: bool = False
    predicts_positions: bool = False
    colour: str | None = None

    def train_ids(self, base: torch.Tensor, lengths: torch.Tensor, *, target_length: int, pose_chunks: int,
                  generator: torch.Generator) -> torch.Tensor:
        """Training-time IDs of one batch (see :data:`Transform`)."""
        return self.train_transform(base, lengths, target_length=target_length, pose_chunks=pose_chunks,
                                    generator=generator)

    def eval_ids(self, base: torch.Tensor) -> torch.Tensor:
        """Evaluation-time IDs of the prompt (and, for coupled schemes, the oracle IDs of the response)."""
        return base

    @property
    def code_modules(self) -> tuple[str, ...]:
        """Dotted names of the modules that define its behaviour: its own, its encoding class's and
        its training transform's (each once)."""
        found = (self.module, type(self.encoding).__module__, self.train_transform.__module__)
        return tuple(dict.fromkeys(found))

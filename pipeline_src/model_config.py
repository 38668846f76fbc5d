"""The decoder's hyper-parameters, :class:`ModelConfig`, and every rule they must satisfy.

Free of torch, so that the config check builds the exact ``ModelConfig`` a training job will build
(:func:`model_config`) and reports a rule it breaks before any job starts, naming the config field;
the decoder (:mod:`pipeline_src.model`), the trainer and the evaluation check the same rules at run
time through the same objects.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .schemes import ENCODINGS, get_encoding, get_scheme

# Values of ModelConfig.attention_scale: the attention logits as they are, or scalable softmax
# (each query's content logits times a learned s_h * ln(number of keys it may attend to)).
ATTENTION_SCALES = ("none", "log_length")


class ModelConfigError(ValueError):
    """A field of a :class:`ModelConfig` that breaks a rule: ``field``, its ``value`` and ``why``."""

    def __init__(self, field: str, value, why: str):
        super().__init__(f"ModelConfig.{field}={value!r}: {why}")
        self.field, self.value, self.why = field, value, why


@dataclass(frozen=True)
class ModelConfig:
    """Hyper-parameters of :class:`pipeline_src.model.Decoder`; validated on construction (a broken
    rule is a :class:`ModelConfigError`)."""

    # The defaults are config/config.yaml's (defaults.model; tests/test_defaults.py holds them equal).
    vocab_size: int
    d_model: int = 64
    n_layer: int = 2
    n_head: int = 4
    d_mlp: int | None = None  # None -> 4 * d_model
    position_encoding: str = "rope"
    rotary_pct: float = 1.0
    rotary_base: float = 10000.0
    max_positions: int = 256
    parallel_residual: bool = True
    layer_norm_eps: float = 1e-5
    position_head: bool = False
    attention_scale: str = "none"  # one of ATTENTION_SCALES; see pipeline_src.model.SelfAttention

    def __post_init__(self) -> None:
        require = self.require
        for name in ("vocab_size", "d_model", "n_layer", "n_head", "max_positions"):
            value = getattr(self, name)
            require(isinstance(value, int) and not isinstance(value, bool) and value > 0, name, "must be a positive int")
        require(self.d_mlp is None or (isinstance(self.d_mlp, int) and self.d_mlp > 0), "d_mlp", "must be None or a positive int")
        require(self.d_model % self.n_head == 0, "d_model", f"must be divisible by n_head={self.n_head}")
        require(self.position_encoding in ENCODINGS, "position_encoding", f"must be one of {sorted(ENCODINGS)}")
        require(0.0 < self.rotary_pct <= 1.0, "rotary_pct", "must lie in (0, 1]")
        require(self.rotary_base > 0, "rotary_base", "must be positive")
        get_encoding(self.position_encoding).check(self)
        require(self.layer_norm_eps > 0, "layer_norm_eps", "must be positive")
        require(isinstance(self.parallel_residual, bool), "parallel_residual", "must be a bool")
        require(isinstance(self.position_head, bool), "position_head", "must be a bool")
        require(self.attention_scale in ATTENTION_SCALES, "attention_scale", f"must be one of {list(ATTENTION_SCALES)}")

    def require(self, ok: bool, field: str, why: str) -> None:
        """Raise :class:`ModelConfigError` naming ``field`` and its value unless ``ok``."""
        if not ok:
            raise ModelConfigError(field, getattr(self, field), why)

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_head

    @property
    def mlp_dim(self) -> int:
        """Hidden width of the MLP (``d_mlp``, defaulting to ``4 * d_model``)."""
        return self.d_mlp if self.d_mlp is not None else 4 * self.d_model

    @property
    def rotary_dim(self) -> int:
        """Number of leading dims of each head that rotate, rounded down to even."""
        return int(self.head_dim * self.rotary_pct) // 2 * 2

    @property
    def position_limit(self) -> int | None:
        """The smallest position ID the model cannot represent: ``max_positions`` where IDs index a
        table of that many rows (the encoding's learned input table, or the position head, which
        predicts the next token's ID), None where every ID >= 0 works."""
        if get_encoding(self.position_encoding).learned_table or self.position_head:
            return self.max_positions
        return None

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "ModelConfig":
        known = {f.name for f in dataclasses.fields(cls)}
        for key in d:
            if key not in known:
                raise ValueError(f"unknown ModelConfig field {key!r}")
        return cls(**d)


def model_config(spec: dict, vocab_size: int) -> ModelConfig:
    """The ModelConfig of the training spec ``spec``: its ``model`` block with the encoding and the
    position head of its scheme. Also checks that ``positions.target_length`` (training IDs stay below
    it) fits the model's :attr:`~ModelConfig.position_limit`. A ValueError names the spec's field
    (``model.d_model=...``, ``model.max_positions=...``)."""
    scheme = get_scheme(spec["scheme"])
    try:
        cfg = ModelConfig(vocab_size=vocab_size, position_encoding=scheme.encoding.name,
                          position_head=scheme.predicts_positions, **spec["model"])
    except ModelConfigError as err:
        field = f"model.{err.field}" if err.field in spec["model"] else f"ModelConfig.{err.field}"
        raise ValueError(f"{field}={err.value!r}: {err.why}") from None
    target = spec["positions"]["target_length"]
    if cfg.position_limit is not None and target > cfg.position_limit:
        raise ValueError(f"model.max_positions={cfg.max_positions} must be >= positions.target_length="
                         f"{target} for scheme {scheme.name}")
    return cfg

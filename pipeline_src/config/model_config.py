"""The decoder's hyper-parameters, :class:`ModelConfig`: each field's default and rule written once.

Each field declares its default and its rule (a JSON-schema fragment) here. The config's ``model``
block is generated from them (:func:`block_schema`, read by :mod:`pipeline_src.config.schema`), so
a config that leaves a field out gets this default, and a field's rule is checked the same way when
a config is loaded and when a ``ModelConfig`` is built. Free of torch, so that the config check
builds the exact ``ModelConfig`` a training job will build (:func:`model_config`) and reports a
rule it breaks before any job starts, naming the config field; the decoder
(:mod:`pipeline_src.model`), the trainer and the evaluation check the same rules at run time.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

from ..schemes import ENCODINGS, get_encoding, get_scheme

# Values of ModelConfig.attention_scale: the attention logits as they are, or scalable softmax.
ATTENTION_SCALES = ("none", "log_length")
POSITIVE_INT = {"type": "integer", "minimum": 1}


def declared(rule: dict, doc: str, default=dataclasses.MISSING, config: bool = True, written: bool = True):
    """A field of a parameter dataclass (:class:`ModelConfig`, the influence analysis's) with its
    ``rule`` (a JSON-schema fragment), ``doc`` and ``default`` (none: the caller always gives it).
    ``config``: set in the config's block of that dataclass (else the code sets it); ``written``: the
    config check writes its default into every job's spec (else an absent field means the default)."""
    return dataclasses.field(default=default, metadata={"rule": rule, "doc": doc, "config": config, "written": written})


def check_declared(instance, error) -> None:
    """Raise ``error(field, value, why)`` for the first field of ``instance`` that breaks its rule."""
    for field in dataclasses.fields(instance):
        why = broken(field.metadata["rule"], getattr(instance, field.name))
        if why:
            raise error(field.name, getattr(instance, field.name), why)


def block_schema(cls) -> dict:
    """The JSON schema of a config block that sets the ``config`` fields of ``cls``: each with its
    rule, its description and (where the config check writes it into each job's spec) its default."""
    properties = {}
    for field in dataclasses.fields(cls):
        if field.metadata["config"]:
            default = {"default": field.default} if field.metadata["written"] else {}
            properties[field.name] = {**field.metadata["rule"], "description": field.metadata["doc"], **default}
    return {"type": "object", "additionalProperties": False, "properties": properties}


class Declared:
    """What a parameter dataclass of declared fields (:func:`declared`) does with a plain dict: its
    ``to_dict`` and a ``from_dict`` that names an unknown key (raising ``unknown_key_error``)."""

    unknown_key_error = ValueError

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict):
        known = {f.name for f in dataclasses.fields(cls)}
        for key in d:
            if key not in known:
                raise cls.unknown_key_error(f"unknown {cls.__name__} field {key!r}; known: {sorted(known)}")
        return cls(**d)


class ModelConfigError(ValueError):
    """A field of a :class:`ModelConfig` that breaks a rule: ``field``, its ``value`` and ``why``."""

    def __init__(self, field: str, value, why: str):
        super().__init__(f"ModelConfig.{field}={value!r}: {why}")
        self.field, self.value, self.why = field, value, why


@dataclass(frozen=True)
class ModelConfig(Declared):
    """Hyper-parameters of :class:`pipeline_src.model.Decoder`; validated on construction (a broken
    rule is a :class:`ModelConfigError`)."""

    vocab_size: int = declared(POSITIVE_INT, "tokens of the task's vocabulary", config=False)
    d_model: int = declared(POSITIVE_INT, "width of the residual stream", 64)
    n_layer: int = declared(POSITIVE_INT, "decoder layers", 2)
    n_head: int = declared(POSITIVE_INT, "attention heads per layer (d_model must be divisible by it)", 4)
    d_mlp: int | None = declared({"type": ["integer", "null"], "minimum": 1}, "MLP width; null: 4 * d_model", None)
    position_encoding: str = declared({"enum": sorted(ENCODINGS)}, "how the decoder sees position IDs", "rope",
                                      config=False)
    rotary_pct: float = declared({"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                                 "fraction of each head's dims that rotate", 1.0)
    rotary_base: float = declared({"type": "number", "exclusiveMinimum": 0}, "the rotary base frequency", 10000.0)
    max_positions: int = declared(POSITIVE_INT, "P_max: rows of a learned position table; every ID must be below it",
                                  256)
    parallel_residual: bool = declared({"type": "boolean"},
                                       "true: GPT-NeoX's parallel attention and MLP; false: the sequential residual",
                                       True)
    layer_norm_eps: float = declared({"type": "number", "exclusiveMinimum": 0}, "LayerNorm epsilon", 1e-5,
                                     config=False)
    position_head: bool = declared({"type": "boolean"}, "a head predicting the next position ID", False, config=False)
    attention_scale: str = declared(
        {"enum": list(ATTENTION_SCALES)},
        "none: attention as it is; log_length (scalable softmax): each query's content logits q.k/sqrt(d) are "
        "multiplied by s_h * ln(n), n the number of keys it may attend to, s_h a learned factor per head "
        "(initially 1/ln 10); an encoding's attention bias is not scaled (pipeline_src.model.SelfAttention)",
        "none", written=False)

    def __post_init__(self) -> None:
        check_declared(self, ModelConfigError)
        self.require(self.d_model % self.n_head == 0, "d_model", f"must be divisible by n_head={self.n_head}")
        get_encoding(self.position_encoding).check(self)

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


def broken(rule: dict, value) -> str:
    """Why ``value`` breaks ``rule`` (a JSON-schema fragment; integers are Python ints, not bools or
    floats), or "" where it keeps it."""
    if isinstance(value, (int, float, str, type(None))):  # a bool is an int; each kept by its type
        return _broken_scalar(repr(rule), type(value), value)
    return _why(repr(rule), value)


@functools.lru_cache(maxsize=4096)  # the config check builds a ModelConfig per cell: the same few values
def _broken_scalar(rule: str, kind: type, value) -> str:
    return _why(rule, value)


def _why(rule: str, value) -> str:
    error = next(iter(_validator(rule).iter_errors(value)), None)
    return "" if error is None else error.message


@functools.cache
def _validator(rule: str):
    import ast

    import jsonschema

    strict = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine_many({
        "integer": lambda _, value: isinstance(value, int) and not isinstance(value, bool),
        "number": lambda _, value: isinstance(value, (int, float)) and not isinstance(value, bool)})
    validator = jsonschema.validators.extend(jsonschema.Draft202012Validator, type_checker=strict)
    return validator(ast.literal_eval(rule))

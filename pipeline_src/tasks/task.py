"""What a task declares: one :class:`Task` per task module, found by the registry (``tasks/__init__``).

A task module owns everything task-specific: its vocabulary, its pure seeded generators (which
write the coupled position IDs), its Parquet schema, its length measure and evaluation cells, the
shape of its config section, its headline metric and its figure. Everything else (the config's
JSON schema, the job specs, the code digests, ``lengthgen status``, the figures and the report) is
derived from these declarations. Kept free of heavy imports: the Snakefile reads it at parse time.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, field
from typing import Callable

from .dependency import Dependencies
from .vocab import Vocab

# train.steps of a task trained on k_train (config/README.md)
STEPS_BY_K_TRAIN = ("Optimizer steps: one number for every K_train, or a map from each K_train trained to its "
                    "steps (K_train not trained may be named too). A layer writing one number replaces the map.")


@dataclass(frozen=True)
class Layout:
    """How a task's config section maps to training variants and generator params.

    ``by_k_train``: one variant ``k{K}`` per value of the section's ``k_train``, every scheme of
    ``schemes`` trained on each (the generators get ``k_train``); otherwise ``runs`` maps each of
    ``variants`` to its schemes, and ``variant_params(variant)`` gives the generator params the
    variant sets (e.g. whether the response is a scratchpad); a variant that changes the response
    has its own evaluation set.
    ``data_fields``: fields of the section's ``data`` block passed to the training generator (besides
    ``n_samples`` = ``data.n_train``); ``eval_data_fields``: those the evaluation generator also needs.
    ``data_schema``: the JSON schema of the ``data`` block (every field documented).
    """

    by_k_train: bool
    data_fields: tuple[str, ...]
    data_schema: dict
    eval_data_fields: tuple[str, ...] = ()
    variants: tuple[str, ...] = ()
    variant_params: Callable[[str], dict] | None = None

    def section_schema(self, defs: dict) -> dict:
        """The JSON schema of the task's config section, from the config schema's shared shapes
        ``defs``: a K_train task's (``k_task``) or one of named runs (``n_task``, its runs limited to
        ``variants``), with the task's own ``data`` block (a fresh copy)."""
        section = copy.deepcopy(defs["k_task" if self.by_k_train else "n_task"])
        section["properties"]["data"] = copy.deepcopy(self.data_schema)
        if self.by_k_train:  # its train.steps: one number, or one per K_train
            section["properties"]["train"] = train = copy.deepcopy(defs["train"])
            train["properties"]["steps"] = {"description": STEPS_BY_K_TRAIN, "oneOf": [
                train["properties"]["steps"], {"type": "object", "minProperties": 1,
                                               "additionalProperties": train["properties"]["steps"]}]}
        else:
            section["properties"]["runs"]["propertyNames"] = {"enum": list(self.variants)}
        return section

    def check_variants(self, section: dict) -> None:
        """A ValueError naming the field when ``section`` names a variant the task does not have."""
        for variant in ([] if self.by_k_train else section["runs"]):
            if variant not in self.variants:
                raise ValueError(f"runs names variant {variant!r}; the task has {list(self.variants)}")

    def variants_of(self, section: dict) -> dict[str, list[str]]:
        """Every training variant of the task's config ``section``, with the schemes trained on it."""
        if self.by_k_train:
            return {f"k{k}": list(section["schemes"]) for k in sorted(section["k_train"])}
        return {variant: list(schemes) for variant, schemes in section["runs"].items()}

    @property
    def variants_field(self) -> str:
        """The section's field that lists its variants (named in errors)."""
        return "k_train" if self.by_k_train else "runs"

    def schemes_field(self, variant: str) -> str:
        """The section's field that lists the schemes trained on ``variant`` (named in errors)."""
        return "schemes" if self.by_k_train else f"runs.{variant}"

    def as_configured(self, variant: str) -> str:
        """``variant`` as the config writes it: K of a ``k{K}`` variant, a run's own name."""
        return variant[1:] if self.by_k_train else variant

    def k_train(self, variant: str) -> int | None:
        """The K_train of a ``k{K}`` variant (None for a task whose variants are named runs)."""
        return int(self.as_configured(variant)) if self.by_k_train else None

    def params(self, variant: str) -> dict:
        """The generator params ``variant`` sets."""
        if self.by_k_train:
            return {"k_train": self.k_train(variant)}
        return self.variant_params(variant) if self.variant_params else {}

    def eval_name(self, variant: str) -> str:
        """File stem of the evaluation set ``variant`` is scored on: shared by the K_train variants;
        one per named variant, since a variant may change the response (scratchpad or direct)."""
        return "eval" if self.by_k_train else f"eval_{variant}"

    def eval_params(self, section: dict, variant: str) -> dict:
        """What the evaluation generator takes beyond lengths, samples and ``eval_data_fields``: the
        k_test grid of a K_train task, the variant's params otherwise."""
        return self.figure_cells(section) if self.by_k_train else self.params(variant)

    def figure_cells(self, section: dict) -> dict:
        """What a figure's spec adds besides lengths: the k_test grid of a K_train task."""
        return {"k_test": sorted(section["eval"]["k_test"])} if self.by_k_train else {}


@dataclass(frozen=True)
class Figure:
    """A task's figure: its name (``results/figures/{name}.png``, caption ``workflow/report/{name}.rst``)
    and the function that draws it, as ``"module:function"`` (imported when the figure is made, so
    that reading the registry never imports matplotlib)."""

    name: str
    draw: str


@dataclass(frozen=True)
class Task:
    """One synthetic task. Generators are pure functions of (params, seed) returning a polars frame
    in the common layout (:mod:`.generator`) with the task's ``cell_columns`` as keys.

    ``cell_columns`` key the evaluation cells, and so the rows of its accuracy tables; ``length``
    (the length measure) is one of them, and any others are Int32 columns of its frames."""

    name: str
    summary: str  # one line: the config schema's description of the task's section
    vocab: Vocab
    generate_train: Callable  # (params, seed) -> polars DataFrame
    generate_eval: Callable  # (params, seed) -> polars DataFrame
    eval_cells: Callable  # (eval params) -> list of cell keys, tuples ordered like cell_columns
    sequence_tokens: Callable[..., int]  # (length measure, params=None) -> tokens the model sees
    max_position_id: Callable[..., int]  # (length, params=None) -> largest coupled ID of such a sample
    train_lengths: Callable[[dict], tuple[int, int]]  # data block -> (shortest, longest) training length
    make_schema: Callable  # () -> the table schema of the task's frames (made on first use)
    layout: Layout
    figure: Figure
    cell_columns: tuple[str, ...] = ("k", "length")
    # index in ``response`` of the answer token (-1: the response is the answer; -2: ... <eos>)
    answer_index: int = -1
    # metric a cell is summarised by (status, tables) per variant; "answer" for variants not listed
    headline_metrics: dict[str, str] = field(default_factory=dict)
    # (section) -> None: checks of the config section beyond the JSON schema; raises ValueError
    # with a message naming the field relative to the section (e.g. "data.n_vars=...")
    check_section: Callable[[dict], None] | None = None
    # what each response token depends on (see :mod:`.dependency`); None: the task runs without the
    # mechanism analysis, which says so
    dependencies: Dependencies | None = None
    module: str = ""  # the dotted module declaring the task (set by the registry)

    def __post_init__(self) -> None:
        if "length" not in self.cell_columns:
            raise ValueError(f"task {self.name!r}: cell_columns {self.cell_columns} must include 'length'")

    @property
    def schema(self):
        return _schema(self.make_schema)

    def headline_metric(self, variant: str) -> str:
        return self.headline_metrics.get(variant, "answer")


@functools.cache
def _schema(make_schema: Callable):
    return make_schema()


# The fields of every task's ``data`` block (the config's ``defaults`` may hold them too).
SHARED_DATA_FIELDS = {
    "n_train": {"type": "integer", "minimum": 1, "description": "Training samples per variant."},
    "seed": {"type": "integer", "minimum": 0, "description": "Seed of the training sets."},
}


def data_schema(**fields: dict) -> dict:
    """The JSON schema of a task's ``data`` block: ``fields`` (name -> JSON schema, each with a
    description) plus :data:`SHARED_DATA_FIELDS`; all required."""
    properties = {**fields, **SHARED_DATA_FIELDS}
    return {"type": "object", "additionalProperties": False, "required": list(properties), "properties": properties}


def count(description: str, maximum: int | None = None) -> dict:
    """The JSON schema of a positive integer field of a ``data`` block."""
    schema = {"type": "integer", "minimum": 1, "description": description}
    return schema if maximum is None else {**schema, "maximum": maximum}


def scratchpad_variant(variant: str) -> dict:
    """``variant_params`` of a task run with (``scratchpad``) or without (``direct``) a scratchpad."""
    return {"scratchpad": variant == "scratchpad"}

"""What of a config's ``train`` block enters a training job's spec, a task's (:mod:`.jobs`) or a language
model's (:mod:`pipeline_src.language.config`); torch-free: the workflow imports it."""

from __future__ import annotations


def drop_eager_compile(train: dict) -> None:
    """``compile: false`` means what its absence means: out of the spec, so writing it reruns nothing."""
    if not train.get("compile", False):
        train.pop("compile", None)

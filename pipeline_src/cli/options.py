"""What the ``lengthgen`` commands share: the job's spec (``--spec``), the options several take,
and the one-line error of a model job that cannot run here. The pipeline steps (:mod:`.commands`)
and the commands that read runs (:mod:`.run_commands`) both use them."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import click

from ..provenance.sidecars import HAND_RUN

IN_CODE_DIGEST = False  # it records or dispatches, never changes a result (provenance/code_digest.py)


def _spec(ctx, param, value: str) -> dict:
    try:
        spec = json.loads(value)
    except json.JSONDecodeError as err:
        raise click.BadParameter(f"not valid JSON: {err}") from None
    if not isinstance(spec, dict):
        raise click.BadParameter("must be a JSON object")
    return spec


JOB_CONFIG = click.option("--spec", required=True, callback=_spec, help="The job's config subset as JSON.")
# The workflow rule each step stands for, recorded after HAND_RUN where the step is run by hand ("manual train"):
# what it was made with is then read beside the workflow's runs (provenance/sidecars.py, workflow_rule).
STANDS_FOR = {"train": "train", "evaluate": "evaluate", "lm-train": "language_train", "corpus": "language_corpus",
              "lm-eval": "language_eval", "influence": "language_influence"}


def hand_run(stands_for: str) -> str:
    """The rule a step run by hand records: ``manual <the workflow rule it stands for>``."""
    return f"{HAND_RUN} {stands_for}"


def _rule(ctx: click.Context, _param, value: str | None) -> str:
    """``--rule``, or where not given the hand run's (:func:`hand_run`; a step whose rule depends on its
    spec, ``generate`` and ``plot``, names it itself from HAND_RUN)."""
    if value is not None:
        return value
    stands_for = STANDS_FOR.get(ctx.command.name)
    return hand_run(stands_for) if stands_for else HAND_RUN


RULE = click.option("--rule", default=None, callback=_rule,
                    help="Rule name recorded in provenance [default: 'manual' and the workflow rule the step "
                         "stands for, e.g. 'manual train'].")
THREADS = click.option("--threads", type=click.IntRange(min=1), default=None, help="torch threads.")
TOKENS = click.option("--tokens", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
                      help="The token stream (tokens.parquet of `lengthgen corpus`).")
OUT_DIR = click.option("--out-dir", type=click.Path(file_okay=False, path_type=Path), required=True,
                       help="The model's folder; a resume checkpoint found there is resumed.")
MODEL_DIR = click.option("--model-dir", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True,
                         help="A trained model's folder (model.safetensors, model.json).")
CONFIGFILES = click.option("--configfile", "configfiles", multiple=True,
                           type=click.Path(dir_okay=False, path_type=Path),
                           help="Config file merged over config/config.yaml, as with snakemake "
                                "--configfile; repeat for several (later ones win).")


@contextlib.contextmanager
def model_job_errors():
    """A device setting this machine cannot honour (``device: cuda`` without CUDA) or a model file
    that cannot be used (truncated, mismatched, a diverged run's) as a clean CLI error naming it."""
    from ..devices.placement import DeviceError
    from ..training.checkpoints import CheckpointError

    try:
        yield
    except (DeviceError, CheckpointError) as err:
        raise click.ClickException(str(err)) from None

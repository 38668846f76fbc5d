"""The ``lengthgen`` command line: every pipeline step, runnable with or without Snakemake.

Snakemake rules are thin ``shell:`` calls to these commands. Each step takes its exact config
subset as canonical JSON (``--spec``), so a step run by hand is the same computation as in the
pipeline.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import sys
from pathlib import Path

import click

from ..planning.studies import all_figures, study_of
from ..provenance.sidecars import HAND_RUN
from ..storage.errors import one_line
from .options import JOB_CONFIG, MODEL_DIR, OUT_DIR, RULE, THREADS, TOKENS, hand_run, model_job_errors
from .run_commands import COMMANDS


class Commands(click.Group):
    """The command group: a failure inside a command (a spec missing a key, a table missing a
    column, a position beyond the model's table, an unreadable file, ...) ends it with one line
    naming the problem and a non-zero exit status; ``lengthgen --debug COMMAND`` shows the traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as err:  # noqa: BLE001 - every other failure, named in one line
            if ctx.params.get("debug"):
                raise
            raise click.ClickException(f"{one_line(err)} (lengthgen --debug ... shows the traceback)") from None


@click.group(cls=Commands)
@click.version_option(package_name="lengthgen")
@click.option("--debug", is_flag=True, help="Show the full traceback of a failing command.")
def main(debug: bool) -> None:
    """Length-generalization experiments (Golowich et al., ICML 2025) step by step."""


@main.command()
@JOB_CONFIG
@RULE
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True)
def generate(spec: dict, rule: str, out: Path) -> None:
    """Generate a task dataset (train split or evaluation grid) as Parquet."""
    checked("generate", spec)
    from .. import datasets
    from ..provenance.records import build_record
    from ..tasks import get_task

    task = get_task(spec["task"])
    make = {"train": task.generate_train, "eval": task.generate_eval}[spec["split"]]
    frame = make(spec["params"], spec["seed"])
    rule = hand_run(f"{spec['split']}_data") if rule == HAND_RUN else rule
    record = build_record(rule, "data", spec, seeds={"seed": spec["seed"]}, task=spec["task"])
    datasets.write(frame, out, task.schema, record)
    click.echo(f"wrote {len(frame):,} samples to {out}", err=True)


@main.command()
@JOB_CONFIG
@RULE
@THREADS
@click.option("--train-data", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True)
@OUT_DIR
def train(spec: dict, rule: str, threads: int | None, train_data: Path, out_dir: Path) -> None:
    """Train one cell of a synthetic task; resumes from its last checkpoint in OUT_DIR if one exists."""
    checked("train", spec, train_data)
    from ..training.train import train as run

    with _training_errors():
        summary = run(spec, train_data, out_dir, rule=rule, threads=threads)
    click.echo(json.dumps(summary), err=True)


@main.command("lm-train")
@JOB_CONFIG
@RULE
@THREADS
@TOKENS
@click.option("--tokenizer", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="The tokenizer.json of that token stream.")
@OUT_DIR
def lm_train(spec: dict, rule: str, threads: int | None, tokens: Path, tokenizer: Path, out_dir: Path) -> None:
    """Train a language model of the natural-language analysis on a token stream; resumes from its
    last checkpoint in OUT_DIR if one exists."""
    checked("lm_train", spec)
    from ..language.lm_training import train_language_model

    with _training_errors():
        summary = train_language_model(spec, tokens, tokenizer, out_dir, rule=rule, threads=threads)
    click.echo(json.dumps(summary), err=True)


def checked(step: str, *args, **inputs) -> None:
    """The spec and inputs of a step checked before it reads or writes anything (``step``: its function
    in :mod:`pipeline_src.planning.spec_check`): a field the config check would refuse in the pipeline's
    job, or inputs that do not fit the spec or each other, end the command in one line naming the
    field or the files."""
    from ..planning import spec_check

    try:
        getattr(spec_check, step)(*args, **inputs)
    except spec_check.SpecError as err:
        raise click.ClickException(str(err)) from None


@contextlib.contextmanager
def _training_errors():
    """A device, checkpoint or divergence error of a training job as a clean CLI error."""
    from ..devices.placement import DeviceError
    from ..training.checkpoints import CheckpointError
    from ..training.train import Terminated, TrainingDiverged

    try:
        yield
    except (CheckpointError, DeviceError, TrainingDiverged) as err:
        raise click.ClickException(str(err)) from None
    except Terminated as err:  # the exit status of a process ended by SIGTERM, its state saved
        click.echo(f"Stopped: {err}", err=True)
        sys.exit(128 + signal.SIGTERM)


@main.command()
@JOB_CONFIG
@RULE
@click.option("--tokenizer-out", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option("--tokens-out", type=click.Path(dir_okay=False, path_type=Path), required=True)
def corpus(spec: dict, rule: str, tokenizer_out: Path, tokens_out: Path) -> None:
    """Read a corpus, split it into train and held-out documents, train (or load) the tokenizer and
    write the token stream (natural-language analysis)."""
    checked("corpus", spec)
    from ..language.corpus import CorpusError
    from ..language.token_stream import build_corpus
    from ..language.tokenizer import TokenizerError

    try:
        summary = build_corpus(spec, tokenizer_out, tokens_out, rule=rule)
    except (CorpusError, TokenizerError) as err:
        raise click.ClickException(str(err)) from None
    click.echo(json.dumps(summary), err=True)


@main.command("lm-eval")
@JOB_CONFIG
@RULE
@THREADS
@MODEL_DIR
@TOKENS
@click.option("--out-positions", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option("--out-targets", type=click.Path(dir_okay=False, path_type=Path), required=True)
def lm_eval(spec: dict, rule: str, threads: int | None, model_dir: Path, tokens: Path, out_positions: Path,
            out_targets: Path) -> None:
    """A language model's held-out loss by position, and its losses on the analysed targets."""
    checked("lm_eval", spec)
    from ..language.analysis import evaluate_model

    with model_job_errors():
        evaluate_model(spec, model_dir, tokens, out_positions, out_targets, rule=rule, threads=threads)


@main.command()
@JOB_CONFIG
@RULE
@THREADS
@click.option("--model-dir", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="One of our trained language models.")
@click.option("--hf-model", default=None,
              help="Instead: a local Hugging Face causal LM folder (needs the hf extra), a GGUF file, or "
                   "smollm2 (both need the pretrained extra).")
@TOKENS
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True)
def influence(spec: dict, rule: str, threads: int | None, model_dir: Path | None, hf_model: str | None,
              tokens: Path, out: Path) -> None:
    """Influential-token analysis (Figure 4): L_long, L_short and the greedy L_short,sparse(k) of
    held-out targets, one Parquet row per target."""
    from ..language.analysis import analyse

    if (model_dir is None) == (hf_model is None):
        raise click.UsageError("give exactly one of --model-dir and --hf-model")
    checked("influence", spec)
    with model_job_errors():
        analyse(spec, tokens, out, model_dir=model_dir, hf_model=hf_model, rule=rule, threads=threads)


@main.command()
@JOB_CONFIG
@RULE
@THREADS
@MODEL_DIR
@click.option("--eval-data", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option("--mechanism-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Also analyse the model's mechanism (attention on the dependency sets, causal flips, first "
                   "errors) and write its tables into this folder.")
def evaluate(spec: dict, rule: str, threads: int | None, model_dir: Path, eval_data: Path, out: Path,
             mechanism_dir: Path | None) -> None:
    """Sweep every evaluation cell with one trained model."""
    checked("evaluate", spec, model_dir, eval_data, mechanism=mechanism_dir is not None)
    from ..evaluation.evaluate import evaluate as run

    with model_job_errors():
        run(spec, model_dir, eval_data, out, rule=rule, threads=threads, mechanism_dir=mechanism_dir)


def companion_figure(kind: str, source: str, source_type: click.Path, drawn_from: str):
    """The options of ``lengthgen plot`` that also draw the ``kind`` figure of a task's figure:
    ``--<kind>-<source>`` (``drawn_from``), ``--<kind>-out`` and ``--<kind>-caption``."""
    options = [
        click.option(f"--{kind}-{source}", f"{kind}_{source}s", multiple=True, type=source_type,
                     help=f"A task's figure: also draw its {kind} figure from {drawn_from}."),
        click.option(f"--{kind}-out", f"{kind}_outputs", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
                     help=f"The {kind} figure's file (.png or .pdf); repeat for several formats."),
        click.option(f"--{kind}-caption", nargs=2, type=click.Path(path_type=Path), metavar="TEMPLATE OUT",
                     help=f"Also write the {kind} figure's caption to OUT, as --caption does.")]
    return lambda command: functools.reduce(lambda decorated, option: option(decorated), reversed(options), command)


@main.command()
@click.argument("figure", type=click.Choice(all_figures()))
@JOB_CONFIG
@RULE
@click.option("--out", "outputs", multiple=True, required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Output file (.png or .pdf); repeat for several formats.")
@click.option("--caption", "caption", nargs=2, type=click.Path(path_type=Path), metavar="TEMPLATE OUT",
              help="Also write the figure's caption to OUT: the description TEMPLATE (workflow/report/<figure>.rst) "
                   "and the run's facts, from the figure's provenance record.")
@click.option("--claim", "claim_files", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="With --caption: a claim file whose verdict the caption states (repeat; default: the shipped "
                   "claims drawn in FIGURE).")
@click.option("--rehearsal", is_flag=True, help="With --caption: the runs rehearse the code path (the config's "
              "rehearsal): each verdict the caption states is labelled 'rehearsal, not evidence'.")
@companion_figure("mechanism", "dir", click.Path(exists=True, file_okay=False, path_type=Path),
                  "the mechanism tables in this folder (`lengthgen evaluate --mechanism-dir`); repeat, one folder "
                  "per model of INPUTS")
@companion_figure("training", "log", click.Path(exists=True, dir_okay=False, path_type=Path),
                  "the training log (train_log.parquet) of a model; repeat, one per model")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
def plot(figure: str, spec: dict, rule: str, outputs: tuple[Path, ...], caption: tuple[Path, Path] | None,
         claim_files: tuple[Path, ...], rehearsal: bool, mechanism_dirs: tuple[Path, ...],
         mechanism_outputs: tuple[Path, ...],
         mechanism_caption: tuple[Path, Path] | None, training_logs: tuple[Path, ...],
         training_outputs: tuple[Path, ...], training_caption: tuple[Path, Path] | None,
         inputs: tuple[Path, ...]) -> None:
    """Draw FIGURE from evaluation results INPUTS (language figures: influence and language-model
    evaluation tables), with --mechanism-dir the mechanism figure of its task, with --training-log
    its training-curve figure."""
    for template, option in ((caption, "--caption"), (mechanism_caption, "--mechanism-caption"),
                             (training_caption, "--training-caption")):
        if template and not template[0].is_file():
            raise click.BadParameter(f"{template[0]}: no such caption template", param_hint=option)
    study = study_of(figure)
    for sources, outs, option in ((mechanism_dirs, mechanism_outputs, "--mechanism-dir"),
                                  (training_logs, training_outputs, "--training-log")):
        kind = option.split("-")[2]
        if bool(sources) != bool(outs) or (sources and kind not in study.companion_kinds):
            raise click.UsageError(f"{option} and --{kind}-out go together, with a figure that has a {kind} figure")
    try:
        study.check_plot_spec(figure, spec)
    except ValueError as err:
        raise click.BadParameter(str(err), param_hint="--spec") from None
    checked("plot", figure, spec, captioned=bool(caption))
    rule = hand_run(f"plot_{figure}") if rule == HAND_RUN else rule
    study.draw(figure)(spec, list(inputs), list(outputs), rule=rule)
    from ..figures.caption import write_caption
    from ..findings.fit_gate import figure_note
    from ..runs.adoption import file_note as adopted  # the files used as they are, from the figure's record

    unlearned = figure_note(spec, list(inputs)) if caption or training_caption else ""
    if caption:
        from ..findings.claim_file import ClaimError, load, load_claims
        from ..findings.judge import caption as finding

        try:
            claims = [load(path) for path in claim_files] if claim_files else load_claims()
        except ClaimError as err:
            raise click.BadParameter(str(err), param_hint="--claim") from None
        stated = finding(figure, spec, list(inputs), claims, rehearsal=rehearsal)
        write_caption(caption[0], outputs[0], caption[1], study.caption_run,
                      finding=" ".join(part for part in (stated, unlearned, adopted(outputs[0])) if part))
    if mechanism_dirs:
        from ..evaluation.mechanism_schema import table_paths
        from ..figures.mechanism_figure import plot as draw_mechanism

        draw_mechanism(spec, list(inputs), [table_paths(folder) for folder in mechanism_dirs], list(mechanism_outputs),
                       rule=rule)
        if mechanism_caption:
            write_caption(mechanism_caption[0], mechanism_outputs[0], mechanism_caption[1], study.caption_run,
                          finding=adopted(mechanism_outputs[0]))
    if training_logs:
        from ..figures.training_curves import plot as draw_training

        draw_training(spec, list(inputs), list(training_logs), list(training_outputs), rule=rule)
        if training_caption:
            write_caption(training_caption[0], training_outputs[0], training_caption[1], study.caption_run,
                          finding=" ".join(part for part in (unlearned, adopted(training_outputs[0])) if part))


for _command in COMMANDS:  # the commands that read what a run made (pipeline_src/cli/run_commands.py)
    main.add_command(_command)


def run() -> None:
    """The ``lengthgen`` console script: :func:`main`, then an immediate exit with its status.

    Every command has written its files (atomically, closed) when :func:`main` returns; what the
    interpreter would still do at exit is teardown of the libraries' state (torch's operator
    registrations, thread pools), which costs a small job time for nothing (docs/performance_log.md,
    "Start-up of a small job").
    So the output streams are flushed and the process ends at once (``os._exit``)."""
    try:
        main()
        code = 0
    except SystemExit as done:  # click's standalone mode always ends this way
        code = done.code
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing left to say
            pass
    os._exit(code or 0)


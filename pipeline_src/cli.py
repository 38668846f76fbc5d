"""The ``lengthgen`` command line: every pipeline step, runnable with or without Snakemake.

Snakemake rules are thin ``shell:`` calls to these commands. Each step takes its exact config
subset as canonical JSON (``--spec``), so a step run by hand is the same computation as in the
pipeline.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import os
import sys
from pathlib import Path

import click

from .bookkeeping.jobs import FIGURE_TASK
from .evaluation.metrics import METRICS
from .language.config import LANGUAGE_FIGURES


def _spec(ctx, param, value: str) -> dict:
    try:
        spec = json.loads(value)
    except json.JSONDecodeError as err:
        raise click.BadParameter(f"not valid JSON: {err}") from None
    if not isinstance(spec, dict):
        raise click.BadParameter("must be a JSON object")
    return spec


SPEC = click.option("--spec", required=True, callback=_spec, help="The job's config subset as JSON.")
RULE = click.option("--rule", default="manual", show_default=True, help="Rule name recorded in provenance.")
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
def _model_job_errors():
    """A device setting this machine cannot honour (``device: cuda`` without CUDA) or a model file
    that cannot be used (truncated, mismatched, a diverged run's) as a clean CLI error naming it."""
    from .checkpoints import CheckpointError
    from .device import DeviceError

    try:
        yield
    except (DeviceError, CheckpointError) as err:
        raise click.ClickException(str(err)) from None


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


def one_line(err: BaseException) -> str:
    """``err`` as one line: its type where the message alone is unclear, its message's first line."""
    message = str(err).strip().splitlines()[0] if str(err).strip() else ""
    if isinstance(err, KeyError) and err.args:  # a lookup's own message, or a bare missing key
        key = err.args[0]
        return key if isinstance(key, str) and " " in key else f"missing key {key!r}"
    return f"{type(err).__name__}: {message}" if message else type(err).__name__


@click.group(cls=Commands)
@click.version_option(package_name="lengthgen")
@click.option("--debug", is_flag=True, help="Show the full traceback of a failing command.")
def main(debug: bool) -> None:
    """Length-generalization experiments (Golowich et al., ICML 2025) step by step."""


@main.command()
@SPEC
@RULE
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True)
def generate(spec: dict, rule: str, out: Path) -> None:
    """Generate a task dataset (train split or evaluation grid) as Parquet."""
    from .storage import datasets
    from .bookkeeping.provenance import build_record
    from .tasks import get_task

    task = get_task(spec["task"])
    make = {"train": task.generate_train, "eval": task.generate_eval}[spec["split"]]
    frame = make(spec["params"], spec["seed"])
    record = build_record(rule, "data", spec, seeds={"seed": spec["seed"]}, task=spec["task"])
    datasets.write(frame, out, task.schema, record)
    click.echo(f"wrote {len(frame):,} samples to {out}", err=True)


@main.command()
@SPEC
@RULE
@THREADS
@click.option("--train-data", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True)
@OUT_DIR
def train(spec: dict, rule: str, threads: int | None, train_data: Path, out_dir: Path) -> None:
    """Train one cell of a synthetic task; resumes from its last checkpoint in OUT_DIR if one exists."""
    from .training.train import train as run

    with _training_errors():
        summary = run(spec, train_data, out_dir, rule=rule, threads=threads)
    click.echo(json.dumps(summary), err=True)


@main.command("lm-train")
@SPEC
@RULE
@THREADS
@TOKENS
@click.option("--tokenizer", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="The tokenizer.json of that token stream.")
@OUT_DIR
def lm_train(spec: dict, rule: str, threads: int | None, tokens: Path, tokenizer: Path, out_dir: Path) -> None:
    """Train a language model of the natural-language analysis on a token stream; resumes from its
    last checkpoint in OUT_DIR if one exists."""
    from .language.training import train_language_model

    with _training_errors():
        summary = train_language_model(spec, tokens, tokenizer, out_dir, rule=rule, threads=threads)
    click.echo(json.dumps(summary), err=True)


@contextlib.contextmanager
def _training_errors():
    """A device, checkpoint or divergence error of a training job as a clean CLI error."""
    from .checkpoints import CheckpointError
    from .device import DeviceError
    from .training.train import TrainingDiverged

    try:
        yield
    except (CheckpointError, DeviceError, TrainingDiverged) as err:
        raise click.ClickException(str(err)) from None


@main.command()
@SPEC
@RULE
@click.option("--tokenizer-out", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option("--tokens-out", type=click.Path(dir_okay=False, path_type=Path), required=True)
def corpus(spec: dict, rule: str, tokenizer_out: Path, tokens_out: Path) -> None:
    """Read a corpus, split it into train and held-out documents, train (or load) the tokenizer and
    write the token stream (natural-language analysis)."""
    from .language.corpus import CorpusError
    from .language.token_stream import build_corpus
    from .language.tokenizer import TokenizerError

    try:
        summary = build_corpus(spec, tokenizer_out, tokens_out, rule=rule)
    except (CorpusError, TokenizerError) as err:
        raise click.ClickException(str(err)) from None
    click.echo(json.dumps(summary), err=True)


@main.command("lm-eval")
@SPEC
@RULE
@THREADS
@MODEL_DIR
@TOKENS
@click.option("--out-positions", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option("--out-targets", type=click.Path(dir_okay=False, path_type=Path), required=True)
def lm_eval(spec: dict, rule: str, threads: int | None, model_dir: Path, tokens: Path, out_positions: Path,
            out_targets: Path) -> None:
    """A language model's held-out loss by position, and its losses on the analysed targets."""
    from .language.analysis import evaluate_model

    with _model_job_errors():
        evaluate_model(spec, model_dir, tokens, out_positions, out_targets, rule=rule, threads=threads)


@main.command()
@SPEC
@RULE
@THREADS
@click.option("--model-dir", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="One of our trained language models.")
@click.option("--hf-model", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Instead: a local Hugging Face causal LM folder (needs the hf extra).")
@TOKENS
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True)
def influence(spec: dict, rule: str, threads: int | None, model_dir: Path | None, hf_model: Path | None,
              tokens: Path, out: Path) -> None:
    """Influential-token analysis (Figure 4): L_long, L_short and the greedy L_short,sparse(k) of
    held-out targets, one Parquet row per target."""
    from .language.analysis import analyse

    if (model_dir is None) == (hf_model is None):
        raise click.UsageError("give exactly one of --model-dir and --hf-model")
    with _model_job_errors():
        analyse(spec, tokens, out, model_dir=model_dir, hf_model=hf_model, rule=rule, threads=threads)


@main.command()
@SPEC
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
    from .evaluation.evaluate import evaluate as run

    with _model_job_errors():
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
@click.argument("figure", type=click.Choice([*FIGURE_TASK, *LANGUAGE_FIGURES]))
@SPEC
@RULE
@click.option("--out", "outputs", multiple=True, required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Output file (.png or .pdf); repeat for several formats.")
@click.option("--caption", "caption", nargs=2, type=click.Path(path_type=Path), metavar="TEMPLATE OUT",
              help="Also write the figure's caption to OUT: the description TEMPLATE (workflow/report/<figure>.rst) "
                   "and the run's facts, from the figure's provenance record.")
@companion_figure("mechanism", "dir", click.Path(exists=True, file_okay=False, path_type=Path),
                  "the mechanism tables in this folder (`lengthgen evaluate --mechanism-dir`); repeat, one folder "
                  "per model of INPUTS")
@companion_figure("training", "log", click.Path(exists=True, dir_okay=False, path_type=Path),
                  "the training log (train_log.parquet) of a model; repeat, one per model")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
def plot(figure: str, spec: dict, rule: str, outputs: tuple[Path, ...], caption: tuple[Path, Path] | None,
         mechanism_dirs: tuple[Path, ...], mechanism_outputs: tuple[Path, ...],
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
    for sources, outs, option in ((mechanism_dirs, mechanism_outputs, "--mechanism-dir"),
                                  (training_logs, training_outputs, "--training-log")):
        if bool(sources) != bool(outs) or (sources and figure not in FIGURE_TASK):
            raise click.UsageError(f"{option} and {option.rsplit('-', 1)[0]}-out go together, with a task's figure")
    if figure in FIGURE_TASK and spec.get("task") != FIGURE_TASK[figure]:
        raise click.BadParameter(f"figure {figure} shows task {FIGURE_TASK[figure]!r}, but the spec is for "
                                 f"task {spec.get('task')!r}", param_hint="--spec")
    if figure in FIGURE_TASK:  # a task's figure: its module names the function that draws it
        from .tasks import get_task

        draw = get_task(FIGURE_TASK[figure]).figure.plot_function()
    else:
        draw = importlib.import_module(f".figures.{figure}", __package__).plot
    draw(spec, list(inputs), list(outputs), rule=rule)
    from .figures.caption import write_caption

    if caption:
        from .evaluation.findings import caption as finding

        write_caption(caption[0], outputs[0], caption[1], finding=finding(figure, spec, list(inputs)))
    if mechanism_dirs:
        from .evaluation.mechanism_schema import table_paths
        from .figures.mechanism import plot as draw_mechanism

        draw_mechanism(spec, list(inputs), [table_paths(folder) for folder in mechanism_dirs], list(mechanism_outputs),
                       rule=rule)
        if mechanism_caption:
            write_caption(mechanism_caption[0], mechanism_outputs[0], mechanism_caption[1])
    if training_logs:
        from .figures.training import plot as draw_training

        draw_training(spec, list(inputs), list(training_logs), list(training_outputs), rule=rule)
        if training_caption:
            write_caption(training_caption[0], training_outputs[0], training_caption[1])


@main.command(name="mechanism-table")
@click.argument("folders", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--lengths", default=None, help="Only these lengths, comma-separated (e.g. 20,40,80).")
def mechanism_table(folders: tuple[Path, ...], lengths: str | None) -> None:
    """Print the mechanism of the models whose tables are in FOLDERS (results/mechanism/<task>/<scheme>/
    <variant>/seed<S>) as a Markdown table: per run and length, each layer's best head's attention
    mass on the dependency sets, what uniform attention gives, and the relevant and irrelevant flip
    rates; means over seeds, with the seeds' range."""
    from .evaluation.mechanism_summary import mechanism_summary
    from .evaluation.tables import markdown

    try:
        wanted = [int(length) for length in lengths.split(",")] if lengths else None
    except ValueError:
        raise click.BadParameter(f"{lengths!r}: give whole numbers separated by commas", param_hint="--lengths")
    try:
        click.echo(markdown(mechanism_summary(list(folders), wanted)))
    except ValueError as err:
        raise click.ClickException(str(err)) from None


@main.command()
@click.argument("inputs", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--metric", type=click.Choice(METRICS), default="answer",
              show_default=True)
def table(inputs: tuple[Path, ...], metric: str) -> None:
    """Print the mean accuracy over seeds of INPUTS (accuracy.parquet files) as a Markdown table:
    one row per run (and k_test), one column per evaluation length."""
    from .evaluation.tables import accuracy_table, markdown

    try:
        click.echo(markdown(accuracy_table(list(inputs), metric)))
    except ValueError as err:
        raise click.ClickException(str(err)) from None


@main.command()
@click.argument("results", required=False, type=click.Path(file_okay=False, path_type=Path))
@CONFIGFILES
@click.option("--from-summary", "from_summary", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Judge from this run summary (written by --export) instead of a results folder.")
@click.option("--export", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the numbers judged to this file as a run summary (CSV), e.g. "
                   "docs/findings/default_run.csv.")
@click.option("--markdown", "markdown_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the findings to this file as a Markdown table.")
@click.option("--readme", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Also put that Markdown table between the findings markers of this file (README.md).")
def findings(results: Path | None, configfiles: tuple[Path, ...], from_summary: Path | None, export: Path | None,
             markdown_file: Path | None, readme: Path | None) -> None:
    """Judge the paper's four findings from the result tables under RESULTS (default: results) of the
    config's runs, or from a run summary: per finding its claim, the criterion, the numbers compared
    and the verdict."""
    from .bookkeeping.paths import RESULTS
    from .evaluation.run_findings import report

    if results is not None and from_summary is not None:
        raise click.UsageError("give RESULTS or --from-summary, not both")
    results = results or Path(RESULTS)
    if from_summary is None and not results.is_dir():
        raise click.BadParameter(f"{results}: no such folder", param_hint="RESULTS")
    click.echo(report(results, configfiles, from_summary=from_summary, export=export, markdown_file=markdown_file,
                      readme=readme))


@main.command()
@click.argument("results_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("out_dir", type=click.Path(file_okay=False, path_type=Path))
def tensorboard(results_dir: Path, out_dir: Path) -> None:
    """Write every model's training log under RESULTS_DIR (train/**, language/train/*) as TensorBoard
    event files in OUT_DIR, one run per model (`tensorboard --logdir OUT_DIR`; needs the tensorboard extra)."""
    from .tensorboard_export import ExportError, export

    try:
        click.echo(f"wrote {len(export(results_dir, out_dir))} runs to {out_dir}", err=True)
    except ExportError as err:
        raise click.ClickException(str(err)) from None


@main.command()
@click.argument("artifact", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the full chain as JSON.")
@click.option("--config", "with_config", is_flag=True, help="Print each artifact's config subset too.")
@click.option("--verify", is_flag=True,
              help="Instead: re-hash ARTIFACT and every upstream file of its chain; name each one changed "
                   "(its SHA-256 differs from the one recorded by its consumer or its own sidecar) or missing. "
                   "Exit status 1 if any, else print 'all N artifacts verified'.")
def provenance(artifact: Path, as_json: bool, with_config: bool, verify: bool) -> None:
    """Trace ARTIFACT back through every input to its configs, seeds, code version and dataset hashes.

    With --verify, check instead that none of those files changed since ARTIFACT was produced.
    Run it from the pipeline's working directory (input paths are recorded relative to it)."""
    from .bookkeeping.provenance import format_trace, trace

    if verify:
        if as_json or with_config:
            raise click.UsageError("--verify prints a report of its own: drop --json and --config")
        _verify(artifact)
        return
    chain = trace(artifact)
    if "missing" in chain:
        raise click.ClickException(chain["missing"])
    click.echo(json.dumps(chain, indent=2) if as_json else format_trace(chain, with_config))


@main.command()
@CONFIGFILES
@click.option("--task", "tasks", multiple=True,
              help="Only these tasks (repeatable); default: every synthetic task of the config.")
@click.option("--wide", is_flag=True, help="Notes whole, however long (default: cut to the terminal's width).")
def status(configfiles: tuple[Path, ...], tasks: tuple[str, ...], wide: bool) -> None:
    """Print every experiment cell of the config (task, variant, scheme, seed) with its state and
    headline accuracy, one aligned row per cell. Run it from the pipeline's working directory.
    (The natural-language analysis is not listed.)

    \b
    States:
      done     results/eval/.../accuracy.parquet exists and every job of its chain (datasets,
               training, evaluation) recorded the config subset and code digest the current
               config and sources give: Snakemake would not rerun it.
      diverged done, but training diverged (the note says at which step): the figures name
               the cell and leave it out of the means; lower train.lr to rerun it.
      stale    the table exists but Snakemake would remake it: the note names the job whose
               config (first differing fields) or code changed, a missing output, or an input
               remade after the job that read it.
      missing  no accuracy table (the note says how far the chain got; a training or
               evaluation job that failed, e.g. in a --keep-going run, is named with its log).

    \b
    Metric columns (mean over k_test, for done and stale cells):
      metric         answer (answer token); exact_match for parity and variable assignment
                     with a scratchpad
      acc@train_max  accuracy at the longest evaluated length within the training lengths
      acc@longest    accuracy at the longest evaluated length
    Shown as ACCURACY@LENGTH. Files are not re-hashed: use `lengthgen provenance --verify`."""
    from .bookkeeping.status import StatusError, config_status, format_status, load_config

    try:
        config = load_config(configfiles)
    except StatusError as err:
        raise click.ClickException(str(err)) from None
    from .bookkeeping.jobs import tasks as synthetic_tasks

    unknown = sorted(set(tasks) - set(synthetic_tasks(config)))
    if unknown:
        raise click.BadParameter(f"not synthetic tasks of this config: {', '.join(unknown)}", param_hint="--task")
    import shutil

    width = None if wide else shutil.get_terminal_size((120, 24)).columns
    click.echo(format_status(config_status(config, list(tasks) or None), width))


@main.command()
@CONFIGFILES
@click.argument("listed", nargs=-1, type=click.Path(dir_okay=False, path_type=Path))
def check(configfiles: tuple[Path, ...], listed: tuple[Path, ...]) -> None:
    """Check a run's config as the workflow merges it (config/config.yaml, then each --configfile), without
    Snakemake: YAML syntax (file, line and column), the schema and every cross-field rule. Run it when
    Snakemake says only that a config file is "not valid JSON or YAML". Files may also follow one
    --configfile as a list, as Snakemake takes them (``--configfile a.yaml b.yaml``)."""
    from .bookkeeping import jobs
    from .bookkeeping.status import StatusError, load_config

    try:
        config = load_config((*configfiles, *listed))
    except StatusError as err:
        raise click.ClickException(str(err)) from None
    models = sum(len(jobs.cells(config, task)) for task in jobs.tasks(config))
    click.echo(f"config OK: tasks {', '.join(config['tasks'])}; {models} models to train")


@main.command()
@click.argument("artifact", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def spec(artifact: Path) -> None:
    """Print the exact spec (config subset) of the job that made ARTIFACT, as canonical JSON: pass it
    back with --spec to rerun that step by hand."""
    from .bookkeeping.provenance import read_record
    from .storage.canonical import canonical_json

    try:
        record = read_record(artifact)
    except (FileNotFoundError, ValueError) as err:
        raise click.ClickException(str(err)) from None
    click.echo(canonical_json(record["config"]))


def _verify(artifact: Path) -> None:
    from .bookkeeping.verify import format_verification, verify

    try:
        result = verify(artifact)
    except FileNotFoundError as err:
        raise click.ClickException(str(err)) from None
    click.echo(format_verification(result))
    if not result.ok:
        raise click.exceptions.Exit(1)


@main.command()
@THREADS
@click.option("--precision", type=click.Choice(["fp32", "bf16"]), default="fp32", show_default=True)
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True,
              help="Where the training benchmark runs (auto: CUDA when present).")
@click.option("--d-model", default=128, show_default=True)
@click.option("--n-layer", default=4, show_default=True)
@click.option("--n-head", default=4, show_default=True)
@click.option("--seq-len", default=64, show_default=True)
@click.option("--batch-size", default=64, show_default=True)
@click.option("--steps", default=20, show_default=True)
@click.option("--decode", is_flag=True,
              help="Instead: greedy decoding of 500 tokens with the KV cache vs a full forward per step.")
@click.option("--decode-length", default=500, show_default=True, help="New tokens per row with --decode.")
@click.option("--influence", "influence_targets", type=click.IntRange(min=2), default=None,
              help="Instead: the influential-token analysis of this many targets (Lbar 128, L 64, "
                   "k_max 4; at least 2: a baseline takes another document's tokens), batched vs one "
                   "candidate at a time.")
def benchmark(threads, precision, device, d_model, n_layer, n_head, seq_len, batch_size, steps, decode,
              decode_length, influence_targets) -> None:
    """Training tokens/s of our model vs GPTNeoXForCausalLM (if installed) and vs the machine's matmul
    FLOP/s; with --decode, the speed ratio of KV-cache decoding to full re-forward decoding; with
    --influence N, the speed ratio of the batched influential-token analysis to one candidate at a time."""
    from .benchmark import (decode_benchmark, format_decode_report, format_influence_report, format_report,
                            influence_benchmark, run_benchmark)

    if influence_targets is not None:
        click.echo(format_influence_report(influence_benchmark(
            n_targets=influence_targets, d_model=d_model, n_layer=n_layer, n_head=n_head,
            batch_size=batch_size, threads=threads, device=device)))
        return
    if decode:
        click.echo(format_decode_report(decode_benchmark(length=decode_length, batch_size=batch_size,
                                                         d_model=d_model, n_layer=n_layer, n_head=n_head,
                                                         threads=threads, device=device)))
        return
    with _model_job_errors():
        result = run_benchmark(d_model=d_model, n_layer=n_layer, n_head=n_head, seq_len=seq_len,
                               batch_size=batch_size, steps=steps, threads=threads, precision=precision,
                               device=device, say=lambda line: click.echo(line, err=True))
    click.echo(format_report(result))


def run() -> None:
    """The ``lengthgen`` console script: :func:`main`, then an immediate exit with its status.

    Every command has written its files (atomically, closed) when :func:`main` returns; what the
    interpreter would still do at exit is teardown of the libraries' state (torch's operator
    registrations, thread pools), which takes a small job about 0.3 s on a 2-core CPU for nothing.
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


if __name__ == "__main__":
    run()

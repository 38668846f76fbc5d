"""The ``lengthgen`` commands that read what a run made or would make: result tables, the
findings, TensorBoard export, provenance, status, config checks, job specs, the benchmark and files
adopted as they are (:data:`COMMANDS`, which :mod:`.commands` registers beside the pipeline steps);
what each does is :mod:`pipeline_src.runs`'."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..evaluation.metrics import METRICS
from ..runs.adoption import adopt
from ..runs.benchmarks.sizes import SIZE as BENCHMARK_SIZE
from .options import CONFIGFILES, THREADS, model_job_errors


@click.command("mechanism-table")
@click.argument("folders", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--lengths", default=None, help="Only these lengths, comma-separated (e.g. 20,40,80).")
@click.option("--by-depth", is_flag=True, help="Per run, length and depth (the hops a sample needs): exact match of "
              "the analysed samples and where, and in what (token or position ID), the wrong ones first go wrong.")
def mechanism_table(folders: tuple[Path, ...], lengths: str | None, by_depth: bool) -> None:
    """Print the mechanism of the models whose tables are in FOLDERS (results/mechanism/<task>/<scheme>/
    <variant>/seed<S>) as a Markdown table: per run and length, each layer's best head's attention
    mass on the dependency sets, what uniform attention gives, and the relevant and irrelevant flip
    rates; means over seeds, with the seeds' range. With --by-depth, the first errors by depth."""
    from ..evaluation.mechanism_summary import depth_summary, mechanism_summary
    from ..findings.tables import markdown

    try:
        wanted = [int(length) for length in lengths.split(",")] if lengths else None
    except ValueError:
        raise click.BadParameter(f"{lengths!r}: give whole numbers separated by commas",
                                 param_hint="--lengths") from None
    try:
        click.echo(markdown((depth_summary if by_depth else mechanism_summary)(list(folders), wanted)))
    except ValueError as err:
        raise click.ClickException(str(err)) from None


@click.command()
@click.argument("inputs", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--metric", type=click.Choice(METRICS), default="answer",
              show_default=True)
def table(inputs: tuple[Path, ...], metric: str) -> None:
    """Print the mean accuracy over seeds of INPUTS (accuracy.parquet files) as a Markdown table:
    one row per run (and k_test), one column per evaluation length."""
    from ..findings.tables import accuracy_table, markdown

    try:
        click.echo(markdown(accuracy_table(list(inputs), metric)))
    except ValueError as err:
        raise click.ClickException(str(err)) from None


@click.command()
@click.argument("results", required=False, type=click.Path(file_okay=False, path_type=Path))
@CONFIGFILES
@click.option("--from-summary", "from_summary", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Judge from this run summary (written by --export) instead of a results folder.")
@click.option("--scales", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Judge every run summary this scales file lists, each with its own config, side by "
                   "side (docs/findings/scales.yaml: the README's table).")
@click.option("--export", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the numbers judged to this file as a run summary (CSV), e.g. "
                   "docs/findings/default_run.csv.")
@click.option("--keep-others", "keep_others", is_flag=True,
              help="With --export: keep that file's rows of the models RESULTS has no tables for (figures, "
                   "or a figure's seeds, run in separate sittings), and judge them too.")
@click.option("--markdown", "markdown_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the findings to this file as a Markdown table.")
@click.option("--readme", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Also put that Markdown table between the findings markers of this file (README.md).")
@click.option("--claims", "claim_folders", multiple=True, type=click.Path(path_type=Path),
              help="Also judge the claim files (*.yaml) of this folder beside the paper's (docs/claims.md); repeat.")
@click.option("--also", "also_given", multiple=True, metavar="DIR|SUMMARY=CONFIGFILES",
              help="For the claims whose sides are runs of two configs (a side's config): also this results "
                   "folder, or this run summary with the config files it was made with, comma-separated; each "
                   "side is judged from the one results given that were made with its config (docs/claims.md); "
                   "repeat.")
def findings(results: Path | None, configfiles: tuple[Path, ...], from_summary: Path | None, scales: Path | None,
             export: Path | None, keep_others: bool, markdown_file: Path | None, readme: Path | None,
             claim_folders: tuple[Path, ...], also_given: tuple[str, ...]) -> None:
    """Judge the paper's four findings from the result tables under RESULTS (default: results) of the
    config's runs, or from a run summary: per finding its claim, the criterion, the numbers compared
    and the verdict. Tables whose provenance records another config stop it first, in one line naming
    the table, the field and the --configfile to pass where a shipped config matches. A claim whose
    sides are runs of two configs is judged with --also: each side from the results made with its config."""
    from ..findings.claim_file import ClaimError
    from ..findings.run_summary import SummaryError
    from ..planning.paths import RESULTS
    from ..runs.across_folders import AcrossError, also
    from ..runs.judged_config import ConfigMismatch
    from ..runs.run_findings import NoResults, report

    if results is not None and from_summary is not None:
        raise click.UsageError("give RESULTS or --from-summary, not both")
    if keep_others and export is None:
        raise click.UsageError("--keep-others keeps rows of the --export file: give --export")
    if scales is not None:
        if results is not None or from_summary is not None or configfiles or export is not None or also_given:
            raise click.UsageError("--scales judges the summaries its file names, each with its own config (and "
                                   "its also): give no RESULTS, --from-summary, --configfile, --export or "
                                   "--also with it")
        return _judged_scales(scales, markdown_file, readme, claim_folders)
    results = results or Path(RESULTS)
    if from_summary is None and not results.is_dir():
        raise click.BadParameter(f"{results}: no such folder", param_hint="RESULTS")
    try:
        sources = tuple(also(value) for value in also_given)
        click.echo(report(results, configfiles, from_summary=from_summary, export=export, keep_others=keep_others,
                          markdown_file=markdown_file, readme=readme, claim_folders=claim_folders, also=sources))
    except (ConfigMismatch, NoResults, SummaryError, ClaimError, AcrossError) as err:
        raise click.ClickException(str(err)) from None


def _judged_scales(scales: Path, markdown_file: Path | None, readme: Path | None,
                   claim_folders: tuple[Path, ...]) -> None:
    from ..config.layers import ConfigError
    from ..findings.claim_file import ClaimError
    from ..findings.run_summary import SummaryError
    from ..runs import scales as across
    from ..runs.across_folders import AcrossError

    try:
        click.echo(across.report(scales, markdown_file=markdown_file, readme=readme, claim_folders=claim_folders))
    except (across.ScalesError, SummaryError, ConfigError, ClaimError, AcrossError) as err:
        raise click.ClickException(str(err)) from None


@click.command()
@click.argument("results_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("out_dir", type=click.Path(file_okay=False, path_type=Path))
def tensorboard(results_dir: Path, out_dir: Path) -> None:
    """Write every model's training log under RESULTS_DIR (train/**, language/train/*) as TensorBoard
    event files in OUT_DIR, one run per model (`tensorboard --logdir OUT_DIR`; needs the tensorboard extra)."""
    from ..runs.tensorboard_export import ExportError, export

    try:
        click.echo(f"wrote {len(export(results_dir, out_dir))} runs to {out_dir}", err=True)
    except ExportError as err:
        raise click.ClickException(str(err)) from None


@click.command()
@click.argument("artifact", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the full chain as JSON.")
@click.option("--config", "with_config", is_flag=True, help="Print each artifact's config subset too.")
@click.option("--verify", is_flag=True,
              help="Instead: re-hash ARTIFACT and every upstream file of its chain; name each one changed "
                   "(its SHA-256 differs from the one recorded by its consumer or its own sidecar) or missing. "
                   "Exit status 1 if any, else print 'all N artifacts verified'.")
def provenance(artifact: Path, as_json: bool, with_config: bool, verify: bool) -> None:
    """Trace ARTIFACT back through every input to its configs, seeds, code version and dataset hashes.
    For a figure, first name the shipped config layering (the --configfile list) whose jobs give
    every value its record holds, or say that none does.

    With --verify, check instead that none of those files changed since ARTIFACT was produced.
    Run it from the pipeline's working directory (input paths are recorded relative to it)."""
    from ..provenance.sidecars import format_trace, trace

    if verify:
        if as_json or with_config:
            raise click.UsageError("--verify prints a report of its own: drop --json and --config")
        _verify(artifact)
        return
    from ..planning.paths import same_job
    from ..planning.studies import all_figures

    chain = trace(artifact, stand_ins=same_job)
    if "missing" in chain:
        raise click.ClickException(chain["missing"])
    said = ""
    if artifact.stem in all_figures():  # a figure: which shipped config it was made with, first
        layering, said = _shipped_config(artifact.stem, chain["record"])
        chain["shipped_configfiles"] = None if layering is None else [str(path) for path in layering]
    click.echo(json.dumps(chain, indent=2) if as_json else said + format_trace(chain, with_config))


def _shipped_config(figure: str, record: dict) -> tuple[tuple[Path, ...] | None, str]:
    """The shipped layering that ``figure``'s provenance ``record`` matches first (None: none does),
    and a line saying so."""
    from ..config.layers import BASE_CONFIG
    from ..runs.judged_config import figure_match, layering_text

    if not BASE_CONFIG.is_file():
        return None, f"config: no {BASE_CONFIG} here to compare with: run from the pipeline's working directory\n"
    layering = figure_match(figure, record)
    if layering is None:
        return None, ("config: no shipped layering (config/config.yaml alone, with one file of config/, or two "
                      "in either order) gives every value its record holds\n")
    name, option = layering_text(layering)
    return layering, f"config: its record matches {name} ({option}), the first shipped layering that does\n"


@click.command()
@CONFIGFILES
@click.option("--task", "tasks", multiple=True,
              help="Only these tasks (repeatable); default: every synthetic task of the config.")
@click.option("--wide", is_flag=True, help="Notes whole, however long (default: cut to the terminal's width).")
@click.option("--estimate", is_flag=True,
              help="Instead: the wall time of the config's run on --cores cores, replayed from the job times "
                   "of the last run (results/benchmarks), whole and per figure.")
@click.option("--cores", type=click.IntRange(min=1), default=None,
              help="With --estimate: the cores of the run estimated, as snakemake --cores N.")
@click.option("--results", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="With --estimate: the results folder whose benchmarks/ are read (default: results).")
def status(configfiles: tuple[Path, ...], tasks: tuple[str, ...], wide: bool, estimate: bool, cores: int | None,
           results: Path | None) -> None:
    """Print every experiment cell of the config (task, variant, scheme, seed) with its state and
    headline accuracy, one aligned row per cell. Run it from the pipeline's working directory.
    Below them, the natural-language analysis's influence job (or each part's, with
    language.analysis.parts): done (with its drawn, screened-out and analysed targets), stale, running
    (targets analysed so far, about how long is left, from its log) or missing.

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
    A done cell of a task trained on K_train (sparse parity) whose accuracy at the longest
    evaluated training length is below 0.9 at some k <= K_train is noted "not learned", with those k
    (the findings' fit gate).

    \b
    Metric columns (mean over k_test, for done and stale cells):
      metric         answer (answer token); exact_match for parity and variable assignment
                     with a scratchpad
      acc@train_max  accuracy at the longest evaluated length within the training lengths
      acc@longest    accuracy at the longest evaluated length
    Shown as ACCURACY@LENGTH. Files are not re-hashed: use `lengthgen provenance --verify`.

    With --estimate --cores N: how long `snakemake --cores N all` takes for the config, every job
    timed by its benchmark file of the last run (results/benchmarks/<job>.tsv) and replayed on N
    cores in dependency order (Snakemake's DAG of the config, every job), and each figure's target
    alone (`snakemake --cores N figure1`). A job without a benchmark file takes the mean of its
    rule's measured jobs; a rule never measured counts as 0 s and the estimate says it is partial.
    Snakemake's own start and order add to it (see pipeline_src/runs/estimate.py)."""
    from ..config.layers import ConfigError
    from ..planning.load_config import load_config
    from ..runs.cell_status import config_status, format_status
    from ..runs.language_status import language_status

    if not estimate and (cores is not None or results is not None):
        raise click.UsageError("--cores and --results go with --estimate")
    if estimate and (tasks or wide):
        raise click.UsageError("--task and --wide are for the table of cells, not --estimate")
    if estimate and cores is None:
        raise click.UsageError("give the cores to estimate for: --estimate --cores N")
    try:
        config = load_config(configfiles)
    except ConfigError as err:
        raise click.ClickException(str(err)) from None
    if estimate:
        _estimate(config, configfiles, cores, results)
        return
    from ..planning.jobs import tasks as synthetic_tasks

    unknown = sorted(set(tasks) - set(synthetic_tasks(config)))
    if unknown:
        raise click.BadParameter(f"not synthetic tasks of this config: {', '.join(unknown)}", param_hint="--task")
    import shutil

    width = None if wide else shutil.get_terminal_size((120, 24)).columns
    click.echo(format_status(config_status(config, list(tasks) or None), width))
    if not tasks and (language := language_status(config)):
        click.echo("\n" + language)


def _estimate(config: dict, configfiles: tuple[Path, ...], cores: int, results: Path | None) -> None:
    """Print the estimate of ``status --estimate`` for the loaded ``config``; one line when none can
    be made."""
    from ..planning.paths import RESULTS
    from ..planning.studies import figures
    from ..runs.estimate import EstimateError, estimate_run

    try:
        click.echo(estimate_run(configfiles, figures(config), cores, results or Path(RESULTS)))
    except EstimateError as err:
        raise click.ClickException(str(err)) from None


@click.command()
@CONFIGFILES
@click.argument("listed", nargs=-1, type=click.Path(dir_okay=False, path_type=Path))
def check(configfiles: tuple[Path, ...], listed: tuple[Path, ...]) -> None:
    """Check a run's config as the workflow merges it (config/config.yaml, then each --configfile), without
    Snakemake: YAML syntax (file, line and column), the schema and every cross-field rule. Run it when
    Snakemake says only that a config file is "not valid JSON or YAML". Files may also follow one
    --configfile as a list, as Snakemake takes them (``--configfile a.yaml b.yaml``)."""
    from ..config.layers import ConfigError
    from ..planning import jobs
    from ..planning.load_config import load_config

    try:
        config = load_config((*configfiles, *listed))
    except ConfigError as err:
        raise click.ClickException(str(err)) from None
    models = sum(len(jobs.cells(config, task)) for task in jobs.tasks(config))
    click.echo(f"config OK: tasks {', '.join(config['tasks'])}; {models} models to train")


@click.command()
@click.argument("artifact", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def spec(artifact: Path) -> None:
    """Print the exact spec (config subset) of the job that made ARTIFACT, as canonical JSON: pass it
    back with --spec to rerun that step by hand."""
    from ..provenance.sidecars import read_record
    from ..storage.canonical import canonical_json

    try:
        record = read_record(artifact)
    except (FileNotFoundError, ValueError) as err:
        raise click.ClickException(str(err)) from None
    click.echo(canonical_json(record["config"]))


def _verify(artifact: Path) -> None:
    from ..provenance.verify import format_verification, verify

    try:
        result = verify(artifact)
    except FileNotFoundError as err:
        raise click.ClickException(str(err)) from None
    click.echo(format_verification(result))
    if not result.ok:
        raise click.exceptions.Exit(1)


@click.command()
@THREADS
@click.option("--precision", type=click.Choice(["fp32", "bf16"]), default="fp32", show_default=True)
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True,
              help="Where the training benchmark runs (auto: CUDA when present).")
@click.option("--d-model", default=BENCHMARK_SIZE["d_model"], show_default=True)
@click.option("--n-layer", default=BENCHMARK_SIZE["n_layer"], show_default=True)
@click.option("--n-head", default=BENCHMARK_SIZE["n_head"], show_default=True)
@click.option("--seq-len", default=BENCHMARK_SIZE["seq_len"], show_default=True)
@click.option("--batch-size", default=BENCHMARK_SIZE["batch_size"], show_default=True)
@click.option("--steps", default=20, show_default=True)
@click.option("--compile", "compile_step", is_flag=True,
              help="Our step through torch.compile, as training on a GPU runs it unless train.compile is "
                   "false (CUDA graphs there); 10 warm-up steps instead of 3, the compilation among them. "
                   "Without it the step is eager, as HF's is.")
@click.option("--decode", is_flag=True,
              help="Instead: greedy decoding of 500 tokens with the KV cache vs a full forward per step.")
@click.option("--decode-length", default=500, show_default=True, help="New tokens per row with --decode.")
@click.option("--influence", "influence_targets", type=click.IntRange(min=2), default=None,
              help="Instead: the batched influential-token analysis of this many targets (Lbar 128, "
                   "L 64, k_max 4; at least 2: a baseline takes another document's tokens).")
def benchmark(threads, precision, device, d_model, n_layer, n_head, seq_len, batch_size, steps, compile_step,
              decode, decode_length, influence_targets) -> None:
    """Training tokens/s of our model vs GPTNeoXForCausalLM (if installed) and vs the machine's matmul
    FLOP/s; with --decode, the speed ratio of KV-cache decoding to full re-forward decoding; with
    --influence N, the time of the batched influential-token analysis of N targets."""
    from ..runs.benchmarks.inference import (
        decode_benchmark,
        format_decode_report,
        format_influence_report,
        influence_benchmark,
    )
    from ..runs.benchmarks.training_step import format_report, run_benchmark

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
    with model_job_errors():
        result = run_benchmark(d_model=d_model, n_layer=n_layer, n_head=n_head, seq_len=seq_len,
                               batch_size=batch_size, steps=steps, threads=threads, precision=precision,
                               device=device, compile=compile_step, warmup=10 if compile_step else 3,
                               say=lambda line: click.echo(line, err=True))
    click.echo(format_report(result))


@click.command("adopt")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--reason", default="", help="Why it is used as it is; recorded with the adoption.")
def adopt_command(files: tuple[Path, ...], reason: str) -> None:
    """Use FILES as they are now: record in each one's provenance sidecar that it was adopted (by
    whom, when, its new SHA-256 and the one recorded before), so the workflow and every step accept
    it. Everything made from it records that it rests on an adopted file, and the figure captions,
    the report's landing page and `lengthgen status` say so. To make a file again instead, run the
    command the workflow's error names (the run's own with --forcerun FILE)."""
    for path in files:
        adopted = adopt(path, reason)
        before = adopted["recorded_sha256"]
        click.echo(f"adopted {path} as it is (sha256 {adopted['sha256']}; "
                   f"{'recorded before: ' + before if before else 'no record before'})", err=True)


COMMANDS = (mechanism_table, table, findings, tensorboard, provenance, status, check, spec, benchmark, adopt_command)

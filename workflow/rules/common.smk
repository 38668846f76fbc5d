# Grid, per-job specs and code digests. Cheap and pure: re-parsed for every cluster job.
# Every result, log and benchmark path comes from pipeline_src/bookkeeping/paths.py.
from shlex import quote

from pipeline_src.bookkeeping import jobs
from pipeline_src.bookkeeping import paths
from pipeline_src.bookkeeping import slurm
from pipeline_src import device_setting as devices
from pipeline_src.language import config as lang
from pipeline_src.storage.canonical import canonical_json
from pipeline_src.bookkeeping.code_digest import stage_digest
from pipeline_src.bookkeeping.landing import LandingPage

# The schema (assembled from the task and scheme registries, defaults filled in) and the
# cross-field checks; one line naming the field on failure.
try:
    jobs.validate(config)
except jobs.ConfigError as err:
    raise WorkflowError(f"invalid config: {err}")


# The report's landing page (workflow/report/landing.rst), made only when a report prints it.
config["report_landing_page"] = LandingPage(config)


# No wildcard admits a slash or a dot: no config value or target can name a path outside results.
wildcard_constraints:
    task=jobs.PATH_PATTERNS["task"],
    variant=jobs.PATH_PATTERNS["variant"],
    scheme=jobs.PATH_PATTERNS["scheme"],
    seed=jobs.PATH_PATTERNS["seed"],
    evalset="eval(_[a-z0-9]+)?",
    lm="[a-z_]+",


# The gpu resource of every model job: 1 when its device setting will use CUDA, else 0 (see
# devices.gpus_per_model_job). Run locally, at most GPUs x models_per_gpu model jobs run at once (a
# --resources gpu=N of the user's wins), and each job claims a slot of one GPU through
# LENGTHGEN_GPU_SLOTS (pipeline_src/device.py). On a cluster, profiles/slurm sets gpu to 0 and the
# string MODEL_GRES is the job's GPU ("" for none), requested once by a group of models sharing it.
GPUS_PER_MODEL_JOB = devices.gpus_per_model_job(config)
MODEL_GRES = slurm.gres(GPUS_PER_MODEL_JOB)
if GPUS_PER_MODEL_JOB and workflow.local_exec and not workflow.remote_exec:
    GPUS = max(1, devices.visible_gpus())  # device: cuda where none is seen: the job's own check speaks
    if "gpu" not in workflow.global_resources:
        workflow.register_resource("gpu", GPUS * config["models_per_gpu"])
    os.environ[devices.SLOTS_ENV] = f"{GPUS},{config['models_per_gpu']},{os.path.abspath(paths.GPU_SLOTS)}"


CELLS = {task: jobs.cells(config, task) for task in jobs.tasks(config)}
FIGURES = jobs.figures(config)
MECHANISM_TASKS = jobs.mechanism_tasks(config)


def figure_target(figure):
    """What the target `<figure>` (and `all`) asks for: the figure's files and what it was made
    from. Snakemake takes a missing file whose consumers' outputs are up to date for a deleted
    intermediate and leaves it, so a model or table removed by a job killed after Snakemake deleted
    its outputs to rerun it would stay missing; as an input of a rule without outputs it is made
    again, and every job after it rerun."""
    mechanism, training = [], []
    if figure in FIGURES and jobs.FIGURE_TASK[figure] in MECHANISM_TASKS:
        mechanism = paths.figure_files(paths.mechanism_figure(jobs.FIGURE_TASK[figure]))
    if figure in FIGURES:
        training = paths.figure_files(paths.training_figure(figure))
    return [*paths.figure_files(figure), *mechanism, *training, *made_from(figure)]


def made_from(figure):
    """A figure's tables and what they were made from: each cell's accuracy table, datasets and
    model files (a task's figure), or the tables, token stream and models of the language chain."""
    if figure in LANGUAGE_FIGURES:  # the influence analysis reads the main model (or a Hugging Face one)
        models = [] if config["language"]["analysis"]["hf_model"] else [lang.MAIN]
        if figure != "figure4":
            models = dict.fromkeys([*models, *lang.evaluated_models(config)])
        return [*language_figure_inputs(figure), paths.TOKENIZER, paths.TOKENS,
                *(path for lm in models for path in paths.language_train_outputs(lm).values())]
    task = jobs.FIGURE_TASK[figure]
    files = {}
    for cell in CELLS[task]:
        files[paths.accuracy(**cell)] = None
        files.update(dict.fromkeys(paths.mechanism_tables(**cell).values()))
        files[paths.train_data(task=task, variant=cell["variant"])] = None
        files[paths.eval_data(task=task, evalset=jobs.eval_data_name(task, cell["variant"]))] = None
        files.update(dict.fromkeys(paths.train_outputs(**cell).values()))
    return list(files)


def spec_param(build):
    """A job's config subset as canonical JSON: reruns follow value changes, never YAML order."""
    return lambda wc: canonical_json(build(wc))


def eval_variant(wc):
    """Any variant scored on this evaluation set (they share its spec)."""
    return next(c["variant"] for c in CELLS[wc.task] if jobs.eval_data_name(wc.task, c["variant"]) == wc.evalset)


def figure_outputs(figure, category, prefix=""):
    """A figure's files (each format and its provenance sidecar) and its caption, named with
    ``prefix``; the PNG goes into the report under that caption (an absolute path: Snakemake reads it
    relative to this file)."""
    png, pdf = paths.figure_files(figure)
    caption = paths.figure_caption(figure)
    files = {"png": report(png, caption=os.path.abspath(caption), category=category), "pdf": pdf,
             "png_provenance": paths.sidecar(png), "pdf_provenance": paths.sidecar(pdf), "caption": caption}
    return {prefix + name: path for name, path in files.items()}


def caption_template(figure):
    """The description of a figure (workflow/report/<figure>.rst): an input of its job, whose
    caption it starts. Relative to the working directory, as every input: an absolute path would
    change with the folder and rerun the figure in a moved copy."""
    return os.path.relpath(os.path.join(workflow.basedir, "workflow", "report", f"{figure}.rst"))


# --- natural-language analysis (language.smk) ---
LANGUAGE_FIGURES = lang.figures(config)


def language_model_input(wc):
    """The model the influence analysis reads: our main model, or a local Hugging Face folder."""
    hf_model = config["language"]["analysis"]["hf_model"]
    return f"{hf_model}/config.json" if hf_model else paths.language_train_outputs(lang.MAIN)["model"]


def language_model_option(wc, input):
    """The CLI option naming that model (a shell-quoted folder)."""
    hf_model = config["language"]["analysis"]["hf_model"]
    return f"--hf-model {quote(hf_model)}" if hf_model else f"--model-dir {quote(os.path.dirname(input.model))}"


def language_figure_inputs(figure):
    """Figure 4 reads the influence table; our PoSE figure also every model's evaluation tables."""
    if figure == "figure4":
        return [paths.INFLUENCE]
    evaluated = [paths.language_eval_outputs(lm) for lm in lang.evaluated_models(config)]
    return ([tables["positions"] for tables in evaluated] + [tables["targets"] for tables in evaluated]
            + [paths.INFLUENCE])


# --- a task's mechanism figure, drawn by the job of the task's figure (figures.smk) ---


def mechanism_inputs(task):
    """The mechanism tables of every model of ``task`` and the figure's caption template (none for a
    task without dependency sets)."""
    if task not in MECHANISM_TASKS:
        return {}
    tables = [table for cell in CELLS[task] for table in paths.mechanism_tables(**cell).values()]
    return {"mechanism_tables": tables, "mechanism_caption": caption_template("mechanism")}


def mechanism_outputs(task):
    """The files of ``task``'s mechanism figure, as figure_outputs names them with ``mechanism_``."""
    if task not in MECHANISM_TASKS:
        return {}
    return figure_outputs(paths.mechanism_figure(task), category=task, prefix="mechanism_")


def mechanism_options(task):
    """The plot command's options that draw ``task``'s mechanism figure ("" for none)."""
    if task not in MECHANISM_TASKS:
        return ""
    folders = [os.path.dirname(paths.mechanism_tables(**cell)["attention"]) for cell in CELLS[task]]
    return companion_options("mechanism", paths.mechanism_figure(task), "--mechanism-dir", folders)


# --- a task figure's training-curve figure, drawn by the same job (figures.smk) ---


def training_logs(figure):
    """The training log of every model of ``figure``."""
    return [paths.train_outputs(**cell)["log_table"] for cell in CELLS[jobs.FIGURE_TASK[figure]]]


def training_inputs(figure):
    """The training logs of ``figure``'s models and the training figure's caption template."""
    return {"training_logs": training_logs(figure), "training_caption": caption_template("training")}


def training_outputs(figure):
    """The files of ``figure``'s training-curve figure, as figure_outputs names them with ``training_``."""
    return figure_outputs(paths.training_figure(figure), category=jobs.FIGURE_TASK[figure], prefix="training_")


def training_options(figure):
    """The plot command's options that draw ``figure``'s training-curve figure."""
    return companion_options("training", paths.training_figure(figure), "--training-log", training_logs(figure))


def companion_options(kind, name, source_option, sources):
    """The plot command's options that draw the ``kind`` figure ``name`` beside a task's figure:
    ``source_option`` with each of ``sources`` (what it is drawn from, one per model), its files and
    its caption (template workflow/report/<kind>.rst)."""
    png, pdf = paths.figure_files(name)
    # sorted: the order of the config's runs must not change the params (and rerun the figure)
    return " ".join([*(f"{source_option} {quote(source)}" for source in sorted(sources)),
                     f"--{kind}-out {png} --{kind}-out {pdf}",
                     f"--{kind}-caption {caption_template(kind)} {paths.figure_caption(name)}"])

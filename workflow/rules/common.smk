# Grid, per-job specs and code digests. Cheap and pure: re-parsed for every cluster job.
# Every result, log and benchmark path comes from pipeline_src/planning/paths.py.
import functools
from shlex import quote

from pipeline_src.planning import studies
from pipeline_src.planning import jobs
from pipeline_src.planning import paths
from pipeline_src.planning import slurm
from pipeline_src.devices import setting as devices
from pipeline_src.planning import language_jobs as lang
from pipeline_src.storage.canonical import canonical_json
from pipeline_src.provenance.code_digest import stage_digest
from pipeline_src.runs.landing import LandingPage
from pipeline_src.config.layers import BASE_CONFIG, ConfigError, read_config
from pipeline_src.planning.load_config import validate

# The config as Snakemake merged it (config/config.yaml, each --configfile, --config), but with each
# layer's `defaults` over the task sections before it (pipeline_src/config/layers.py): a --configfile's defaults
# reach every task. Then the schema (assembled from the task and scheme registries, defaults filled
# in) and every study's cross-field checks; one line naming the field on failure.
try:
    layered, _ = read_config(workflow.config_settings.configfiles, command_line=dict(workflow.config_settings.config),
                             base=None if workflow.config_settings.replace_workflow_config else BASE_CONFIG)
    config.clear()
    config.update(layered)
    validate(config)
except ConfigError as err:
    raise WorkflowError(f"invalid config: {err}")


# The report's landing page (workflow/report/landing.rst), made only when a report prints it: the
# paper's findings judged from the run's tables first (imported then: no job pays for it).
def findings_section(config):
    from pipeline_src.runs.run_findings import landing_section

    return landing_section(config)


config["report_landing_page"] = LandingPage(config, studies.STUDIES, findings=findings_section)


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
# LENGTHGEN_GPU_SLOTS (pipeline_src/devices/placement.py). On a cluster, profiles/slurm sets gpu to 0 and the
# string MODEL_GRES is the job's GPU ("" for none), requested once by a group of models sharing it.
GPUS_PER_MODEL_JOB = devices.gpus_per_model_job(config)
MODEL_GRES = slurm.gres(GPUS_PER_MODEL_JOB)
if GPUS_PER_MODEL_JOB and workflow.local_exec and not workflow.remote_exec:
    GPUS = max(1, devices.visible_gpus())  # device: cuda where none is seen: the job's own check speaks
    if "gpu" not in workflow.global_resources:
        workflow.register_resource("gpu", GPUS * config["models_per_gpu"])
    os.environ[devices.SLOTS_ENV] = f"{GPUS},{config['models_per_gpu']},{os.path.abspath(paths.GPU_SLOTS)}"


CELLS = {task: jobs.cells(config, task) for task in jobs.tasks(config)}
# Every figure of the config, with the study drawing it (pipeline_src/planning/studies.py): the synthetic
# tasks' figures and the natural-language analysis's.
FIGURES = {figure: studies.study_of(figure) for figure in studies.figures(config)}


def figure_target(figure):
    """What the target `<figure>` (and `all`) asks for: the figure's files, its companions' and what
    it was made from. Snakemake takes a missing file whose consumers' outputs are up to date for a
    deleted intermediate and leaves it, so a model or table removed by a job killed after Snakemake
    deleted its outputs to rerun it would stay missing; as an input of a rule without outputs it is
    made again, and every job after it rerun."""
    study = FIGURES[figure]
    companions = [path for companion in study.companions(config, figure) for path in paths.figure_files(companion.figure)]
    return [*paths.figure_files(figure), *companions, *study.made_from(config, figure)]


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


@functools.cache
def config_claims():
    """The config's claims (pipeline_src/findings/claims/, then its `claims` folders), read and checked
    once per parse."""
    from pipeline_src.findings.claim_file import ClaimError, claims_of

    try:
        return claims_of(config)
    except ClaimError as err:
        raise WorkflowError(f"invalid claim: {err}")


def claim_files(figure):
    """The claim files drawn in ``figure``: inputs of its job, whose caption states their verdicts, so
    editing one redraws that figure and nothing else. Relative to the working directory, as
    caption_template's."""
    return [os.path.relpath(claim.path) for claim in config_claims() if claim.figure == figure]


def claim_options(figure):
    """The plot command's --claim options of ``figure``'s claim files, and --rehearsal where the config's
    runs rehearse the code path (its ``rehearsal``: the caption labels each verdict so)."""
    return " ".join([*(f"--claim {quote(path)}" for path in claim_files(figure)),
                     *(["--rehearsal"] if config["rehearsal"] else [])])


# --- the figures a figure's job draws beside it (its study's companions: figures.smk) ---


def companion_inputs(figure):
    """Each companion's sources and caption template, named ``<kind>_inputs`` and ``<kind>_caption``."""
    found = {}
    for companion in FIGURES[figure].companions(config, figure):
        found.update({f"{companion.kind}_inputs": list(companion.inputs),
                      f"{companion.kind}_caption": caption_template(companion.kind)})
    return found


def companion_outputs(figure):
    """Each companion's files, as figure_outputs names them with ``<kind>_``."""
    found = {}
    for companion in FIGURES[figure].companions(config, figure):
        found.update(figure_outputs(companion.figure, category=FIGURES[figure].category(figure),
                                    prefix=f"{companion.kind}_"))
    return found


def companion_options(figure):
    """The plot command's options that draw ``figure``'s companions: for each, its source option
    with each source (one per model), its files and its caption (template
    workflow/report/<kind>.rst)."""
    options = []
    for companion in FIGURES[figure].companions(config, figure):
        png, pdf = paths.figure_files(companion.figure)
        # sorted: the order of the config's runs must not change the params (and rerun the figure)
        options += [*(f"{companion.source_option} {quote(source)}" for source in sorted(companion.sources)),
                    f"--{companion.kind}-out {png} --{companion.kind}-out {pdf}",
                    f"--{companion.kind}-caption {caption_template(companion.kind)} "
                    f"{paths.figure_caption(companion.figure)}"]
    return " ".join(options)

# Grid, per-job specs and code digests. Cheap and pure: re-parsed for every cluster job.
from pipeline_src import config as jobs
from pipeline_src.canonical import canonical_json
from pipeline_src.provenance import stage_digest

try:
    jobs.check(config)
except jobs.ConfigError as err:
    raise WorkflowError(f"invalid config: {err}")


wildcard_constraints:
    task="[a-z_]+",
    variant="[a-z0-9]+",
    scheme="[a-z_]+",
    seed=r"\d+",
    evalset="eval(_[a-z0-9]+)?",


CELLS = {task: jobs.cells(config, task) for task in jobs.tasks(config)}
FIGURES = {name: [f"results/figures/{name}.png", f"results/figures/{name}.pdf"] for name in jobs.figures(config)}


def spec_param(build):
    """A job's config subset as canonical JSON: reruns follow value changes, never YAML order."""
    return lambda wc: canonical_json(build(wc))


def cell_path(cell):
    return f"{cell['task']}/{cell['scheme']}/{cell['variant']}/seed{cell['seed']}"


def accuracy_file(cell):
    return f"results/eval/{cell_path(cell)}/accuracy.parquet"


def eval_variant(wc):
    """Any variant scored on this evaluation set (they share its spec)."""
    return next(c["variant"] for c in CELLS[wc.task] if jobs.eval_data_name(wc.task, c["variant"]) == wc.evalset)

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
    scheme="[a-z_]+",
    k=r"\d+",
    seed=r"\d+",


TASK = "sparse_parity"
CELLS = jobs.cells(config, TASK)
FIGURE1 = ["results/figures/figure1.png", "results/figures/figure1.pdf"]


def spec_param(build):
    """A job's config subset as canonical JSON: reruns follow value changes, never YAML order."""
    return lambda wc: canonical_json(build(wc))


def model_dir(cell):
    return f"results/train/{cell['task']}/{cell['scheme']}/k{cell['k']}/seed{cell['seed']}"


def accuracy_file(cell):
    return f"results/eval/{cell['task']}/{cell['scheme']}/k{cell['k']}/seed{cell['seed']}/accuracy.parquet"

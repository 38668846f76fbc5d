# lengthgen: reproduces "The Role of Sparsity for Length Generalization" (Golowich et al., ICML 2025).
# Run `snakemake --cores N all`; see README.md and config/README.md.
import sys

from snakemake.utils import min_version

from pipeline_src.runs.workflow_process import jobs_use_this_python, quiet_report_about_absent_files
from pipeline_src.runs.cell_status import unfinished_warning
from pipeline_src.runs.preflight import check_workflow

min_version("9.0")

jobs_use_this_python()  # `.venv/bin/snakemake ...` works without activating the environment
quiet_report_about_absent_files()  # no warning per file a report's config has not made yet


configfile: "config/config.yaml"


report: "workflow/report/landing.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/language.smk"


# Targets: each figure by its name (`snakemake figure2`), and `all`. Rules without outputs, so that
# everything a figure was made from is asked for, and a file lost while the figure stayed is made
# again (see figure_target in workflow/rules/common.smk).
TARGETS = {figure: figure_target(figure) for figure in FIGURES}

for figure, inputs in TARGETS.items():

    rule:
        name:
            figure
        input:
            inputs,


rule all:
    default_target: True
    input:
        list(dict.fromkeys(path for inputs in TARGETS.values() for path in inputs)),


# Before the first job starts (and Snakemake removes its old outputs): every job's spec, device and
# input files checked as the job would check them; one line naming the field or file, nothing removed
# (pipeline_src/runs/preflight.py).
onstart:
    check_workflow(workflow)


# Cells that did not finish (training diverged, or a job failed), on the console at the end.
onsuccess:
    print(unfinished_warning(), file=sys.stderr, end="")


onerror:
    print(unfinished_warning(), file=sys.stderr, end="")

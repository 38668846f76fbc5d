# lengthgen: reproduces "The Role of Sparsity for Length Generalization" (Golowich et al., ICML 2025).
# Run `snakemake --cores N all`; see README.md and config/README.md.
import sys

from snakemake.utils import min_version

from pipeline_src.bookkeeping.status import unfinished_warning

min_version("9.0")


configfile: "config/config.yaml"


report: "workflow/report/landing.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/language.smk"


rule all:
    default_target: True
    input:
        [path for paths in FIGURES.values() for path in paths],
        [path for paths in LANGUAGE_FIGURES.values() for path in paths],
        list(dict.fromkeys(path for figure in [*FIGURES, *LANGUAGE_FIGURES] for path in made_from(figure))),


# Cells that did not finish (training diverged, or a job failed), on the console at the end.
onsuccess:
    print(unfinished_warning(), file=sys.stderr, end="")


onerror:
    print(unfinished_warning(), file=sys.stderr, end="")

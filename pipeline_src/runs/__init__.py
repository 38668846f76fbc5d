"""Everything about runs, behind one door: where every cell stands (:mod:`.cell_status`) and how
long a run takes (:mod:`.estimate`), ``lengthgen findings`` over a results folder
(:mod:`.run_findings`, with the check that its tables were made with the config judged:
:mod:`.judged_config`) and across scales into the README's table (:mod:`.scales`), the report's
landing page (:mod:`.landing`), provenance verification (:mod:`.verify`), the checks before a run
removes anything (:mod:`.preflight`), files adopted as they are (:mod:`.adoption`), TensorBoard export
(:mod:`.tensorboard_export`), the benchmarks (:mod:`.benchmarks`) and the ``lengthgen`` commands
that read them (:mod:`.tools`). Nothing here changes a result.

The entry point is :data:`COMMANDS`, which :mod:`pipeline_src.cli` registers beside the pipeline
steps; the workflow reads :mod:`.cell_status` and :mod:`.landing` at parse time.
"""

from .tools import COMMANDS

IN_CODE_DIGEST = False  # nor any module of this package: each records or dispatches (provenance/code_digest.py)

__all__ = ["COMMANDS"]

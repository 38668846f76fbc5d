"""Everything about runs: where every cell stands (:mod:`.cell_status`) and how long a run takes
(:mod:`.estimate`), ``lengthgen findings`` over a results folder (:mod:`.run_findings`, with the check
that its tables were made with the config judged: :mod:`.judged_config`) and across scales into the
README's table (:mod:`.scales`), the report's landing page (:mod:`.landing`), the checks before a run
removes anything (:mod:`.preflight`), files adopted as they are (:mod:`.adoption`), TensorBoard export
(:mod:`.tensorboard_export`), the benchmarks (:mod:`.benchmarks`) and the workflow's own process (its
jobs' PATH, the report's warnings: :mod:`.workflow_process`). Nothing here changes a result, and
nothing here is a command: the ``lengthgen`` commands that read runs are
:mod:`pipeline_src.cli.run_commands`. The workflow reads :mod:`.cell_status` and :mod:`.landing` at
parse time.
"""

IN_CODE_DIGEST = False  # nor any module of this package: each records or dispatches (provenance/code_digest.py)

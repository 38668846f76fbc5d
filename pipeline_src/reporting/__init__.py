"""What a run shows: the state of every cell (:mod:`.cell_status`), ``lengthgen findings`` over a
results folder (:mod:`.run_findings`, :mod:`.judged_config`, :mod:`.scales`; the verdicts
themselves: :mod:`pipeline_src.findings`) and the report's landing page."""

"""What a run shows: the state of every cell (:mod:`.cell_status`), the paper's findings judged by
tests over seeds (:mod:`.findings`, :mod:`.significance`, :mod:`.run_findings`, :mod:`.scales`),
the run summaries they are exported to, the tables and the report's landing page."""

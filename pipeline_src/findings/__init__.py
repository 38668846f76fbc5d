"""The paper's findings, judged by :func:`.judge.judge`, the one entry point: by tests over seeds
(:mod:`.significance`, :mod:`.trend_tests`) whose verdict a rule gives (:mod:`.verdicts`), from a run's
numbers in one long table (:mod:`.run_summary`), a synthetic task's per seed and cell
(:mod:`.seed_summary`), and accuracy tables as Markdown (:mod:`.tables`). Every figure's caption
states its finding; ``lengthgen findings`` judges them all from a results folder
(:mod:`pipeline_src.runs.run_findings`)."""

"""Planning a run, torch-free and cheap (the Snakefile runs it at parse time): each job's config
subset (:mod:`.jobs`, and :mod:`pipeline_src.language.language_jobs` for the language study), the
jobs of one cell (:mod:`.cell_jobs`), result paths (:mod:`.paths`), the studies' interface
(:mod:`.study`, :mod:`.task_study`), devices and GPU slots (:mod:`.devices`) and Slurm requests
(:mod:`.slurm`)."""

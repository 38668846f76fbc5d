"""Planning a run, torch-free and cheap (the Snakefile runs it at parse time): each job's config
subset (:mod:`.jobs`, and :mod:`.language_jobs` for the language study, whose input files
:mod:`.language_inputs` finds), the jobs of one cell (:mod:`.cell_jobs`), result paths (:mod:`.paths`),
the studies (:mod:`.studies`; their interface :mod:`.study`, :mod:`.task_study`, :mod:`.language_study`),
the whole check and loading of a config (:mod:`.load_config`) and Slurm requests (:mod:`.slurm`)."""

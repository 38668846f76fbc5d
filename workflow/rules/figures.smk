# Figures: aggregation over seeds happens here; each figure has a provenance sidecar per format.
# One rule per figure of every study (plot_figure1, ..., plot_figure4, plot_language_pose), each over
# the tables its study names; the target `figure1` (Snakefile) asks for the figure and everything it
# was made from. A figure's job also draws its study's companions of it: a task's training-curve
# figure (training_<figure>) from each model's training log and, for a task whose dependency sets are
# declared, its mechanism figure (mechanism_<task>) from each model's mechanism tables: one job, so
# no second start of Python.


for figure, study in FIGURES.items():

    rule:
        name:
            f"plot_{figure}"
        input:
            tables=study.figure_tables(config, figure),
            caption=caption_template(figure),
            claims=claim_files(figure),
            **companion_inputs(figure),
        output:
            **figure_outputs(figure, category=study.category(figure)),
            **companion_outputs(figure),
        params:
            figure=figure,
            rule=f"plot_{figure}",
            spec=canonical_json(study.figure_spec(config, figure)),
            code=study.figure_digest(figure),
            companions=companion_options(figure),
            claims=claim_options(figure),
        localrule: True
        conda:
            "../envs/lengthgen.yaml"
        log:
            paths.log(paths.figure_job(figure)),
        benchmark:
            paths.benchmark(paths.figure_job(figure))
        shell:
            # not f"{figure}": Snakemake formats shell f-strings again when the job runs, when the
            # loop variable holds the last figure; params are bound per rule
            "lengthgen plot {params.figure} --rule {params.rule} --spec {params.spec:q}"
            " --out {output.png} --out {output.pdf} --caption {input.caption} {output.caption} {params.claims}"
            " {params.companions} {input.tables} 2> {log}"

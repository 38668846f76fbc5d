# Figures: aggregation over seeds happens here; each figure has a provenance sidecar per format.
# One rule per figure (plot_figure1, plot_figure2, ...), each over the accuracy tables of its task's
# cells; the target `figure1` (Snakefile) asks for the figure and everything it was made from. The
# job of a task whose dependency sets are declared also draws its mechanism figure
# (mechanism_<task>) from each model's mechanism tables, and every task's figure job its training-curve
# figure (training_<figure>) from each model's training log: one job, so no second start of Python.


for figure in FIGURES:

    rule:
        name:
            f"plot_{figure}"
        input:
            tables=[paths.accuracy(**cell) for cell in CELLS[jobs.FIGURE_TASK[figure]]],
            caption=caption_template(figure),
            **mechanism_inputs(jobs.FIGURE_TASK[figure]),
            **training_inputs(figure),
        output:
            **figure_outputs(figure, category=jobs.FIGURE_TASK[figure]),
            **mechanism_outputs(jobs.FIGURE_TASK[figure]),
            **training_outputs(figure),
        params:
            figure=figure,
            rule=f"plot_{figure}",
            spec=canonical_json(jobs.figure_spec(config, figure)),
            code=stage_digest("figures", jobs.FIGURE_TASK[figure]),
            mechanism=mechanism_options(jobs.FIGURE_TASK[figure]),
            training=training_options(figure),
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
            " --out {output.png} --out {output.pdf} --caption {input.caption} {output.caption}"
            " {params.mechanism} {params.training} {input.tables} 2> {log}"

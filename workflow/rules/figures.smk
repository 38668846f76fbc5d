# Figures: aggregation over seeds happens here; each figure has a provenance sidecar per format.
# One rule per figure (plot_figure1, plot_figure2, ...), each over the accuracy tables of its task's
# cells; the target `figure1` (Snakefile) asks for the figure and everything it was made from.


for figure in FIGURES:

    rule:
        name:
            f"plot_{figure}"
        input:
            tables=[paths.accuracy(**cell) for cell in CELLS[jobs.FIGURES[figure]]],
            caption=caption_template(figure),
        output:
            **figure_outputs(figure, category=jobs.FIGURES[figure]),
        params:
            figure=figure,
            rule=f"plot_{figure}",
            spec=canonical_json(jobs.figure_spec(config, figure)),
            code=stage_digest("figures", jobs.FIGURES[figure]),
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
            " {input.tables} 2> {log}"

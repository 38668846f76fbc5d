# Figures: aggregation over seeds happens here; each figure has a provenance sidecar per format.


rule figure1:
    input:
        [accuracy_file(cell) for cell in CELLS],
    output:
        png=report("results/figures/figure1.png", caption="../report/figure1.rst", category="Sparse parity"),
        pdf="results/figures/figure1.pdf",
        png_provenance="results/figures/figure1.png.prov.json",
        pdf_provenance="results/figures/figure1.pdf.prov.json",
    params:
        rule="figure1",
        spec=canonical_json(jobs.figure1_spec(config)),
        code=stage_digest("figures"),
    localrule: True
    conda:
        "../envs/lengthgen.yaml"
    log:
        "results/logs/figures/figure1.log",
    benchmark:
        "results/benchmarks/figures/figure1.tsv"
    shell:
        "lengthgen plot figure1 --rule {params.rule} --spec {params.spec:q}"
        " --out {output.png} --out {output.pdf} {input} 2> {log}"

# Datasets: one training set per (task, variant), shared by schemes and seeds; one evaluation grid
# per task (per variant where the variant changes the response: scratchpad or direct).


rule train_data:
    output:
        paths.train_data(),
    params:
        rule="train_data",
        spec=spec_param(lambda wc: jobs.train_data_spec(config, wc.task, wc.variant)),
        code=lambda wc: stage_digest("data", wc.task),
    conda:
        "../envs/lengthgen.yaml"
    log:
        paths.log(paths.train_data_job()),
    benchmark:
        paths.benchmark(paths.train_data_job())
    shell:
        "lengthgen generate --rule {params.rule} --spec {params.spec:q} --out {output} 2> {log}"


rule eval_data:
    output:
        paths.eval_data(),
    params:
        rule="eval_data",
        spec=spec_param(lambda wc: jobs.eval_data_spec(config, wc.task, eval_variant(wc))),
        code=lambda wc: stage_digest("data", wc.task),
    conda:
        "../envs/lengthgen.yaml"
    log:
        paths.log(paths.eval_data_job()),
    benchmark:
        paths.benchmark(paths.eval_data_job())
    shell:
        "lengthgen generate --rule {params.rule} --spec {params.spec:q} --out {output} 2> {log}"

# Datasets: one training set per (task, K_train), shared by schemes and seeds; one evaluation grid per task.


rule train_data:
    output:
        "results/data/{task}/train_k{k}.parquet",
    params:
        rule="train_data",
        spec=spec_param(lambda wc: jobs.train_data_spec(config, wc.task, int(wc.k))),
        code=stage_digest("data"),
    conda:
        "../envs/lengthgen.yaml"
    log:
        "results/logs/data/{task}/train_k{k}.log",
    benchmark:
        "results/benchmarks/data/{task}/train_k{k}.tsv"
    shell:
        "lengthgen generate --rule {params.rule} --spec {params.spec:q} --out {output} 2> {log}"


rule eval_data:
    output:
        "results/data/{task}/eval.parquet",
    params:
        rule="eval_data",
        spec=spec_param(lambda wc: jobs.eval_data_spec(config, wc.task)),
        code=stage_digest("data"),
    conda:
        "../envs/lengthgen.yaml"
    log:
        "results/logs/data/{task}/eval.log",
    benchmark:
        "results/benchmarks/data/{task}/eval.tsv"
    shell:
        "lengthgen generate --rule {params.rule} --spec {params.spec:q} --out {output} 2> {log}"

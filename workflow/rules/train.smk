# One training job per cell (task, scheme, variant, seed). A killed job resumes from its last
# checkpoint (resume-*.pt in the output folder, which Snakemake does not delete) when rerun.


rule train:
    input:
        "results/data/{task}/train_{variant}.parquet",
    output:
        model="results/train/{task}/{scheme}/{variant}/seed{seed}/model.safetensors",
        description="results/train/{task}/{scheme}/{variant}/seed{seed}/model.json",
        log_table="results/train/{task}/{scheme}/{variant}/seed{seed}/train_log.parquet",
        summary="results/train/{task}/{scheme}/{variant}/seed{seed}/summary.json",
    params:
        rule="train",
        spec=spec_param(lambda wc: jobs.train_spec(config, wc.task, wc.variant, wc.scheme, int(wc.seed))),
        code=lambda wc: stage_digest("train", wc.task, wc.scheme),
        out_dir=lambda wc, output: os.path.dirname(output.model),
    resources:
        gpu=GPUS_PER_MODEL_JOB,
    threads: config["threads"]["train"]
    conda:
        "../envs/lengthgen.yaml"
    log:
        "results/logs/train/{task}/{scheme}/{variant}/seed{seed}.log",
    benchmark:
        "results/benchmarks/train/{task}/{scheme}/{variant}/seed{seed}.tsv"
    shell:
        "lengthgen train --rule {params.rule} --spec {params.spec:q} --threads {threads}"
        " --train-data {input} --out-dir {params.out_dir} 2> {log}"

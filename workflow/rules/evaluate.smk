# One evaluation job per trained model, sweeping every cell of the task's evaluation grid.


rule evaluate:
    input:
        model="results/train/{task}/{scheme}/{variant}/seed{seed}/model.safetensors",
        eval_data=lambda wc: f"results/data/{wc.task}/{jobs.eval_data_name(wc.task, wc.variant)}.parquet",
    output:
        "results/eval/{task}/{scheme}/{variant}/seed{seed}/accuracy.parquet",
    params:
        rule="evaluate",
        spec=spec_param(lambda wc: jobs.eval_spec(config, wc.task)),
        code=lambda wc: stage_digest("evaluate", wc.task, wc.scheme),
        model_dir=lambda wc, input: os.path.dirname(input.model),
    resources:
        gpu=GPUS_PER_MODEL_JOB,
    threads: config["threads"]["evaluate"]
    conda:
        "../envs/lengthgen.yaml"
    log:
        "results/logs/eval/{task}/{scheme}/{variant}/seed{seed}.log",
    benchmark:
        "results/benchmarks/eval/{task}/{scheme}/{variant}/seed{seed}.tsv"
    shell:
        "lengthgen evaluate --rule {params.rule} --spec {params.spec:q} --threads {threads}"
        " --model-dir {params.model_dir} --eval-data {input.eval_data} --out {output} 2> {log}"

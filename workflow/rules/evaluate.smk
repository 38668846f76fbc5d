# One evaluation job per trained model, sweeping every cell of the task's evaluation grid, then
# analysing the model's mechanism (pipeline_src/evaluation/mechanism.py) in the same process.


rule evaluate:
    input:
        model=paths.train_outputs()["model"],
        eval_data=lambda wc: paths.eval_data(task=wc.task, evalset=jobs.eval_data_name(wc.task, wc.variant)),
    output:
        accuracy=paths.accuracy(),
        **paths.mechanism_tables(),
    params:
        rule="evaluate",
        spec=spec_param(lambda wc: jobs.eval_spec(config, wc.task)),
        code=lambda wc: stage_digest("evaluate", wc.task, wc.scheme),
        model_dir=lambda wc, input: os.path.dirname(input.model),
        mechanism_dir=lambda wc, output: os.path.dirname(output.attention),
    resources:
        gpu=GPUS_PER_MODEL_JOB,
        gres=MODEL_GRES,
    threads: config["threads"]["evaluate"]
    conda:
        "../envs/lengthgen.yaml"
    log:
        paths.log(paths.eval_job()),
    benchmark:
        paths.benchmark(paths.eval_job())
    shell:
        "lengthgen evaluate --rule {params.rule} --spec {params.spec:q} --threads {threads}"
        " --model-dir {params.model_dir} --eval-data {input.eval_data} --out {output.accuracy}"
        " --mechanism-dir {params.mechanism_dir} 2> {log}"

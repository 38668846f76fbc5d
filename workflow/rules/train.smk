# One training job per cell (task, scheme, variant, seed). A killed job resumes from its last
# checkpoint (resume-*.pt in the output folder, which Snakemake does not delete) when rerun.


rule train:
    input:
        paths.train_data(),
    output:
        **paths.train_outputs(),
    params:
        rule="train",
        spec=spec_param(lambda wc: jobs.train_spec(config, wc.task, wc.variant, wc.scheme, int(wc.seed))),
        code=lambda wc: stage_digest("train", wc.task, wc.scheme),
        out_dir=lambda wc, output: os.path.dirname(output.model),
    resources:
        gpu=GPUS_PER_MODEL_JOB,
        gres=MODEL_GRES,
    threads: config["threads"]["train"]
    conda:
        "../envs/lengthgen.yaml"
    log:
        paths.log(paths.train_job()),
    benchmark:
        paths.benchmark(paths.train_job())
    shell:
        "lengthgen train --rule {params.rule} --spec {params.spec:q} --threads {threads}"
        " --train-data {input} --out-dir {params.out_dir} 2> {log}"

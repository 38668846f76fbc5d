# Natural-language analysis (SPEC 6), when `tasks` lists `language`: corpus -> tokenizer -> token
# stream; language models (the synthetic tasks' trainer); loss by position and target losses;
# influential tokens; Figure 4 and our PoSE figure. Specs: pipeline_src/language/config.py.


rule language_corpus:
    input:
        lambda wc: lang.corpus_inputs(config),
    output:
        tokenizer=f"{LANGUAGE_DIR}/tokenizer.json",
        tokens=f"{LANGUAGE_DIR}/tokens.parquet",
    params:
        rule="language_corpus",
        spec=spec_param(lambda wc: lang.corpus_spec(config)),
        code=stage_digest("language_data"),
    conda:
        "../envs/lengthgen.yaml"
    log:
        "results/logs/language/corpus.log",
    benchmark:
        "results/benchmarks/language/corpus.tsv"
    shell:
        "lengthgen corpus --rule {params.rule} --spec {params.spec:q}"
        " --tokenizer-out {output.tokenizer} --tokens-out {output.tokens} 2> {log}"


rule language_train:
    input:
        tokens=f"{LANGUAGE_DIR}/tokens.parquet",
        tokenizer=f"{LANGUAGE_DIR}/tokenizer.json",
    output:
        model=f"{LANGUAGE_DIR}/train/{{lm}}/model.safetensors",
        description=f"{LANGUAGE_DIR}/train/{{lm}}/model.json",
        log_table=f"{LANGUAGE_DIR}/train/{{lm}}/train_log.parquet",
        heldout_table=f"{LANGUAGE_DIR}/train/{{lm}}/heldout_log.parquet",
        summary=f"{LANGUAGE_DIR}/train/{{lm}}/summary.json",
    wildcard_constraints:
        lm="|".join(lang.SCHEMES),
    params:
        rule="language_train",
        spec=spec_param(lambda wc: lang.train_spec(config, wc.lm)),
        code=lambda wc: stage_digest("language_train", scheme=lang.SCHEMES[wc.lm]),
        out_dir=lambda wc, output: os.path.dirname(output.model),
    resources:
        gpu=GPUS_PER_MODEL_JOB,
    threads: config["threads"]["train"]
    conda:
        "../envs/lengthgen.yaml"
    log:
        "results/logs/language/train/{lm}.log",
    benchmark:
        "results/benchmarks/language/train/{lm}.tsv"
    shell:
        "lengthgen train --rule {params.rule} --spec {params.spec:q} --threads {threads}"
        " --train-data {input.tokens} --tokenizer {input.tokenizer} --out-dir {params.out_dir} 2> {log}"


rule language_eval:
    input:
        model=f"{LANGUAGE_DIR}/train/{{lm}}/model.safetensors",
        tokens=f"{LANGUAGE_DIR}/tokens.parquet",
    output:
        positions=f"{LANGUAGE_DIR}/eval/{{lm}}/loss_by_position.parquet",
        targets=f"{LANGUAGE_DIR}/eval/{{lm}}/target_loss.parquet",
    wildcard_constraints:
        lm="|".join(lang.SCHEMES),
    params:
        rule="language_eval",
        spec=spec_param(lambda wc: lang.eval_spec(config)),
        code=stage_digest("language_eval"),
        model_dir=lambda wc, input: os.path.dirname(input.model),
    resources:
        gpu=GPUS_PER_MODEL_JOB,
    threads: config["threads"]["evaluate"]
    conda:
        "../envs/lengthgen.yaml"
    log:
        "results/logs/language/eval/{lm}.log",
    benchmark:
        "results/benchmarks/language/eval/{lm}.tsv"
    shell:
        "lengthgen lm-eval --rule {params.rule} --spec {params.spec:q} --threads {threads}"
        " --model-dir {params.model_dir} --tokens {input.tokens}"
        " --out-positions {output.positions} --out-targets {output.targets} 2> {log}"


rule language_influence:
    input:
        model=language_model_input,
        tokens=f"{LANGUAGE_DIR}/tokens.parquet",
    output:
        f"{LANGUAGE_DIR}/influence.parquet",
    params:
        rule="language_influence",
        spec=spec_param(lambda wc: lang.influence_spec(config)),
        code=stage_digest("language_eval"),
        model=language_model_option,
    resources:
        gpu=GPUS_PER_MODEL_JOB,
    threads: config["threads"]["evaluate"]
    conda:
        "../envs/lengthgen.yaml"
    log:
        "results/logs/language/influence.log",
    benchmark:
        "results/benchmarks/language/influence.tsv"
    shell:
        "lengthgen influence --rule {params.rule} --spec {params.spec:q} --threads {threads}"
        " {params.model} --tokens {input.tokens} --out {output} 2> {log}"


for figure in LANGUAGE_FIGURES:

    rule:
        name:
            figure
        input:
            language_figure_inputs(figure),
        output:
            png=report(f"results/figures/{figure}.png", caption=f"../report/{figure}.rst", category="language"),
            pdf=f"results/figures/{figure}.pdf",
            png_provenance=f"results/figures/{figure}.png.prov.json",
            pdf_provenance=f"results/figures/{figure}.pdf.prov.json",
        params:
            rule=figure,
            spec=canonical_json(lang.figure_spec(config, figure)),
            code=stage_digest("language_figures"),
        localrule: True
        conda:
            "../envs/lengthgen.yaml"
        log:
            f"results/logs/figures/{figure}.log",
        benchmark:
            f"results/benchmarks/figures/{figure}.tsv"
        shell:
            # not f"{figure}": Snakemake formats shell f-strings again when the job runs, when the
            # loop variable holds the last figure; params are bound per rule
            "lengthgen plot {params.rule} --rule {params.rule} --spec {params.spec:q}"
            " --out {output.png} --out {output.pdf} {input} 2> {log}"

# Natural-language analysis (Figure 4), when `language.enabled`: corpus -> tokenizer -> token stream;
# language models (the synthetic tasks' trainer); loss by position and target losses; influential
# tokens. Specs: pipeline_src/planning/language_jobs.py; its figures (Figure 4 and our PoSE figure) are
# drawn by figures.smk's rule, as every study's (pipeline_src/planning/language_study.py).
from pipeline_src.planning.language_study import influence_model_input, influence_model_option


rule language_corpus:
    input:
        lambda wc: lang.corpus_inputs(config),
    output:
        tokenizer=paths.TOKENIZER,
        tokens=paths.TOKENS,
    params:
        rule="language_corpus",
        spec=spec_param(lambda wc: lang.corpus_spec(config)),
        code=stage_digest("language_data"),
    conda:
        "../envs/lengthgen.yaml"
    log:
        paths.log(paths.LANGUAGE_CORPUS_JOB),
    benchmark:
        paths.benchmark(paths.LANGUAGE_CORPUS_JOB)
    shell:
        "lengthgen corpus --rule {params.rule} --spec {params.spec:q}"
        " --tokenizer-out {output.tokenizer} --tokens-out {output.tokens} 2> {log}"


rule language_train:
    input:
        tokens=paths.TOKENS,
        tokenizer=paths.TOKENIZER,
    output:
        **paths.language_train_outputs(),
    wildcard_constraints:
        lm="|".join(lang.SCHEMES),
    params:
        rule="language_train",
        spec=spec_param(lambda wc: lang.train_spec(config, wc.lm)),
        code=lambda wc: stage_digest("language_train", scheme=lang.SCHEMES[wc.lm]),
        out_dir=lambda wc, output: os.path.dirname(output.model),
    resources:
        gpu=GPUS_PER_MODEL_JOB,
        gres=MODEL_GRES,
    threads: config["threads"]["train"]
    conda:
        "../envs/lengthgen.yaml"
    log:
        paths.log(paths.language_train_job()),
    benchmark:
        paths.benchmark(paths.language_train_job())
    shell:
        "lengthgen lm-train --rule {params.rule} --spec {params.spec:q} --threads {threads}"
        " --tokens {input.tokens} --tokenizer {input.tokenizer} --out-dir {params.out_dir} 2> {log}"


rule language_eval:
    input:
        model=paths.language_train_outputs()["model"],
        tokens=paths.TOKENS,
    output:
        **paths.language_eval_outputs(),
    wildcard_constraints:
        lm="|".join(lang.SCHEMES),
    params:
        rule="language_eval",
        spec=spec_param(lambda wc: lang.eval_spec(config)),
        code=lambda wc: stage_digest("language_eval", scheme=lang.SCHEMES[wc.lm]),
        model_dir=lambda wc, input: os.path.dirname(input.model),
    resources:
        gpu=GPUS_PER_MODEL_JOB,
        gres=MODEL_GRES,
    threads: config["threads"]["evaluate"]
    conda:
        "../envs/lengthgen.yaml"
    log:
        paths.log(paths.language_eval_job()),
    benchmark:
        paths.benchmark(paths.language_eval_job())
    shell:
        "lengthgen lm-eval --rule {params.rule} --spec {params.spec:q} --threads {threads}"
        " --model-dir {params.model_dir} --tokens {input.tokens}"
        " --out-positions {output.positions} --out-targets {output.targets} 2> {log}"


rule language_influence:
    input:
        model=lambda wc: influence_model_input(config),
        tokens=paths.TOKENS,
    output:
        paths.INFLUENCE_PARTS,  # the whole draw's table, or one part's (language.analysis.parts)
    wildcard_constraints:
        part=paths.PART_PATTERN,
    params:
        rule="language_influence",
        spec=spec_param(lambda wc: lang.influence_spec(config, paths.part_of(wc.part))),
        # the analysed model's scheme code (none for a Hugging Face model)
        code=lambda wc: stage_digest("language_eval", scheme=lang.SCHEMES.get(lang.analysed_model(config))),
        model=lambda wc, input: influence_model_option(config, input.model),
    resources:
        gpu=GPUS_PER_MODEL_JOB,
        gres=MODEL_GRES,
    threads: config["threads"]["evaluate"]
    conda:
        "../envs/lengthgen.yaml"
    log:
        paths.log(paths.influence_job()),
    benchmark:
        paths.benchmark(paths.influence_job())
    shell:
        "lengthgen influence --rule {params.rule} --spec {params.spec:q} --threads {threads}"
        " {params.model} --tokens {input.tokens} --out {output} 2> {log}"

"""Smoke test for pipeline_src.benchmark at a tiny size."""

from pipeline_src.benchmark import format_report, run_benchmark


def test_run_benchmark_tiny():
    result = run_benchmark(d_model=32, n_layer=1, n_head=2, seq_len=16, batch_size=4,
                           steps=2, warmup=1, matmul_size=256)
    assert result["tokens_per_s"] > 0
    assert 0 < result["fraction_of_matmul"] <= 1.5
    assert result["matmul_flops_per_s"]["fp32"] > 0 and result["matmul_flops_per_s"]["bf16"] > 0
    if result["hf_tokens_per_s"] is not None:
        assert result["hf_tokens_per_s"] > 0 and result["ratio_ours_over_hf"] > 0
    else:
        assert "not installed" in result["hf_status"]
    assert "tokens/s" in format_report(result)


def test_cli_decode_benchmark_prints_the_speed_ratio():
    from click.testing import CliRunner

    from pipeline_src.cli import main

    done = CliRunner().invoke(main, ["benchmark", "--decode", "--decode-length", "5", "--batch-size", "2",
                                     "--d-model", "16", "--n-layer", "1", "--n-head", "2"])
    assert done.exit_code == 0, done.output
    assert "speed-up (cache / re-forward)" in done.output and "identical outputs: True" in done.output


def test_cli_influence_benchmark_prints_the_speed_ratio():
    from click.testing import CliRunner

    from pipeline_src.cli import main

    done = CliRunner().invoke(main, ["benchmark", "--influence", "2", "--d-model", "16", "--n-layer", "1",
                                     "--n-head", "2", "--batch-size", "64", "--threads", "1"])
    assert done.exit_code == 0, done.output
    assert "speed-up (batched / one at a time)" in done.output and "same choices: True" in done.output


def test_training_benchmark_names_its_device_and_refuses_cuda_without_a_gpu():
    import pytest
    import torch
    from click.testing import CliRunner

    from pipeline_src.cli import main

    result = run_benchmark(d_model=16, n_layer=1, n_head=2, seq_len=8, batch_size=2, steps=1, warmup=0,
                           matmul_size=64, device="cpu", precision="bf16")
    assert result["device"] == "cpu" and "cpu, " in format_report(result)
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: device cuda is valid here")
    done = CliRunner().invoke(main, ["benchmark", "--device", "cuda", "--d-model", "16", "--n-layer", "1",
                                     "--n-head", "2"])
    assert done.exit_code != 0 and "CUDA is not available" in done.output

"""pipeline_src.runs.benchmarks.training_step at a tiny size: the FLOP count against a hand count, a bounded matmul
measurement in the precision in use only, progress lines, and the reports."""

import time

import pytest
import torch

from pipeline_src.model import ModelConfig
from pipeline_src.runs.benchmarks.training_step import flops_per_token, format_report, matmul_rate, run_benchmark


def hand_count(d: int, layers: int, mlp: int, vocab: int) -> int:
    """Non-embedding parameters. Per layer: two LayerNorms (2d each), qkv (3d^2 + 3d), the output
    projection (d^2 + d), the MLP (d*mlp + mlp, mlp*d + d); then the final LayerNorm (2d) and the
    bias-free LM head (d*vocab)."""
    per_layer = 2 * 2 * d + (3 * d * d + 3 * d) + (d * d + d) + (d * mlp + mlp) + (mlp * d + d)
    return layers * per_layer + 2 * d + d * vocab


@pytest.mark.parametrize("d, layers, mlp, vocab, seq", [(16, 2, 64, 16, 8), (32, 1, 48, 11, 5)])
def test_flops_per_token_match_a_hand_count(d, layers, mlp, vocab, seq):
    """6 FLOPs per parameter and token (forward and backward), and 6 * layers * seq * d for attention."""
    cfg = ModelConfig(vocab_size=vocab, d_model=d, n_layer=layers, n_head=2, d_mlp=mlp, position_encoding="rope",
                      max_positions=64)
    n = hand_count(d, layers, mlp, vocab)
    assert flops_per_token(cfg, seq) == (n, 6 * n + 6 * layers * seq * d)


def test_flops_per_step_are_per_token_times_the_batch_tokens():
    result = run_benchmark(d_model=16, n_layer=2, n_head=2, seq_len=8, batch_size=3, steps=1, warmup=0,
                           matmul_size=128, device="cpu")
    n = hand_count(16, 2, 64, 16)  # the benchmark's model: MLP 4 d_model, vocabulary 16
    assert result["flops_per_step"] == (6 * n + 6 * 2 * 8 * 16) * 3 * 8


def test_matmul_rate_is_bounded_in_time_and_reports_each_size():
    lines = []
    start = time.perf_counter()
    rate, n = matmul_rate("fp32", torch.device("cpu"), max_n=4096, budget_s=0.2, say=lines.append)
    assert time.perf_counter() - start < 10  # a few budgets, never the 4096^3 products of a slow CPU
    assert rate > 0 and n in (128, 256, 512, 1024, 2048, 4096)
    assert lines and all(line.startswith("matmul fp32 ") and "GFLOP/s" in line for line in lines)


def test_run_benchmark_tiny():
    lines = []
    result = run_benchmark(d_model=32, n_layer=1, n_head=2, seq_len=16, batch_size=4,
                           steps=2, warmup=1, matmul_size=256, say=lines.append)
    assert result["tokens_per_s"] > 0 and result["fraction_of_matmul"] > 0
    assert result["matmul_flops_per_s"] > 0 and result["matmul_size"] in (128, 256)
    assert not any("bf16" in line for line in lines), "only the precision in use is timed"
    assert any(line.startswith("ours: ") for line in lines)
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


def test_cli_influence_benchmark_times_the_batched_analysis():
    from click.testing import CliRunner

    from pipeline_src.cli import main

    done = CliRunner().invoke(main, ["benchmark", "--influence", "2", "--d-model", "16", "--n-layer", "1",
                                     "--n-head", "2", "--batch-size", "64", "--threads", "1"])
    assert done.exit_code == 0, done.output
    assert "2 targets, Lbar=128" in done.output and "targets/s)" in done.output


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


def test_the_compiled_step_is_timed_and_named(monkeypatch):
    """--compile times our step through train.compile's torch.compile (here its cheap aot_eager
    backend; inductor on a real run), and the report says so."""
    from pipeline_src.training import train

    monkeypatch.setattr(train, "COMPILE_BACKEND", "aot_eager")
    calls = []
    real = train.compiled
    monkeypatch.setattr("pipeline_src.runs.benchmarks.training_step.compiled",
                        lambda model, device: calls.append(device) or real(model, device))
    result = run_benchmark(d_model=16, n_layer=1, n_head=2, seq_len=8, batch_size=2, steps=1, warmup=1,
                           matmul_size=128, device="cpu", compile=True)
    assert calls == [torch.device("cpu")] and result["config"]["compile"] and result["tokens_per_s"] > 0
    assert "ours (torch.compile): " in format_report(result)
    plain = run_benchmark(d_model=16, n_layer=1, n_head=2, seq_len=8, batch_size=2, steps=1, warmup=0,
                          matmul_size=128, device="cpu")
    assert "ours: " in format_report(plain) and not plain["config"]["compile"]

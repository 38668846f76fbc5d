"""The natural-language steps (docs/language.md), each writing its artifacts with a provenance record:

* :func:`pipeline_src.language.token_stream.build_corpus`: corpus -> token stream (its own module, so
  that editing the analysis never remakes the token stream and retrains the language models);
* :func:`evaluate_model`: a language model's loss by position on held-out windows, and its losses
  on the analysed targets (the draw of the influence analysis);
* :func:`analyse`: the influential-token analysis with one of our models or a local Hugging Face
  causal LM (optional ``transformers``, the ``hf`` extra).

The language models themselves are trained by :func:`pipeline_src.training.train.train` (task
``language``). Specs come from :mod:`pipeline_src.planning.language_jobs`.

The evaluation and the analysis run on the device of ``spec["device"]`` (see
:mod:`pipeline_src.devices.placement`) in fp32 (the losses are the measured quantity: no autocast); the
targets are drawn on the CPU, so they are the same on every device, and the resolved device is
recorded in the tables' provenance.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

import numpy as np
import polars as pl
import torch

from .. import datasets
from ..config.influence_config import InfluenceConfig, part_span
from ..devices.placement import describe_device, resolve_device
from ..planning.language_inputs import gguf_file, is_gguf
from ..provenance.records import build_record
from ..storage.atomic import check_writable
from ..training.checkpoints import load_model
from . import lm, pretrained
from .influence import influential_tokens
from .influence_table import influence_schema, screening
from .logits import decoder_logits_fn, hf_logits_fn, last_token_losses
from .schemas import LossByPositionSchema, TargetLossSchema
from .targets import select_targets, target_contexts
from .token_stream import say_to_stderr as _say
from .tokenizer import read_tokens

# --- loss by position and target losses -------------------------------------------------------------


def _target_config(targets: dict) -> InfluenceConfig:
    """The InfluenceConfig that draws the same targets as the analysis (k_max plays no part)."""
    return InfluenceConfig(k_max=1, **targets)


def _losses_from_position(model, contexts: np.ndarray, first: int, answers: np.ndarray, batch_size: int,
                          device: str | torch.device) -> np.ndarray:
    """CE (float64 [n]) of ``answers`` given ``contexts[:, first:]`` at their original position IDs
    (``model`` on ``device``)."""
    positions = np.tile(np.arange(first, contexts.shape[1]), (len(contexts), 1))
    return last_token_losses(decoder_logits_fn(model), contexts[:, first:], positions, answers, batch_size, device)


def evaluate_model(spec: dict, model_dir: Path, tokens: Path, positions_out: Path, targets_out: Path, *,
                   rule: str = "language_eval", threads: int | None = None,
                   progress: Callable[[str], None] | None = None,
                   device: str | torch.device | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Loss by position (0..eval_length-1) over held-out windows, and the losses on the analysed
    targets, of the language model in ``model_dir``. ``device`` overrides ``spec["device"]``."""
    say = _say(progress)
    if threads:
        torch.set_num_threads(threads)
    device = resolve_device(spec.get("device") if device is None else device)
    for out in (positions_out, targets_out):
        check_writable(out)  # found before the evaluation runs
    model, description = load_model(model_dir)
    model.to(device)
    frame = read_tokens(tokens, model.cfg.vocab_size)
    windows = lm.document_windows(frame, spec["eval_length"] + 1, spec["windows"])
    losses = lm.position_losses(model, windows, spec["batch_size"], device=device)  # [n, eval_length]
    n = len(windows)
    se = (losses.std(dim=0) / n ** 0.5).tolist() if n > 1 else [None] * losses.shape[1]
    by_position = pl.DataFrame({
        "model": pl.Series([description["variant"]] * losses.shape[1], dtype=pl.String),
        "scheme": pl.Series([description["scheme"]] * losses.shape[1], dtype=pl.String),
        "train_context": pl.Series([description["context"]] * losses.shape[1], dtype=pl.Int64),
        "position": pl.Series(range(losses.shape[1]), dtype=pl.Int32),
        "windows": pl.Series([n] * losses.shape[1], dtype=pl.Int64),
        "loss": pl.Series(losses.mean(dim=0).tolist(), dtype=pl.Float64),
        "loss_se": pl.Series(se, dtype=pl.Float64),
    })
    cfg = _target_config(spec["targets"])
    targets = select_targets(frame, cfg)
    contexts, answers = target_contexts(targets, cfg)
    target_losses = pl.DataFrame({
        "model": pl.Series([description["variant"]] * targets.height, dtype=pl.String),
        "doc": targets["doc"], "t": targets["t"],
        "long_loss": _losses_from_position(model, contexts, 0, answers, spec["batch_size"], device),
        "short_loss": _losses_from_position(model, contexts, cfg.far, answers, spec["batch_size"], device),
    })
    record = build_record(rule, "language_eval", spec, inputs={"model": Path(model_dir) / "model.safetensors",
                                                               "tokens": tokens},
                          seeds={"train_seed": description["seed"], "target_seed": cfg.seed},
                          scheme=description["scheme"])
    record["device"] = describe_device(device)
    datasets.write(by_position, positions_out, LossByPositionSchema, record)
    datasets.write(target_losses, targets_out, TargetLossSchema, record)
    say(f"{description['variant']}: loss at position 0 {by_position['loss'][0]:.3f}, at "
        f"{losses.shape[1] - 1} {by_position['loss'][-1]:.3f} ({n} windows); mean target loss "
        f"{target_losses['long_loss'].mean():.3f} (long) {target_losses['short_loss'].mean():.3f} (short)")
    return by_position, target_losses


# --- the influential-token analysis -----------------------------------------------------------------


def load_hf_model(folder: Path):
    """A local Hugging Face causal LM folder (config.json + weights), or a GGUF model (a file, or a
    shipped name: :mod:`.pretrained`), in eval mode, no network."""
    if is_gguf(folder):
        return pretrained.load_model(folder)
    try:
        from transformers import AutoModelForCausalLM
    except ImportError:
        raise RuntimeError("analysing a Hugging Face model needs transformers: pip install -e '.[hf]'") from None
    folder = Path(folder)
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(f"{folder}: not a Hugging Face model folder (no config.json)")
    return AutoModelForCausalLM.from_pretrained(folder, local_files_only=True).eval()


def hf_files(folder: Path) -> dict[str, Path]:
    """The files of a Hugging Face model folder (its config and weights, sorted) or of a GGUF model,
    by role, for the analysis's provenance."""
    if is_gguf(folder):
        return {"gguf": gguf_file(folder)}
    return {"hf_config": Path(folder) / "config.json",
            **{f"hf_weights{i}": path for i, path in enumerate(hf_weight_files(folder))}}


def hf_weight_files(folder: Path) -> list[Path]:
    """The weight files of a Hugging Face model folder (for provenance hashes), sorted."""
    folder = Path(folder)
    return sorted(p for pattern in ("*.safetensors", "*.bin") for p in folder.glob(pattern))


def analyse(spec: dict, tokens: Path, out: Path, *, model_dir: Path | None = None, hf_model: Path | None = None,
            rule: str = "language_influence", threads: int | None = None,
            progress: Callable[[str], None] | None = None, device: str | torch.device | None = None) -> pl.DataFrame:
    """Influential tokens of the targets drawn from ``tokens`` (see :mod:`pipeline_src.language.influence`),
    with our model in ``model_dir`` or the Hugging Face model in ``hf_model`` (exactly one), on
    ``device`` (default: ``spec["device"]``)."""
    say = _say(progress)
    if (model_dir is None) == (hf_model is None):
        raise ValueError("analyse needs exactly one of model_dir (ours) and hf_model (a Hugging Face folder)")
    if threads:
        torch.set_num_threads(threads)
    device = resolve_device(spec.get("device") if device is None else device)
    cfg = InfluenceConfig.from_dict({k: v for k, v in spec.items() if k not in ("hf_model", "device", "part")})
    part = spec.get("part")  # {index, of}: this job analyses one part of the draw (absent: the whole draw)
    span = None if part is None else part_span(cfg.n_targets, cfg.batch_size, part["index"], part["of"])
    check_writable(out)  # found before the analysis runs
    if hf_model is not None:
        model = load_hf_model(hf_model).to(device)
        vocab_size, logits_fn = model.config.vocab_size, hf_logits_fn(model)
        inputs = hf_files(hf_model)
        seeds = {"target_seed": cfg.seed}
    else:
        model, description = load_model(model_dir)
        model.to(device)
        vocab_size, logits_fn = model.cfg.vocab_size, decoder_logits_fn(model)
        inputs = {"model": Path(model_dir) / "model.safetensors"}
        seeds = {"train_seed": description["seed"], "target_seed": cfg.seed}
    try:
        frame = read_tokens(tokens, vocab_size)
    except datasets.DataError as err:
        raise datasets.DataError(f"{err}\n(the token IDs must be below the model's vocabulary size {vocab_size}: "
                                 "build the token stream with the model's own tokenizer.json)") from None
    targets = select_targets(frame, cfg)
    which = "" if span is None else f" (part {part['index']} of {part['of']}: {_span_words(span, cfg.n_targets)})"
    started = time.monotonic()  # each progress line says how long the analysis has run (lengthgen status reads it)
    result = influential_tokens(None, targets, cfg, logits_fn=logits_fn, device=device, part=span,
                                progress=lambda done, total, detail: say(
                                    f"influential tokens{which}: {done}/{total} after "
                                    f"{time.monotonic() - started:.0f} s"
                                    + (f"; {detail}" if detail else "")))
    record = build_record(rule, "language_eval", spec, inputs={**inputs, "tokens": tokens}, seeds=seeds,
                          scheme=None if model_dir is None else description["scheme"])
    record["device"] = describe_device(device)
    if span is not None:
        record["part"] = {**part, "first_target": span.start, "stop_target": span.stop, "drawn": cfg.n_targets}
    screened = None if cfg.screen_gain is None else screening(result, cfg.screen_gain)
    if screened is not None:
        record["screening"] = screened
    if hf_model is not None:
        import transformers

        record["hf_model"] = {"path": str(hf_model), "transformers": transformers.__version__,
                              "architecture": type(model).__name__}
    datasets.write(result, out, influence_schema(cfg), record)
    say(_summary_line(result, cfg, screened))
    return result


def _span_words(span: slice, drawn: int) -> str:
    return f"targets {span.start + 1} to {span.stop} of the {drawn} drawn"


def _summary_line(result: pl.DataFrame, cfg: InfluenceConfig, screened: dict | None) -> str:
    """The analysis's last progress line: its targets (and what the screening left out), mean losses."""
    line = f"{result.height} targets"
    if screened is not None:
        line += (f" ({screened['screened_out']} screened out, {screened['fraction_screened_out']:.0%}: gain at most "
                 f"{cfg.screen_gain:g} nats)")
    line += f"; mean L_long {result['long_loss'].mean():.3f}, L_short {result['short_loss'].mean():.3f}"
    analysed = result["sparse_loss"].list.first().drop_nulls()
    if analysed.len():
        line += (f", L_short,sparse {analysed.mean():.3f} at k = 1 and "
                 f"{result['sparse_loss'].list.last().mean():.3f} at k = {cfg.k_max}"
                 + (f" (over the {analysed.len()} analysed)" if screened is not None else ""))
    return line

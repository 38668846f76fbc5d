"""Model files: weights as safetensors (with the provenance record in its header) plus a JSON
describing the model, and the resumable training state."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from .storage.atomic import replacing, write_text
from .model import Decoder, ModelConfig
from .bookkeeping.provenance import attach, sidecar_path, write_sidecar

RESUME_KEYS = ("config_hash", "step", "model", "optimizer", "generator", "log", "pending")


class CheckpointError(RuntimeError):
    """A model or resume file that cannot be used as it is."""


def save_model(model: Decoder, out_dir: Path, description: dict, record: dict, *, with_weights: bool = True) -> None:
    """Write ``model.safetensors`` (+ sidecar) and ``model.json`` (config, task, scheme, vocab); the
    weights are written from CPU copies wherever the model is. Without ``with_weights`` (a run that
    diverged) the weights file holds no tensors, only the provenance record."""
    out_dir = Path(out_dir)
    tensors = ({name: t.detach().cpu().contiguous() for name, t in model.state_dict().items()}  # from any device
               if with_weights else {})
    attach(out_dir / "model.safetensors", record, lambda tmp, meta: save_file(tensors, tmp, metadata=meta))
    body = {**description, "model_config": model.cfg.to_dict()}
    sidecar_path(out_dir / "model.json").unlink(missing_ok=True)  # never pair the new file with an old record
    write_text(out_dir / "model.json", json.dumps(body, indent=2, sort_keys=True) + "\n")
    write_sidecar(out_dir / "model.json", record)


def read_description(model_dir: Path) -> dict:
    """The description (``model.json``) of the model in ``model_dir``."""
    try:
        return json.loads((Path(model_dir) / "model.json").read_text())
    except (OSError, ValueError) as err:
        raise CheckpointError(f"{model_dir}: cannot read model.json ({err})") from None


def load_model(model_dir: Path) -> tuple[Decoder, dict]:
    """The trained model of ``model_dir`` in eval mode, and its description. A model whose training
    diverged has no weights: a :class:`CheckpointError` saying so."""
    model_dir = Path(model_dir)
    description = read_description(model_dir)
    if description.get("diverged"):
        diverged = description["diverged"]
        raise CheckpointError(f"{model_dir}: training diverged at step {diverged['step']} ({diverged['reason']}); "
                              "the model has no weights")
    try:
        cfg = ModelConfig.from_dict(description["model_config"])
        weights = load_file(model_dir / "model.safetensors")
    except (OSError, ValueError, KeyError, SafetensorError) as err:  # missing, truncated, not safetensors
        raise CheckpointError(f"{model_dir}: cannot load the model ({err})") from None
    model = Decoder(cfg)
    try:
        model.load_state_dict(weights)
    except RuntimeError as err:
        raise CheckpointError(f"{model_dir}/model.safetensors does not match model.json: {err}") from None
    return model.eval(), description


def save_state(path: Path, state: dict) -> None:
    """Atomically write the resumable training state (a kill mid-write keeps the previous one)."""
    with replacing(path) as tmp:
        torch.save(state, tmp)


def load_state(path: Path, expected_hash: str) -> dict:
    """The resumable training state in ``path``, checked to be complete and made for the config
    whose hash is ``expected_hash``; anything else is a :class:`CheckpointError` naming the file
    (never a silent restart that would overwrite it)."""
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)  # resumable on any device
    except Exception as err:  # truncated, foreign or not a checkpoint at all
        raise CheckpointError(f"{path}: unreadable resume checkpoint ({err}); delete it to start over") from None
    missing = [key for key in RESUME_KEYS if key not in state] if isinstance(state, dict) else list(RESUME_KEYS)
    if missing:
        raise CheckpointError(f"{path}: not a resume checkpoint of this trainer (missing {', '.join(missing)}); "
                              "delete it to start over")
    if state["config_hash"] != expected_hash:
        raise CheckpointError(f"{path}: resume checkpoint of another config "
                              f"({state['config_hash']} != {expected_hash}); delete it to start over")
    return state

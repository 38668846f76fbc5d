"""Model files: weights as safetensors (with the provenance record in its header) plus a JSON
describing the model, and the resumable training state."""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from .model import Decoder, ModelConfig
from .provenance import attach, write_sidecar


class CheckpointError(RuntimeError):
    """A model or resume file that cannot be used as it is."""


def save_model(model: Decoder, out_dir: Path, description: dict, record: dict) -> None:
    """Write ``model.safetensors`` (+ sidecar) and ``model.json`` (config, task, scheme, vocab)."""
    out_dir = Path(out_dir)
    tensors = {name: t.detach().contiguous() for name, t in model.state_dict().items()}
    attach(out_dir / "model.safetensors", record, lambda tmp, meta: save_file(tensors, tmp, metadata=meta))
    body = {**description, "model_config": model.cfg.to_dict()}
    _write_json(out_dir / "model.json", body)
    write_sidecar(out_dir / "model.json", record)


def load_model(model_dir: Path) -> tuple[Decoder, dict]:
    """The trained model of ``model_dir`` in eval mode, and its description."""
    model_dir = Path(model_dir)
    try:
        description = json.loads((model_dir / "model.json").read_text())
        cfg = ModelConfig.from_dict(description["model_config"])
        weights = load_file(model_dir / "model.safetensors")
    except (OSError, ValueError, KeyError) as err:
        raise CheckpointError(f"{model_dir}: cannot load the model ({err})") from None
    model = Decoder(cfg)
    try:
        model.load_state_dict(weights)
    except RuntimeError as err:
        raise CheckpointError(f"{model_dir}/model.safetensors does not match model.json: {err}") from None
    return model.eval(), description


def save_state(path: Path, state: dict) -> None:
    """Atomically write the resumable training state."""
    tmp = path.with_name(f".{path.name}.partial")
    torch.save(state, tmp)
    os.replace(tmp, path)


def load_state(path: Path, expected_hash: str) -> dict:
    try:
        state = torch.load(path, weights_only=False)
    except Exception as err:  # truncated or foreign file
        raise CheckpointError(f"{path}: unreadable resume checkpoint ({err}); delete it to start over") from None
    if state.get("config_hash") != expected_hash:
        raise CheckpointError(f"{path}: resume checkpoint of another config "
                              f"({state.get('config_hash')} != {expected_hash}); delete it to start over")
    return state


def _write_json(path: Path, body: dict) -> None:
    tmp = path.with_name(f".{path.name}.partial")
    tmp.write_text(json.dumps(body, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)

"""Model files: weights as safetensors (with the provenance record in its header) plus a JSON
describing the model, and the resumable training state. Each is checked against the SHA-256 recorded
when it was written before it is used (the model's in its sidecars, the state's at its end)."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import torch
from safetensors.torch import load as load_weights
from safetensors.torch import save_file

from ..model import Decoder, ModelConfig
from ..provenance.sidecars import attach, read_checked, sidecar_path, write_sidecar
from ..storage.atomic import replacing, write_text
from ..storage.errors import library_failure, os_error

DIGEST_MARK = b"\nlengthgen.sha256:"  # then the 64 hex digits of the SHA-256 of the bytes before it
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
    path = Path(model_dir) / "model.json"
    try:
        return json.loads(read_checked(path, CheckpointError)[0])
    except (OSError, ValueError) as err:
        raise CheckpointError(f"{model_dir}: cannot read model.json ({err})") from None


def load_model(model_dir: Path, description: dict | None = None) -> tuple[Decoder, dict]:
    """The trained model of ``model_dir`` in eval mode, and its description (``description``: the
    one :func:`read_description` already returned, so model.json is not read again). A model whose
    training diverged has no weights: a :class:`CheckpointError` saying so."""
    model_dir = Path(model_dir)
    description = read_description(model_dir) if description is None else description
    if description.get("diverged"):
        diverged = description["diverged"]
        raise CheckpointError(f"{model_dir}: training diverged at step {diverged['step']} ({diverged['reason']}); "
                              "the model has no weights")
    try:
        cfg = ModelConfig.from_dict(description["model_config"])
        weights = load_weights(read_checked(model_dir / "model.safetensors", CheckpointError)[0])
    except CheckpointError:
        raise
    except BaseException as err:  # missing, truncated, not safetensors (a safetensors panic included)
        if not library_failure(err):
            raise
        raise CheckpointError(f"{model_dir}: cannot load the model ({err})") from None
    model = Decoder(cfg)
    try:
        model.load_state_dict(weights)
    except RuntimeError as err:
        raise CheckpointError(f"{model_dir}/model.safetensors does not match model.json: {err}") from None
    return model.eval(), description


def save_state(path: Path, state: dict) -> None:
    """Atomically write the resumable training state (a kill mid-write keeps the previous one),
    followed by the SHA-256 of its bytes, which :func:`load_state` checks before using it. A write
    that fails (a full disk, no permission) is a WriteError naming the file and why."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    payload = buffer.getvalue()
    with replacing(path) as tmp:
        tmp.write_bytes(payload + DIGEST_MARK + hashlib.sha256(payload).hexdigest().encode())


def load_state(path: Path, expected_hash: str) -> dict:
    """The resumable training state in ``path``, checked to have the bytes :func:`save_state` wrote
    (its SHA-256), to be complete and to be made for the config whose hash is ``expected_hash``;
    anything else is a :class:`CheckpointError` naming the file (never a silent restart that would
    overwrite it, never a resume from changed bytes)."""
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise CheckpointError(f"{path}: cannot read the resume checkpoint ({os_error(err)})") from None
    payload, mark, recorded = data.rpartition(DIGEST_MARK)
    if not mark or len(recorded) != 64:
        raise CheckpointError(f"{path}: unreadable resume checkpoint (no SHA-256 at its end: not written by "
                              "this trainer, or cut short); delete it to start over")
    if (actual := hashlib.sha256(payload).hexdigest()) != recorded.decode("ascii", "replace"):
        raise CheckpointError(f"{path}: resume checkpoint changed since it was written (sha256 {actual}, "
                              f"its end records {recorded.decode('ascii', 'replace')}); delete it to start over")
    try:
        state = torch.load(io.BytesIO(payload), map_location="cpu", weights_only=True)  # resumable on any device
    except BaseException as err:  # a foreign payload under a valid digest
        if not library_failure(err):
            raise
        raise CheckpointError(f"{path}: unreadable resume checkpoint ({err}); delete it to start over") from None
    missing = [key for key in RESUME_KEYS if key not in state] if isinstance(state, dict) else list(RESUME_KEYS)
    if missing:
        raise CheckpointError(f"{path}: not a resume checkpoint of this trainer (missing {', '.join(missing)}); "
                              "delete it to start over")
    if state["config_hash"] != expected_hash:
        raise CheckpointError(f"{path}: resume checkpoint of another config "
                              f"({state['config_hash']} != {expected_hash}); delete it to start over")
    return state

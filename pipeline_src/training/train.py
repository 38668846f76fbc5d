"""Training one cell (task, variant, scheme, seed): AdamW, warmup then linear decay, gradient
clipping, loss on response tokens only. Under Predictive Position Coupling (scheme ppc) the loss is
CE(next token) + w * CE(next token's position ID) on the same response tokens. Resumable: the whole state (weights, optimizer, random
generator, log) is checkpointed atomically, so a killed run that restarts ends with the same
weights as one that never stopped. A NaN or infinite loss, gradient norm or weight stops the run
naming the cell and the step, before anything non-finite is checkpointed, so the last good checkpoint
is kept. For a synthetic task the divergence is the cell's result: the run writes its outputs with
the divergence recorded (``diverged`` in ``summary.json`` and ``model.json``, the training log up to
that step, a weights file without tensors), so evaluation, figures and the report show the failed
cell (see :mod:`pipeline_src.evaluation.evaluate`) and every other cell goes on. Rerunning the same config
would diverge again (training is deterministic); a config change (a lower ``train.lr``) reruns it.

The loop (:func:`run`) draws its batches from a *batch source*: :func:`train` trains a synthetic
task's cell on length-grouped batches of its samples (:class:`TaskSource`). The natural-language
analysis trains its language models through the same loop with a source of its own
(:mod:`pipeline_src.language.training`), which also logs a held-out loss and raises
:class:`TrainingDiverged` instead of recording the divergence (its analysis has no use for a failed
model). A source declares what the loop needs of it (see :class:`TaskSource`).

The run uses the device of ``spec["device"]`` (see :mod:`pipeline_src.device`): the model and each
batch move there, while batches and position IDs are drawn on the CPU generator, so every device
sees the same batches. The resolved device is recorded in the artifacts' provenance and in
``summary.json``.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Callable

import polars as pl
import torch
import torch.nn.functional as F

from ..storage import datasets
from ..storage.atomic import check_writable, write_text
from ..storage.errors import one_line
from .optimizer import AdamW
from .batches import SequenceTable, TrainingBatch, training_batch
from ..storage.canonical import config_hash
from ..storage.provenance import attach
from ..checkpoints import CheckpointError, load_state, save_model, save_state
from ..device import autocast, describe_device, held_gpu_slot, resolve_device, to_device
from ..device_setting import RESUME_ANYWHERE_ENV
from ..model import Decoder
from ..model_config import model_config
from ..schemes import get_scheme
from ..bookkeeping.records import build_record
from ..tasks import get_task

LOG_SCHEMA = {"step": pl.Int64, "loss": pl.Float64, "accuracy": pl.Float64,
              "position_accuracy": pl.Float64, "lr": pl.Float64, "grad_norm": pl.Float64,
              "seconds": pl.Float64}
SECONDS = list(LOG_SCHEMA).index("seconds")
HELDOUT_SCHEMA = {"step": pl.Int64, "heldout_loss": pl.Float64, "heldout_tokens": pl.Int64}


class TrainingDiverged(RuntimeError):
    """The loss, the gradient norm or the weights of a run became NaN or infinite at ``step``."""

    def __init__(self, message: str, step: int, reason: str):
        super().__init__(message)
        self.step, self.reason = step, reason


def learning_rate(step: int, peak: float, warmup: int, total: int, final_ratio: float) -> float:
    """Linear warmup from 0 to ``peak`` over ``warmup`` steps, then linear decay to
    ``final_ratio * peak`` at ``total``."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return peak * (1.0 - (1.0 - final_ratio) * min(1.0, progress))


def build_model(spec: dict, vocab_size: int) -> Decoder:
    """The initialised decoder of ``spec`` (its config checked by :func:`model_config`, as the
    pipeline's config check does)."""
    cfg = model_config(spec, vocab_size)
    torch.manual_seed(spec["seed"])
    return Decoder(cfg)


def make_optimizer(model: Decoder, opt: dict) -> AdamW:
    """AdamW with weight decay on weight matrices and embeddings only (not on biases or LayerNorm)."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    other = [p for p in model.parameters() if p.dim() < 2]
    return AdamW([(decay, opt["weight_decay"]), (other, 0.0)], lr=opt["lr"], betas=tuple(opt["betas"]), eps=1e-8)


class TaskSource:
    """Batches of a synthetic task's training set: uniformly drawn samples, grouped by length.

    What the loop reads of a batch source: ``stage`` and ``code_task`` (the provenance record's code
    digest), ``inputs`` (record role -> file), ``description`` (into ``model.json``), ``summary`` (one
    line of progress), ``vocab_size``, ``pending`` (state carried across a resume), ``records_divergence``
    (a divergence is the run's result, else it is raised), ``heldout_every`` (steps between held-out
    losses, logged to ``heldout_log.parquet``; None: none) with ``heldout_loss(model, device)`` ->
    (mean loss, tokens scored), and :meth:`next_batch`.
    """

    stage = "train"
    records_divergence = True
    heldout_every = None  # no held-out loss during training

    def __init__(self, spec: dict, train_data: Path):
        task, scheme = get_task(spec["task"]), get_scheme(spec["scheme"])
        self.table = SequenceTable.from_frame(datasets.read(train_data, lambda: task.schema, checked_when_written=True), coupled=scheme.coupled)
        self.opt, self.pending = spec["train"], []
        self.vocab_size = len(task.vocab)
        self.inputs = {"train_data": train_data}
        self.description = {"k_train": spec.get("k_train"), "vocab": list(task.vocab.tokens)}
        self.summary = f"{len(self.table):,} samples"
        self.code_task = spec["task"]

    def next_batch(self, generator: torch.Generator) -> TrainingBatch:
        if not self.pending:
            self.pending = grouped_batches(self.table.lengths, self.opt["batch_size"], self.opt["length_grouping"],
                                           generator)
        return training_batch(self.table, self.pending.pop(), self.opt["pad_multiple"])


def train(spec: dict, train_data: Path, out_dir: Path, **options) -> dict:
    """Train the synthetic-task cell described by ``spec`` on ``train_data``; write model, log and
    summary into ``out_dir``. ``options`` as for :func:`run`."""
    return run(spec, lambda: TaskSource(spec, train_data), out_dir, **options)


def run(spec: dict, make_source: Callable[[], "TaskSource"], out_dir: Path, *, rule: str = "train",
        threads: int | None = None, progress: Callable[[str], None] | None = None,
        stop_at_step: int | None = None, device: str | torch.device | None = None) -> dict:
    """The training loop of ``spec`` on the batches of ``make_source()`` (made once threads are
    set); writes model, log and summary into ``out_dir``. ``stop_at_step`` ends the run early (as a
    kill would), for tests. ``device`` overrides ``spec["device"]`` (``auto`` when absent); see
    :func:`pipeline_src.device.resolve_device`."""
    say = progress or (lambda line: print(line, file=sys.stderr, flush=True))
    if threads:
        torch.set_num_threads(threads)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    opt = spec["train"]
    device = resolve_device(spec.get("device") if device is None else device)
    scheme = get_scheme(spec["scheme"])
    source = make_source()
    model = build_model(spec, source.vocab_size).to(device)  # initialised on the CPU: the same on every device
    # room for the model, and for two resume checkpoints (weights and both moments) while one replaces the other
    check_writable(out_dir / "model.safetensors", need=28 * model.num_parameters())
    optimizer = make_optimizer(model, opt)
    generator = torch.Generator().manual_seed(spec["seed"])
    identity = config_hash(spec)
    resume_path = out_dir / f"resume-{identity[:16]}.pt"
    step, log, heldout_log = 0, [], []
    for other in sorted(set(out_dir.glob("resume-*.pt")) - {resume_path}):
        say(f"ignoring {other}: a resume checkpoint of another config (this config's is {resume_path.name})")
    if resume_path.exists():
        step, log, heldout_log = _restore(resume_path, identity, model, optimizer, generator, source, device)
        say(f"resuming {out_dir} from step {step}")
    saved_step = step if resume_path.exists() else None  # the step of the last good checkpoint
    say(f"training {spec['task']}/{spec['variant']}/{scheme.name}/seed{spec['seed']}: "
        f"{model.num_parameters():,} parameters, {source.summary}, {opt['steps']} steps on {describe_device(device)}"
        + (f" (GPU {slot['gpu']}, slot {slot['slot']})" if (slot := held_gpu_slot()) else ""))

    total = opt["steps"]
    started = time.perf_counter() - (log[-1][SECONDS] if log else 0.0)  # seconds accumulate across resumes
    unread = []  # (step, lr, seconds, [loss, accuracy, position accuracy, gradient norm] on the device)

    def read_log() -> None:
        """Move the steps not yet read into ``log``: the loop's one host read, every ``log_every``
        steps (and at held-out losses and checkpoints). A non-finite loss or gradient norm stops the
        run at its first such step, whose row and later ones are dropped (as a run stopped there)."""
        values = torch.stack([row[3] for row in unread]).tolist() if unread else []
        for (at, lr_at, seconds, _), (loss_at, accuracy_at, position_at, norm_at) in zip(unread, values):
            if not math.isfinite(loss_at):
                raise _diverged(spec, out_dir, at, f"the loss is {loss_at}", resume_path, saved_step)
            if not math.isfinite(norm_at):
                raise _diverged(spec, out_dir, at, f"the gradient norm is {norm_at}", resume_path, saved_step)
            log.append((at, loss_at, accuracy_at, position_at, lr_at, norm_at, seconds))
        unread.clear()

    model.train()
    forward = compiled(model, device) if compiles(opt, device) else None
    compiled_steps = 0  # where the device chose to compile, a failure before the first one trains eager
    try:
        while step < total:
            if stop_at_step is not None and step >= stop_at_step:
                return {"stopped_at": step}
            lr = learning_rate(step, opt["lr"], opt["warmup_steps"], total, opt["final_lr_ratio"])
            optimizer.lr = lr
            batch = source.next_batch(generator)
            # the transform sees the whole sequence, so the last target's ID obeys it too (ppc learns it)
            positions = scheme.train_ids(batch.positions, batch.lengths + 1,
                                         target_length=spec["positions"]["target_length"],
                                         pose_chunks=spec["positions"]["pose_chunks"], generator=generator)
            positions = positions.masked_fill(~_real(batch, 1), 0)  # padding never indexes a table
            model.check_positions(positions)  # on the CPU: no host read of the device
            batch, positions = batch.to(device), to_device(positions, device)  # drawn on the CPU: the same on every device
            try:
                numbers = train_step(model, optimizer, batch, positions, opt, forward)  # on the device until read_log
            except Exception as err:  # noqa: BLE001 (the compiler's failures have no common type)
                if forward is None or "compile" in opt or compiled_steps:
                    raise
                say(f"WARNING: torch.compile failed on {describe_device(device)} ({one_line(err)}); training "
                    "eager instead (train.compile: false skips the attempt)")
                forward = None  # nothing was updated: the compiled step fails before the optimizer's
                numbers = train_step(model, optimizer, batch, positions, opt)
            compiled_steps += forward is not None
            step += 1
            unread.append((step, lr, time.perf_counter() - started, numbers))
            heldout = source.heldout_every and (step % source.heldout_every == 0 or step == total)
            reported = step % opt["log_every"] == 0 or step == total
            checkpoint = step % opt["checkpoint_every"] == 0 and step < total
            if heldout or reported or checkpoint:  # (reported includes the last step)
                read_log()
            if heldout:
                with autocast(device, opt["precision"]):
                    heldout_log.append((step, *source.heldout_loss(model, device)))
                say(f"step {step}/{total}  held-out loss {heldout_log[-1][1]:.4f}")
            if reported:
                _report(say, log, opt["log_every"], total)
            if (checkpoint or step == total) and not _finite(model):  # never save weights that are not finite
                raise _diverged(spec, out_dir, step, "the weights are not finite", resume_path, saved_step)
            if checkpoint:
                state = {"config_hash": identity, "step": step, "device_type": device.type, "model": model.state_dict(),
                         "optimizer": optimizer.state_dict(), "generator": generator.get_state(), "log": log,
                         "pending": source.pending}
                if source.heldout_every:
                    state["heldout_log"] = heldout_log
                save_state(resume_path, state)
                saved_step = step
    except TrainingDiverged as err:
        if not source.records_divergence:
            raise
        say(f"WARNING: {err}")
        diverged = {"step": err.step, "reason": err.reason}
        return _finish(spec, model, log, heldout_log, source, out_dir, rule, describe_device(device),
                       forward is not None, diverged)
    summary = _finish(spec, model, log, heldout_log, source, out_dir, rule, describe_device(device), forward is not None)
    resume_path.unlink(missing_ok=True)
    return summary


def train_step(model: Decoder, optimizer: AdamW, batch: TrainingBatch, positions: torch.Tensor,
               opt: dict, forward: Callable | None = None) -> torch.Tensor:
    """One update of ``model`` on ``batch`` (on the model's device; ``positions`` [B, T+1] the IDs of
    its inputs and of the last target, already checked), through ``forward`` (the model compiled,
    :func:`compiled`) if given. Returns [loss, accuracy, position accuracy (NaN without a position
    head), gradient norm] as float64 on the device (float64 holds the float32 loss and norm
    exactly): nothing is read back to the host."""
    with autocast(positions.device, opt["precision"]):
        out = (model if forward is None else forward)(batch.inputs, positions[:, :-1], positions_checked=True)
    picked = batch.scored(out.token_logits).float()
    answer = batch.scored(batch.targets)
    loss = F.cross_entropy(picked, answer)
    position_accuracy = torch.full((), float("nan"), dtype=torch.float64, device=positions.device)
    if out.position_logits is not None:
        picked_ids = batch.scored(out.position_logits).float()
        next_ids = batch.scored(positions[:, 1:])
        loss = loss + opt["position_loss_weight"] * F.cross_entropy(picked_ids, next_ids)
        position_accuracy = (picked_ids.argmax(-1) == next_ids).double().mean()
    optimizer.zero_grad()
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), opt["grad_clip"])
    optimizer.step()
    accuracy = (picked.argmax(-1) == answer).double().mean()
    return torch.stack((loss.double(), accuracy, position_accuracy, grad_norm.double()))


COMPILE_BACKEND = "inductor"  # torch.compile's backend (tests use a cheaper one)


def compiles(opt: dict, device: torch.device) -> bool:
    """Whether training on ``device`` goes through :func:`compiled`: ``train.compile`` where the config
    sets it, else on a GPU only. There a small model's step is bound by kernel launches, which CUDA
    graphs of its forward and backward save (3.7x the eager step's tokens/s at Figure 2's GPU model
    on an H200, docs/performance.md); on the CPU inductor's kernels were slower (Figure 1's model:
    6.5 steps/s against 7.9 eager, one thread of the EPYC) and the compile costs a short job more."""
    return opt.get("compile", device.type == "cuda")


def compiled(model: Decoder, device: torch.device) -> Callable:
    """``model``'s forward through ``torch.compile``: CUDA graphs (mode ``reduce-overhead``) on a GPU,
    where a small model's step is bound by kernel launches; fused kernels on the CPU. Shapes that vary
    from batch to batch (length grouping) are compiled once each, then as dynamic. Weights, optimizer
    and checkpoints stay the model's own."""
    mode = "reduce-overhead" if device.type == "cuda" else None
    return torch.compile(model, mode=mode, backend=COMPILE_BACKEND)


def grouped_batches(lengths: torch.Tensor, batch_size: int, groups: int,
                    generator: torch.Generator) -> list[torch.Tensor]:
    """Draw ``groups`` batches of uniformly random samples at once and group them by length.

    The samples are exactly as random as ``groups`` independent draws; only which batch each lands
    in depends on its length, so each batch needs less padding. Returned in random order."""
    index = torch.randint(len(lengths), (batch_size * groups,), generator=generator)
    index = index[lengths[index].argsort(stable=True)]
    order = torch.randperm(groups, generator=generator)
    return list(index.view(groups, batch_size)[order])


def _restore(path: Path, identity: str, model: Decoder, optimizer, generator: torch.Generator,
             source, device: torch.device) -> tuple[int, list, list]:
    """Load the resume checkpoint ``path`` into the run; returns (step, log, held-out log). A file
    that does not fit this run is a :class:`CheckpointError` naming it, and so is one written on
    another kind of device (a run begun on the CPU would end on a GPU: its results are neither's)
    unless ``LENGTHGEN_RESUME_ON_ANOTHER_DEVICE=1`` says that is meant."""
    state = load_state(path, identity)
    written = state.get("device_type", device.type)  # checkpoints before this field: not checked
    if written != device.type and os.environ.get(RESUME_ANYWHERE_ENV) != "1":
        raise CheckpointError(f"{path}: resume checkpoint written on {written}, but this run is on {device.type}; "
                              f"set {RESUME_ANYWHERE_ENV}=1 to resume there anyway, or delete it to start over")
    try:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        generator.set_state(state["generator"])
    except (RuntimeError, ValueError, KeyError, TypeError) as err:
        raise CheckpointError(f"{path}: resume checkpoint does not fit this model ({err}); "
                              "delete it to start over") from None
    if not _finite(model):
        raise CheckpointError(f"{path}: resume checkpoint holds non-finite weights; delete it to start over")
    source.pending = state["pending"]
    return state["step"], state["log"], state.get("heldout_log", [])


def _finite(model: Decoder) -> bool:
    """Whether every weight of ``model`` is finite (one host read)."""
    return bool(torch.stack([torch.isfinite(p).all() for p in model.parameters()]).all())


def _diverged(spec: dict, out_dir: Path, step: int, what: str, resume_path: Path,
              saved_step: int | None) -> TrainingDiverged:
    """The error of a run whose numbers became NaN or infinite: the cell, its folder, the step, and
    the last good checkpoint (kept: nothing non-finite is ever checkpointed)."""
    cell = f"{spec['task']}/{spec['scheme']}/{spec['variant']}/seed{spec['seed']}"
    kept = (f"the last good checkpoint {resume_path} (step {saved_step}) is kept" if saved_step is not None
            else "no checkpoint had been written yet")
    return TrainingDiverged(f"training {cell} ({out_dir}) diverged at step {step}: {what}; {kept}. "
                            "Lower train.lr (or raise warmup_steps) and rerun.", step, what)


def _real(batch, extra: int = 0) -> torch.Tensor:
    """[B, T+extra] True on the real tokens of the inputs (and of the ``extra`` tokens after them)."""
    return torch.arange(batch.inputs.shape[1] + extra, device=batch.lengths.device)[None, :] < (
        batch.lengths + extra)[:, None]


def _report(say, log, window: int, total: int) -> None:
    column = {name: i for i, name in enumerate(LOG_SCHEMA)}

    def mean(name):
        return sum(r[column[name]] for r in recent) / len(recent)

    recent = log[-window:]
    step = recent[-1][column["step"]]
    before = log[-window - 1][SECONDS] if len(log) > window else 0.0
    rate = len(recent) / max(1e-9, recent[-1][SECONDS] - before)
    position = mean("position_accuracy")
    position = "" if position != position else f"  pos acc {position:.3f}"  # NaN: no position head
    say(f"step {step}/{total}  loss {mean('loss'):.4f}  acc {mean('accuracy'):.3f}{position}  "
        f"lr {recent[-1][column['lr']]:.2e}  {rate:.1f} steps/s  eta {(total - step) / rate:.0f}s")


def _finish(spec: dict, model: Decoder, log: list, heldout_log: list, source, out_dir: Path, rule: str,
            device: str, was_compiled: bool, diverged: dict | None = None) -> dict:
    """Write the model, the logs and the summary; ``device`` (described) goes into their records, and
    ``compiled: true`` when the steps went through :func:`compiled` (its absence: eager).
    ``diverged`` ({step, reason}) marks a run that diverged: recorded in the summary and the model
    description, and the weights file holds no tensors."""
    record = build_record(rule, source.stage, spec, inputs=source.inputs, seeds={"seed": spec["seed"]},
                          task=source.code_task, scheme=spec["scheme"])
    record["device"] = device  # where the model was trained (the last device, should a resume move it)
    if was_compiled:
        record["compiled"] = True
    description = {"task": spec["task"], "variant": spec["variant"], "scheme": spec["scheme"],
                   "seed": spec["seed"], **source.description}
    if diverged:
        description["diverged"] = diverged
    save_model(model, out_dir, description, record, with_weights=not diverged)
    frame = pl.DataFrame(log, schema=LOG_SCHEMA, orient="row")
    attach(out_dir / "train_log.parquet", record,
           lambda tmp, meta: frame.write_parquet(tmp, metadata=meta, statistics=False))
    tail = frame.tail(max(1, len(frame) // 10))
    summary = {"steps": len(frame), "final_loss": tail["loss"].mean(), "final_accuracy": tail["accuracy"].mean(),
               "parameters": model.num_parameters(), "train_seconds": frame["seconds"].max() or 0.0,
               "config_hash": record["config_hash"], "device": device}
    if was_compiled:
        summary["compiled"] = True
    if diverged:
        summary["diverged"] = diverged
    if slot := held_gpu_slot():
        summary["gpu_slot"] = slot  # which GPU and slot of a local run's GPUs x models_per_gpu it held
    if source.heldout_every:
        heldout = pl.DataFrame(heldout_log, schema=HELDOUT_SCHEMA, orient="row")
        attach(out_dir / "heldout_log.parquet", record,
               lambda tmp, meta: heldout.write_parquet(tmp, metadata=meta, statistics=False))
        summary["final_heldout_loss"] = float(heldout["heldout_loss"][-1])
    write_text(out_dir / "summary.json", json.dumps(summary, indent=2, sort_keys=True) + "\n")
    return summary

"""Training one cell (task, variant, scheme, seed): AdamW, warmup then linear decay, gradient clipping,
loss on response tokens only. Under Predictive Position Coupling (scheme ppc) the loss is CE(next
token) + w * CE(next token's position ID) on the same response tokens. Resumable: the whole state
(weights, optimizer, random generator, log; :class:`~.run_state.RunState`) is checkpointed
atomically, so a killed run that restarts ends with the same weights as one that never stopped. A
NaN or infinite loss, gradient norm or weight stops the run naming the cell and the step, before
anything non-finite is checkpointed, so the last good checkpoint is kept. For a synthetic task the
divergence is the cell's result: the run writes its outputs with the divergence recorded
(``diverged`` in ``summary.json`` and ``model.json``, the training log up to that step, a weights
file without tensors), so evaluation, figures and the report show the failed cell (see
:mod:`pipeline_src.evaluation.evaluate`) and every other cell goes on. Rerunning the same config
would diverge again (training is deterministic); a config change (a lower ``train.lr``) reruns it.

The loop (:func:`run`) draws its batches from a *batch source*: :func:`train` trains a synthetic
task's cell on length-grouped batches of its samples (:class:`~.task_source.TaskSource`). The
natural-language analysis trains its language models through the same loop with a source of its own
(:mod:`pipeline_src.language.lm_training`), which also logs a held-out loss and raises
:class:`TrainingDiverged` instead of recording the divergence (its analysis has no use for a failed
model). A source declares what the loop needs of it (see :class:`~.task_source.TaskSource`).

The loop reads as it runs: :func:`_start` sets the run up (resuming from its checkpoint),
:func:`_take_step` takes one step, :func:`_log_and_checkpoint` does what falls due after it (reading
the numbers back, the held-out loss, the checkpoint), and :func:`_finish` writes the results.

The run uses the device of ``spec["device"]`` (see :mod:`pipeline_src.devices.placement`): the model and each
batch move there, while batches and position IDs are drawn on the CPU generator, so every device
sees the same batches. The resolved device is recorded in the artifacts' provenance and in
``summary.json``.
"""

from __future__ import annotations

import json
import math
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Callable

import polars as pl
import torch
import torch.nn.functional as F

from ..config.model_config import model_config
from ..devices.placement import autocast, describe_device, held_gpu_slot, resolve_device, to_device
from ..model import Decoder
from ..provenance.records import build_record
from ..provenance.sidecars import attach
from ..schemes import get_scheme
from ..storage.atomic import check_writable, write_text
from ..storage.canonical import config_hash
from ..storage.errors import one_line
from .batches import TrainingBatch
from .checkpoints import save_model
from .optimizer import AdamW
from .run_state import HELDOUT_SCHEMA, K_LOG_SCHEMA, LOG_SCHEMA, SECONDS, RunState, TrainingDiverged, finite
from .task_source import TaskSource


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


def train(spec: dict, train_data: Path, out_dir: Path, **options) -> dict:
    """Train the synthetic-task cell described by ``spec`` on ``train_data``; write model, log and
    summary into ``out_dir``. ``options`` as for :func:`run`."""
    return run(spec, lambda: TaskSource(spec, train_data), out_dir, **options)


def run(spec: dict, make_source: Callable[[], TaskSource], out_dir: Path, *, rule: str = "train",
        threads: int | None = None, progress: Callable[[str], None] | None = None,
        stop_at_step: int | None = None, device: str | torch.device | None = None) -> dict:
    """The training loop of ``spec`` on the batches of ``make_source()`` (made once threads are
    set); writes model, log and summary into ``out_dir``. ``stop_at_step`` ends the run early (as a
    kill would), for tests. ``device`` overrides ``spec["device"]`` (``auto`` when absent); see
    :func:`pipeline_src.devices.placement.resolve_device`.

    Set up (resuming from the last checkpoint), then step by step: one update, then the logging,
    held-out loss and checkpoint that fall due; at the end, write the results."""
    say = progress or (lambda line: print(line, file=sys.stderr, flush=True))
    if threads:
        torch.set_num_threads(threads)
    state = _start(spec, make_source, Path(out_dir), device, say)
    try:
        with TermSignal() as term:
            while state.step < state.total:
                if stop_at_step is not None and state.step >= stop_at_step:
                    return {"stopped_at": state.step}
                _take_step(state)
                _log_and_checkpoint(state)
                if term.received and state.step < state.total:
                    _read_log(state)
                    state.save_checkpoint()
                    raise Terminated(f"{term.received} at step {state.step} of {state.total}: the state is saved "
                                     f"in {state.resume_path}; run the job again to resume there")
    except TrainingDiverged as err:
        if not state.source.records_divergence:
            raise
        say(f"WARNING: {err}")
        return _finish(state, rule, diverged={"step": err.step, "reason": err.reason})
    summary = _finish(state, rule)
    state.resume_path.unlink(missing_ok=True)
    return summary


class Terminated(RuntimeError):
    """A training stopped by SIGTERM (a cluster's time limit or preemption) after saving its state."""


class TermSignal:
    """While entered, SIGTERM (a cluster's time limit, a preemption, ``scancel``) is noted rather than
    fatal, so the loop saves its state after the step in progress and stops (:class:`Terminated`); a run
    started again resumes there, as from any checkpoint. Outside the main thread, nothing is caught."""

    def __init__(self) -> None:
        self.received = ""
        self.previous = None

    def __enter__(self) -> TermSignal:
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGTERM, self._note)
        return self

    def _note(self, signum, frame) -> None:
        self.received = signal.Signals(signum).name

    def __exit__(self, *exc) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)


def _start(spec: dict, make_source: Callable[[], TaskSource], out_dir: Path, device: str | torch.device | None,
           say: Callable[[str], None]) -> RunState:
    """Set up the run of ``spec``: its device, batch source, initialised model, optimizer and random
    generator, resumed from this config's checkpoint in ``out_dir`` where there is one."""
    out_dir.mkdir(parents=True, exist_ok=True)
    device = resolve_device(spec.get("device") if device is None else device)
    scheme = get_scheme(spec["scheme"])
    source = make_source()
    model = build_model(spec, source.vocab_size).to(device)  # initialised on the CPU: the same on every device
    # room for the model, and for two resume checkpoints (weights and both moments) while one replaces the other
    check_writable(out_dir / "model.safetensors", need=28 * model.num_parameters())
    state = RunState(spec, out_dir, device, scheme, source, model, make_optimizer(model, spec["train"]),
                     torch.Generator().manual_seed(spec["seed"]), config_hash(spec), say)
    for other in sorted(set(out_dir.glob("resume-*.pt")) - {state.resume_path}):
        say(f"ignoring {other}: a resume checkpoint of another config (this config's is {state.resume_path.name})")
    if state.resume_path.exists():
        state.resume()
        say(f"resuming {out_dir} from step {state.step}")
    say(f"training {spec['task']}/{spec['variant']}/{scheme.name}/seed{spec['seed']}: "
        f"{model.num_parameters():,} parameters, {source.summary}, {state.total} steps on {describe_device(device)}"
        + (f" (GPU {slot['gpu']}, slot {slot['slot']})" if (slot := held_gpu_slot()) else ""))
    state.started = time.perf_counter() - (state.log[-1][SECONDS] if state.log else 0.0)
    model.train()
    state.forward = compiled(model, device) if compiles(state.opt, device) else None
    return state


def _take_step(state: RunState) -> None:
    """One step: set the learning rate, draw a batch and its position IDs (on the CPU), update the
    model. The step's numbers stay on the device, in ``state.unread``, until :func:`_read_log`."""
    opt = state.opt
    lr = learning_rate(state.step, opt["lr"], opt["warmup_steps"], state.total, opt["final_lr_ratio"])
    state.optimizer.lr = lr
    batch = state.source.next_batch(state.generator)
    # the transform sees the whole sequence, so the last target's ID obeys it too (ppc learns it)
    positions = state.scheme.train_ids(batch.positions, batch.lengths + 1,
                                       target_length=state.spec["positions"]["target_length"],
                                       pose_chunks=state.spec["positions"]["pose_chunks"], generator=state.generator)
    positions = positions.masked_fill(~_real(batch, 1), 0)  # padding never indexes a table
    state.model.check_positions(positions)  # on the CPU: no host read of the device
    # drawn on the CPU: the same on every device
    batch, positions = batch.to(state.device), to_device(positions, state.device)
    numbers = _update(state, batch, positions)
    state.step += 1
    state.unread.append((state.step, lr, time.perf_counter() - state.started, numbers))


def _update(state: RunState, batch: TrainingBatch, positions: torch.Tensor) -> torch.Tensor:
    """:func:`train_step` through the compiled model where the run compiles. Where the device chose
    to compile (the config does not say), a compile that fails before its first step trains eager."""
    k_train = state.source.k_train if batch.groups is not None else None
    try:
        numbers = train_step(state.model, state.optimizer, batch, positions, state.opt, state.forward, k_train)
    except Exception as err:  # noqa: BLE001 (the compiler's failures have no common type)
        if state.forward is None or "compile" in state.opt or state.compiled_steps:
            raise
        state.say(f"WARNING: torch.compile failed on {describe_device(state.device)} ({one_line(err)}); training "
                  "eager instead (train.compile: false skips the attempt)")
        state.forward = None  # nothing was updated: the compiled step fails before the optimizer's
        numbers = train_step(state.model, state.optimizer, batch, positions, state.opt, k_train=k_train)
    state.compiled_steps += state.forward is not None
    return numbers


def _log_and_checkpoint(state: RunState) -> None:
    """What falls due after a step: every ``log_every`` steps (and at the last) read the numbers
    back and report them; every ``heldout_every`` (and at the last) log the held-out loss; every
    ``checkpoint_every`` save the resumable state. Weights are checked finite before they are
    saved, in a checkpoint or at the end."""
    step, total, opt = state.step, state.total, state.opt
    heldout = state.source.heldout_every and (step % state.source.heldout_every == 0 or step == total)
    reported = step % opt["log_every"] == 0 or step == total
    checkpoint = step % opt["checkpoint_every"] == 0 and step < total
    curriculum = state.source.curriculum is not None and state.source.curriculum.due(step) and step < total
    if heldout or reported or checkpoint or curriculum:  # (reported includes the last step)
        _read_log(state)
    if curriculum:
        _advance_curriculum(state)
    if heldout:
        with autocast(state.device, opt["precision"]):
            state.heldout_log.append((step, *state.source.heldout_loss(state.model, state.device)))
        state.say(f"step {step}/{total}  held-out loss {state.heldout_log[-1][1]:.4f}")
    if reported:
        _report(state.say, state.log, opt["log_every"], total)
    if (checkpoint or step == total) and not finite(state.model):  # never save weights that are not finite
        raise state.diverged(step, "the weights are not finite")
    if checkpoint:
        state.save_checkpoint()


def _read_log(state: RunState) -> None:
    """Move the steps not yet read into the log: the loop's one host read, every ``log_every``
    steps (and at held-out losses and checkpoints). A non-finite loss or gradient norm stops the
    run at its first such step, whose row and later ones are dropped (as a run stopped there)."""
    values = torch.stack([row[3] for row in state.unread]).tolist() if state.unread else []
    for (at, lr_at, seconds, _), (loss_at, accuracy_at, position_at, norm_at, *per_k) in zip(
            state.unread, values, strict=False):
        if not math.isfinite(loss_at):
            raise state.diverged(at, f"the loss is {loss_at}")
        if not math.isfinite(norm_at):
            raise state.diverged(at, f"the gradient norm is {norm_at}")
        state.log.append((at, loss_at, accuracy_at, position_at, lr_at, norm_at, seconds))
        if per_k:
            half = len(per_k) // 2
            state.k_log.append(([int(n) for n in per_k[:half]], [int(n) for n in per_k[half:]]))
    state.unread.clear()


def _advance_curriculum(state: RunState) -> None:
    """At a check of the curriculum, raise its k_max if the last ``every`` steps learned it (see
    :class:`~.curriculum.KCurriculum`); the batches drawn under the old k_max are dropped."""
    curriculum = state.source.curriculum
    window = state.k_log[-curriculum.every:]
    correct, scored = k_totals(window)
    at = curriculum.k_max - 1
    if curriculum.check(state.step, correct, scored):
        state.source.pending = []
        state.say(f"step {state.step}: curriculum raises k_max to {curriculum.k_max} (accuracy "
                  f"{correct[at] / scored[at]:.3f} at k = {at + 1} over the last {len(window)} steps)")


def _finish(state: RunState, rule: str, diverged: dict | None = None) -> dict:
    """Write the model, the logs and the summary; the device (described) goes into their records,
    and ``compiled: true`` when the steps went through :func:`compiled` (its absence: eager).
    ``diverged`` ({step, reason}) marks a run that diverged: recorded in the summary and the model
    description, and the weights file holds no tensors."""
    spec, source, model, out_dir = state.spec, state.source, state.model, state.out_dir
    device, was_compiled = describe_device(state.device), state.forward is not None
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
    frame = pl.DataFrame(state.log, schema=LOG_SCHEMA, orient="row")
    if state.k_log:
        frame = frame.with_columns(pl.DataFrame(state.k_log, schema=K_LOG_SCHEMA, orient="row"))
    attach(out_dir / "train_log.parquet", record,
           lambda tmp, meta: frame.write_parquet(tmp, metadata=meta, statistics=False))
    tail = frame.tail(max(1, len(frame) // 10))
    summary = {"steps": len(frame), "final_loss": tail["loss"].mean(), "final_accuracy": tail["accuracy"].mean(),
               "parameters": model.num_parameters(), "train_seconds": frame["seconds"].max() or 0.0,
               "config_hash": record["config_hash"], "device": device}
    if was_compiled:
        summary["compiled"] = True
    if state.k_log:
        summary["final_accuracy_by_k"] = accuracy_by_k(state.k_log[-len(tail):])
    if source.curriculum is not None:
        summary["curriculum"] = source.curriculum.summary()
    if diverged:
        summary["diverged"] = diverged
    if slot := held_gpu_slot():
        summary["gpu_slot"] = slot  # which GPU and slot of a local run's GPUs x models_per_gpu it held
    if source.heldout_every:
        heldout = pl.DataFrame(state.heldout_log, schema=HELDOUT_SCHEMA, orient="row")
        attach(out_dir / "heldout_log.parquet", record,
               lambda tmp, meta: heldout.write_parquet(tmp, metadata=meta, statistics=False))
        summary["final_heldout_loss"] = float(heldout["heldout_loss"][-1])
    write_text(out_dir / "summary.json", json.dumps(summary, indent=2, sort_keys=True) + "\n")
    return summary


def k_totals(k_log: list) -> tuple[list[int], list[int]]:
    """The response tokens predicted right and those scored per k, summed over the steps of ``k_log``
    (rows of (right, scored) per k)."""
    correct, scored = ([sum(column) for column in zip(*counts, strict=False)] for counts in zip(*k_log, strict=False))
    return correct, scored


def accuracy_by_k(k_log: list) -> list[float | None]:
    """Training accuracy per k over the steps of ``k_log``, k = 1..K_train in order (a list: JSON's
    sorted keys would put "10" before "2"); None for a k no step drew."""
    return [right / n if n else None for right, n in zip(*k_totals(k_log), strict=False)]


def train_step(model: Decoder, optimizer: AdamW, batch: TrainingBatch, positions: torch.Tensor,
               opt: dict, forward: Callable | None = None, k_train: int | None = None) -> torch.Tensor:
    """One update of ``model`` on ``batch`` (on the model's device; ``positions`` [B, T+1] the IDs of
    its inputs and of the last target, already checked), through ``forward`` (the model compiled,
    :func:`compiled`) if given. Returns [loss, accuracy, position accuracy (NaN without a position
    head), gradient norm] as float64 on the device (float64 holds the float32 loss and norm
    exactly): nothing is read back to the host. With ``k_train`` (the batch's rows carry their k,
    ``batch.groups``), followed by the response tokens predicted right, then those scored, per k =
    1..k_train (:func:`per_k_counts`)."""
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
    hits = picked.argmax(-1) == answer
    numbers = torch.stack((loss.double(), hits.double().mean(), position_accuracy, grad_norm.double()))
    if k_train is None:
        return numbers
    return torch.cat((numbers, per_k_counts(batch, hits, k_train)))


def per_k_counts(batch: TrainingBatch, hits: torch.Tensor, k_train: int) -> torch.Tensor:
    """The response tokens of ``batch`` predicted right (``hits``, bool per scored token), then those
    scored, per k = 1..``k_train`` of their rows (``batch.groups``): float64 [2 * k_train] on the device."""
    k = batch.scored(batch.groups[:, None].expand_as(batch.targets)) - 1
    return torch.cat((torch.bincount(k, weights=hits.double(), minlength=k_train),
                      torch.bincount(k, minlength=k_train).double()))


COMPILE_BACKEND = "inductor"  # torch.compile's backend (tests use a cheaper one)


def compiles(opt: dict, device: torch.device) -> bool:
    """Whether training on ``device`` goes through :func:`compiled`: ``train.compile`` where the config
    sets it, else on a GPU only. There a small model's step is bound by kernel launches, which CUDA
    graphs of its forward and backward save; on the CPU inductor's kernels were slower and the
    compile costs a short job more (docs/performance.md, "Compiled steps")."""
    return opt.get("compile", device.type == "cuda")


def compiled(model: Decoder, device: torch.device) -> Callable:
    """``model``'s forward through ``torch.compile``: CUDA graphs (mode ``reduce-overhead``) on a GPU,
    where a small model's step is bound by kernel launches; fused kernels on the CPU. Shapes that vary
    from batch to batch (length grouping) are compiled once each, then as dynamic. Weights, optimizer
    and checkpoints stay the model's own."""
    mode = "reduce-overhead" if device.type == "cuda" else None
    return torch.compile(model, mode=mode, backend=COMPILE_BACKEND)


def _real(batch, extra: int = 0) -> torch.Tensor:
    """[B, T+extra] True on the real tokens of the inputs (and of the ``extra`` tokens after them)."""
    return torch.arange(batch.inputs.shape[1] + extra, device=batch.lengths.device)[None, :] < (
        batch.lengths + extra)[:, None]


def _report(say: Callable[[str], None], log: list, window: int, total: int) -> None:
    """Print one line of progress: the means of the last ``window`` logged steps, the learning rate,
    the steps per second and the time left."""
    recent = log[-window:]
    mean = {name: sum(row[i] for row in recent) / len(recent) for i, name in enumerate(LOG_SCHEMA)}
    step, lr = recent[-1][0], recent[-1][list(LOG_SCHEMA).index("lr")]
    before = log[-window - 1][SECONDS] if len(log) > window else 0.0
    rate = len(recent) / max(1e-9, recent[-1][SECONDS] - before)
    position = mean["position_accuracy"]
    position = "" if position != position else f"  pos acc {position:.3f}"  # NaN: no position head
    say(f"step {step}/{total}  loss {mean['loss']:.4f}  acc {mean['accuracy']:.3f}{position}  "
        f"lr {lr:.2e}  {rate:.1f} steps/s  eta {(total - step) / rate:.0f}s")

"""Every artifact is written under a temporary name and renamed into place: a writer that fails or
is killed half way never leaves a (plausible-looking, partial) file at the artifact's path.

Each case patches the low-level write one writer uses (Parquet, safetensors, bytes, text,
matplotlib) so that it writes the real bytes, cuts the file in half, and then either raises (as a
full disk would) or, in a subprocess, waits to be killed with SIGKILL. A writer that wrote in place
would leave the half file at the artifact's path."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

REPO = Path(__file__).resolve().parents[1]
PosixPath = type(Path())


class Interrupted(Exception):
    """The injected failure of a write."""


@dataclass(frozen=True)
class Case:
    owner: Callable[[], object]  # the class or module whose write function is patched
    attr: str  # that function's name
    index: int  # which positional argument is the path written to
    final: str  # the artifact's name in the output folder
    action: Callable[[Path], None]  # writes the artifact into the output folder


def _train(stop_at_step: int | None = None) -> Callable[[Path], None]:
    def action(out: Path) -> None:
        from pipeline_src.training.train import train
        from tests.conftest import tiny_train_spec, write_dataset

        data = write_dataset(out.parent / "train.parquet", "train",
                             {"k_train": 2, "l_min": 10, "l_max": 25, "n_samples": 100})
        train(tiny_train_spec(steps=6), data, out, progress=lambda line: None, stop_at_step=stop_at_step)
    return action


def _dataset(out: Path) -> None:
    from tests.conftest import write_dataset

    write_dataset(out / "data.parquet", "train", {"k_train": 2, "l_min": 10, "l_max": 25, "n_samples": 2000})


def _resume_state(out: Path) -> None:
    import torch

    from pipeline_src.training.checkpoints import save_state

    save_state(out / "resume-0123456789abcdef.pt", {"weights": torch.ones(1000, 100)})


def _figure(out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pipeline_src.figures.shared import save_figure

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    save_figure(fig, [out / "figure.png", out / "figure.pdf"], "test", {"task": "sparse_parity", "seeds": [0]}, [])


def _tokenizer(out: Path) -> None:
    from pipeline_src.language.tokenizer import save_tokenizer, train_tokenizer

    save_tokenizer(train_tokenizer(["a small corpus of words", "and a few more words"] * 5, 300),
                   out / "tokenizer.json")


def _polars():
    import polars as pl

    return pl.DataFrame


def _checkpoints():
    import pipeline_src.training.checkpoints as module

    return module


def _matplotlib():
    from matplotlib.figure import Figure

    return Figure


CASES = {
    "dataset": Case(_polars, "write_parquet", 1, "data.parquet", _dataset),
    "model weights": Case(_checkpoints, "save_file", 1, "model.safetensors", _train()),
    "model description": Case(lambda: PosixPath, "write_text", 0, "model.json", _train()),
    "provenance sidecar": Case(lambda: PosixPath, "write_text", 0, "model.safetensors.prov.json", _train()),
    "train log": Case(_polars, "write_parquet", 1, "train_log.parquet", _train()),
    "summary": Case(lambda: PosixPath, "write_text", 0, "summary.json", _train()),
    "resume state": Case(lambda: PosixPath, "write_bytes", 0, "resume-0123456789abcdef.pt", _resume_state),
    "figure pdf": Case(_matplotlib, "savefig", 1, "figure.pdf", _figure),
    "tokenizer": Case(lambda: PosixPath, "write_text", 0, "tokenizer.json", _tokenizer),
}


def half_written(real: Callable, case: Case, then: Callable[[Path], None]) -> Callable:
    """``real``, except that a write of ``case``'s artifact (under its own or its temporary name)
    is cut to half its size and then followed by ``then(path)``."""

    def write(*args, **kwargs):
        result = real(*args, **kwargs)
        target = Path(args[case.index])
        if target.name in (case.final, f".{case.final}.partial"):
            with open(target, "r+b") as handle:
                handle.truncate(target.stat().st_size // 2)
            then(target)
        return result

    return write


def patch(case: Case, then: Callable[[Path], None], setattr=setattr) -> None:
    owner = case.owner()
    setattr(owner, case.attr, half_written(getattr(owner, case.attr), case, then))


def leftovers(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir() if p.name.endswith(".partial"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_write_that_fails_half_way_leaves_no_file(tmp_path, monkeypatch, name):
    case, out, written = CASES[name], tmp_path / "out", []

    def fail(target: Path) -> None:
        written.append(target)
        raise Interrupted(f"disk full while writing {target}")

    out.mkdir()
    patch(case, fail, monkeypatch.setattr)
    with pytest.raises(Interrupted):
        case.action(out)
    assert written, f"{case.final} was never written"
    assert not (out / case.final).exists(), f"a half-written {case.final} was left in place"
    assert leftovers(out) == [], "the temporary file of a failed write is removed"


def hang_half_way(name: str, out: str) -> None:
    """Subprocess entry: write ``name``'s artifact into ``out``; half way, say so and wait to be killed."""

    def hang(target: Path) -> None:
        print(f"HALF {target}", flush=True)
        time.sleep(600)

    case = CASES[name]
    patch(case, hang)
    case.action(Path(out))


@pytest.mark.e2e
@pytest.mark.parametrize("name", ["dataset", "summary", "resume state"])
def test_a_writer_killed_half_way_leaves_no_file(tmp_path, name):
    case, out = CASES[name], tmp_path / "out"
    out.mkdir()
    command = [sys.executable, "-c", "import sys, tests.test_atomic as t; t.hang_half_way(sys.argv[1], sys.argv[2])",
               name, str(out)]
    job = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = job.stdout.readline()  # blocks until the write is half done (or the job died)
        assert line.startswith("HALF"), f"the writer never got half way: {line}{job.stderr.read()}"
        job.send_signal(signal.SIGKILL)
        assert job.wait(timeout=60) == -signal.SIGKILL
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    assert not (out / case.final).exists(), f"a killed writer left a half-written {case.final} in place"
    assert leftovers(out) == [f".{case.final}.partial"], "the half-written bytes are only under the hidden name"


def test_every_artifact_of_a_training_run_has_one_file_mode(tmp_path):
    """safetensors creates its files 0600; the model must be as readable as the other artifacts
    (colleagues on a shared cluster read them), i.e. the mode the umask gives a new file."""
    import os
    import stat

    from pipeline_src.storage.atomic import FILE_MODE

    out = tmp_path / "run"
    _train()(out)
    modes = {p.name: stat.S_IMODE(os.stat(p).st_mode) for p in out.iterdir() if p.is_file()}
    assert "model.safetensors" in modes and set(modes.values()) == {FILE_MODE}, modes


class OpenWriter:
    """A library's writer that closes its file only when it is dropped (torch's zip writer does)."""

    def __init__(self, path: Path, files: list):
        self.file = open(path, "wb")  # noqa: SIM115 (closed by __del__, as such writers do)
        files.append(self.file)

    def __del__(self):
        self.file.close()


def test_a_failed_writer_is_dropped_so_its_file_closes_while_the_error_lives(tmp_path):
    """The error keeps the writer's finished call in its traceback; without dropping that call's
    variables the removed temporary file would stay open and its space taken (a disk that filled stays
    full) as long as the error is held, here by pytest."""
    from pipeline_src.storage.atomic import replacing

    def write(path: Path, files: list) -> None:
        writer = OpenWriter(path, files)
        writer.file.write(b"half an artifact")
        raise Interrupted("the disk is full")

    files: list = []
    with pytest.raises(Interrupted) as caught:
        with replacing(tmp_path / "artifact") as tmp:
            write(tmp, files)
    assert caught.value.__traceback__ is not None and files[0].closed
    assert list(tmp_path.iterdir()) == []

"""Nothing changed is ever used: one bit flipped in any artifact a job reads (a dataset, a model's
weights or description, a resume checkpoint, a token stream, an accuracy table) makes the job stop
with an error that names the file and both SHA-256 digests, before it uses a byte of it. And a
reader's library failing on a file's bytes, a Rust panic included, is the project's named error; a
write that fails for want of room or permission names the file and the cause, before long work
where it can be foreseen."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Callable

import polars as pl
import pytest

from pipeline_src import datasets
from pipeline_src.evaluation import accuracy_schema
from pipeline_src.evaluation.evaluate import evaluate
from pipeline_src.language.tokenizer import encode_documents, read_tokens, train_tokenizer, write_tokens
from pipeline_src.provenance.records import build_record
from pipeline_src.training.checkpoints import CheckpointError
from pipeline_src.training.train import train
from tests.conftest import tiny_train_spec, write_dataset
from tests.helpers import mounted

quiet = {"progress": lambda line: None}
CHANGED = r"changed since it was written \(sha256 [0-9a-f]{64}, [a-z ]+ [0-9a-f]{64}\)"


def _data(root: Path) -> tuple[Path, Path]:
    train_data = write_dataset(root / "train.parquet", "train",
                               {"k_train": 2, "l_min": 10, "l_max": 25, "n_samples": 200})
    eval_data = write_dataset(root / "eval.parquet", "eval", {"k_test": [1, 2], "lengths": [20, 30], "n_per_cell": 4},
                              seed=2)
    return train_data, eval_data


def _model(root: Path) -> tuple[Path, Path]:
    """A trained model folder and the evaluation data."""
    train_data, eval_data = _data(root)
    train(tiny_train_spec(steps=4), train_data, root / "model", **quiet)
    return root / "model", eval_data


# Each maker writes an artifact under ``root`` and returns it with the job that reads it next.
def dataset(root: Path) -> tuple[Path, Callable[[], object]]:
    train_data, _ = _data(root)
    return train_data, lambda: train(tiny_train_spec(steps=4), train_data, root / "run", **quiet)


def weights(root: Path) -> tuple[Path, Callable[[], object]]:
    model, eval_data = _model(root)
    return model / "model.safetensors", lambda: evaluate({"batch_size": 4, "seed": 2}, model, eval_data,
                                                          root / "acc.parquet", **quiet)


def description(root: Path) -> tuple[Path, Callable[[], object]]:
    flipped, job = weights(root)
    return flipped.with_name("model.json"), job


def resume_checkpoint(root: Path) -> tuple[Path, Callable[[], object]]:
    train_data, _ = _data(root)
    spec = tiny_train_spec(steps=8)
    train(spec, train_data, root / "run", stop_at_step=6, **quiet)
    return next((root / "run").glob("resume-*.pt")), lambda: train(spec, train_data, root / "run", **quiet)


def token_stream(root: Path) -> tuple[Path, Callable[[], object]]:
    documents = [f"Document {i}: a few words of text, and some more words after them." for i in range(20)]
    tokenizer = train_tokenizer(documents, 300)
    path = root / "tokens.parquet"
    write_tokens(encode_documents(tokenizer, documents, ["train"] * 20), path, tokenizer,
                 build_record("tokenize", "data", {}))
    return path, lambda: read_tokens(path, 300)


def accuracy_table(root: Path) -> tuple[Path, Callable[[], object]]:
    model, eval_data = _model(root)
    evaluate({"batch_size": 4, "seed": 2}, model, eval_data, root / "acc.parquet", **quiet)
    return root / "acc.parquet", lambda: accuracy_schema.read(root / "acc.parquet")


ARTIFACTS = {"dataset": (dataset, datasets.DataError), "model weights": (weights, CheckpointError),
             "model description": (description, CheckpointError),
             "resume checkpoint": (resume_checkpoint, CheckpointError),
             "token stream": (token_stream, datasets.DataError), "accuracy table": (accuracy_table, datasets.DataError)}


def flip_bit(path: Path, byte: int, bit: int) -> None:
    data = bytearray(path.read_bytes())
    data[byte] ^= 1 << bit
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("kind", sorted(ARTIFACTS))
@pytest.mark.parametrize("where", [0.1, 0.5, 0.9])
def test_one_bit_flipped_in_an_artifact_stops_the_job_that_reads_it(tmp_path, kind, where):
    make, error = ARTIFACTS[kind]
    path, job = make(tmp_path)
    flip_bit(path, int(path.stat().st_size * where), 5)
    changed = path.read_bytes()
    with pytest.raises(error, match=rf"{path}: .*{CHANGED}"):
        job()
    assert path.read_bytes() == changed, "the changed file is left for the user to look at"


def test_a_panic_of_the_parquet_reader_is_a_named_error(tmp_path, monkeypatch):
    PanicException = type("PanicException", (BaseException,), {})  # pyo3's, raised by a Rust panic

    def panic(*args, **kwargs):
        raise PanicException("index out of bounds")

    path = tmp_path / "data.parquet"
    pl.DataFrame({"a": [1]}).write_parquet(path)
    monkeypatch.setattr(pl, "read_parquet", panic)
    with pytest.raises(datasets.DataError, match=rf"{path}: not a readable Parquet file \(PanicException: index"):
        datasets.load(path)


def test_an_interrupt_while_reading_is_not_swallowed(tmp_path, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    path = tmp_path / "data.parquet"
    pl.DataFrame({"a": [1]}).write_parquet(path)
    monkeypatch.setattr(pl, "read_parquet", interrupted)
    with pytest.raises(KeyboardInterrupt):
        datasets.load(path)


def fill(folder: Path, leave: int) -> None:
    """Fill ``folder``'s file system but ``leave`` bytes."""
    free = shutil.disk_usage(folder).free
    (folder / "filler").write_bytes(b"\0" * (free - leave))


ENOSPC = r"cannot write \(No space left on device \(ENOSPC\)"


@pytest.mark.parametrize("writer", ["torch.save", "safetensors", "resume checkpoint", "parquet"])
def test_a_write_that_fills_the_disk_names_the_file_and_enospc(tmp_path, writer):
    """torch.save alone says "unexpected pos 204992 vs 204884" when the disk fills."""
    import torch
    from safetensors.torch import save_file

    from pipeline_src.storage.atomic import WriteError, replacing
    from pipeline_src.training.checkpoints import save_state

    big = {"weights": torch.rand(1 << 19, generator=torch.Generator().manual_seed(0))}  # 2 MiB, incompressible
    with mounted(tmp_path / "disk", "size=4m") as disk:
        fill(disk, 512 << 10)
        path = disk / "artifact"
        with pytest.raises(WriteError, match=rf"{path}: {ENOSPC}"):
            if writer == "resume checkpoint":
                save_state(path, big)
            else:
                with replacing(path) as tmp:
                    if writer == "torch.save":
                        torch.save(big, tmp)
                    elif writer == "safetensors":
                        save_file(big, tmp)
                    else:
                        pl.DataFrame({"x": big["weights"].numpy()}).write_parquet(tmp, statistics=False)
        assert sorted(p.name for p in disk.iterdir()) == ["filler"], "no partial file is left"


def test_training_without_room_for_its_checkpoints_stops_before_the_first_step(tmp_path):
    from pipeline_src.storage.atomic import WriteError

    train_data, _ = _data(tmp_path)
    lines = []
    with mounted(tmp_path / "disk", "size=4m") as disk:
        fill(disk, 1 << 20)
        with pytest.raises(WriteError, match=rf"{disk / 'run' / 'model.safetensors'}: {ENOSPC}: [0-9,]+ bytes free"):
            train(tiny_train_spec(steps=4), train_data, disk / "run", progress=lines.append)
    assert not any(line.startswith("step") for line in lines), lines


def test_an_evaluation_into_a_read_only_folder_fails_before_it_decodes(tmp_path):
    from pipeline_src.storage.atomic import WriteError

    model, eval_data = _model(tmp_path)
    lines = []
    with mounted(tmp_path / "ro", "ro,size=1m") as folder:
        with pytest.raises(WriteError,
                           match=rf"{folder / 'acc.parquet'}: cannot write \(Read-only file system \(EROFS\)\)"):
            evaluate({"batch_size": 4, "seed": 2}, model, eval_data, folder / "acc.parquet", progress=lines.append)
    assert lines == [], "nothing was decoded"

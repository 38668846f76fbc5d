"""The bad-input suite (issue 64): what a demanding user gets wrong, each case run through the
`lengthgen` command as a user would run it. Every case exits non-zero with one line naming the field
or the file, and leaves every finished artifact byte-identical (a model, a dataset, an accuracy table
made before). The cases that need a finished smoke run (the workflow's own checks, Ctrl-C) are in
tests/test_bad_runs.py."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable

import polars as pl
import pytest
from click.testing import CliRunner

from pipeline_src.cli import main
from tests.conftest import REPO, tiny_train_spec, write_dataset

EVAL_SPEC = {"batch_size": 4, "seed": 2, "device": "cpu"}


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A folder holding what a user has finished: training and evaluation sets, a trained model
    and its accuracy table."""
    root = tmp_path_factory.mktemp("finished")
    (root / "config").mkdir()  # the default config, which `lengthgen check` and `findings` read
    (root / "config" / "config.yaml").write_bytes((REPO / "config" / "config.yaml").read_bytes())
    write_dataset(root / "train.parquet", "train", {"k_train": 2, "l_min": 10, "l_max": 25, "n_samples": 300})
    write_dataset(root / "eval.parquet", "eval", {"k_test": [1, 2], "lengths": [20, 60], "n_per_cell": 6}, seed=2)
    for args in (["train", "--spec", json.dumps(tiny_train_spec()), "--train-data", "train.parquet",
                  "--out-dir", "model"],
                 ["evaluate", "--spec", json.dumps(EVAL_SPEC), "--model-dir", "model", "--eval-data", "eval.parquet",
                  "--out", "accuracy.parquet"]):
        done = invoke(root, args)
        assert done.exit_code == 0, done.output
    return root


def invoke(root: Path, args: list[str]):
    cwd = os.getcwd()
    os.chdir(root)
    try:
        return CliRunner().invoke(main, args)
    finally:
        os.chdir(cwd)


def spec_of(**train) -> str:
    return json.dumps(tiny_train_spec(**train))


def flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    path.write_bytes(bytes(data))


def cut(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


def typed_wrong(path: Path) -> None:
    """The accuracy table with its accuracy column as text, made by hand (no sidecar)."""
    frame = pl.read_parquet(path)
    frame.with_columns(pl.col("accuracy").cast(pl.String)).write_parquet(path)
    Path(f"{path}.prov.json").unlink()


def garbage(path: Path) -> None:
    path.write_text("{ this is not JSON")


def config(text: str) -> Callable[[Path], list[str]]:
    """``lengthgen check`` of the default config with ``text`` (YAML) as a --configfile."""
    def args(root: Path) -> list[str]:
        (root / "bad.yaml").write_text(text)
        return ["check", "--configfile", str(root / "bad.yaml")]
    return args


# (case, the command (given the finished folder), what to break first (file, how), words its one line holds)
CASES = [
    ("config: YAML's 1e-3 is a string", config("sparse_parity:\n  train:\n    lr: 1e-3\n"), None, ["lr"]),
    ("config: a misspelt key", config("sparse_parity:\n  trian:\n    steps: 5\n"), None, ["trian", "train"]),
    ("config: an unknown task", config("tasks: [sparse_parity, parity]\n"), None, ["tasks"]),
    ("config: no seeds", config("sparse_parity:\n  seeds: []\n"), None, ["seeds"]),
    ("config: a device that is no device", config("device: gpu\n"), None, ["device"]),
    ("config: a negative step count", config("defaults:\n  train:\n    steps: -5\n"), None, ["steps"]),
    ("spec: a negative step count", lambda r: ["train", "--spec", spec_of(steps=-5), "--train-data", "train.parquet",
                                               "--out-dir", "new"], None, ["steps"]),
    ("spec: an unknown key", lambda r: ["train", "--spec", json.dumps({**tiny_train_spec(), "stepz": 5}),
                                        "--train-data", "train.parquet", "--out-dir", "new"], None, ["stepz"]),
    ("spec: a batch of 0", lambda r: ["evaluate", "--spec", json.dumps({**EVAL_SPEC, "batch_size": 0}), "--model-dir",
                                      "model", "--eval-data", "eval.parquet", "--out", "new.parquet"], None,
     ["batch_size"]),
    ("spec: an unknown task", lambda r: ["generate", "--spec",
                                         json.dumps({"task": "parity", "split": "train", "seed": 1, "params": {}}),
                                         "--out", "new.parquet"],
     None, ["task", "'parity'"]),
    ("spec: not JSON", lambda r: ["train", "--spec", "{steps: 5", "--train-data", "train.parquet", "--out-dir", "new"],
     None, ["--spec"]),
    ("cli: an unknown figure", lambda r: ["plot", "figure9", "--spec", "{}", "--out", "x.png", "accuracy.parquet"],
     None, ["figure9"]),
    ("cli: no training set", lambda r: ["train", "--spec", spec_of(), "--out-dir", "new"], None, ["--train-data"]),
    ("cli: a training set that is not there", lambda r: ["train", "--spec", spec_of(), "--train-data", "no.parquet",
                                                         "--out-dir", "new"], None, ["no.parquet"]),
    ("cli: neither a model nor a pretrained one", lambda r: ["influence", "--spec", "{}", "--tokens", "train.parquet",
                                                             "--out", "new.parquet"], None, ["--model-dir"]),
    ("cli: findings of a folder without results", lambda r: ["findings", str(r / "empty")], None,
     ["no results found under", "empty"]),
    ("data: a truncated training set", lambda r: ["train", "--spec", spec_of(), "--train-data", "train.parquet",
                                                  "--out-dir", "new"], ("train.parquet", cut), ["train.parquet"]),
    ("data: a bit flipped in the evaluation set", lambda r: ["evaluate", "--spec", json.dumps(EVAL_SPEC), "--model-dir",
                                                             "model", "--eval-data", "eval.parquet", "--out",
                                                             "new.parquet"], ("eval.parquet", flip), ["eval.parquet"]),
    ("model: a bit flipped in the weights", lambda r: ["evaluate", "--spec", json.dumps(EVAL_SPEC), "--model-dir",
                                                       "model", "--eval-data", "eval.parquet", "--out", "new.parquet"],
     ("model/model.safetensors", flip), ["model.safetensors"]),
    ("model: its description cut short", lambda r: ["evaluate", "--spec", json.dumps(EVAL_SPEC), "--model-dir", "model",
                                                    "--eval-data", "eval.parquet", "--out", "new.parquet"],
     ("model/model.json", cut), ["model.json"]),
    ("sidecar: not JSON", lambda r: ["evaluate", "--spec", json.dumps(EVAL_SPEC), "--model-dir", "model",
                                     "--eval-data", "eval.parquet", "--out", "new.parquet"],
     ("eval.parquet.prov.json", garbage), ["eval.parquet.prov.json"]),
    ("table: the accuracy column as text", lambda r: ["table", "accuracy.parquet"], ("accuracy.parquet", typed_wrong),
     ["accuracy.parquet", "accuracy"]),
    ("device: CUDA asked for on a machine without it (training)",
     lambda r: ["train", "--spec", json.dumps({**tiny_train_spec(), "device": "cuda"}), "--train-data", "train.parquet",
                "--out-dir", "new"], None, ["device", "cuda"]),
    ("device: CUDA asked for on a machine without it (evaluation)",
     lambda r: ["evaluate", "--spec", json.dumps({**EVAL_SPEC, "device": "cuda"}), "--model-dir", "model",
                "--eval-data", "eval.parquet", "--out", "accuracy.parquet"], None, ["device", "cuda"]),
]


@pytest.mark.parametrize("case, command, breaking, words", CASES, ids=[case[0] for case in CASES])
def test_a_bad_input_stops_in_one_line_naming_it_and_loses_nothing(finished, tmp_path, case, command, breaking, words):
    if case.startswith("device") and _cuda():
        pytest.skip("this machine has CUDA")
    root = tmp_path / "run"
    _copy(finished, root)
    (root / "empty").mkdir()
    if breaking:
        name, how = breaking
        how(root / name)
    before = _files(root)
    done = invoke(root, command(root))
    assert done.exit_code != 0, done.output
    errors = [line for line in done.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and all(word in errors[0] for word in words), done.output
    assert "Traceback" not in done.output and "delete" not in errors[0]
    assert _files(root) == before  # nothing written, nothing removed, nothing changed


def test_the_suite_holds_every_kind_the_issue_names():
    kinds = {case.split(":")[0] for case, *_ in CASES}
    assert {"config", "spec", "cli", "data", "model", "sidecar", "table", "device"} <= kinds
    assert len(CASES) >= 20  # and the workflow's own in tests/test_bad_runs.py


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def _copy(source: Path, target: Path) -> None:
    for path in source.rglob("*"):
        if path.is_file():
            (target / path.relative_to(source)).parent.mkdir(parents=True, exist_ok=True)
            (target / path.relative_to(source)).write_bytes(path.read_bytes())


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file() and p.name != "bad.yaml"}


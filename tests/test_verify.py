"""`lengthgen provenance --verify`: re-hash an artifact's chain and name what changed or went missing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline_src.cli import main
from pipeline_src.evaluation.evaluate import evaluate
from pipeline_src.provenance.verify import verify
from pipeline_src.training.train import train
from tests.conftest import private_copy, tiny_train_spec, write_dataset

CHAIN = ("acc.parquet", "model/model.safetensors", "train.parquet", "eval.parquet")


@pytest.fixture(scope="module")
def built_chain(tmp_path_factory) -> Path:
    """train.parquet + eval.parquet -> model/ -> acc.parquet, recorded with relative paths."""
    folder = tmp_path_factory.mktemp("chain")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        write_dataset(Path("train.parquet"), "train", {"k_train": 2, "l_min": 10, "l_max": 25, "n_samples": 300})
        write_dataset(Path("eval.parquet"), "eval", {"k_test": [1, 2], "lengths": [20, 60], "n_per_cell": 6}, seed=2)
        train(tiny_train_spec(), Path("train.parquet"), Path("model"), progress=lambda _: None)
        evaluate({"batch_size": 8, "seed": 2}, Path("model"), Path("eval.parquet"), Path("acc.parquet"),
                 progress=lambda _: None)
    return folder


@pytest.fixture
def chain(built_chain, tmp_path, monkeypatch) -> Path:
    """A private copy of the chain, as the working directory."""
    return private_copy(built_chain, tmp_path, monkeypatch, "chain")


def run_verify(artifact: str = "acc.parquet"):
    return CliRunner().invoke(main, ["provenance", "--verify", artifact])


def named(output: str) -> dict[str, str]:
    """Path -> CHANGED or MISSING, from the verify report."""
    found = {}
    for line in output.splitlines():
        kind, _, path = line.partition(" ")
        if kind in ("CHANGED", "MISSING"):
            found[path.strip()] = kind
    return found


def test_unchanged_chain_verifies(chain):
    shown = run_verify()
    assert shown.exit_code == 0, shown.output
    assert shown.output.strip().startswith(f"all {len(CHAIN)} artifacts verified")
    assert sorted(verify("acc.parquet").checked) == sorted(CHAIN)


def test_edited_upstream_file_is_named_alone(chain):
    with open("train.parquet", "ab") as handle:
        handle.write(b"\0")
    shown = run_verify()
    assert shown.exit_code == 1, shown.output
    assert named(shown.output) == {"train.parquet": "CHANGED"}
    # both the consumer's record and the file's own sidecar disagree with it
    assert "model/model.safetensors (input train_data)" in shown.output and "train.parquet.prov.json" in shown.output
    assert f"1 changed and 0 missing of {len(CHAIN)} artifacts" in shown.output


def test_deleted_upstream_file_is_named_missing(chain):
    os.remove("eval.parquet")
    shown = run_verify()
    assert shown.exit_code == 1, shown.output
    assert named(shown.output) == {"eval.parquet": "MISSING"}


def test_walk_goes_on_past_a_missing_model_through_its_sidecar(chain):
    os.remove("model/model.safetensors")  # its sidecar stays and still names the training set
    with open("train.parquet", "ab") as handle:
        handle.write(b"\0")
    shown = run_verify()
    assert shown.exit_code == 1
    assert named(shown.output) == {"model/model.safetensors": "MISSING", "train.parquet": "CHANGED"}


def test_edited_artifact_itself_is_named(chain):
    with open("acc.parquet", "ab") as handle:
        handle.write(b"\0")
    shown = run_verify()
    assert shown.exit_code == 1 and named(shown.output) == {"acc.parquet": "CHANGED"}


def test_verify_without_record_fails_clearly(chain):
    Path("stray.png").write_bytes(b"not a figure")
    shown = run_verify("stray.png")
    assert shown.exit_code != 0 and "no provenance record" in shown.output


def test_an_unreadable_sidecar_is_named_not_passed(chain):
    Path("model/model.safetensors.prov.json").write_text("{")
    done = run_verify()
    assert done.exit_code == 1, done.output
    assert "UNREADABLE model/model.safetensors" in done.output and "1 unreadable" in done.output, done.output


def test_a_step_run_by_hand_into_results_is_named_until_adopted(chain):
    """A table under results/ whose record says a step run by hand made it ("manual evaluate"): named, and
    verified once adopted; the same record outside results/ (a hand run of one's own) is not named."""
    from pipeline_src.provenance.sidecars import sidecar_record, write_sidecar
    from pipeline_src.runs.adoption import adopt

    Path("results").mkdir()
    for table in ("results/acc.parquet", "acc.parquet"):
        if table != "acc.parquet":
            Path(table).write_bytes(Path("acc.parquet").read_bytes())
        write_sidecar(Path(table), {**sidecar_record("acc.parquet"), "rule": "manual evaluate"})
    done = run_verify("results/acc.parquet")
    assert done.exit_code == 1 and "BY HAND  results/acc.parquet" in done.output, done.output
    assert "rule 'manual evaluate'" in done.output and "lengthgen adopt" in done.output, done.output
    assert run_verify("acc.parquet").exit_code == 0
    adopt("results/acc.parquet", "checked by hand")
    assert run_verify("results/acc.parquet").exit_code == 0

"""The run's checks before anything is removed (pipeline_src/runs/preflight.py), on plain job
descriptions: each failure is one line naming the field or the file, and touches no file."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Callable

import pytest

from pipeline_src.provenance.sidecars import sidecar_record, write_sidecar
from pipeline_src.runs.preflight import Job, PreflightError, check, remake_command
from pipeline_src.storage.canonical import canonical_json
from tests.conftest import tiny_train_spec, write_dataset

TRAIN_PARAMS = {"k_train": 2, "l_min": 10, "l_max": 25, "n_samples": 300}


@pytest.fixture
def results(tmp_path, monkeypatch):
    """A working directory holding one training set under results/, as the workflow writes it."""
    monkeypatch.chdir(tmp_path)
    write_dataset(Path("results/data/sparse_parity/train_k2.parquet"), "train", TRAIN_PARAMS)
    return tmp_path


DATA = "results/data/sparse_parity/train_k2.parquet"
MODEL = "results/train/sparse_parity/rope_pose/k2/seed3/model.safetensors"


def train_job(**changes) -> Job:
    return Job("train", (DATA,), (MODEL,), {"rule": "train", "spec": canonical_json({**tiny_train_spec(), **changes})})


def failure(jobs, **options) -> str:
    before = {p: p.read_bytes() for p in Path().rglob("*") if p.is_file()}
    with pytest.raises(PreflightError) as caught:
        check(jobs, **options)
    assert {p: p.read_bytes() for p in Path().rglob("*") if p.is_file()} == before  # nothing touched
    message = str(caught.value)
    assert "\n" not in message and "nothing was run or removed" in message, message
    return message


def test_intact_inputs_and_a_valid_spec_pass(results):
    check([train_job(), Job("all", (DATA, MODEL))])


def test_a_truncated_input_names_the_file_and_the_command_that_makes_it_again(results):
    os.truncate(DATA, 2000)
    message = failure([train_job()], command=["/venv/bin/snakemake", "--cores", "2", "all", "--configfile", "c.yaml"])
    assert message.startswith(f"{DATA}: changed since it was written (sha256 ")
    assert f"snakemake --cores 2 all --configfile c.yaml --forcerun {DATA}" in message
    assert f"lengthgen adopt {DATA}" in message and "delete" not in message


def test_an_input_without_its_sidecar_is_refused(results):
    Path(DATA + ".prov.json").unlink()
    assert f"{DATA}: no provenance record (train_k2.parquet.prov.json is missing)" in failure([train_job()])


def test_an_unreadable_sidecar_is_refused(results):
    Path(DATA + ".prov.json").write_text("{not json")
    assert f"{DATA}: unreadable provenance record" in failure([train_job()])


def test_an_input_this_run_makes_again_and_a_targets_inputs_are_not_read(results):
    os.truncate(DATA, 2000)
    check([train_job(), Job("train_data", (), (DATA,), {"rule": "train_data", "spec": canonical_json(
        {"task": "sparse_parity", "split": "train", "seed": 1, "params": TRAIN_PARAMS})})])
    check([Job("all", (DATA,))])  # a target's job only asks for its inputs


def test_a_changed_model_description_beside_the_weights_is_refused(results):
    folder = Path(MODEL).parent
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(b"weights")
    (folder / "model.json").write_text("{}")
    for name in ("model.safetensors", "model.json"):
        write_sidecar(folder / name, {"rule": "train"})
    (folder / "model.json").write_text('{"changed": 1}')
    job = Job("evaluate", (MODEL, "results/data/sparse_parity/eval.parquet"), ("results/eval/x/accuracy.parquet",),
              {"spec": canonical_json({"batch_size": 4, "seed": 2, "mechanism_samples": 4})})
    assert failure([job]).startswith(f"{folder / 'model.json'}: changed since it was written")


@pytest.mark.parametrize("changes, field", [({"train": {**tiny_train_spec()["train"], "steps": -5}}, "steps"),
                                            ({"stepz": 5}, "stepz")])
def test_a_spec_its_step_would_refuse_names_the_field(results, changes, field):
    message = failure([train_job(**changes)])
    assert message.startswith(f"rule train ({MODEL}): ") and field in message, message


def test_a_gpu_asked_for_on_a_machine_without_one_names_the_device_field(results):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    message = failure([train_job(device="cuda")])
    assert message.startswith("device: 'cuda' asks for a GPU, but CUDA is not available on this machine"), message
    check([train_job(device="cuda")], local=False)  # a cluster node's devices are its own


@pytest.mark.parametrize("argv, expected", [
    (["/x/bin/snakemake", "all", "--config", "device=cpu"], "snakemake all --config device=cpu --forcerun F G"),
    (["/x/snakemake/__main__.py", "-R", "M", "--cores", "1"], "snakemake -R F G M --cores 1"),
    (["/usr/bin/pytest", "-q"], "snakemake --forcerun F G"),
    (None, "snakemake --forcerun F G")])
def test_the_command_that_makes_files_again_is_the_run_forcing_them(argv, expected):
    assert remake_command(argv, ["F", "G"]) == expected
    assert shlex.split(expected)[0] == "snakemake"


def test_the_workflow_checks_before_any_job_starts():
    """The Snakefile's onstart calls the check: Snakemake runs it once the jobs are planned and before
    the first job, and so before any output is removed (snakemake/workflow.py: _onstart, then the
    scheduler, whose jobs' prepare() removes their outputs)."""
    text = (Path(__file__).resolve().parents[1] / "Snakefile").read_text()
    assert "onstart:\n    check_workflow(workflow)\n" in text


def test_several_changed_inputs_are_counted_and_all_made_again_by_one_command(results):
    other = "results/data/sparse_parity/train_k3.parquet"
    write_dataset(Path(other), "train", TRAIN_PARAMS)
    for path in (DATA, other):
        os.truncate(path, 2000)
    message = failure([train_job(), Job("train", (other,), ("results/train/other/model.safetensors",),
                                        {"spec": canonical_json(tiny_train_spec())})])
    assert message.startswith(f"{DATA}: changed since it was written") and "(and 1 more such file(s))" in message
    assert f"--forcerun {DATA} {other}" in message and f"lengthgen adopt {DATA} {other})" in message


# --- a file read as it is was made as this run would make it (by its rule, with its spec) ---

DATA_SPEC = {"task": "sparse_parity", "split": "train", "seed": 1, "params": TRAIN_PARAMS}


def recorded_as(rule: str, **extra) -> None:
    """DATA's sidecar with its record's rule (and fields) replaced, its bytes' digest kept."""
    write_sidecar(Path(DATA), {**sidecar_record(DATA), "rule": rule, **extra})


def data_maker(**params) -> Callable[[str], Job | None]:
    """This run's job that makes DATA (with ``params`` over the recorded ones), none for other files."""
    job = Job("train_data", (), (DATA,), {"spec": canonical_json({**DATA_SPEC, "params": {**TRAIN_PARAMS, **params}})})
    return lambda path: job if path == DATA else None


def test_a_file_made_by_its_rule_with_this_runs_spec_passes(results):
    recorded_as("train_data")
    check([train_job()], maker=data_maker())


def test_a_step_run_by_hand_into_results_is_refused_naming_it_and_both_ways_out(results):
    recorded_as("manual train_data", config=json.loads(canonical_json({**DATA_SPEC, "params": {
        **TRAIN_PARAMS, "n_samples": 50}})))
    message = failure([train_job()], maker=data_maker(), command=["snakemake", "--cores", "2", "all"])
    assert message.startswith(f"{DATA}: made by hand by rule 'manual train_data', not by rule train_data: "
                              "params.n_samples 50, this run's 300; nothing was run or removed."), message
    assert f"--forcerun {DATA}" in message and f"lengthgen adopt {DATA}" in message


def test_a_file_made_with_another_spec_names_the_field(results):
    recorded_as("train_data")
    message = failure([train_job()], maker=data_maker(n_samples=500))
    assert message.startswith(f"{DATA}: made by rule train_data with another spec than this run's: "
                              "params.n_samples 300, this run's 500;"), message


def test_an_adopted_file_is_used_as_it_is(results):
    recorded_as("manual train_data", adopted={"by": "me", "at": "now", "sha256": sidecar_record(DATA)["artifact"][
        "sha256"], "recorded_sha256": None, "reason": ""})
    check([train_job()], maker=data_maker())

"""Shared fixtures: tiny specs and datasets that every test can afford."""

from __future__ import annotations

import copy
import faulthandler
import os
from collections import Counter
from pathlib import Path

import pytest

import pipeline_src.cli  # noqa: F401  (first: the commands' settings, polars' engine among them, for every test)
from pipeline_src import datasets
from pipeline_src.provenance.records import build_record
from pipeline_src.tasks import get_task

REPO = Path(__file__).resolve().parents[1]


def default_config() -> dict:
    """``config/config.yaml`` as the workflow sees it: validated, each task section merged over
    ``defaults``."""
    from pipeline_src.planning.load_config import load_config

    return load_config([], base=REPO / "config" / "config.yaml")


TINY_MODEL = {"d_model": 32, "n_layer": 1, "n_head": 2, "d_mlp": 64, "rotary_pct": 1.0,
              "rotary_base": 10000.0, "max_positions": 256, "parallel_residual": True}
TINY_TRAIN = {"steps": 12, "batch_size": 8, "lr": 1e-3, "betas": [0.9, 0.999], "warmup_steps": 3,
              "final_lr_ratio": 0.0, "weight_decay": 0.1, "grad_clip": 1.0, "precision": "fp32",
              "pad_multiple": 8, "length_grouping": 3, "log_every": 4, "checkpoint_every": 5,
              "position_loss_weight": 1.0}


def tiny_train_spec(scheme: str = "rope_pose", **train) -> dict:
    # device cpu: the bit-exact tests that use it claim CPU determinism (CUDA is tested on its own)
    return {"task": "sparse_parity", "variant": "k2", "scheme": scheme, "k_train": 2, "seed": 3, "device": "cpu",
            "model": dict(TINY_MODEL), "train": {**copy.deepcopy(TINY_TRAIN), **train},
            "positions": {"pose_chunks": 2, "target_length": 103}}


def write_dataset(path, split: str, params: dict, seed: int = 1):
    task = get_task("sparse_parity")
    spec = {"task": "sparse_parity", "split": split, "seed": seed, "params": params}
    frame = {"train": task.generate_train, "eval": task.generate_eval}[split](params, seed)
    datasets.write(frame, path, task.schema, build_record("test", "data", spec, seeds={"seed": seed}))
    return path


@pytest.fixture
def train_data(tmp_path):
    return write_dataset(tmp_path / "train.parquet", "train",
                         {"k_train": 2, "l_min": 10, "l_max": 25, "n_samples": 300})


@pytest.fixture
def eval_data(tmp_path):
    return write_dataset(tmp_path / "eval.parquet", "eval",
                         {"k_test": [1, 2], "lengths": [20, 60], "n_per_cell": 6}, seed=2)


# The tiny trained models of tests/helpers.py's DATASETS, for test_evaluate.py and test_mechanism.py:
# trained once per run, by whichever worker asks first (training is deterministic: the same bytes).
@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Trained tiny models by (dataset label, scheme), each trained on first use and kept for the run
    in a folder every pytest-xdist worker shares (the others wait on its lock, then read it). Tests
    only read these folders."""
    import fcntl

    from tests.helpers import train_task_model  # here, not above: tests.helpers imports this module

    root = tmp_path_factory.getbasetemp()
    root = (root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root) / "tiny-models"
    root.mkdir(exist_ok=True)

    def get(label: str, scheme: str):
        folder, data = root / f"{label}-{scheme}", root / f"{label}-{scheme}.data"
        with open(root / f"{folder.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            done = root / f"{folder.name}.done"
            if not done.exists():
                data.mkdir(exist_ok=True)
                train_task_model(folder, data, label, scheme)
                done.touch()
        return folder

    return get


@pytest.fixture(scope="module")
def eval_sets(tmp_path_factory):
    from tests.helpers import DATASETS, write_data

    root = tmp_path_factory.mktemp("eval")
    return {label: write_data(root / f"{label}.parquet", name, "eval", params, 5)
            for label, (name, _, params) in DATASETS.items()}


def private_copy(built, tmp_path, monkeypatch, name: str):
    """A copy of the module-scoped folder ``built`` under ``tmp_path``, made the working directory
    (tests may edit it without touching other tests' files)."""
    import shutil

    folder = tmp_path / name
    shutil.copytree(built, folder)
    monkeypatch.chdir(folder)
    return folder


def pytest_collection_modifyitems(config, items):
    """Files with end-to-end tests first, the most such tests first, then the others, the most tests
    first; each file keeps its own order. pytest-xdist hands out whole files in this order (``--dist
    loadfile --no-loadscope-reorder``), so the long files start at once and the short ones fill in
    at the end, instead of a long file starting last while the other worker idles."""
    def file(item):
        return item.nodeid.split("::")[0]

    tests = Counter(map(file, items))
    e2e = Counter(file(item) for item in items if item.get_closest_marker("e2e"))
    items.sort(key=lambda item: (-e2e[file(item)], -tests[file(item)]))  # a stable sort


@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report):
    """A failing test names itself and shows the end of its error as it fails, not only in the
    closing summary, so a run stopped at a time limit (CI's cap, the GPU kit's suite step) still says
    what failed and why. With pytest-xdist the controller prints it; workers have no terminal."""
    if not report.failed:
        return
    reporter = _PYTEST_CONFIG[0].pluginmanager.get_plugin("terminalreporter") if _PYTEST_CONFIG else None
    if reporter is not None and not hasattr(_PYTEST_CONFIG[0], "workerinput"):
        reporter.write("\n")
        reporter.write_line(f"FAILED {report.nodeid} ({report.when})", red=True)
        for line in report.longreprtext.splitlines()[-FAILURE_LINES:]:
            reporter.write_line(f"    {line}")


FAILURE_LINES = 12  # the end of a failure's text printed as it fails (the exception and where it arose)
TEST_TIMEOUT_ENV = "LENGTHGEN_TEST_TIMEOUT"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """With ``LENGTHGEN_TEST_TIMEOUT=N`` set, a test still running after N seconds prints every
    thread's stack (the test's own frame among them) and ends its process, so a suite that stalls
    under a time limit names what held it; pytest-xdist then reports the worker crashed running it."""
    limit = float(os.environ.get(TEST_TIMEOUT_ENV) or 0)
    if limit > 0:
        faulthandler.dump_traceback_later(limit, exit=True, file=_STDERR[0])
    try:
        yield
    finally:
        if limit > 0:
            faulthandler.cancel_dump_traceback_later()


_PYTEST_CONFIG: list = []
_STDERR: list = []  # the process's own stderr: pytest captures fd 2 while tests run


def pytest_configure(config):
    """Runs while pytest's capture is suspended, so fd 2 is still the process's stderr."""
    _PYTEST_CONFIG[:] = [config]
    _STDERR[:] = [os.fdopen(os.dup(2), "w")]
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    if workers > 1:  # one torch thread per worker: two workers of two threads each on 2 cores wait on each other
        import torch

        torch.set_num_threads(max(1, (os.cpu_count() or 1) // workers))

"""Helpers the test modules share (no test module imports another): workflow copies and Snakemake
runs, task datasets, tiny trained models, influence inputs, accuracy and influence tables, caption
records, corpus shards, a tmpfs mount. Each section names the test module it came from. Fixtures
shared by several modules are in conftest.py."""

from __future__ import annotations

import contextlib
import copy
import functools
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import torch
import yaml

from pipeline_src import datasets
from pipeline_src.config.influence_config import InfluenceConfig
from pipeline_src.evaluation.accuracy_schema import AccuracySchema
from pipeline_src.evaluation.stats import wilson_interval
from pipeline_src.language.influence_table import KEY_TOKEN_GAIN, influence_schema
from pipeline_src.language.targets import select_targets
from pipeline_src.model import Decoder, ModelConfig
from pipeline_src.planning import jobs, paths
from pipeline_src.planning import language_jobs as lang
from pipeline_src.planning.cell_jobs import cell_jobs
from pipeline_src.provenance.records import build_record
from pipeline_src.provenance.sidecars import attach, write_sidecar
from pipeline_src.tasks import get_task
from pipeline_src.training.batches import SequenceTable, training_batch
from pipeline_src.training.train import train
from tests.conftest import default_config, tiny_train_spec

# --- the workflow in a temporary folder, and Snakemake runs (test_workflow.py) --------------------

REPO = Path(__file__).resolve().parents[1]


def snakemake(workdir: Path, *args: str, check: bool = True, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run snakemake in ``workdir`` (``env``: extra environment variables); a ``workdir`` holding a copy of
    the package (``pipeline_src``) has it imported, by the jobs too."""
    own = {"PYTHONPATH": str(workdir)} if (workdir / "pipeline_src").is_dir() else {}
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", **own,
           **(env or {})}
    done = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", *args],
                          cwd=workdir, env=env, capture_output=True, text=True, timeout=600)
    if check and done.returncode:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done


def planned_jobs(done: subprocess.CompletedProcess) -> dict[str, int]:
    """Rule -> job count from a dry run's 'Job stats' table."""
    text = done.stdout + done.stderr
    if "Nothing to be done" in text:
        return {}
    table = text.split("Job stats:")[1].split("total")[0]
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", table, re.M)}


def planned_blocks(stdout: str) -> list[tuple[str, str]]:
    """Each job of a dry run's output (``snakemake -n -p``) as (its rule, its block of lines)."""
    blocks = []
    for block in re.split(r"\n(?=(?:local)?rule )", stdout):
        rule = re.match(r"(?:local)?rule (\w+):", block)
        if rule:
            blocks.append((rule[1], block))
    return blocks


def write_override(workdir: Path, name: str, body: dict) -> str:
    path = workdir / "config" / name
    path.write_text(yaml.safe_dump(body))
    return f"config/{name}"


def copy_workflow(workdir: Path, device: str = "cpu") -> Path:
    """``workdir`` with a copy of the workflow (Snakefile, workflow/, config/, profiles/, and claims/, which a
    shipped config names) and no results,
    its ``device`` setting ``device``: the CPU unless a test means another, so that a GPU machine runs
    these workflows as every other machine does (it would train them on CUDA, each job compiled)."""
    shutil.copy(REPO / "Snakefile", workdir)
    for folder in ("workflow", "config", "profiles", "claims"):
        shutil.copytree(REPO / folder, workdir / folder)
    base = workdir / "config" / "config.yaml"
    text = base.read_text()
    assert text.count("\ndevice: auto\n") == 1, "config/config.yaml's device setting moved"
    base.write_text(text.replace("\ndevice: auto\n", f"\ndevice: {device}\n"))
    return workdir


def finished_files(workdir: Path) -> dict[Path, bytes]:
    """Every file a run made under ``workdir``/results (logs and benchmarks aside), with its bytes."""
    results = workdir / "results"
    return {p: p.read_bytes() for p in results.rglob("*")
            if p.is_file() and "logs" not in p.parts and "benchmarks" not in p.parts}


def timed(path: Path) -> bool:
    """Whether ``path`` holds wall-clock seconds: a training's log and summary (and so do their
    sidecars' digests, and the sidecars of the training-curve figures drawn from the logs; the
    figures themselves are the same)."""
    return path.name.startswith((paths.TRAIN_FILES["log_table"], paths.TRAIN_FILES["summary"])) or (
        path.name.startswith(paths.training_figure("")) and path.name.endswith(".prov.json"))


def changed_files(before: dict[Path, bytes], workdir: Path) -> list[str]:
    """The files of ``before`` (:func:`finished_files`) now gone or with other bytes, but those
    holding wall-clock seconds (:func:`timed`; a training's log must still equal it but for its
    seconds, which the caller checks where a training ran again)."""
    results = workdir / "results"
    return [str(p.relative_to(results)) for p, data in before.items()
            if not p.exists() or (not timed(p) and p.read_bytes() != data)]


def _smoke_plan() -> tuple[int, dict[str, int], tuple[str, ...], list[str]]:
    """The smoke config's number of trained models, its task figures' plot rules (rule -> 1), every
    figure, and the tasks with a mechanism figure."""
    from pipeline_src.planning import jobs, studies
    from pipeline_src.planning.load_config import load_config

    smoke = load_config([REPO / "config" / "smoke.yaml"], base=REPO / "config" / "config.yaml")
    task_figures = jobs.figures(smoke)
    models = sum(len(jobs.cells(smoke, task)) for task in jobs.tasks(smoke))
    return (models, {f"plot_{figure}": 1 for figure in task_figures}, tuple(studies.figures(smoke)),
            jobs.mechanism_tasks(smoke))


MODELS, TASK_FIGURES, FIGURES, MECHANISM_TASKS = _smoke_plan()


# --- the default config, and configs merged as Snakemake merges them (test_config.py) -------------

DEFAULT = default_config()


def edited(**changes) -> dict:
    """The default config with ``task={field: value}`` dicts merged one level deep."""
    config = copy.deepcopy(DEFAULT)
    for task, fields in changes.items():
        for field, value in fields.items():
            if isinstance(value, dict):
                config[task][field].update(value)
            else:
                config[task][field] = value
    return config


def merged(base: dict, override: dict) -> dict:
    """``override`` merged over ``base`` as Snakemake merges a --configfile (dicts deep, lists replaced)."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


# --- task datasets: every task's params, generated and written (test_task_contract.py) ------------

# Per task: the params of the determinism tests (``train``, ``eval``; the task files reuse
# ``eval`` and enlarge ``train``), a ``small`` training set for the schema tests, and new
# ``regrid`` evaluation lengths whose cells shared with ``eval`` must come out unchanged.
TASK_PARAMS = {
    "sparse_parity": {
        "train": {"k_train": 6, "l_min": 4, "l_max": 12, "n_samples": 200},
        "eval": {"k_test": [1, 3, 6], "lengths": [4, 10, 20], "n_per_cell": 40},
        "small": {"k_train": 3, "l_min": 3, "l_max": 8, "n_samples": 30},
        "regrid": [[4, 10, 20, 30], [30, 20, 10, 4], [10, 20]],
    },
    "parity_scratchpad": {
        "train": {"n_min": 1, "n_max": 20, "scratchpad": True, "n_samples": 200},
        "eval": {"lengths": [1, 5, 20, 60], "scratchpad": True, "n_per_cell": 30},
        "small": {"n_min": 1, "n_max": 8, "scratchpad": True, "n_samples": 30},
        "regrid": [[60, 20, 5, 1], [5, 80]],
        "varied_from": 5,  # shorter samples have too few distinct prompts to differ reliably
    },
    "variable_assignment": {
        "train": {"n_vars": 24, "name_tokens": 1, "n_min": 2, "n_max": 16, "d_max": 4, "depth_law": "capped",
                  "scratchpad": True, "n_samples": 200},
        "eval": {"n_vars": 24, "name_tokens": 1, "lengths": [1, 3, 8, 24], "d_max": 4, "depth_law": "capped",
                 "scratchpad": True, "n_per_cell": 40},
        "small": {"n_vars": 24, "name_tokens": 1, "n_min": 2, "n_max": 6, "d_max": 4, "depth_law": "capped",
                  "scratchpad": True, "n_samples": 30},
        "regrid": [[24, 8, 2]],
    },
    "sparse_parity_scratchpad": {
        "train": {"k_train": 6, "l_min": 4, "l_max": 12, "n_samples": 200},
        "eval": {"k_test": [1, 3, 6], "lengths": [4, 10, 40], "n_per_cell": 30},
        "small": {"k_train": 3, "l_min": 3, "l_max": 8, "n_samples": 30},
        "regrid": [[40, 10]],
    },
    "addition": {
        "train": {"n_min": 1, "n_max": 12, "n_samples": 200},
        "eval": {"lengths": [1, 4, 12, 30], "n_per_cell": 30},
        "small": {"n_min": 1, "n_max": 5, "n_samples": 30},
        "regrid": [[30, 12, 2]],
    },
}


def record(name: str, split: str, params: dict, seed: int) -> dict:
    spec = {"task": name, "split": split, "seed": seed, "params": params}
    return build_record("test", "data", spec, seeds={"seed": seed})


def generate(name: str, split: str, params: dict, seed: int) -> pl.DataFrame:
    task = get_task(name)
    return {"train": task.generate_train, "eval": task.generate_eval}[split](params, seed)


def write(name: str, frame: pl.DataFrame, path: Path, rec: dict) -> Path:
    datasets.write(frame, path, get_task(name).schema, rec)
    return path


def frame_fixtures(name: str, train: dict):
    """Module-scoped ``train_frame`` (``train``, seed 11) and ``eval_frame`` (the spec's ``eval``,
    seed 5) fixtures of a task: assign them to those names in the task's test module."""

    @pytest.fixture(scope="module")
    def train_frame() -> pl.DataFrame:
        return generate(name, "train", train, 11)

    @pytest.fixture(scope="module")
    def eval_frame() -> pl.DataFrame:
        return generate(name, "eval", TASK_PARAMS[name]["eval"], 5)

    return train_frame, eval_frame


@functools.cache
def small_frame(name: str) -> pl.DataFrame:
    """The ``small`` training set of a task (seed 2): the frame the schema tests break."""
    return generate(name, "train", TASK_PARAMS[name]["small"], 2)


def assert_write_rejects(name: str, bad: pl.DataFrame, tmp_path: Path, *words: str) -> None:
    """Writing ``bad`` raises a DataError naming the file (and ``words``) and writes no file."""
    path = tmp_path / "out" / "bad.parquet"
    with pytest.raises(datasets.DataError) as info:
        datasets.write(bad, path, get_task(name).schema, record(name, "train", {}, 0))
    assert str(path) in str(info.value)
    for word in words:
        assert word in str(info.value)
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]


# --- a sparse parity prompt read back (test_sparse_parity.py) -------------------------------------

SPARSE_PARITY_VOCAB = get_task("sparse_parity").vocab


def parse(prompt_ids) -> tuple[list[str], list[str]]:
    """Decode a prompt and split it into (markers, bits), checking the layout on the way."""
    tokens = SPARSE_PARITY_VOCAB.decode(prompt_ids)
    assert tokens[0] == "<bos>", tokens
    assert tokens[-1] == "=", tokens
    body = tokens[1:-1]
    assert len(body) % 2 == 0, tokens
    markers, bits = body[0::2], body[1::2]
    assert all(m in ("*", "-") for m in markers), tokens
    assert all(b in ("0", "1") for b in bits), tokens
    return markers, bits


# --- tiny trained models of scratchpad datasets (test_evaluate.py; their fixtures: conftest.py) ---

quiet = {"progress": lambda _: None}

# Small scratchpad datasets by label: the task's name, and ":2" for two-letter variable names.
# Each entry: (task, training params, evaluation params). Variable assignment responses vary in
# length within a cell (the chain depth is random), and so do its prompts with two-letter names (a
# statement ending in a digit is a token shorter than one ending in a name).
def _assignment(name_tokens: int) -> tuple:
    common = {"n_vars": 16, "name_tokens": name_tokens, "d_max": 4, "depth_law": "capped", "scratchpad": True}
    return ("variable_assignment", {**common, "n_min": 2, "n_max": 6, "n_samples": 200},
            {**common, "lengths": [2, 5], "n_per_cell": 12})


DATASETS = {
    "parity_scratchpad": ("parity_scratchpad", {"n_min": 1, "n_max": 8, "scratchpad": True, "n_samples": 200},
                          {"lengths": [2, 6], "scratchpad": True, "n_per_cell": 12}),
    "variable_assignment": _assignment(1),
    "variable_assignment:2": _assignment(2),
}


def write_data(path, name: str, split: str, params: dict, seed: int):
    return write(name, generate(name, split, params, seed), path, record(name, split, params, seed))


def train_task_model(out_dir, data_dir, label: str, scheme: str, steps: int = 300, max_positions: int = 64):
    """A tiny model of dataset ``label`` (scratchpad variant) trained for ``steps`` steps (enough to get some
    samples right and some wrong); returns its directory. No resume checkpoint on the way (the weights
    are the same; the tests read the model only): 60 of them took a third of its training time."""
    spec = tiny_train_spec(scheme, steps=steps, lr=1e-2, batch_size=16, checkpoint_every=steps)
    name, train_params, _ = DATASETS[label]
    spec.update(task=name, variant="scratchpad", k_train=None)
    spec["model"]["max_positions"] = max_positions
    spec["positions"]["target_length"] = max_positions
    train_data = data_dir / f"{label}-train.parquet"
    if not train_data.exists():
        write_data(train_data, name, "train", train_params, 11)
    train(spec, train_data, out_dir, **quiet)
    return out_dir


# --- a training batch of a made-up task (test_device_placement.py) --------------------------------

def a_batch(scheme: str):
    """Four rows of a made-up task and their IDs, on the CPU."""
    tokens = torch.randint(1, 6, (4, 12), generator=torch.Generator().manual_seed(0))
    table = SequenceTable(tokens, torch.arange(12).expand(4, -1).contiguous(), torch.tensor([12, 10, 9, 12]),
                          torch.tensor([6, 5, 5, 6]))
    return training_batch(table, torch.arange(4), pad_multiple=1)


# --- inputs of the influence analysis: token streams, a random model (test_influence.py) ----------

INFLUENCE_VOCAB = 32
SMALL = dict(context=16, local=8, k_max=3, n_targets=5, seed=1)


def token_stream(lengths, splits=None, seed: int = 0) -> pl.DataFrame:
    """A token stream frame: document i has lengths[i] random tokens."""
    rng = np.random.default_rng(seed)
    splits = splits or ["heldout"] * len(lengths)
    return pl.DataFrame({
        "doc": pl.Series(range(len(lengths)), dtype=pl.Int64),
        "split": pl.Series(splits, dtype=pl.String),
        "tokens": pl.Series([rng.integers(1, INFLUENCE_VOCAB, n).tolist() for n in lengths], dtype=pl.List(pl.Int32)),
    })


def random_model(encoding: str = "rope", seed: int = 0) -> Decoder:
    """A tiny Decoder with large random weights, so that candidates' losses differ clearly."""
    torch.manual_seed(seed)
    model = Decoder(ModelConfig(vocab_size=INFLUENCE_VOCAB, d_model=32, n_layer=2, n_head=2, max_positions=64,
                                position_encoding=encoding))
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.5)
    return model.eval()


def small_targets(cfg: InfluenceConfig) -> pl.DataFrame:
    return select_targets(token_stream([40, 10, 25, 60], ["heldout", "heldout", "train", "heldout"]), cfg)


# --- accuracy and influence tables the findings judge (test_findings.py) --------------------------

F1_TASK, F2_TASK, F3_TASK = (jobs.FIGURE_TASK[f"figure{i}"] for i in (1, 2, 3))


def claim(name: str):
    """The shipped claim called ``name`` (pipeline_src/findings/claims/)."""
    from pipeline_src.findings.claim_file import load_claims

    return {found.name: found for found in load_claims()}[name]
N = 1000  # samples per cell: accuracies are exact to 3 decimals


def write_run(results, config: dict, task: str, variant: str, scheme: str, seed: int, accuracy,
              other_metric: float | None = None) -> None:
    """One run's accuracy table over the config's evaluation grid: ``accuracy(k, length)`` of the
    variant's headline metric (k None for a task without k_test); with ``other_metric``, also rows of
    another metric at that accuracy everywhere (which the findings must not read)."""
    section = config[task]
    t = get_task(task)
    ks = sorted(section["eval"]["k_test"]) if "k_test" in section["eval"] else [None]
    metric = t.headline_metric(variant)
    rows = [(k, length, metric, accuracy(k, length)) for k in ks for length in section["eval"]["lengths"]]
    if other_metric is not None:
        other = "answer" if metric != "answer" else "exact_match"
        rows += [(k, length, other, other_metric) for k, length, _, _ in list(rows)]
    k_train = t.layout.params(variant)["k_train"] if t.layout.by_k_train else None
    hits = np.array([round(acc * N) for *_, acc in rows])
    low, high = wilson_interval(hits, np.full(len(hits), N))
    frame = pl.DataFrame({
        "task": task, "variant": variant, "scheme": scheme,
        "k_train": pl.Series([k_train] * len(rows), dtype=pl.Int32),
        "seed": pl.Series([seed] * len(rows), dtype=pl.Int64),
        "k": pl.Series([k for k, *_ in rows], dtype=pl.Int32),
        "length": pl.Series([length for _, length, *_ in rows], dtype=pl.Int32),
        "metric": [m for _, _, m, _ in rows], "n": pl.Series([N] * len(rows), dtype=pl.Int64),
        "correct": pl.Series(hits, dtype=pl.Int64), "accuracy": hits / N, "ci_low": low, "ci_high": high})
    path = paths.under(results, paths.accuracy(task=task, scheme=scheme, variant=variant, seed=seed))
    path.parent.mkdir(parents=True, exist_ok=True)
    # unchecked when written (a test writes hundreds): the findings check every table they read
    attach(path, {"format": "test"}, lambda tmp, meta: frame.write_parquet(tmp, metadata=meta, statistics=False))


def flat(value: float):
    return lambda k, length: value


def influence_frame() -> pl.DataFrame:
    """A valid influence table of two targets under ``SMALL`` (the frame the schema tests break)."""
    return pl.DataFrame({
        "doc": pl.Series([0, 0], dtype=pl.Int64),
        "t": pl.Series([16, 20], dtype=pl.Int32),
        "target": pl.Series([3, 4], dtype=pl.Int32),
        "long_loss": [0.5, 3.0],
        "short_loss": [3.0, 3.5],
        "sparse_loss": pl.Series([[2.0, 1.0, 0.7], [3.4, 3.2, 3.1]], dtype=pl.List(pl.Float64)),
        "chosen": pl.Series([[5, 0, 7], [1, 2, 3]], dtype=pl.List(pl.Int32)),
        "key_token": [True, False],
        "random_loss": pl.Series([[2.9, 2.8, 2.7], [3.5, 3.4, 3.4]], dtype=pl.List(pl.Float64)),
        "other_loss": pl.Series([[2.5, 2.3, 2.2], [3.4, 3.3, 3.3]], dtype=pl.List(pl.Float64)),
        "other_doc": pl.Series([1, 1], dtype=pl.Int64),
        "other_t": pl.Series([16, 17], dtype=pl.Int32),
    })


def influence_table(config, results, own: np.ndarray, other: np.ndarray) -> None:
    """An influence table whose targets recover the fractions ``own`` (their own far tokens) and
    ``other`` (another document's) of their gain at every k."""
    section = config["language"]
    cfg = InfluenceConfig(context=section["context"], local=section["local"], k_max=section["analysis"]["k_max"])
    n = len(own)
    long = np.full(n, 3.0)
    short = long + KEY_TOKEN_GAIN / 2  # a gain of 1 nat: above the threshold, no key tokens

    def losses(fraction):
        return pl.Series([[s - f * (s - lo)] * cfg.k_max for s, lo, f in zip(short, long, fraction, strict=False)],
                         dtype=pl.List(pl.Float64))
    frame = pl.DataFrame({
        "doc": pl.Series(range(n), dtype=pl.Int64), "t": pl.Series([cfg.context] * n, dtype=pl.Int32),
        "target": pl.Series([7] * n, dtype=pl.Int32), "long_loss": long, "short_loss": short,
        "sparse_loss": losses(own), "chosen": pl.Series([list(range(cfg.k_max))] * n, dtype=pl.List(pl.Int32)),
        "key_token": [False] * n, "random_loss": losses(np.zeros(n)), "other_loss": losses(other),
        "other_doc": pl.Series([(i + 1) % n for i in range(n)], dtype=pl.Int64),
        "other_t": pl.Series([cfg.context] * n, dtype=pl.Int32)})
    path = paths.under(results, paths.INFLUENCE)
    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.write(frame, path, influence_schema(cfg), {"format": "test"})


# --- Figure 2's and 4's tables with their jobs' records (test_findings_config.py, test_provenance.py) ---

def recorded_runs(results, config: dict) -> None:
    """Figure 2's accuracy tables and Figure 4's influence table, each with the provenance records
    ``config``'s jobs give it: the evaluation's, and upstream the evaluation set's and the model's
    (small stand-in files with their own records)."""
    recorded_tables(results, config)
    rng = np.random.default_rng(0)
    influence_table(config, results, rng.uniform(0.5, 0.9, 8), rng.uniform(0.3, 0.7, 8))
    write_sidecar(paths.under(results, paths.INFLUENCE),
                  build_record("language_influence", "language_eval", lang.influence_spec(config)))


def recorded_tables(results, config: dict, accuracy=lambda cell: flat(0.5)) -> None:
    """Figure 2's accuracy tables of ``config``'s runs, each cell's ``accuracy(cell)`` (a function of k
    and length), with the provenance records of :func:`recorded_runs`."""
    for cell in jobs.cells(config, F2_TASK):
        chain = {job.rule: job for job in cell_jobs(config, cell)}
        inputs = {}
        for role, rule in (("model", "train"), ("eval_data", "eval_data")):
            job = chain[rule]
            inputs[role] = path = paths.under(results, job.artifact)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"stand-in")
            write_sidecar(path, build_record(rule, job.stage, job.spec, task=F2_TASK))
        write_run(results, config, F2_TASK, cell["variant"], cell["scheme"], cell["seed"], accuracy(cell))
        evaluate = chain["evaluate"]
        write_sidecar(paths.under(results, evaluate.artifact),
                      build_record("evaluate", evaluate.stage, evaluate.spec, inputs=inputs, task=F2_TASK))


# --- an accuracy table of parity with a scratchpad (test_tables.py) -------------------------------

def accuracy_file(path, scheme: str, seed: int, correct: dict[int, int], n: int = 10):
    lengths = sorted(correct)
    hits = [correct[length] for length in lengths]
    low, high = wilson_interval(pl.Series(hits).to_numpy(), pl.Series([n] * len(hits)).to_numpy())
    frame = pl.DataFrame({
        "task": "parity_scratchpad", "variant": "scratchpad", "scheme": scheme,
        "k_train": pl.Series([None] * len(lengths), dtype=pl.Int32), "seed": seed,
        "k": pl.Series([None] * len(lengths), dtype=pl.Int32), "length": pl.Series(lengths, dtype=pl.Int32),
        "metric": "answer", "n": n, "correct": hits, "accuracy": [h / n for h in hits], "ci_low": low,
        "ci_high": high}).with_columns(pl.col("seed").cast(pl.Int64), pl.col("n").cast(pl.Int64),
                                       pl.col("correct").cast(pl.Int64))
    datasets.write(frame, path, AccuracySchema, {"format": "test"})
    return path


# --- a figure's provenance record as its caption reads it (test_caption.py) -----------------------

def caption_record(made_with, spec=None):
    return {"config": spec or {"seeds": [0, 1]}, "made_with": made_with,
            "code": {"git_commit": "abc", "git_dirty": False, "package_version": "0.1.0"},
            "artifact": {"path": "results/figures/f.png", "sha256": "00ff"}}


CAPTION_TASK = {"train": {"model.d_model": [64], "model.n_layer": [1], "model.n_head": [2, 4], "train.steps": [30],
                          "train.batch_size": [16], "train.lr": [0.001], "code.git_commit": ["def"]},
                "eval_data": {"params.n_per_cell": [10]}}


# --- c4 shards (test_corpus.py) -------------------------------------------------------------------

def c4_line(text: str, i: int = 0) -> str:
    """One line of an allenai/c4 en shard, field order and formats as in the release."""
    record = {"text": text, "timestamp": f"2019-04-{10 + i % 18:02d}T12:57:{i % 60:02d}Z",
              "url": f"https://example.com/page-{i}"}
    return json.dumps(record) + "\n"


def write_shard(folder, name: str, texts: list[str], start: int = 0):
    path = folder / name
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        for i, text in enumerate(texts, start=start):
            handle.write(c4_line(text, i))
    return path


# --- the sentences of the tokenizer tests' documents (test_tokenizer.py) --------------------------

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "A journey of a thousand miles begins with a single step.",
    "In 1905, Einstein published four papers; each changed physics.",
    "She said: \"It's raining again,\" and opened the umbrella.",
    "Numbers like 3.14159 and 2,718 appear in the text too.",
    "Le café était fermé — naïve résumé, déjà vu.",
]


# --- a tmpfs mount (test_integrity.py) ------------------------------------------------------------

@contextlib.contextmanager
def mounted(folder: Path, options: str):
    """A tmpfs mounted on ``folder`` with ``options`` (e.g. a size, or read-only); unmounted after.
    Mounting needs root: the test is skipped where that is refused."""
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True, text=True)
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()})")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def one_thread_per_module():
    """A module's tiny models on one thread (thread contention costs more than it gives on a busy
    machine); a test module makes it its fixture: ``one_thread = pytest.fixture(autouse=True,
    scope="module")(one_thread_per_module)``."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def key_token_targets():
    """Two influence targets (token 7) of documents 4 and 9, with random 16-token contexts: A's far
    context holds the key token 31 at far position 3, B's does not (for a stub model keyed on 31)."""
    import polars as pl

    rng = np.random.default_rng(0)
    contexts = rng.integers(1, 30, size=(2, 16))
    contexts[0, 3] = 31
    return pl.DataFrame({"doc": pl.Series([4, 9], dtype=pl.Int64), "t": pl.Series([20, 30], dtype=pl.Int32),
                         "target": pl.Series([7, 7], dtype=pl.Int32),
                         "context": pl.Series(contexts.tolist(), dtype=pl.List(pl.Int32))})


# --- Markdown headings (test_docs.py, test_claims.py) -----------------------------------------------

def slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """The anchors of every heading of ``text`` outside code fences."""
    found, fenced = set(), False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        heading = re.match(r"^#+ (.*)", line)
        if heading and not fenced:
            found.add(slug(heading.group(1)))
    return found

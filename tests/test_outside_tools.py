"""The names tools outside this repository import stay where they look for them: the GPU kit's paper
step (``../shared/gpu/collect.py``) plans paper-size cells from :mod:`pipeline_src.api` (its
``load_config``, ``tasks``, ``cells``, ``train_data_spec``, ``train_spec`` and ``language_models``);
a rename there once broke it on a lent GPU, where time is too rare to find out."""

from pathlib import Path

from pipeline_src import api
from pipeline_src.planning import jobs, language_jobs
from pipeline_src.planning.load_config import load_config

PAPER = Path(__file__).resolve().parents[1] / "config" / "paper.yaml"


def test_the_gpu_kit_plans_paper_cells_as_the_pipeline_does():
    seen = api.load_config([PAPER])
    checked = load_config([PAPER])
    assert api.tasks(seen) == jobs.tasks(checked) and "variable_assignment" in api.tasks(seen)
    assert api.language_models(seen) == language_jobs.models(checked)
    for task in api.tasks(seen):
        cells = api.cells(seen, task)
        assert cells == jobs.cells(checked, task) and cells, task
        cell = cells[0]
        seed = sorted(seen[task]["seeds"])[0]
        assert api.train_data_spec(seen, task, cell["variant"]) == jobs.train_data_spec(checked, task, cell["variant"])
        assert api.train_spec(seen, task, cell["variant"], cell["scheme"], seed) == \
            jobs.train_spec(checked, task, cell["variant"], cell["scheme"], seed)

"""The names tools outside this repository import stay where they look for them: the GPU kit's paper
step (``../shared/gpu/collect.py``) plans paper-size cells from these, and a rename here once broke
it on a lent GPU, where time is too rare to find out."""

from pathlib import Path

from pipeline_src.bookkeeping import config as kit_jobs
from pipeline_src.bookkeeping.status import load_config as kit_load_config
from pipeline_src.config.load import load_config
from pipeline_src.language import config as lang

PAPER = Path(__file__).resolve().parents[1] / "config" / "paper.yaml"


def test_the_gpu_kit_plans_paper_cells_as_the_pipeline_does():
    seen = kit_load_config([PAPER])
    checked = load_config([PAPER])
    assert kit_jobs.tasks(seen) == kit_jobs.tasks(checked) and "variable_assignment" in kit_jobs.tasks(seen)
    assert lang.models(seen) == lang.models(checked)
    for task in kit_jobs.tasks(seen):
        cells = kit_jobs.cells(seen, task)
        assert cells == kit_jobs.cells(checked, task) and cells, task
        cell = cells[0]
        seed = sorted(seen[task]["seeds"])[0]
        assert kit_jobs.train_data_spec(seen, task, cell["variant"]) == \
            kit_jobs.train_data_spec(checked, task, cell["variant"])
        assert kit_jobs.train_spec(seen, task, cell["variant"], cell["scheme"], seed) == \
            kit_jobs.train_spec(checked, task, cell["variant"], cell["scheme"], seed)

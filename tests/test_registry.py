"""Every list of tasks and schemes agrees with the registries (``pipeline_src.tasks.TASKS``,
``pipeline_src.schemes.SCHEMES``): the config schema, the shipped configs, the figures and their
captions, the tables of docs/tasks.md, the plotting palette. Adding a task or scheme module therefore needs
no other list edited, and a list that drifts fails here."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

from pipeline_src.planning import jobs, studies
from pipeline_src.schemes import SCHEMES
from pipeline_src.tasks import TASKS

REPO = Path(__file__).resolve().parents[1]
TASKS_PAGE = (REPO / "docs" / "tasks.md").read_text()


def test_the_config_check_accepts_every_registered_task_and_scheme_and_names_an_unknown_one():
    import copy

    import pytest

    from tests.conftest import default_config

    for scheme in SCHEMES:
        config = copy.deepcopy(default_config())
        config["sparse_parity_scratchpad"]["schemes"] = [scheme]
        jobs.check(config)
    config = copy.deepcopy(default_config())
    config["sparse_parity_scratchpad"]["schemes"] = ["no_such_scheme"]
    with pytest.raises(Exception, match="no_such_scheme"):
        jobs.check(config)
    config = copy.deepcopy(default_config())
    config["tasks"] = [*config["tasks"], "no_such_task"]
    with pytest.raises(Exception, match="no_such_task"):
        jobs.check(config)


def test_each_task_module_declares_its_task():
    for name, task in TASKS.items():
        assert task.module == f"pipeline_src.tasks.{name}", "a task lives in the module named after it"
        module = sys.modules[task.module]
        assert module.TASK.name == name


def test_figures_and_captions_come_from_the_tasks():
    assert jobs.FIGURE_TASK == {task.figure.name: name for name, task in TASKS.items()}
    for task in TASKS.values():
        assert (REPO / "workflow" / "report" / f"{task.figure.name}.rst").is_file(), task.name
        assert callable(studies.study_of(task.figure.name).draw(task.figure.name))


def test_shipped_configs_run_every_task():
    default = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    smoke = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    assert set(default["tasks"]) == set(TASKS) and default["language"]["enabled"]
    for name in TASKS:
        assert name in default and name in smoke, f"{name} needs a section in config.yaml and smoke.yaml"


def test_the_tasks_page_tables_list_every_task_and_scheme():
    rows = set(re.findall(r"^\| `([a-z_]+)` \|", TASKS_PAGE, flags=re.M))
    missing = ({*TASKS} - {"sparse_parity"} | {*SCHEMES}) - rows  # sparse parity has its own section
    assert not missing, f"docs/tasks.md tables lack rows for {sorted(missing)}"


def test_schemes_have_distinct_colours():
    colours = [scheme.colour for scheme in SCHEMES.values() if scheme.colour]
    assert len(colours) == len(set(colours))


def test_no_module_outside_the_registries_names_a_task():
    """Task names as string literals belong to the task modules (and each task's own figure module)."""
    package = REPO / "pipeline_src"
    figure_modules = {Path(task.figure.draw.partition(":")[0].replace(".", "/") + ".py") for task in TASKS.values()}
    literal = re.compile(r"""["'](%s)["']""" % "|".join(map(re.escape, TASKS)))
    offenders = []
    for path in package.rglob("*.py"):
        relative = path.relative_to(REPO)
        if relative.parts[1] == "tasks" or relative in figure_modules:
            continue
        offenders += [f"{relative}:{i}" for i, line in enumerate(path.read_text().splitlines(), 1)
                      if literal.search(line) and '"""' not in line and not line.lstrip().startswith("#")]
    assert not offenders, f"task names written outside their modules: {offenders}"

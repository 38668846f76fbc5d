"""The task registry: every module of this package that declares ``TASK`` is a task.

Adding a task means adding its module (see :class:`.task.Task` for what it declares); nothing
else lists tasks. Modules are found with :mod:`pkgutil`, so the registry itself names none.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil

from .task import Figure, Layout, Task  # noqa: F401  (re-exported)
from .vocab import Vocab  # noqa: F401

# Modules every task shares; they declare no task.
SHARED_MODULES = frozenset({"dependency", "frame_schema", "generator", "task", "vocab"})


def _discover() -> dict[str, Task]:
    found: dict[str, Task] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name in SHARED_MODULES or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        task = getattr(module, "TASK", None)
        if not isinstance(task, Task):
            raise TypeError(f"{module.__file__}: a task module must declare TASK = Task(...)")
        if task.name in found:
            raise ValueError(f"task {task.name!r} is declared by two modules: {found[task.name].module} "
                             f"and {module.__name__}")
        found[task.name] = dataclasses.replace(task, module=module.__name__)
    return found


TASKS: dict[str, Task] = _discover()


def get_task(name: str) -> Task:
    if name not in TASKS:
        raise KeyError(f"unknown task {name!r}; known tasks: {sorted(TASKS)}")
    return TASKS[name]

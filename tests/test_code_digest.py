"""Code digests follow the real imports: a comment or docstring edit changes none, a code edit
changes exactly the digests of the jobs whose stage (or own task or scheme module) imports it, and
each stage's entry modules are those its CLI command imports."""

from __future__ import annotations

import ast
import pkgutil
import shutil
from pathlib import Path

import pytest

from pipeline_src.planning.language_study import DRAW
from pipeline_src.provenance import code_digest
from pipeline_src.provenance.code_digest import (
    DRAWN_BY_NAME,
    STAGE_COMMANDS,
    STAGE_ENTRIES,
    closure,
    entry_modules,
    left_out,
    stage_digest,
)
from pipeline_src.tasks import TASKS

REAL = code_digest.PACKAGE_DIR
# One job of each stage (task and scheme where its rule has them).
STAGE_JOBS = {
    "data": ("data", "parity_scratchpad", None),
    "train": ("train", "parity_scratchpad", "ppc"),
    "evaluate": ("evaluate", "parity_scratchpad", "ppc"),
    "figures": ("figures", "parity_scratchpad", None),
    "language_data": ("language_data", None, None),
    "language_train": ("language_train", None, "rope"),
    "language_eval": ("language_eval", None, None),
    "language_figures": ("language_figures", None, None),
    "forecast_figures": ("forecast_figures", None, None),
}
# Every job of every task in the synthetic stages.
TASK_JOBS = [(stage, task, "rope" if stage in ("train", "evaluate") else None)
             for stage in ("data", "train", "evaluate", "figures") for task in TASKS]


@pytest.fixture(scope="module")
def stored_parses(tmp_path_factory) -> str:
    """The store of parses (code_digest.STORE) of every module of the real package, made once: each
    copy below starts with it, as a package run before does, so a test parses only what it edits."""
    code_digest.clear_cache()
    for path in REAL.rglob("*.py"):
        code_digest._parse(path)
    folder = tmp_path_factory.mktemp("store")
    code_digest._store({**code_digest._stored(), "folder": folder})
    return (folder / code_digest.STORE).read_text()


@pytest.fixture
def package(tmp_path, monkeypatch, stored_parses) -> Path:
    """A copy of pipeline_src that the digests read instead of the real one."""
    copy = tmp_path / "pipeline_src"
    shutil.copytree(code_digest.PACKAGE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / code_digest.STORE).parent.mkdir()
    (copy / code_digest.STORE).write_text(stored_parses)
    monkeypatch.setattr(code_digest, "PACKAGE_DIR", copy)
    code_digest.clear_cache()
    yield copy
    code_digest.clear_cache()


def digests(jobs) -> dict:
    code_digest.clear_cache()
    return {job: stage_digest(*job) for job in jobs}


def changed(before: dict, after: dict) -> set:
    return {job for job in before if before[job] != after[job]}


def edit_comments_and_docstrings(path: Path) -> None:
    """Add comment lines and reword the module's and the first function's docstrings."""
    lines = path.read_text().splitlines()
    tree = ast.parse("\n".join(lines))
    documented = [node for node in [tree, *ast.walk(tree)] if isinstance(node, (ast.Module, ast.FunctionDef))
                  and ast.get_docstring(node)][:2]
    for node in documented:
        line = node.body[0].lineno - 1
        lines[line] = lines[line].replace('"""', '"""Reworded. ', 1)
    function = next(node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef))
    lines[function.lineno - 1] += "  # a trailing comment"
    lines.insert(function.lineno - 1, "# a comment line")
    path.write_text("\n".join(lines) + "\n# a last comment\n")


def edit_code(path: Path, function: str | None = None) -> None:
    """Add a statement at the end of the first function's body, or of the function named ``function``
    (at the end of the module if there is no function)."""
    lines = path.read_text().splitlines()
    functions = [node for node in ast.walk(ast.parse(path.read_text()))
                 if isinstance(node, ast.FunctionDef) and function in (None, node.name)]
    if functions:
        last = functions[0].body[-1]
        indent = " " * functions[0].body[0].col_offset
        lines.insert(last.end_lineno, f"{indent}_edited = 1")
    else:
        lines.append("_EDITED = 1")
    path.write_text("\n".join(lines) + "\n")


def module_name(package: Path, path: Path) -> str:
    name = path.relative_to(package).with_suffix("").as_posix().replace("/", ".")
    return "" if name == "__init__" else name.removesuffix(".__init__")


def test_comments_and_docstrings_change_no_digest(package):
    jobs = [*STAGE_JOBS.values(), *TASK_JOBS]
    before = digests(jobs)
    for name in ("model.py", "training/train.py", "tasks/parity_scratchpad.py", "datasets.py"):
        edit_comments_and_docstrings(package / name)
        # the docstrings really changed: the syntax trees (docstrings included) differ
        assert ast.dump(ast.parse((package / name).read_text())) != ast.dump(ast.parse((REAL / name).read_text()))
    assert digests(jobs) == before


def test_a_code_edit_changes_exactly_the_stages_that_import_it(package):
    closures = {stage: closure(entry_modules(*job)) for stage, job in STAGE_JOBS.items()}
    before = digests(STAGE_JOBS.values())
    for path in sorted(package.rglob("*.py")):
        original = path.read_text()
        edit_code(path)
        after = digests(STAGE_JOBS.values())
        path.write_text(original)
        name = module_name(package, path)
        expected = {job for stage, job in STAGE_JOBS.items() if name in closures[stage]}
        assert changed(before, after) == expected, path
    assert digests(STAGE_JOBS.values()) == before


def test_editing_a_figure_statistic_redraws_the_language_figures_only(package):
    """The statistics Figure 4, our PoSE figure and the findings compute from the influence table are
    outside the analysis' import closure: editing one reruns no corpus, training or evaluation job."""
    language = {stage: job for stage, job in STAGE_JOBS.items() if stage.startswith("language")}
    before = digests(language.values())
    edit_code(package / "language" / "influence_summary.py", "recovered_gain")
    assert changed(before, digests(language.values())) == {language["language_figures"]}


def test_closures_follow_lazy_relative_and_submodule_imports():
    train, evaluate = closure(entry_modules(*STAGE_JOBS["train"])), closure(entry_modules(*STAGE_JOBS["evaluate"]))
    data = closure(entry_modules(*STAGE_JOBS["data"]))
    assert "datasets" in data & train & evaluate
    assert "model" in train & evaluate and "model" not in data
    assert "tasks.frame_schema" in data  # imported inside a function of each task module
    assert "language.tokenizer" not in train  # the language models' batch source is the language package's
    assert "language.influence" not in train and "training.train" not in evaluate
    assert "figures.lines" in closure(entry_modules(*STAGE_JOBS["figures"]))  # from . import lines
    assert "tasks.task" in data and "" in data  # packages run their __init__
    every = set().union(*(closure(entry_modules(*job)) for job in [*STAGE_JOBS.values(), *TASK_JOBS]))
    assert not every & left_out()


def test_the_modules_left_out_are_those_that_say_so_or_whose_package_does():
    """The modules left out of every digest are those with a top-level ``IN_CODE_DIGEST = False``
    (the shared options, paths, provenance records and their verification, the steps' spec checks and
    the digest itself) and every module of a package whose ``__init__.py`` says so (the CLI and
    everything about runs): named here by import, so a rename or move is followed, and a new module of
    those packages counts without a word."""
    from pipeline_src import cli, runs
    from pipeline_src.cli import options
    from pipeline_src.planning import paths, spec_check
    from pipeline_src.provenance import records, sidecars, verify

    whole = {found.name for package in (cli, runs)
             for found in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")}
    assert {"pipeline_src.runs.benchmarks.sizes", "pipeline_src.cli.commands"} <= whole
    modules = {module.__name__ for module in (cli, runs, options, paths, spec_check, records, code_digest,
                                              sidecars, verify)} | whole
    assert left_out() == {code_digest._relative(name) for name in modules}


def test_a_module_saying_so_leaves_every_closure(package):
    entries = entry_modules(*STAGE_JOBS["figures"])
    assert "figures.lines" in closure(entries)
    with (package / "figures" / "lines.py").open("a") as module:
        module.write("\nIN_CODE_DIGEST = False  # a comment after it\n")
    code_digest.clear_cache()
    assert "figures.lines" in left_out() and "figures.lines" not in closure(entries)


def test_a_package_saying_so_takes_every_module_of_it_out_of_every_closure(package):
    entries = entry_modules(*STAGE_JOBS["figures"])
    drawing = {name for name in closure(entries) if name.startswith("figures.")}
    assert "figures.lines" in drawing
    (package / "figures" / "added.py").write_text("X = 1\n")
    with (package / "figures" / "__init__.py").open("a") as init:
        init.write("\nIN_CODE_DIGEST = False\n")
    code_digest.clear_cache()
    assert drawing | {"figures", "figures.added"} <= left_out()
    assert not {name for name in closure(entries) if name.startswith("figures")}


def test_no_module_a_digest_may_cover_imports_a_package_left_out_whole():
    """The CLI and everything about runs stand above the experiment: a module that a job's digest
    may cover importing one of theirs would leave that code out of the digest (and import back up)."""
    out = left_out()
    packages = [name for name in out if code_digest._path(name).name == "__init__.py"]
    whole = {name for name in out for package in packages if name == package or name.startswith(f"{package}.")}
    assert {"cli", "runs", "cli.run_commands"} <= whole
    for path in code_digest.PACKAGE_DIR.rglob("*.py"):
        name = code_digest._module_name(path)
        if name not in out:
            imported = set(code_digest._parse(path).imports) & whole
            assert not imported, f"{name} imports {sorted(imported)}"


def test_every_module_named_in_the_entries_exists():
    named = {name for names in (*STAGE_ENTRIES.values(), *DRAWN_BY_NAME.values()) for name in names}
    assert not {name for name in named if code_digest._path(name) is None}


def test_editing_a_task_module_changes_that_tasks_jobs_only(package):
    before = digests(TASK_JOBS)
    module = package / "tasks" / "parity_scratchpad.py"
    original = module.read_text()
    edit_code(module)
    assert {task for _, task, _ in changed(before, digests(TASK_JOBS))} == {"parity_scratchpad"}
    module.write_text(original)
    # a task module importing another (the scratchpad version of sparse parity) depends on both
    edit_code(package / "tasks" / "sparse_parity.py")
    assert {task for _, task, _ in changed(before, digests(TASK_JOBS))} == {"sparse_parity",
                                                                          "sparse_parity_scratchpad"}


def test_a_scheme_module_reruns_the_jobs_of_the_schemes_using_it(package):
    """A scheme's own module enters only its jobs' digests; a module whose encoding or transform
    other schemes reuse (rope.py: rope_pose and coupled_rope use its encoding) enters theirs too."""
    names = ("alibi", "rope", "rope_pose", "coupled_rope", "abs_shift")
    jobs = [(stage, "sparse_parity", scheme) for stage in ("train", "evaluate") for scheme in names]
    before = digests(jobs)
    edit_code(package / "schemes" / "alibi.py")
    assert changed(before, digests(jobs)) == {job for job in jobs if job[2] == "alibi"}
    before = digests(jobs)
    edit_code(package / "schemes" / "rope.py")
    assert changed(before, digests(jobs)) == {job for job in jobs if job[2] in ("rope", "rope_pose", "coupled_rope")}


def test_digests_differ_by_stage_and_name_bad_input():
    assert len({stage_digest(stage, "sparse_parity") for stage in ("data", "train", "evaluate", "figures")}) == 4
    with pytest.raises(KeyError, match="unknown stage 'trian'"):
        stage_digest("trian")
    with pytest.raises(KeyError, match="unknown task 'parity'"):
        stage_digest("data", "parity")
    with pytest.raises(ValueError, match="figures stage's digest needs the task"):
        stage_digest("figures")


def test_a_file_that_does_not_parse_is_named(package):
    (package / "model.py").write_text("def broken(:\n")
    with pytest.raises(SyntaxError, match=r"model\.py:1: cannot parse"):
        stage_digest("train")


def test_no_task_s_data_training_or_evaluation_digest_covers_drawing_code():
    """A task's figure is drawn in figures/ (its Figure names the function there): were the drawing
    imported by the task module, every figure change would rerun the task's whole chain."""
    from pipeline_src.provenance.code_digest import closure, entry_modules
    from pipeline_src.tasks import TASKS

    for task in TASKS:
        for stage in ("data", "train", "evaluate"):
            drawing = [m for m in closure(entry_modules(stage, task)) if str(m).startswith("figures")]
            assert not drawing, f"{stage} digest of {task} covers {drawing}"


CLI_MODULES = {REAL / "cli" / "commands.py": "cli", REAL / "cli" / "options.py": "cli"}  # module -> its package


def cli_functions() -> dict[str, tuple[ast.FunctionDef, str | None]]:
    """The functions (methods included) of pipeline_src/cli/commands.py and pipeline_src/cli/options.py,
    by name, each with the package of its module."""
    return {node.name: (node, package) for path, package in CLI_MODULES.items()
            for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.FunctionDef)}


def imports_and_calls(function: tuple[ast.FunctionDef, str | None], functions: dict) -> tuple[set[str], set[str]]:
    """The package modules ``function`` (with its module's package) imports (dotted, relative to
    pipeline_src) and the functions of ``functions`` it calls."""
    function, home = function
    modules, calls = set(), set()
    for node in ast.walk(function):
        if isinstance(node, ast.ImportFrom):
            levels = (1, 2) if home else (1,)  # within pipeline_src: from cli/ . or .., from options.py .
            assert node.level in levels, f"{function.name}: import {node.module} not relative to pipeline_src"
            package = home if node.level == 1 else None  # the module's own package, or pipeline_src
            for alias in node.names:
                module = ".".join(filter(None, [package, node.module, alias.name]))  # from .package import module
                modules.add(module if code_digest._path(module) else ".".join(filter(None, [package, node.module])))
        elif isinstance(node, ast.Import):
            assert not any(alias.name.startswith("pipeline_src") for alias in node.names), function.name
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions:
            calls.add(node.func.id)
    return modules, calls


def reached(names, functions: dict) -> tuple[set[str], set[str]]:
    """The modules that the functions ``names`` import, with the CLI functions they call, and the
    functions run."""
    modules, seen, pending = set(), set(), list(names)
    while pending:
        name = pending.pop()
        if name not in seen:
            seen.add(name)
            imported, calls = imports_and_calls(functions[name], functions)
            modules |= imported
            pending += calls
    return modules, seen


def test_each_stage_s_entries_are_what_its_cli_functions_import():
    """STAGE_ENTRIES copies what the CLI functions of each stage (STAGE_COMMANDS) import, lazily
    inside them and the helpers they call: a module one of them imports that its stage's entries
    lack would be left out of the digest, and editing it would rerun nothing."""
    functions = cli_functions()
    assert STAGE_COMMANDS.keys() == STAGE_ENTRIES.keys()
    for stage, commands in STAGE_COMMANDS.items():
        imported = reached(commands, functions)[0] - left_out()
        entries = set(STAGE_ENTRIES[stage]) - set(DRAWN_BY_NAME.get(stage, ()))
        assert imported == entries, (f"{stage}: {sorted(imported - entries)} imported by {commands} but no entry; "
                                     f"{sorted(entries - imported)} entries that they do not import")


def test_the_modules_loaded_by_name_are_those_drawing_the_language_figures():
    assert set(DRAWN_BY_NAME["language_figures"]) == {code_digest._relative(draw.partition(":")[0])
                                                      for draw in DRAW.values()}


def test_every_cli_function_importing_pipeline_code_runs_a_stage():
    """A module imported by a function of the CLI that no stage runs (a new command, a new branch)
    would be in no digest: every such function is reached from a stage's functions."""
    functions = cli_functions()
    run = reached([name for commands in STAGE_COMMANDS.values() for name in commands], functions)[1]
    out = left_out()
    importing = {name for name, node in functions.items() if imports_and_calls(node, functions)[0] - out}
    assert importing <= run, f"{sorted(importing - run)} import pipeline code but run no stage's jobs"



def test_a_digest_read_from_the_parses_an_earlier_process_stored_is_the_parsed_one(package, monkeypatch):
    """The store of parses (code_digest.STORE) gives the same digests without parsing a file; a store
    that cannot be read, or an edited file, is parsed anew."""
    def in_a_new_process() -> dict:
        code_digest._parsed.cache_clear()  # what a process keeps in memory only
        return digests(STAGE_JOBS.values())

    parsed = in_a_new_process()
    code_digest._store(code_digest._stored())  # as at the end of the process that parsed them
    assert (package / code_digest.STORE).is_file()
    real_parse = code_digest._parsed_source
    monkeypatch.setattr(code_digest, "_parsed_source", lambda *_: pytest.fail("parsed though stored"))
    assert in_a_new_process() == parsed

    monkeypatch.setattr(code_digest, "_parsed_source", real_parse)
    (package / code_digest.STORE).write_text("{")
    assert in_a_new_process() == parsed
    code_digest._store(code_digest._stored())
    model = package / "model.py"
    model.write_text(model.read_text() + "\nEDITED = 1\n")
    importing = {job for job in STAGE_JOBS.values() if "model" in closure(entry_modules(*job))}
    assert importing and changed(parsed, in_a_new_process()) == importing

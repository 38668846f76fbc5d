"""The code digest of a job: SHA-256 over the code of the ``pipeline_src`` modules its stage imports.

The workflow passes each job's digest as a Snakemake param (so editing that code reruns the job) and
every provenance record stores it; ``lengthgen status`` recomputes it to tell stale cells.

A digest covers the *import closure* of the job's entry modules (:data:`STAGE_ENTRIES`: the modules
the stage's CLI command imports, :data:`STAGE_COMMANDS`; for a task's figure, the module drawing it;
both language figures share one digest), found by parsing (never importing) each module with
:mod:`ast` and following every ``import`` and ``from ... import`` within ``pipeline_src`` at any
nesting level (modules import lazily inside functions), relative imports and ``from package import
submodule`` included, and the ``__init__`` of every package on the way (Python runs it). Each module
enters as its path relative to ``pipeline_src`` and the dump of its syntax tree without comments and
docstrings (the string opening a module, class or function): editing a comment or docstring reruns
nothing, editing code reruns exactly the jobs whose closure holds that module. The dump depends on
the Python version, so a new Python reruns everything. Each file is parsed once per process (again
if it changes), and what a parse found is kept on disk for the next process (:data:`STORE`), under the
file's path and the SHA-256 of its bytes: a changed file is parsed anew, an unreadable store is ignored.

Registries discover their members with :mod:`pkgutil`, which no static import names: a job's task
module (``get_task(name).module``) and scheme modules (the scheme's ``code_modules``: its own,
its encoding's and its transform's, where it declares one) join its digest with their own
closures. So editing one task's generator reruns only that task's jobs, and a task module
importing another task's module depends on both.

Not part of any digest, deliberately: the modules that dispatch or record results without changing
them (:func:`left_out` lists them). Each says so itself with a top-level ``IN_CODE_DIGEST = False``
(:data:`MARKER`): the shared command-line options, paths, provenance records (written and read in
:mod:`pipeline_src.provenance.sidecars`) and this module; a package's ``__init__.py`` says so for
every module of the package: the CLI (:mod:`pipeline_src.cli`), which only dispatches, and
everything about runs (:mod:`pipeline_src.runs`: status, verification, findings over a results
folder, benchmarks, ...). No list names them: a renamed or moved module keeps its word, and a new
module of those packages is left out with them.
"""

from __future__ import annotations

import ast
import atexit
import functools
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import NamedTuple

from ..storage.canonical import sha256_text

IN_CODE_DIGEST = False  # it records or dispatches, never changes a result (provenance/code_digest.py)

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # pipeline_src/
PACKAGE = "pipeline_src"

# The functions of pipeline_src/cli/commands.py that run each stage's jobs (with the helpers they call): a
# command per rule; ``lengthgen plot`` draws every figure.
STAGE_COMMANDS = {
    "data": ("generate",),
    "train": ("train",),
    "evaluate": ("evaluate",),
    "figures": ("plot",),
    "language_data": ("corpus",),
    "language_train": ("lm_train",),
    "language_eval": ("lm_eval", "influence"),
    "language_figures": ("plot",),
    "forecast_figures": ("plot",),
}
# The modules that the plot command loads by name, as its figure's study names the function drawing
# it (a task's figure: its task's, which entry_modules adds); tests/test_code_digest.py holds these
# equal to the language study's.
DRAWN_BY_NAME = {"language_figures": ("figures.figure4", "figures.language_pose"),
                 "forecast_figures": ("figures.forecast_figure",)}
_PLOT = ("figures.mechanism_figure", "figures.training_curves", "figures.caption", "findings.judge",
         "findings.claim_file", "findings.fit_gate", "evaluation.mechanism_schema")
# The modules those functions import, and those they load by name (tests/test_code_digest.py holds
# them equal).
STAGE_ENTRIES = {
    "data": ("tasks", "datasets"),
    "train": ("training.train", "training.checkpoints", "devices.placement"),
    "evaluate": ("evaluation.evaluate", "training.checkpoints", "devices.placement"),
    "figures": _PLOT,
    "language_data": ("language.corpus", "language.token_stream", "language.tokenizer"),
    "language_train": ("language.lm_training", "training.train", "training.checkpoints", "devices.placement"),
    "language_eval": ("language.analysis", "training.checkpoints", "devices.placement"),
    "language_figures": (*_PLOT, *DRAWN_BY_NAME["language_figures"]),
    "forecast_figures": (*_PLOT, *DRAWN_BY_NAME["forecast_figures"]),
}
DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)  # nodes with docstrings
STORE = f"__pycache__/code_digest.{sys.implementation.cache_tag}.json"  # under PACKAGE_DIR: the parses
# of earlier processes (a Snakemake start parses every module a job's digest covers: about 0.5 s saved)
MARKER = "IN_CODE_DIGEST"  # a module assigning False to this name at its top level is in no digest (a
# package's __init__.py: no module of the package is)


def entry_modules(stage: str, task: str | None = None, scheme: str | None = None) -> list[str]:
    """The dotted modules (relative to ``pipeline_src``) a job of ``stage`` runs from: the stage's
    entry modules, for ``figures`` the module drawing ``task``'s figure, plus the job's own task
    and scheme modules."""
    if stage not in STAGE_ENTRIES:
        raise KeyError(f"unknown stage {stage!r}; known: {sorted(STAGE_ENTRIES)}")
    entries = list(STAGE_ENTRIES[stage])
    if task is not None:
        from ..tasks import get_task

        declared = get_task(task)
        entries.append(_relative(declared.module))
        if stage == "figures":
            entries.append(_relative(declared.figure.draw.partition(":")[0]))
    elif stage == "figures":
        raise ValueError("the figures stage's digest needs the task whose figure it is")
    if scheme is not None:
        from ..schemes import get_scheme

        entries += [_relative(module) for module in get_scheme(scheme).code_modules]
    return entries


@functools.cache
def stage_digest(stage: str, task: str | None = None, scheme: str | None = None) -> str:
    """SHA-256 over the code of every module in the import closure of the job's entry modules
    (:func:`entry_modules`), each as its relative path and comment-free syntax tree."""
    parts = [f"{_files()[name][1]}\n{_parse(_path(name)).dump}"
             for name in sorted(closure(entry_modules(stage, task, scheme)))]
    return sha256_text("\0".join(parts))


def left_out() -> frozenset[str]:
    """The modules (dotted, relative to ``pipeline_src``) left out of every digest: those that say so
    (``IN_CODE_DIGEST = False``), or whose package does. What no closure takes in."""
    return frozenset(name for name in _files() if _left_out(name))


@functools.cache
def _left_out(name: str) -> bool:
    """Whether module ``name`` or a package enclosing it says it is in no digest."""
    return any(_parse(_path(module)).left_out for module in (*_packages(name), name))


def closure(entries: list[str] | tuple[str, ...]) -> set[str]:
    """Every module (dotted, relative to ``pipeline_src``) that importing ``entries`` imports within
    the package, the entries and their packages included, the modules of :func:`left_out` left out."""
    found: set[str] = set()
    pending = list(entries)
    while pending:
        name = pending.pop()
        if name in found:
            continue
        if _path(name) is None:
            raise ModuleNotFoundError(f"{PACKAGE}.{name}: no such module under {PACKAGE_DIR}")
        if _left_out(name):
            continue
        found.add(name)
        pending.extend(_packages(name))
        pending.extend(_parse(_path(name)).imports)
    return found


def clear_cache() -> None:
    """Forget the digests, module files and parses found (after editing sources within one process, as
    tests do); a parse is kept, for its file's modification time and size, as long as the file is unchanged."""
    stage_digest.cache_clear()
    _files.cache_clear()
    _parse.cache_clear()
    _left_out.cache_clear()
    _stored.cache_clear()


def _relative(module: str) -> str:
    """``pipeline_src.a.b`` -> ``a.b``."""
    if not module.startswith(PACKAGE + "."):
        raise ValueError(f"{module}: not a module of {PACKAGE}")
    return module[len(PACKAGE) + 1:]


def _packages(name: str) -> list[str]:
    """The packages enclosing module ``name`` (``""`` is pipeline_src itself)."""
    parts = name.split(".") if name else []
    return [".".join(parts[:i]) for i in range(len(parts))]


def _path(name: str) -> Path | None:
    """The file of module ``name`` (``""``: pipeline_src/__init__.py), or None if there is none."""
    found = _files().get(name)
    return found[0] if found else None


@functools.cache
def _files() -> dict[str, tuple[Path, str]]:
    """Every module file of the package, and its path relative to the package (``a/b.py``), by its
    dotted name (:func:`_dotted`), a package's ``__init__.py`` before a module file of the same
    name: the folder read once (until :func:`clear_cache`), not each name looked up on disk."""
    found: dict[str, tuple[Path, str]] = {}
    for folder, _, names in os.walk(PACKAGE_DIR):
        inside = os.path.relpath(folder, PACKAGE_DIR).replace(os.sep, "/")
        for file in sorted(name for name in names if name.endswith(".py")):
            relative = file if inside == "." else f"{inside}/{file}"
            name = _dotted(relative)
            if name not in found or file == "__init__.py":
                found[name] = (Path(folder, file), relative)
    return found


class Parsed(NamedTuple):
    """What the digests read of a module: the dump of its syntax tree without docstrings, the
    package modules it imports, and whether it says it is in no digest (:data:`MARKER`)."""
    dump: str
    imports: tuple[str, ...]
    left_out: bool


@functools.cache
def _parse(path: Path) -> Parsed:
    """:func:`_parsed` of ``path`` as it is when first asked for (until :func:`clear_cache`); the parse
    itself is kept while the file's modification time and size stay the same."""
    stat = path.stat()
    return _parsed(path, stat.st_mtime_ns, stat.st_size)


def _module_name(path: Path) -> str:
    """The dotted module (relative to ``pipeline_src``) of the file ``path`` (:func:`_dotted`)."""
    return _dotted(path.relative_to(PACKAGE_DIR).as_posix())


def _dotted(relative: str) -> str:
    """The dotted module of the package file ``relative`` (``a/b.py``): ``""`` for __init__.py, ``a``
    for a/__init__.py."""
    return relative.removesuffix(".py").replace("/", ".").removesuffix("__init__").rstrip(".")


@functools.cache
def _parsed(path: Path, mtime_ns: int, size: int) -> Parsed:
    """``path``'s :class:`Parsed`: as stored by an earlier process for these bytes, else parsed."""
    source = path.read_bytes()
    key = f"{path.relative_to(PACKAGE_DIR).as_posix()} {hashlib.sha256(source).hexdigest()}"
    stored = _stored()
    found = stored["found"].get(key)
    if isinstance(found, list) and len(found) == len(Parsed._fields):
        return Parsed(found[0], tuple(found[1]), found[2])
    parsed = _parsed_source(path, source)
    if not stored["new"]:
        atexit.register(_store, stored)
    stored["new"][key] = parsed
    return parsed


def _parsed_source(path: Path, source: bytes) -> Parsed:
    """What :class:`Parsed` holds, from one walk over the syntax tree of ``source`` (``path``'s bytes)."""
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as err:
        raise SyntaxError(f"{path}:{err.lineno}: cannot parse for the code digest: {err.msg}") from None
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    left_out = any(isinstance(node, ast.Assign) and ast.unparse(node) == f"{MARKER} = False" for node in tree.body)
    imports: set[str] = set()
    for node in ast.walk(tree):  # children are queued before a node is seen: editing its body is safe
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.update(_imported(node, package))
        elif isinstance(node, DOCUMENTED) and ast.get_docstring(node, clean=False) is not None:
            node.body = node.body[1:] or [ast.Pass()]
    return Parsed(ast.dump(tree), tuple(sorted(imports)), left_out)


@functools.cache
def _stored() -> dict:
    """The parses stored by earlier processes (``found``: key -> [dump, imports, left_out]) and those
    this process adds (``new``), written at its exit. A store that cannot be read counts as empty."""
    try:
        found = json.loads((PACKAGE_DIR / STORE).read_text())
    except (OSError, ValueError):
        found = {}
    return {"folder": PACKAGE_DIR, "found": found if isinstance(found, dict) else {}, "new": {}}


def _store(stored: dict) -> None:
    """Write the store: this process's parses, and the others' of the files it did not parse anew
    (one entry per file, so it never grows past the package). Atomic, so processes writing at once
    leave one whole store; where the package is read-only, nothing is kept."""
    anew = {key.split(" ")[0] for key in stored["new"]}
    kept = {key: value for key, value in stored["found"].items() if key.split(" ")[0] not in anew}
    path = stored["folder"] / STORE
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(exist_ok=True)
        temporary.write_text(json.dumps({**kept, **{key: list(value) for key, value in stored["new"].items()}}))
        os.replace(temporary, path)
    except OSError:
        temporary.unlink(missing_ok=True)


def _imported(node: ast.Import | ast.ImportFrom, package: str) -> list[str]:
    """The package modules an import statement in a module of ``package`` may load (candidates that
    are not modules, e.g. functions named in ``from module import f``, are dropped)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        source = node.module or ""
        if node.level:  # relative to ``package``, one level up per dot after the first
            parts = package.split(".") if package else []
            if node.level - 1 > len(parts):
                return []
            source = ".".join([PACKAGE, *parts[:len(parts) - (node.level - 1)], *filter(None, [node.module])])
        names = [source, *(f"{source}.{alias.name}" for alias in node.names if alias.name != "*")]
    relative = [full[len(PACKAGE) + 1:] for full in names if full == PACKAGE or full.startswith(PACKAGE + ".")]
    return [name for name in relative if _path(name) is not None]

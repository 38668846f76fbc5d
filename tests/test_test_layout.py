"""The test suite's own layout: no module of tests/ imports a test module (tests/test_*.py); shared
helpers live in tests/helpers.py, shared fixtures in tests/conftest.py. The files with end-to-end
tests are handed to the workers first."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def imported_test_modules(path: Path, tests: Path = TESTS) -> list[str]:
    """The test modules (``test_*`` of ``tests``) that the module at ``path`` imports, anywhere in it
    (a function's own imports too), as ``line: name``; the module itself is not counted."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level == 0 and module != "tests" and not module.startswith("tests."):
                continue
            package = module if node.level == 0 else f"tests.{module}" if module else "tests"
            names = [package, *(f"{package}.{alias.name}" for alias in node.names)]
        else:
            continue
        for name in names:
            parts = name.split(".")
            test_module = parts[1] if len(parts) > 1 and parts[0] == "tests" else parts[0]
            if test_module.startswith("test_") and (tests / f"{test_module}.py").exists() and test_module != path.stem:
                found.append(f"{node.lineno}: {test_module}")
    return sorted(set(found), key=lambda hit: int(hit.split(":")[0]))


def test_no_module_of_the_tests_imports_a_test_module():
    imports = {path.name: imported_test_modules(path) for path in sorted(TESTS.glob("*.py"))}
    offenders = {name: hits for name, hits in imports.items() if hits}
    assert not offenders, f"move what they share to tests/helpers.py (fixtures: tests/conftest.py): {offenders}"


def test_every_way_of_importing_a_test_module_is_found(tmp_path):
    for name in ("test_a", "test_b", "helpers"):
        (tmp_path / f"{name}.py").write_text("")
    module = tmp_path / "test_a.py"
    module.write_text("from tests.test_b import x\nfrom .test_b import y\nfrom tests import test_b\n"
                      "from . import test_b as b\nimport tests.test_b\n"
                      "def f():\n    from tests.test_b import z\n"
                      "from tests.helpers import w\nfrom .helpers import v\nimport tests.test_a\nimport test_missing\n")
    assert imported_test_modules(module, tmp_path) == [f"{line}: test_b" for line in (1, 2, 3, 4, 5, 7)]


class _Item:
    """What the ordering hook reads of a collected test: its node id and its e2e marker."""

    def __init__(self, nodeid: str, e2e: bool = False):
        self.nodeid, self.e2e = nodeid, e2e

    def get_closest_marker(self, name: str):
        return object() if name == "e2e" and self.e2e else None


def test_files_with_end_to_end_tests_are_handed_out_first_each_file_whole_and_in_its_order():
    from tests.conftest import pytest_collection_modifyitems

    items = [_Item("tests/test_a.py::one"), _Item("tests/test_a.py::two"), _Item("tests/test_a.py::three"),
             _Item("tests/test_b.py::one"), _Item("tests/test_e.py::fast"), _Item("tests/test_e.py::run", e2e=True),
             _Item("tests/test_f.py::run", e2e=True), _Item("tests/test_f.py::rerun", e2e=True)]
    pytest_collection_modifyitems(None, items)
    assert [item.nodeid for item in items] == [
        "tests/test_f.py::run", "tests/test_f.py::rerun",  # two e2e tests
        "tests/test_e.py::fast", "tests/test_e.py::run",  # one
        "tests/test_a.py::one", "tests/test_a.py::two", "tests/test_a.py::three",  # no e2e test; three tests
        "tests/test_b.py::one"]
    # pytest-xdist would otherwise reorder the files by their number of tests
    addopts = tomllib.loads((TESTS.parent / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    assert "--dist loadfile" in addopts and "--no-loadscope-reorder" in addopts, addopts

"""The README as a landing page: no long lines outside its tables and the generated findings block,
the set-up without a GPU (torch's CPU build) in its first code block, the test command CI runs, and
every command of its ``bash`` blocks runs as written: Snakemake lines as dry runs in a copy of the
workflow, ``lengthgen X`` lines as ``lengthgen X --help`` (with each option they pass), pytest lines'
options with ``--collect-only``. The dry run after the smoke run plans the jobs the README says."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline_src.runs.run_findings import README_BEGIN, README_END
from tests.conftest import REPO

README = REPO / "README.md"
MAX_LINE = 200  # characters, on every line: tables and the generated findings block too
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
BIN = Path(sys.executable).parent  # the environment's bin folder: snakemake, lengthgen
# Set-up commands are not run: they create a venv and download packages (several GB with CUDA), which
# no test can afford and the test environment, made by them, already shows.
SETUP = {"venv", "pip"}


def fenced_blocks(text: str) -> list[tuple[str, list[str]]]:
    """Every fenced code block of ``text`` in order, as (its language, its lines)."""
    blocks, current = [], None
    for line in text.splitlines():
        if line.startswith("```"):
            if current is None:
                current = (line[3:].strip(), [])
            else:
                blocks.append(current)
                current = None
        elif current is not None:
            current[1].append(line)
    return blocks


def commands(line: str) -> list[list[str]]:
    """The commands of one shell line (split at ``&&``), as argument lists, its comment dropped."""
    found, command = [], []
    for token in shlex.split(line, comments=True):
        if token == "&&":
            found.append(command)
            command = []
        else:
            command.append(token)
    return [c for c in [*found, command] if c]


def program(command: list[str]) -> tuple[str, list[str]]:
    """(what runs, its arguments): ``python -m M args`` is (M, args); ``.venv/bin/X args`` is (X, args)."""
    name = Path(command[0]).name
    if re.fullmatch(r"python3?(\.\d+)?", name) and command[1:2] == ["-m"]:
        return command[2], command[3:]
    return name, command[1:]


def readme_commands() -> list[list[str]]:
    return [c for lang, lines in fenced_blocks(README.read_text()) if lang == "bash"
            for line in lines for c in commands(line)]


CHECKED = [c for c in readme_commands() if program(c)[0] not in SETUP]


def test_no_readme_line_is_longer_than_200_characters_the_findings_table_included():
    text = README.read_text()
    assert text.count(README_BEGIN) == 1 and text.count(README_END) == 1, "the findings markers moved"
    long = [line[:60] + "..." for line in text.splitlines() if len(line) > MAX_LINE]
    assert not long, f"README lines over {MAX_LINE} characters (wrap them, shorten the table's cells): {long}"


def test_the_first_code_block_sets_up_torch_from_the_cpu_index_with_the_pin_of_the_cuda_line():
    _, first = fenced_blocks(README.read_text())[0]
    setups = [commands(line) for line in first if any(program(c)[0] == "pip" for c in commands(line))]
    cpu = [line for line in setups if any(CPU_INDEX in c and "--index-url" in c for c in line)]
    assert cpu, f"the README's first code block has no set-up line installing torch from {CPU_INDEX}"
    pins = {arg for line in setups for c in line for arg in c if arg.startswith("torch==")}
    assert len(pins) == 1, f"the set-up lines pin different torch versions: {sorted(pins)}"


def test_the_readmes_test_command_is_the_one_ci_runs():
    """``.ci/run`` sets up as the README does, then runs the README's test command first, and any further
    test it runs is a README command too."""
    ci = [c for line in (REPO / ".ci" / "run").read_text().splitlines() for c in commands(line)]
    ci_tests = [program(c) for c in ci if program(c)[0] == "pytest"]
    assert ci_tests, ".ci/run runs no pytest"
    assert ci_tests[0] == ("pytest", ["-q"]), f"CI runs pytest {ci_tests[0][1]} first, not the README's test command"
    readme = [program(c) for c in readme_commands()]
    assert all(test in readme for test in ci_tests), [test for test in ci_tests if test not in readme]


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    # the environment's bin folder on PATH, as jobs need it; no pytest-xdist worker variables, so a
    # pytest run here is an ordinary one
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PATH"] = f"{BIN}{os.pathsep}{env['PATH']}"
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def workflow(tmp_path_factory):
    """A copy of the workflow without results: a dry run plans every job of its targets."""
    from tests.helpers import copy_workflow  # here: it imports torch, which the static tests do not need

    return copy_workflow(tmp_path_factory.mktemp("readme_workflow"))


def dry_run(command: list[str], workdir: Path) -> subprocess.CompletedProcess:
    _, args = program(command)
    return run([sys.executable, "-m", "snakemake", *args, *([] if "-n" in args else ["-n"])], workdir)


@pytest.mark.e2e
@pytest.mark.parametrize("command", CHECKED, ids=lambda c: " ".join(c)[:80])
def test_every_command_of_the_readme_runs_as_written(command, workflow):
    name, args = program(command)
    if name == "snakemake":
        done = dry_run(command, workflow)
        output = done.stdout + done.stderr
        missing = re.search(r"\S+ is not installed: pip install .*", output)
        if done.returncode and missing:  # the optional package the README's line above installs
            pytest.skip(missing.group(0))
        if "--report" in args:
            # Snakemake writes a report even with -n; without results it stops at the first figure,
            # after reading the command line and building the DAG
            assert "Creating report..." in output and "marked for report but does not exist" in output, output[-3000:]
        else:
            assert done.returncode == 0, output[-3000:]
            assert "This was a dry-run" in output or "Nothing to be done" in output, output[-3000:]
    elif name == "lengthgen":
        subcommand = [a for a in args if not a.startswith("-")][:1]
        done = run([str(BIN / "lengthgen"), *subcommand, "--help"], REPO)
        assert done.returncode == 0, done.stderr[-3000:]
        unknown = [a.split("=")[0] for a in args if a.startswith("--") and a.split("=")[0] not in done.stdout]
        assert not unknown, f"lengthgen {' '.join(subcommand)} has no option {unknown}"
    elif name == "pytest":
        # its options (the marker expression above all) on this file alone: collecting the suite is slow
        done = run([sys.executable, "-m", "pytest", *args, "--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider",
                    str(Path(__file__).relative_to(REPO))], REPO)
        assert done.returncode in (0, 5), done.stdout[-3000:] + done.stderr[-3000:]  # 5: every test deselected
    else:
        pytest.fail(f"the README runs {name}, which this test does not know how to check: teach it")


def planned(done: subprocess.CompletedProcess) -> int:
    """The number of jobs a dry run plans (0 when nothing is to be done)."""
    output = done.stdout + done.stderr
    if "Nothing to be done" in output:
        return 0
    return int(re.search(r"^total\s+(\d+)\s*$", output, re.M).group(1))


@pytest.mark.slow  # four Snakemake runs: 18 s on 2 busy cores
@pytest.mark.e2e
def test_the_readmes_rerun_after_the_smoke_run_plans_the_jobs_it_says(tmp_path):
    """The README's ``--config`` line after the smoke run: a completed smoke run is stood in for by
    empty outputs that ``--touch`` records as made by today's jobs, with their params."""
    from tests.helpers import copy_workflow

    _, first = fenced_blocks(README.read_text())[0]
    line = next(line for line in first if any("--config" in c and "-n" in c for c in commands(line)))
    [command] = commands(line)
    said = re.search(r"#.*?(\d+) jobs", line)
    assert said, f"the README's rerun line says no number of jobs: {line}"
    at = command.index("--config")
    smoke = command[:at] + command[at + 2:]  # the same line without the edit: the smoke run's plan
    workdir = copy_workflow(tmp_path)
    plan = dry_run(smoke, workdir)
    outputs = {f.strip() for m in re.finditer(r"^    output: (.*)$", plan.stdout, re.M) for f in m.group(1).split(",")}
    assert outputs, plan.stdout[-3000:]
    for name in outputs:
        (workdir / name).parent.mkdir(parents=True, exist_ok=True)
        (workdir / name).touch()
    _, args = program(smoke)
    touched = run([sys.executable, "-m", "snakemake", *[a for a in args if a != "-n"], "--touch", "--forceall"],
                  workdir)
    assert touched.returncode == 0, touched.stderr[-3000:]
    assert planned(dry_run(smoke, workdir)) == 0, "the stood-in smoke run is not complete"
    rerun = dry_run(command, workdir)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert planned(rerun) == int(said.group(1)), rerun.stdout[-3000:]

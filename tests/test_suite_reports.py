"""The suite's own reports (tests/conftest.py): a failure shows its name and its error as it happens,
and ``LENGTHGEN_TEST_TIMEOUT`` ends a test that runs too long with its stack, so a suite stopped at a
time limit still says what failed and what held it."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO, TEST_TIMEOUT_ENV

pytestmark = pytest.mark.e2e  # a pytest run in a process of its own

EXAMPLE = '''
import time


def test_fails():
    assert 7 == 8, "seven is not eight"


def test_sleeps():
    time.sleep(120)
'''


def run_example(tmp_path, *args: str, timeout: str = "") -> tuple[subprocess.CompletedProcess, float]:
    (tmp_path / "test_example.py").write_text(EXAMPLE)
    env = {**os.environ, TEST_TIMEOUT_ENV: timeout, "PYTHONPATH": str(REPO)}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
                           "-o", "addopts=", "--rootdir", str(tmp_path), *args, str(tmp_path / "test_example.py")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=100)
    return done, time.monotonic() - started


def test_a_failure_prints_its_name_and_error_before_the_summary(tmp_path):
    done, _ = run_example(tmp_path, "-k", "fails")
    assert done.returncode == 1
    before_summary = done.stdout.split("short test summary")[0].split("= FAILURES =")[0]
    assert "FAILED test_example.py::test_fails (call)" in before_summary
    assert "seven is not eight" in before_summary, done.stdout


def test_a_test_past_the_time_limit_ends_with_its_stack(tmp_path):
    done, seconds = run_example(tmp_path, "-k", "sleeps", timeout="2")
    assert done.returncode != 0 and seconds < 60
    assert "Timeout" in done.stderr and "in test_sleeps" in done.stderr, done.stderr

"""`lengthgen table`: mean accuracy over seeds per run and length, as Markdown."""

from __future__ import annotations

from click.testing import CliRunner

from pipeline_src.cli import main
from tests.helpers import accuracy_file


def test_table_averages_seeds_per_run_and_length(tmp_path):
    files = [accuracy_file(tmp_path / "a.parquet", "ppc", 0, {5: 10, 40: 8}),
             accuracy_file(tmp_path / "b.parquet", "ppc", 1, {5: 10, 40: 4}),
             accuracy_file(tmp_path / "c.parquet", "nope", 0, {5: 9, 40: 5})]
    done = CliRunner().invoke(main, ["table", "--metric", "answer", *map(str, files)])
    assert done.exit_code == 0, done.output
    lines = done.output.strip().splitlines()
    assert lines[0] == "| task | variant | scheme | 5 | 40 | seeds |"
    assert lines[2] == "| parity_scratchpad | scratchpad | nope | 0.90 | 0.50 | 1 |"
    assert lines[3] == "| parity_scratchpad | scratchpad | ppc | 1.00 | 0.60 | 2 |"


def test_table_of_a_missing_metric_fails_clearly(tmp_path):
    path = accuracy_file(tmp_path / "a.parquet", "ppc", 0, {5: 10})
    done = CliRunner().invoke(main, ["table", "--metric", "position_match", str(path)])
    assert done.exit_code != 0 and "position_match" in done.output

"""`lengthgen plot` refuses a spec made for another figure's task (a workflow that sends one
figure's inputs to another figure's code fails loudly instead of drawing the wrong plot)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from pipeline_src.cli import main
from tests.helpers import accuracy_file


def test_plot_refuses_a_spec_for_another_task(tmp_path):
    results = accuracy_file(tmp_path / "a.parquet", "ppc", 0, {5: 10})
    spec = {"task": "parity_scratchpad", "runs": {"scratchpad": ["ppc"]}, "seeds": [0],
            "x_scale": "linear", "train_lengths": [1, 20]}
    wrong = CliRunner().invoke(main, ["plot", "sparse_parity_scratchpad", "--spec", json.dumps(spec),
                                      "--out", str(tmp_path / "f.png"), str(results)])
    assert wrong.exit_code != 0 and "parity_scratchpad" in wrong.output
    assert not (tmp_path / "f.png").exists()
    right = CliRunner().invoke(main, ["plot", "figure2", "--spec", json.dumps(spec),
                                      "--out", str(tmp_path / "f.png"), str(results)])
    assert right.exit_code == 0, right.output
    assert (tmp_path / "f.png").stat().st_size > 0

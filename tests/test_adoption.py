"""Files used as they are (pipeline_src/runs/adoption.py): `lengthgen adopt` records who adopted a file,
when and its new SHA-256; every record made from it, and from those, carries that; the captions'
and the landing page's sentence names it; no message advises deleting a sidecar."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline_src import datasets
from pipeline_src.cli.commands import main
from pipeline_src.provenance.records import build_record
from pipeline_src.provenance.sidecars import format_trace, read_checked, sidecar_path, trace, write_sidecar
from pipeline_src.runs.adoption import adopt, file_note, rests_on
from pipeline_src.storage.canonical import sha256_file
from pipeline_src.tasks import get_task

REPO = Path(__file__).resolve().parents[1]


def test_an_adopted_file_is_used_as_it_is_and_checked_against_its_schema(train_data):
    recorded = json.loads(sidecar_path(train_data).read_text())["artifact"]["sha256"]
    os.truncate(train_data, train_data.stat().st_size - 1)
    with pytest.raises(ValueError, match=f"lengthgen adopt {re.escape(str(train_data))}$"):
        read_checked(train_data)
    done = CliRunner().invoke(main, ["adopt", str(train_data), "--reason", "a test"])
    assert done.exit_code == 0, done.output
    side = json.loads(sidecar_path(train_data).read_text())
    assert side["adopted"]["sha256"] == side["artifact"]["sha256"] == sha256_file(train_data)
    assert side["adopted"]["recorded_sha256"] == recorded and side["adopted"]["reason"] == "a test"
    assert side["adopted"]["by"] and side["adopted"]["at"] and side["rule"] == "test"  # what made it is kept
    assert read_checked(train_data)[1] is False  # not the bytes its writer checked: read with the schema
    with pytest.raises(datasets.DataError, match=str(train_data)):  # cut short: no longer Parquet
        datasets.read(train_data, get_task("sparse_parity").schema, checked_when_written=True)


def test_everything_made_from_an_adopted_file_says_so_down_the_chain(tmp_path, train_data):
    adopt(train_data)
    model = tmp_path / "model.bin"
    model.write_bytes(b"weights")
    write_sidecar(model, build_record("train", "train", {}, inputs={"train_data": train_data}))
    table = tmp_path / "table.bin"
    table.write_bytes(b"table")
    write_sidecar(table, build_record("evaluate", "evaluate", {}, inputs={"model": model}))
    for made in (model, table):
        [item] = rests_on(json.loads(sidecar_path(made).read_text()))
        assert item["path"] == str(train_data) and item["sha256"] == sha256_file(train_data)
    assert file_note(table).startswith(f"Rests on 1 adopted file(s), used as they are, not as their jobs made them: "
                                       f"{train_data} (sha256 {sha256_file(train_data)[:12]}, adopted by ")
    plain = tmp_path / "plain.bin"
    plain.write_bytes(b"x")
    write_sidecar(plain, build_record("evaluate", "evaluate", {}, inputs={"model": plain}))
    assert "rests_on_adopted" not in json.loads(sidecar_path(plain).read_text())  # records unchanged otherwise
    assert file_note(plain) == ""


def test_a_file_without_any_record_is_adopted_as_made_by_an_unknown_job(tmp_path):
    path = tmp_path / "by_hand.json"
    path.write_text("{}")
    adopt(path)
    assert read_checked(path)[1] is False
    assert "rule unknown" in format_trace(trace(path))


@pytest.mark.parametrize("args, words", [([], "Missing argument"), (["no/such/file"], "does not exist")])
def test_adopt_misused_exits_non_zero_naming_the_argument(args, words):
    done = CliRunner().invoke(main, ["adopt", *args])
    assert done.exit_code != 0 and words in done.output


def test_no_message_advises_deleting_a_sidecar():
    advice = re.compile(r"delete[^\"'\n]*(prov\.json|sidecar|SIDECAR)", re.I)
    found = [f"{path}:{n}" for path in (REPO / "pipeline_src").rglob("*.py")
             for n, line in enumerate(path.read_text().splitlines(), 1) if advice.search(line)]
    assert found == []

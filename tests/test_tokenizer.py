"""Byte-level BPE training (deterministic), round trips, loading, and the token stream Parquet."""

from __future__ import annotations

import os
import subprocess
import sys

import polars as pl
import pytest

from pipeline_src import datasets
from pipeline_src.language.corpus import select, split_documents
from pipeline_src.language.tokenizer import (
    EOD,
    TokenizerError,
    encode_documents,
    load_tokenizer,
    read_tokens,
    save_tokenizer,
    train_tokenizer,
    write_tokens,
)
from pipeline_src.provenance.records import build_record
from pipeline_src.provenance.sidecars import read_record
from tests.helpers import SENTENCES

VOCAB = 400
DOCS = [" ".join(SENTENCES[(i + j) % len(SENTENCES)] for j in range(1 + i % 4)) + f"\n\nPart {i}."
        for i in range(60)]

# Trains in a fresh interpreter and prints tokenizer.json, to compare across processes and threads.
TRAIN_SCRIPT = """
import sys
from tests.test_tokenizer import DOCS, VOCAB
from pipeline_src.language.tokenizer import train_tokenizer
sys.stdout.write(train_tokenizer(DOCS, VOCAB).to_str(pretty=True))
"""


@pytest.fixture(scope="module")
def tokenizer():
    return train_tokenizer(DOCS, VOCAB)


def test_training_is_deterministic(tokenizer, tmp_path):
    assert tokenizer.get_vocab_size() == VOCAB
    again = train_tokenizer(list(DOCS), VOCAB)
    assert again.to_str(pretty=True) == tokenizer.to_str(pretty=True)
    save_tokenizer(tokenizer, tmp_path / "a" / "tokenizer.json")
    save_tokenizer(again, tmp_path / "b" / "tokenizer.json")
    assert (tmp_path / "a" / "tokenizer.json").read_bytes() == (tmp_path / "b" / "tokenizer.json").read_bytes()
    assert train_tokenizer(DOCS, VOCAB - 20).to_str() != tokenizer.to_str()


@pytest.mark.e2e
def test_training_is_deterministic_across_processes_and_thread_counts(tokenizer):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "RAYON_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run([sys.executable, "-c", TRAIN_SCRIPT], cwd=root, env=env, capture_output=True,
                          text=True, check=True, timeout=120)
    assert done.stdout == tokenizer.to_str(pretty=True)


def test_eod_is_the_only_special_token_and_id_0(tokenizer):
    assert tokenizer.token_to_id(EOD) == 0
    assert tokenizer.encode("text " + EOD).ids[-1] == 0


@pytest.mark.parametrize("text", [DOCS[7], "  leading spaces\tand tabs\n\nnew lines ", "emoji 🙂 and 漢字 unseen",
                                  "x"])
def test_round_trip(tokenizer, text):
    ids = tokenizer.encode(text, add_special_tokens=False).ids
    assert tokenizer.decode(ids) == text


def test_training_rejects_bad_arguments():
    with pytest.raises(TokenizerError, match="vocab_size"):
        train_tokenizer(DOCS, 100)
    with pytest.raises(TokenizerError, match="no documents"):
        train_tokenizer([], 300)


def test_load_local_tokenizer_json(tokenizer, tmp_path):
    path = tmp_path / "tokenizer.json"
    save_tokenizer(tokenizer, path)
    loaded = load_tokenizer(path)
    assert loaded.encode(DOCS[3]).ids == tokenizer.encode(DOCS[3]).ids
    with pytest.raises(TokenizerError, match="no such tokenizer file"):
        load_tokenizer(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(TokenizerError, match=r"bad\.json: not a readable tokenizer\.json"):
        load_tokenizer(tmp_path / "bad.json")
    (tmp_path / "no_eod.json").write_text(path.read_text().replace(EOD, "<|other|>"))
    with pytest.raises(TokenizerError, match=r"no_eod\.json: has no end-of-document token"):
        load_tokenizer(tmp_path / "no_eod.json")


def test_token_stream_parquet_passes_the_schema(tokenizer, tmp_path):
    labels = split_documents(DOCS, seed=1, heldout_fraction=0.25)
    frame = encode_documents(tokenizer, DOCS, labels)
    assert frame["doc"].to_list() == list(range(len(DOCS)))
    for row in frame.iter_rows(named=True):
        assert row["tokens"][-1] == 0
        assert tokenizer.decode(row["tokens"][:-1]) == DOCS[row["doc"]]
    tok_path = tmp_path / "tokenizer.json"
    save_tokenizer(train_tokenizer(select(DOCS, labels, "train"), VOCAB), tok_path)
    spec = {"corpus": {"source": "test"}, "split": {"seed": 1, "heldout_fraction": 0.25}, "vocab_size": VOCAB}
    record = build_record("tokenize", "data", spec, inputs={"tokenizer": tok_path}, seeds={"split": 1})
    path = tmp_path / "tokens.parquet"
    write_tokens(frame, path, tokenizer, record)
    back = read_tokens(path, VOCAB)
    assert back.equals(frame)
    assert back.schema == {"doc": pl.Int64, "split": pl.String, "tokens": pl.List(pl.Int32)}
    assert read_record(path)["inputs"]["tokenizer"]["path"] == str(tok_path)


def test_token_schema_rejects_bad_rows(tokenizer, tmp_path):
    frame = encode_documents(tokenizer, DOCS[:3], ["train", "heldout", "train"])
    record = build_record("tokenize", "data", {})
    bad_id = frame.with_columns(pl.Series("tokens", [[1, 0], [VOCAB, 0], [2, 0]], dtype=pl.List(pl.Int32)))
    bad_split = frame.with_columns(pl.Series("split", ["train", "test", "train"]))
    empty = frame.with_columns(pl.Series("tokens", [[1, 0], [0], [2, 0]], dtype=pl.List(pl.Int32)))
    for bad, check in ((bad_id, "tokens_in_vocabulary"), (bad_split, "isin"), (empty, "at_least_one_token")):
        with pytest.raises(datasets.DataError, match=rf"tokens\.parquet: does not match .*{check}"):
            write_tokens(bad, tmp_path / "tokens.parquet", tokenizer, record)
    with pytest.raises(TokenizerError, match="split labels"):
        encode_documents(tokenizer, DOCS[:3], ["train"])

"""Corpus reading (c4 shards, jsonl, parquet, txt, the gensim default), the seeded split, provenance."""

from __future__ import annotations

import gzip

import polars as pl
import pytest

from pipeline_src.language import corpus
from pipeline_src.language.corpus import CorpusError, load_corpus, split_documents
from pipeline_src.storage.canonical import sha256_file
from tests.helpers import c4_line, write_shard


@pytest.fixture
def c4_folder(tmp_path):
    """Two train shards written out of name order, a validation shard and an unrelated file."""
    folder = tmp_path / "c4" / "en"
    folder.mkdir(parents=True)
    write_shard(folder, "c4-train.00001-of-01024.json.gz", ["Third doc.", "Fourth doc."], start=2)
    write_shard(folder, "c4-train.00000-of-01024.json.gz", ["First doc.\nWith two lines.", "Second doc."])
    write_shard(folder, "c4-validation.00000-of-00008.json.gz", ["A validation doc."])
    (folder / "README.md").write_text("not a shard")
    return folder


# --- c4 -----------------------------------------------------------------------------------------

def test_c4_reads_shards_in_sorted_name_order(c4_folder):
    got = load_corpus("c4", c4_folder)
    assert got.documents == ["First doc.\nWith two lines.", "Second doc.", "Third doc.", "Fourth doc."]
    assert [p.name for p in got.files] == ["c4-train.00000-of-01024.json.gz", "c4-train.00001-of-01024.json.gz"]
    assert load_corpus("c4", c4_folder, c4_split="validation").documents == ["A validation doc."]


def test_c4_max_docs_stops_reading(c4_folder):
    got = load_corpus("c4", c4_folder, max_docs=2)
    assert got.documents == ["First doc.\nWith two lines.", "Second doc."]
    assert [p.name for p in got.files] == ["c4-train.00000-of-01024.json.gz"]
    assert len(load_corpus("c4", c4_folder, max_docs=3).documents) == 3
    with pytest.raises(CorpusError, match="max_docs"):
        load_corpus("c4", c4_folder, max_docs=0)


def test_c4_invalid_json_line_names_file_and_line(c4_folder):
    path = c4_folder / "c4-train.00001-of-01024.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write(c4_line("fine", 0) + c4_line("fine too", 1) + '{"text": "cut off\n')
    with pytest.raises(CorpusError, match=r"c4-train\.00001-of-01024\.json\.gz: line 3: not valid JSON"):
        load_corpus("c4", c4_folder)


@pytest.mark.parametrize("bad", ['{"timestamp": "x", "url": "y"}', '{"text": 7}', '["text"]', '"text"'])
def test_c4_line_without_string_text_names_file_and_line(c4_folder, bad):
    path = c4_folder / "c4-train.00000-of-01024.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write(c4_line("fine", 0) + bad + "\n")
    with pytest.raises(CorpusError, match=r"c4-train\.00000-of-01024\.json\.gz: line 2: .*string 'text'"):
        load_corpus("c4", c4_folder)


def test_c4_truncated_gzip_names_file(c4_folder):
    path = c4_folder / "c4-train.00001-of-01024.json.gz"
    data = gzip.compress("".join(c4_line(f"document {i} " * 20, i) for i in range(50)).encode())
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CorpusError, match=r"c4-train\.00001-of-01024\.json\.gz: unreadable"):
        load_corpus("c4", c4_folder)
    path.write_bytes(b"not gzip at all")
    with pytest.raises(CorpusError, match=r"c4-train\.00001-of-01024\.json\.gz: unreadable"):
        load_corpus("c4", c4_folder)


def test_c4_folder_without_shards_is_an_error(tmp_path):
    (tmp_path / "c4-train.0-of-1.json.gz").write_bytes(b"")  # wrong name layout
    with pytest.raises(CorpusError, match="no c4 shards"):
        load_corpus("c4", tmp_path)
    with pytest.raises(CorpusError, match="not a folder"):
        load_corpus("c4", tmp_path / "missing")


def test_unknown_source_and_missing_path():
    with pytest.raises(CorpusError, match="unknown corpus source"):
        load_corpus("wikipedia")
    with pytest.raises(CorpusError, match="needs a path"):
        load_corpus("jsonl")


# --- jsonl, parquet, txt ------------------------------------------------------------------------

def test_jsonl_file_and_folder(tmp_path):
    (tmp_path / "b.jsonl").write_text('{"text": "b1"}\n\n{"text": "b2", "id": 3}\n')
    with gzip.open(tmp_path / "a.jsonl.gz", "wt") as handle:
        handle.write('{"text": "a1"}\n{"text": "   "}\n')  # whitespace-only: skipped
    assert load_corpus("jsonl", tmp_path).documents == ["a1", "b1", "b2"]
    assert load_corpus("jsonl", tmp_path / "b.jsonl").documents == ["b1", "b2"]
    (tmp_path / "b.jsonl").write_text('{"text": "b1"}\n{"txt": "b2"}\n')
    with pytest.raises(CorpusError, match=r"b\.jsonl: line 2"):
        load_corpus("jsonl", tmp_path)


def test_parquet_text_column(tmp_path):
    pl.DataFrame({"id": [1, 2], "text": ["one", "two"]}).write_parquet(tmp_path / "a.parquet")
    assert load_corpus("parquet", tmp_path).documents == ["one", "two"]
    pl.DataFrame({"body": ["x"]}).write_parquet(tmp_path / "b.parquet")
    with pytest.raises(CorpusError, match=r"b\.parquet: no 'text' column"):
        load_corpus("parquet", tmp_path)
    pl.DataFrame({"text": ["x", None]}).write_parquet(tmp_path / "b.parquet")
    with pytest.raises(CorpusError, match=r"b\.parquet: row 1"):
        load_corpus("parquet", tmp_path)
    (tmp_path / "b.parquet").write_bytes(b"garbage")
    with pytest.raises(CorpusError, match=r"b\.parquet: not a readable Parquet"):
        load_corpus("parquet", tmp_path)


def test_txt_paragraphs_or_files(tmp_path):
    (tmp_path / "a.txt").write_text("Para one,\nline two.\n\n  \nPara two.\n\n\n")
    (tmp_path / "b.txt").write_text("Only one.")
    assert load_corpus("txt", tmp_path).documents == ["Para one,\nline two.", "Para two.", "Only one."]
    assert load_corpus("txt", tmp_path, txt_unit="file").documents == [
        "Para one,\nline two.\n\n  \nPara two.", "Only one."]
    (tmp_path / "c.txt").write_bytes(b"\xff\xfe bad")
    with pytest.raises(CorpusError, match=r"c\.txt: unreadable as UTF-8"):
        load_corpus("txt", tmp_path)


# --- the default corpus -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def default_corpus():
    return load_corpus("default")


def test_default_corpus_is_real_english_prose(default_corpus):
    docs = default_corpus.documents
    assert len(docs) > 400  # 106 Wikipedia articles + 300 Lee news articles
    assert sum(len(d) for d in docs) > 3_000_000
    assert docs[0].startswith("Anarchism is a political philosophy")
    assert sum(" the " in d for d in docs) > 0.95 * len(docs)
    text = "\n".join(docs)
    for common in (" of ", " and ", " was ", " The ", ". "):  # case and punctuation kept
        assert common in text
    for markup in ("'''", "[[", "]]", "{{", "<ref", "==", "#REDIRECT"):
        assert markup not in text, markup
    assert [p.name for p in default_corpus.files] == [corpus.DEFAULT_WIKI, corpus.DEFAULT_LEE]


def test_default_corpus_provenance_and_options(default_corpus):
    prov = corpus.corpus_provenance(default_corpus)
    assert prov["source"] == "default" and prov["n_documents"] == len(default_corpus.documents)
    assert [f["sha256"] for f in prov["files"]] == list(corpus.DEFAULT_SHA256.values())
    assert load_corpus("default", max_docs=5).documents == default_corpus.documents[:5]
    with pytest.raises(CorpusError, match="takes no path"):
        load_corpus("default", "somewhere")


def test_clean_wiki_text():
    raw = "'''Bold''' and ''it'' text.\n\n\n\n== History ==\n* \n* item\n"
    assert corpus.clean_wiki_text(raw) == "Bold and it text.\n\nHistory\n* item"


# --- split and provenance -----------------------------------------------------------------------

def test_split_is_a_pure_seeded_function_of_the_text():
    docs = [f"document number {i}" for i in range(400)]
    labels = split_documents(docs, seed=3, heldout_fraction=0.2)
    assert labels == split_documents(list(docs), seed=3, heldout_fraction=0.2)
    assert set(labels) == {"train", "heldout"}
    assert 40 < labels.count("heldout") < 120
    assert labels != split_documents(docs, seed=4, heldout_fraction=0.2)
    # the label depends on the text, not the position: reordering or capping moves nothing
    assert split_documents(docs[::-1], seed=3, heldout_fraction=0.2) == labels[::-1]
    assert split_documents(docs[:200], seed=3, heldout_fraction=0.2) == labels[:200]
    assert corpus.select(docs, labels, "heldout") == [d for d, s in zip(docs, labels, strict=False) if s == "heldout"]


def test_split_rejects_bad_fractions_and_empty_sides():
    with pytest.raises(CorpusError, match="heldout_fraction"):
        split_documents(["a", "b"], seed=0, heldout_fraction=1.0)
    with pytest.raises(CorpusError, match="one side empty"):
        split_documents(["same"] * 10, seed=0, heldout_fraction=0.5)


def test_provenance_lists_files_read_with_sha256(c4_folder):
    got = load_corpus("c4", c4_folder, max_docs=3)
    prov = corpus.corpus_provenance(got)
    assert prov["source"] == "c4"
    assert prov["options"] == {"path": str(c4_folder), "max_docs": 3, "c4_split": "train"}
    assert prov["n_documents"] == 3
    assert [(f["path"], f["sha256"]) for f in prov["files"]] == [(str(p), sha256_file(p)) for p in got.files]
    assert len(prov["files"]) == 2

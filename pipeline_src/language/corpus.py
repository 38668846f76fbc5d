"""Text corpora for the natural-language analysis: documents, a seeded split, provenance.

A corpus is a list of documents (strings) in a deterministic order, read from one ``source``:

* ``c4``: a folder of allenai/c4 ``en`` shards, ``c4-train.NNNNN-of-01024.json.gz`` or
  ``c4-validation.NNNNN-of-00008.json.gz`` (gzip JSON lines, each ``{"text", "timestamp", "url"}``),
  read in sorted name order; ``c4_split`` picks the official split whose shards are read.
* ``jsonl``: one file, or a folder of ``*.jsonl`` / ``*.jsonl.gz`` files (sorted), one JSON object
  with a string ``text`` per line.
* ``parquet``: one file, or a folder of ``*.parquet`` files (sorted), with a string ``text`` column.
* ``txt``: one file, or a folder of ``*.txt`` files (sorted), UTF-8. With ``txt_unit="paragraph"``
  (the default) every block of lines between blank lines is a document; with ``"file"`` every
  file is one.
* ``default``: real English prose shipped inside the pinned ``gensim`` wheel, read offline: the
  articles of a shortened English Wikipedia dump (wiki markup stripped, case and punctuation
  kept; redirects and non-article namespaces left out), then the 300 news articles of the Lee
  corpus (one per line). No ``path``; each file's SHA-256 is checked against the wheel's.

Rules common to all sources: documents with no non-whitespace character are skipped, blank lines of
JSON-lines files are skipped, and ``max_docs`` stops reading once that many documents are in (files
after that point are neither read nor checked). Anything malformed raises :class:`CorpusError`
naming the file, and the line (JSON lines) or row (Parquet) where it can.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import importlib.resources
import json
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from ..planning.language_inputs import CorpusError, c4_shards, files_ending
from ..storage.canonical import sha256_file

SOURCES = ("c4", "jsonl", "parquet", "txt", "default")
C4_SPLITS = ("train", "validation")
TRAIN, HELDOUT = "train", "heldout"

# The default corpus: files of the gensim 4.4.0 wheel (gensim/test/test_data/) and their SHA-256
# as listed in that wheel's RECORD. A different gensim gives a different corpus, so it is refused.
DEFAULT_PACKAGE = "gensim"
DEFAULT_WIKI = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
DEFAULT_LEE = "lee_background.cor"
DEFAULT_SHA256 = {
    DEFAULT_WIKI: "a53f4648dec40467ebdcbc7a1307eddb51fe6e28e9309f6ebde81ba0d04bea2d",
    DEFAULT_LEE: "5d78d6dafd953bbf65797bef09a9ffb9ec430583381be705f8fd460000f370fb",
}


@dataclass(frozen=True)
class Corpus:
    """Documents in reading order, plus where they came from (the files actually read)."""

    source: str
    documents: list[str]
    files: list[Path] = field(default_factory=list)
    options: dict = field(default_factory=dict)


# --- reading ------------------------------------------------------------------------------------


def load_corpus(source: str, path: str | Path | None = None, max_docs: int | None = None,
                c4_split: str = "train", txt_unit: str = "paragraph") -> Corpus:
    """Read the documents of ``source`` (see the module docstring), at most ``max_docs`` of them."""
    if source not in SOURCES:
        raise CorpusError(f"unknown corpus source {source!r}; known: {', '.join(SOURCES)}")
    if max_docs is not None and (not isinstance(max_docs, int) or max_docs < 1):
        raise CorpusError(f"max_docs must be a positive integer or None, got {max_docs!r}")
    options = {"path": None if path is None else str(path), "max_docs": max_docs}
    if source == "default":
        if path is not None:
            raise CorpusError("the default corpus takes no path (it ships with the gensim package)")
        files = default_files()
        reader = _default_documents
    else:
        if path is None:
            raise CorpusError(f"corpus source {source!r} needs a path")
        if source == "c4":
            if c4_split not in C4_SPLITS:
                raise CorpusError(f"c4_split must be one of {C4_SPLITS}, got {c4_split!r}")
            options["c4_split"] = c4_split
            files = c4_shards(path, c4_split)
            reader = _jsonl_documents
        elif source == "jsonl":
            files = files_ending(path, (".jsonl", ".jsonl.gz"))
            reader = _jsonl_documents
        elif source == "parquet":
            files = files_ending(path, (".parquet",))
            reader = _parquet_documents
        else:
            if txt_unit not in ("paragraph", "file"):
                raise CorpusError(f"txt_unit must be 'paragraph' or 'file', got {txt_unit!r}")
            options["txt_unit"] = txt_unit
            files = files_ending(path, (".txt",))
            reader = _txt_paragraphs if txt_unit == "paragraph" else _txt_file

    documents: list[str] = []
    used: list[Path] = []
    for file in files:
        if max_docs is not None and len(documents) >= max_docs:
            break
        used.append(file)
        for text in reader(file):
            if text.strip():
                documents.append(text)
                if max_docs is not None and len(documents) >= max_docs:
                    break
    if not documents:
        raise CorpusError(f"corpus {source!r} ({path}): no documents in {[str(f) for f in files]}")
    return Corpus(source, documents, used, options)


def _open_text(path: Path):
    return gzip.open(path, "rt", encoding="utf-8") if path.name.endswith(".gz") else open(path, encoding="utf-8")


def _jsonl_documents(path: Path) -> Iterator[str]:
    """The ``text`` of every line of a (possibly gzipped) JSON-lines file."""
    lineno = 0
    try:
        with _open_text(path) as handle:
            for lineno, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as err:
                    raise CorpusError(f"{path}: line {lineno}: not valid JSON ({err.msg})") from None
                if not isinstance(record, dict) or not isinstance(record.get("text"), str):
                    raise CorpusError(f"{path}: line {lineno}: not a JSON object with a string 'text'")
                yield record["text"]
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as err:
        raise CorpusError(f"{path}: unreadable after line {lineno} (truncated or not gzip/UTF-8?): "
                          f"{err}") from None


def _parquet_documents(path: Path) -> Iterator[str]:
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
        if "text" not in schema.names:
            raise CorpusError(f"{path}: no 'text' column (columns: {schema.names})")
        column = pq.read_table(path, columns=["text"]).column("text")
    except CorpusError:
        raise
    except Exception as err:  # pyarrow raises several types for unreadable files
        raise CorpusError(f"{path}: not a readable Parquet file ({err})") from None
    values = column.to_pylist()
    for row, text in enumerate(values):
        if not isinstance(text, str):
            raise CorpusError(f"{path}: row {row}: 'text' is {type(text).__name__}, not a string")
        yield text


def _read_txt(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise CorpusError(f"{path}: unreadable as UTF-8 text ({err})") from None


def _txt_file(path: Path) -> Iterator[str]:
    yield _read_txt(path).strip()


def _txt_paragraphs(path: Path) -> Iterator[str]:
    for block in re.split(r"\n[ \t\r\f\v]*\n", _read_txt(path)):
        yield block.strip()


# --- the default corpus -------------------------------------------------------------------------


def default_files() -> list[Path]:
    """The default corpus's two files inside the installed gensim package, checked by SHA-256."""
    try:
        data = importlib.resources.files(f"{DEFAULT_PACKAGE}.test") / "test_data"
    except ModuleNotFoundError:
        raise CorpusError("the default corpus needs the gensim package (pip install gensim==4.4.0)") from None
    files = []
    for name, expected in DEFAULT_SHA256.items():
        path = Path(str(data / name))
        if not path.is_file():
            raise CorpusError(f"{path}: missing from the installed gensim; the default corpus needs gensim==4.4.0")
        if sha256_file(path) != expected:
            raise CorpusError(f"{path}: SHA-256 differs from gensim 4.4.0's; the default corpus needs gensim==4.4.0")
        files.append(path)
    return files


def _default_documents(path: Path) -> Iterator[str]:
    if path.name == DEFAULT_WIKI:
        yield from wiki_articles(path)
    else:  # the Lee corpus: one news article per line
        yield from _read_txt(path).splitlines()


def wiki_articles(path: str | Path) -> Iterator[str]:
    """Plain text of the articles of a bz2 MediaWiki XML dump: gensim strips the markup (links,
    templates, tables, references), then :func:`clean_wiki_text` the formatting it leaves."""
    from gensim.corpora.wikicorpus import IGNORED_NAMESPACES, extract_pages, filter_wiki

    with bz2.open(path, "rb") as handle:
        for title, text, _pageid in extract_pages(handle, filter_namespaces=("0",)):
            if text.lstrip().lower().startswith("#redirect"):
                continue
            if any(title.startswith(space + ":") for space in IGNORED_NAMESPACES):
                continue
            yield clean_wiki_text(filter_wiki(text))


_EMPHASIS = re.compile(r"'{2,}")  # ''italic'', '''bold'''
_HEADING = re.compile(r"^(=+)\s*(.*?)\s*\1\s*$", re.MULTILINE)
_EMPTY_ITEM = re.compile(r"^[*#:;]+[ \t]*(?:\n|\Z)", re.MULTILINE)  # list items whose content was stripped


def clean_wiki_text(text: str) -> str:
    """Drop bold/italic quotes, turn ``== Heading ==`` into ``Heading``, drop emptied list items and
    runs of blank lines; everything else (case, punctuation, list markers) stays."""
    text = _EMPHASIS.sub("", text)
    text = _HEADING.sub(r"\2", text)
    text = _EMPTY_ITEM.sub("", text)
    text = "\n".join(line.rstrip() for line in text.splitlines())
    return re.sub(r"\n{3,}", "\n\n", text).strip()


# --- split and provenance -----------------------------------------------------------------------


def split_documents(documents: list[str], seed: int, heldout_fraction: float) -> list[str]:
    """``"train"`` or ``"heldout"`` for each document, a pure function of its text and ``seed``.

    A document is held out when SHA-256(seed, text), read as a number in [0, 1), is below
    ``heldout_fraction``. Deciding on the text rather than the position means that identical
    documents always land on the same side (no leak of exact duplicates) and that capping or
    extending the corpus never moves a document. The held-out share is ``heldout_fraction`` in
    expectation, not exactly; an empty side is an error.
    """
    if not 0.0 < heldout_fraction < 1.0:
        raise CorpusError(f"heldout_fraction must be in (0, 1), got {heldout_fraction!r}")
    labels = []
    for text in documents:
        digest = hashlib.sha256(f"{int(seed)}\0{text}".encode("utf-8", "surrogatepass")).digest()
        labels.append(HELDOUT if int.from_bytes(digest[:8], "big") / 2**64 < heldout_fraction else TRAIN)
    if TRAIN not in labels or HELDOUT not in labels:
        raise CorpusError(f"splitting {len(documents)} documents with heldout_fraction {heldout_fraction} and "
                          f"seed {seed} leaves one side empty; use more documents or another fraction")
    return labels


def select(documents: list[str], labels: list[str], which: str) -> list[str]:
    """The documents whose label is ``which`` (``"train"`` or ``"heldout"``), in corpus order."""
    return [doc for doc, label in zip(documents, labels, strict=True) if label == which]


def corpus_provenance(corpus: Corpus) -> dict:
    """Which source, with which options, from which files (each with its SHA-256), how many documents."""
    return {
        "source": corpus.source,
        "options": dict(corpus.options),
        "n_documents": len(corpus.documents),
        "n_characters": sum(len(doc) for doc in corpus.documents),
        "files": [{"path": str(path), "sha256": sha256_file(path)} for path in corpus.files],
    }

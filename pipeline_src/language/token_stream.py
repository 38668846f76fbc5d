"""The corpus step of the natural-language analysis: corpus -> seeded train/held-out split
-> tokenizer (trained on the train split, or a local tokenizer.json) -> token stream Parquet, with
its provenance record. Kept apart from :mod:`.analysis` so that the corpus job's code digest covers
only what makes the token stream."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

from ..provenance.records import build_record
from ..provenance.sidecars import sidecar_path, write_sidecar
from .corpus import TRAIN, corpus_provenance, load_corpus, select, split_documents
from .tokenizer import encode_documents, load_tokenizer, save_tokenizer, train_tokenizer, write_tokens


def say_to_stderr(progress: Callable[[str], None] | None) -> Callable[[str], None]:
    """``progress``, or a function printing each line to stderr."""
    return progress or (lambda line: print(line, file=sys.stderr, flush=True))


def build_corpus(spec: dict, tokenizer_out: Path, tokens_out: Path, *, rule: str = "language_corpus",
                 progress: Callable[[str], None] | None = None) -> dict:
    """Read the corpus of ``spec["corpus"]``, split it, get the tokenizer, write tokenizer.json and
    the token stream. The record of both names the source, its options and every file read with its
    SHA-256 (``record["corpus"]``). Returns a summary."""
    say = say_to_stderr(progress)
    c = spec["corpus"]
    corpus = load_corpus(c["source"], c["path"], c["max_docs"], c4_split=c.get("c4_split", "train"),
                         txt_unit=c.get("txt_unit", "paragraph"))
    labels = split_documents(corpus.documents, c["split_seed"], c["heldout_fraction"])
    train_docs = select(corpus.documents, labels, TRAIN)
    say(f"corpus {c['source']}: {len(corpus.documents):,} documents ({len(train_docs):,} train) "
        f"from {len(corpus.files)} files")
    local = spec["tokenizer"].get("path")
    if local:
        tokenizer = load_tokenizer(local)
    else:
        tokenizer = train_tokenizer(train_docs, spec["tokenizer"]["vocab_size"])
    frame = encode_documents(tokenizer, corpus.documents, labels)
    record = build_record(rule, "language_data", spec, inputs=tokenizer_inputs(local),
                          seeds={"split_seed": c["split_seed"]})
    record["corpus"] = corpus_provenance(corpus)
    sidecar_path(tokenizer_out).unlink(missing_ok=True)  # never pair the new file with an old record
    save_tokenizer(tokenizer, tokenizer_out)
    write_sidecar(tokenizer_out, record)
    write_tokens(frame, tokens_out, tokenizer, record)
    n_tokens = int(frame["tokens"].list.len().sum())
    say(f"tokenizer: {tokenizer.get_vocab_size():,} tokens; token stream: {n_tokens:,} tokens")
    return {"documents": len(corpus.documents), "train_documents": len(train_docs),
            "vocab_size": tokenizer.get_vocab_size(), "tokens": n_tokens}


def tokenizer_inputs(local: str | None) -> dict[str, str]:
    """The token stream's tokenizer file, by role, for its record: a tokenizer.json, or a GGUF
    model's file (a shipped name resolved); none for a tokenizer trained here."""
    from ..planning.language_inputs import is_gguf
    from ..planning.language_jobs import model_file

    if not local:
        return {}
    return {"gguf" if is_gguf(local) else "tokenizer_json": model_file(local)}
